// tuning.cpp — te4j/tuning.h: process-wide knobs, initialised from TE4J_TUNING at load time.
#include "te4j/tuning.h"

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace te4j {
namespace tuning {
namespace {

struct KnobInfo {
  const char* name;
  int defaultValue;
  const char* values[11];  // value names in order of their numbers (nullptr-terminated)
};

// Defaults are te4j's production choices, the variants that measured best
// (docs/history/PERFORMANCE-notebook.md gives the runs); every other value is a variant te4j-bench
// measures beside them. Each choice keeps the same ordering guarantees, so a knob changes speed
// only, never results.
const KnobInfo kKnobs[kKnobCount] = {
    {"put", kPutAuto, {"base", "auto", "ce", "cesm", nullptr}},
    {"signal", kSignalRed, {"atom", "red", nullptr}},
    {"pdl", 1, {"0", "1", nullptr}},
    {"hostcopy", kHostMemmove, {"memmove", "memcpy", "nt", nullptr}},
    {"cesplit", 2, {"50", "55", "60", "65", "70", "75", "80", "85", "90", "95", nullptr}},
    {"arrival", kArrivalGpu, {"sys", "gpu", nullptr}},
    {"hostthreads", 0, {"4", "1", "2", "8", nullptr}},
    {"hostspin", 0, {"auto", "0", "2", "5", "20", "50", "200", nullptr}},
    {"batchthreads", 0, {"auto", "1", "2", "4", "8", nullptr}},
    {"samedevce", 0, {"auto", "0", "64k", "256k", "1m", "2m", "4m", "8m", "16m", "32m", nullptr}},
};

std::atomic<int> g_values[kKnobCount];
std::atomic<unsigned> g_generation{0};

void resetDefaults() {
  for (int k = 0; k < kKnobCount; ++k) {
    g_values[k].store(kKnobs[k].defaultValue, std::memory_order_relaxed);
  }
}

int parseValue(int knob, const std::string& text) {
  int n = 0;
  while (kKnobs[knob].values[n] != nullptr) {
    if (text == kKnobs[knob].values[n]) return n;
    ++n;
  }
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
    const int v = atoi(text.c_str());
    if (v < n) return v;
  }
  return -1;
}

std::string validValues(int knob) {
  std::string text;
  for (int n = 0; kKnobs[knob].values[n] != nullptr; ++n) {
    if (!text.empty()) text += "|";
    text += kKnobs[knob].values[n];
  }
  return text;
}

std::string validKnobs() {
  std::string text;
  for (int k = 0; k < kKnobCount; ++k) {
    if (k > 0) text += ", ";
    text += std::string(kKnobs[k].name) + "=" + validValues(k);
  }
  return text;
}

int applyInternal(const char* spec, std::string* why) {
  resetDefaults();
  if (spec == nullptr) return 0;
  std::string s(spec);
  if (s.empty() || s == "default" || s == "base") return 0;
  int pending[kKnobCount];
  for (int k = 0; k < kKnobCount; ++k) pending[k] = -1;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    int knob = -1;
    for (int k = 0; k < kKnobCount; ++k) {
      if (name == kKnobs[k].name) knob = k;
    }
    if (knob < 0) {
      *why = "unknown tuning knob '" + name + "' in '" + s + "'; the knobs: " + validKnobs();
      return -1;
    }
    const int v = parseValue(knob, value);
    if (v < 0) {
      *why = "bad value '" + value + "' for tuning knob '" + name +
             "'; its values: " + validValues(knob);
      // The put kernel's experiment variants live in te4j-bench's own library, not in te4j.
      if (knob == kPut) {
        *why +=
            " (the put kernel's experiment variants, e.g. put=u8, are te4j-bench's: run "
            "them with te4j-bench --variant)";
      }
      return -1;
    }
    pending[knob] = v;
  }
  for (int k = 0; k < kKnobCount; ++k) {
    if (pending[k] >= 0) g_values[k].store(pending[k], std::memory_order_relaxed);
  }
  return 0;
}

// A new generation after every apply, refused or not (a refusal resets the knobs): release, so
// a stream that sees the new count reads the knobs stored before it.
int applyCounted(const char* spec, std::string* why) {
  const int rc = applyInternal(spec, why);
  g_generation.fetch_add(1, std::memory_order_release);
  return rc;
}

// Load-time initialisation from the environment. A bad TE4J_TUNING leaves the defaults and is
// kept: creating a transport or a stream then fails with it (a load cannot report anything).
std::string g_env_error;
struct EnvInit {
  EnvInit() {
    std::string why;
    if (applyCounted(getenv("TE4J_TUNING"), &why) != 0) g_env_error = "TE4J_TUNING: " + why;
  }
} g_env_init;

}  // namespace

int get(Knob knob) {
  if (knob < 0 || knob >= kKnobCount) return 0;
  return g_values[knob].load(std::memory_order_relaxed);
}

unsigned generation() { return g_generation.load(std::memory_order_acquire); }

const char* environmentError() { return g_env_error.empty() ? nullptr : g_env_error.c_str(); }

int hostThreads() { return atoi(kKnobs[kHostThreads].values[get(kHostThreads)]); }

long long hostSpinNs() {
  const int v = get(kHostSpin);
  if (v != 0) return 1000LL * atoi(kKnobs[kHostSpin].values[v]);
  // auto: a spinning thread only pays where a core is free for the thread it waits for. Each
  // rank brings at least two busy threads (the caller and the executor), so below 4 CPUs two
  // ranks already outnumber the cores and parking at once is faster
  // (docs/history/PERFORMANCE-notebook.md).
  static const long long automatic = ::sysconf(_SC_NPROCESSORS_ONLN) >= 4 ? 20000LL : 0LL;
  return automatic;
}

int batchThreads() {
  const int v = get(kBatchThreads);
  if (v != 0) return atoi(kKnobs[kBatchThreads].values[v]);
  // auto: a thread per core up to 4; past that one socket's memory bandwidth is taken, and the
  // caller's and the other ranks' threads want the rest of the cores.
  static const int automatic = [] {
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 4 ? 4 : static_cast<int>(cpus);
  }();
  return automatic;
}

long long sameDeviceCopyEngineBytes() {
  const int v = get(kSameDeviceCopyEngine);
  if (v == 0) return -1;  // auto: stream/body_path.h decides
  const char* text = kKnobs[kSameDeviceCopyEngine].values[v];
  char* unit = nullptr;
  const long long n = strtoll(text, &unit, 10);
  return *unit == 'k' ? n << 10 : *unit == 'm' ? n << 20 : n;
}

int apply(const char* spec, const char** error) {
  static thread_local std::string why;
  why.clear();
  const int rc = applyCounted(spec, &why);
  if (error != nullptr) *error = why.c_str();
  return rc;
}

const char* describe() {
  static thread_local std::string text;
  text.clear();
  for (int k = 0; k < kKnobCount; ++k) {
    if (k > 0) text += ",";
    text += kKnobs[k].name;
    text += "=";
    text += kKnobs[k].values[get((Knob)k)];
  }
  return text.c_str();
}

}  // namespace tuning
}  // namespace te4j
