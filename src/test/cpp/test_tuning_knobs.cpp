// test_tuning_knobs.cpp — the knob parser of te4j/tuning.h: te4j's own put paths are accepted in
// every build; an experiment variant of the put kernel is either built in (a libte4j configured
// with TE4J_PUT_VARIANTS=ON) or refused with an error that names the option and the values this
// libte4j has; unknown knobs and values name the valid ones; a refused spec leaves the defaults.
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
  const bool built_in = apply("put=u8", nullptr) == 0;
  for (const char* spec : {"put=u8", "put=u16", "put=u8c", "put=tma", "put=tma8", "put=tma3",
                           "put=tmah", "put=tmaq", "put=cluster"}) {
    const char* why = nullptr;
    const int rc = apply(spec, &why);
    if (built_in) {
      CHECK(rc == 0, "%s refused by a libte4j with the variants: %s", spec, why);
      continue;
    }
    CHECK(rc != 0, "%s accepted by a libte4j without the variants", spec);
    CHECK(contains(why, "TE4J_PUT_VARIANTS=ON"), "%s: the error names the option: %s", spec, why);
    CHECK(contains(why, "base|auto|ce|cesm"), "%s: the error names the values: %s", spec, why);
    CHECK(get(te4j::tuning::kPut) == te4j::tuning::kPutAuto, "%s: the default stays", spec);
  }
  printf("put kernel variants: %s\n", built_in ? "built in" : "not built in (refused by name)");
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
