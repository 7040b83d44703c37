// bench_knobs.cpp — see te4j/bench_knobs.h.
#include "te4j/bench_knobs.h"

#include <atomic>
#include <sstream>

namespace te4j {
namespace bench {
namespace {

std::atomic<bool> g_spin_wait{false};
std::atomic<bool> g_raw_data{false};
std::atomic<bool> g_signal_set{false};
std::atomic<int> g_put_variant{kPutLibrary};

// The names of PutVariant's values in order (kPutLibrary has none: te4j's put values pass on).
const char* const kPutVariantNames[] = {"",     "u8",   "u16",  "u8c",  "tma",
                                        "tma8", "tma3", "tmah", "tmaq", "cluster"};

// One "name=value" item of the bench's: applied to *knobs and true; false for a library item.
bool takeItem(const std::string& name, const std::string& value, BenchKnobs* knobs, bool* bad) {
  *bad = false;
  if (name == "wait") {
    *bad = value != "sleep" && value != "spin";
    knobs->spin_wait = value == "spin";
    return true;
  }
  if (name == "rawdata") {
    *bad = value != "0" && value != "1";
    knobs->raw_data = value == "1";
    return true;
  }
  if (name == "put") {
    for (int v = kPutU8; v <= kPutCluster; ++v) {
      if (value == kPutVariantNames[v]) {
        knobs->put_variant = v;
        return true;
      }
    }
    return false;  // te4j's own put values
  }
  if (name == "signal" && value == "set") {
    knobs->signal_set = true;
    return true;
  }
  // The launch shape: the Java side checks and applies it (BenchConfig.parseVariant).
  return name == "threads";
}

}  // namespace

bool splitBenchKnobs(const char* spec, BenchKnobs* knobs, std::string* library_spec,
                     std::string* why) {
  *knobs = BenchKnobs();
  library_spec->clear();
  if (spec == nullptr) return true;
  const std::string s(spec);
  if (s.empty() || s == "default") return true;
  // Items the library knows pass through unchanged, in their order.
  std::istringstream items(s);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool bad = false;
    if (takeItem(name, value, knobs, &bad)) {
      if (bad) {
        *why = "bad value '" + value + "' for te4j-bench knob '" + name +
               "'; the bench's knobs: " + benchKnobNames();
        return false;
      }
      // signal=set keeps the library's putWithSignal on its red add, as before the move.
      if (name == "signal") {
        if (!library_spec->empty()) library_spec->append(",");
        library_spec->append("signal=red");
      }
      continue;
    }
    if (!library_spec->empty()) library_spec->append(",");
    library_spec->append(item);
  }
  return true;
}

const char* benchKnobNames() {
  return "wait=sleep|spin, rawdata=0|1, signal=set, threads=32..1024, "
         "put=u8|u16|u8c|tma|tma8|tma3|tmah|tmaq|cluster";
}

BenchKnobs benchKnobs() {
  BenchKnobs k;
  k.spin_wait = g_spin_wait.load(std::memory_order_relaxed);
  k.raw_data = g_raw_data.load(std::memory_order_relaxed);
  k.signal_set = g_signal_set.load(std::memory_order_relaxed);
  k.put_variant = g_put_variant.load(std::memory_order_relaxed);
  return k;
}

void setBenchKnobs(const BenchKnobs& knobs) {
  g_spin_wait.store(knobs.spin_wait, std::memory_order_relaxed);
  g_raw_data.store(knobs.raw_data, std::memory_order_relaxed);
  g_signal_set.store(knobs.signal_set, std::memory_order_relaxed);
  g_put_variant.store(knobs.put_variant, std::memory_order_relaxed);
}

const char* putVariantName(int variant) {
  return variant > kPutLibrary && variant <= kPutCluster ? kPutVariantNames[variant] : nullptr;
}

std::string describeBenchKnobs(const BenchKnobs& knobs) {
  return std::string("wait=") + (knobs.spin_wait ? "spin" : "sleep") +
         ",rawdata=" + (knobs.raw_data ? "1" : "0");
}

}  // namespace bench
}  // namespace te4j
