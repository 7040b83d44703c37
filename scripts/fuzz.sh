#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer, ASan+UBSan) of the native decoders of bytes from outside:
# builds libte4j and src/test/fuzz with clang in a build folder of its own
# (target/fuzz, -DTE4J_FUZZ=ON; the normal g++ build is untouched), then runs every target
# for FUZZ_SECONDS from the seed corpus kept in the repo.
#
#   scripts/fuzz.sh                        CI: 30 s per target (8 targets: about 5 minutes with the build)
#   FUZZ_SECONDS=3600 scripts/fuzz.sh      a longer run on demand
#   FUZZ_TARGETS="fuzz_wqe_parser" ...     some targets only
#   FUZZ_MERGE=1 ...                       afterwards, add the inputs that found new coverage to
#                                          the repo's corpus (minimised by libFuzzer's merge)
#   target/fuzz/fuzz/<target> <file>  replay one input
#
# Exit 1 when a target crashes, a sanitizer reports, an input leaks, runs out of memory
# (-rss_limit_mb) or takes over -timeout seconds: the reproducer's path is printed. New inputs go
# to target/fuzz-work/corpus/<target>, never into the repo unless FUZZ_MERGE=1. Figures
# (executions, coverage, corpus) are in target/fuzz-work/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
jobs=${JOBS:-$(nproc)}
build=target/fuzz
work=target/fuzz-work
seeds=src/test/fuzz/corpus

if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ not found; scripts/ensure-deps.sh installs it (Debian/Ubuntu: clang libclang-rt-dev)" >&2
  exit 1
fi

echo "== fuzz build (clang, ASan+UBSan, $build)"
mkdir -p "$build"
# -O1 -gline-tables-only as OSS-Fuzz builds: much quicker to compile than -O2 -g, and the
# sanitizers' stack traces still name files and lines.
if ! CC=clang CXX=clang++ cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTE4J_WITH_CUDA=OFF \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
      -DTE4J_NATIVE_TESTS=OFF -DTE4J_FUZZ=ON > "$build.configure.log" 2>&1; then
  echo "FAILED to configure the fuzz build:"; tail -20 "$build.configure.log"; exit 1
fi
if ! cmake --build "$build" -j "$jobs" > "$build.build.log" 2>&1; then
  echo "FAILED to build the fuzz targets:"; grep -E "error|Error" "$build.build.log" | head -30; exit 1
fi
grep -h "is not built" "$build.configure.log" || true

targets=${FUZZ_TARGETS:-$(cd "$build/fuzz" && ls fuzz_* | grep -v '^fuzz_seeds$')}
# LeakSanitizer runs at the end of every input: a leak in a decoder fails the run too.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
rm -rf "$work/artifacts"
mkdir -p "$work/artifacts"
summary="$work/summary.txt"
printf "%-20s %8s %12s %10s %8s %8s %12s\n" target seconds execs exec/s cov ft corpus > "$summary"
rc=0
for t in $targets; do
  bin="$build/fuzz/$t"
  [ -x "$bin" ] || { echo "FAILED: no fuzz target $t"; rc=1; continue; }
  corpus="$work/corpus/$t"
  artifacts="$work/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts" "$seeds/$t"
  log="$work/$t.log"
  echo "-- $t: ${seconds}s from $(ls "$seeds/$t" | wc -l) seeds"
  # -timeout: one input over 10 s is a hang; -rss_limit_mb: the whole process over 2 GiB is an
  # OOM; -malloc_limit_mb: so is one allocation over 512 MiB (what a length field could ask for).
  "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" "$seeds/$t" > "$log" 2>&1
  status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E "^#[0-9]+" "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<< "$last")
  printf "%-20s %8s %12s %10s %8s %8s %12s\n" "$t" "$seconds" "${execs:-?}" "${speed:-?}" "${cov:-?}" \
    "${ft:-?}" "${corp:-?}" >> "$summary"
  found=$(ls "$artifacts" 2>/dev/null)
  if [ "$status" -ne 0 ] || [ -n "$found" ]; then
    rc=1
    echo "FAILED $t (exit $status):"
    grep -E "ERROR: |runtime error|SUMMARY|fuzz invariant|Test unit written" "$log" | head -10
    for f in $found; do
      echo "  reproducer: $artifacts$f   (replay: $bin $artifacts$f)"
    done
    echo "  log: $log"
  else
    echo "   ${execs:-?} executions, cov ${cov:-?}, corpus ${corp:-?}"
  fi
  if [ "${FUZZ_MERGE:-0}" = 1 ] && [ "$status" -eq 0 ]; then
    "$bin" -merge=1 "$seeds/$t" "$corpus" > "$work/$t.merge.log" 2>&1 &&
      echo "   merged into $seeds/$t: $(ls "$seeds/$t" | wc -l) inputs"
  fi
done
echo "== fuzz summary ($summary)"
cat "$summary"
exit $rc
