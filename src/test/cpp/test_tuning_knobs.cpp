// test_tuning_knobs.cpp — the knob parser of te4j/tuning.h: te4j's own put paths are accepted;
// the put kernel's experiment variants (te4j-bench's) are refused with an error that names the
// valid values and te4j-bench; unknown knobs and values name the valid ones; a refused spec leaves
// the defaults.
#include <stdio.h>

#include <string>

#include "check.h"
#include "te4j/tuning.h"

namespace {

using te4j::tuning::apply;
using te4j::tuning::get;

bool contains(const char* text, const char* part) {
  return text != nullptr && std::string(text).find(part) != std::string::npos;
}

void testOwnPutPaths() {
  for (const char* spec : {"put=auto", "put=base", "put=ce", "put=cesm", "put=ce,cesplit=75"}) {
    const char* why = nullptr;
    CHECK(apply(spec, &why) == 0, "%s refused: %s", spec, why);
  }
  CHECK(apply("", nullptr) == 0 && get(te4j::tuning::kPut) == te4j::tuning::kPutAuto,
        "the default put is auto");
}

void testExperimentVariants() {
  CHECK(apply("pdl=0", nullptr) == 0, "a non-default knob to see the reset");
  for (const char* spec : {"put=u8", "put=u16", "put=u8c", "put=tma", "put=tma8", "put=tma3",
                           "put=tmah", "put=tmaq", "put=cluster"}) {
    const char* why = nullptr;
    CHECK(apply(spec, &why) != 0, "%s accepted by te4j: the variants are te4j-bench's", spec);
    CHECK(contains(why, "te4j-bench"), "%s: the error names te4j-bench: %s", spec, why);
    CHECK(contains(why, "its values: base|auto|ce|cesm"), "%s: the error names the values: %s",
          spec, why);
    CHECK(get(te4j::tuning::kPut) == te4j::tuning::kPutAuto && get(te4j::tuning::kPdl) == 1,
          "%s: the defaults stay", spec);
  }
}

void testUnknownNames() {
  const char* why = nullptr;
  CHECK(apply("nosuch=1", &why) != 0, "an unknown knob is refused");
  CHECK(contains(why, "unknown tuning knob 'nosuch'") && contains(why, "signal=atom|red"),
        "the error names the knobs: %s", why);
  CHECK(apply("signal=loud", &why) != 0, "an unknown value is refused");
  CHECK(contains(why, "its values: atom|red"), "the error names the values: %s", why);
  // The bench's own knobs are not the library's (te4j-bench's te4j/bench_knobs.h).
  for (const char* spec : {"wait=spin", "rawdata=1", "signal=set", "threads=256"}) {
    CHECK(apply(spec, &why) != 0, "%s is te4j-bench's, not the library's", spec);
  }
  CHECK(apply("", nullptr) == 0, "reset");
}

}  // namespace

int main() {
  testOwnPutPaths();
  testExperimentVariants();
  testUnknownNames();
  if (g_failures != 0) {
    fprintf(stderr, "test_tuning_knobs: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("test_tuning_knobs: all checks passed\n");
  return 0;
}
