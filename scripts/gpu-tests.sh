#!/usr/bin/env bash
# Runs te4j's GPU test groups and the two-rank example from prebuilt artifacts, on a GPU host
# that has only a Java runtime (no Maven, no network).
#
#   scripts/gpu-tests.sh [ARTIFACTS] [GROUPS]
#     ARTIFACTS  folder with te4j-*.jar, te4j-*-tests.jar and lib/*.jar (default: target)
#     GROUPS     TestNG groups to run (default: cuda,host)
#   JAVA       java executable (default: java on PATH)
#   SANITIZE   when 1, also runs compute-sanitizer memcheck (--leak-check full), synccheck,
#              initcheck and racecheck around test_cuda_ops, a C++ driver of the same kernels
#              (src/test/cpp/test_cuda_ops.cpp: put/putWithSignal and every put variant, signal,
#              redAdd, waitSignal and its timeout, graph capture, verifyPeerAccess; 2 ranks in one
#              process and 2 processes over CUDA IPC), not around the JVM: under memcheck the JVM
#              did not even finish starting within 70 s. Each tool's ERROR SUMMARY is printed.
#     TE4J_CUDA_OPS      the driver (default: target/cmake/tests/test_cuda_ops, else
#                        .carry/native/test_cuda_ops); libte4j.so must sit in the same folder or
#                        its parent (the driver's RUNPATH is $ORIGIN:$ORIGIN/..)
#     SANITIZE_TIMEOUT   seconds per tool (default 600); SANITIZE_TIMEOUT_SCALE multiplies the
#                        driver's deadlines (default 10); TE4J_CUDA_OPS_MAX_BYTES,
#                        TE4J_CUDA_OPS_VARIANTS, TE4J_CUDA_OPS_ADDS pass through (see the driver)
#   SANITIZE_JVM when 1, also the old variant: the CUDA in-process TestNG group under
#              memcheck, synccheck and initcheck (--target-processes all around the JVM)
#   SANITIZE_ONLY when 1, runs only the compute-sanitizer part (no Java needed unless SANITIZE_JVM)
set -uo pipefail
art=${1:-target}
groups=${2:-cuda,host}
java=${JAVA:-java}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

rc=0
out=$(mktemp -d)
if [ "${SANITIZE_ONLY:-0}" != 1 ] || [ "${SANITIZE_JVM:-0}" = 1 ]; then
[ -n "${TESTNG_EXCLUDE:-}" ] && echo "(excluding groups $TESTNG_EXCLUDE)"
main=$(ls "$art"/te4j-*.jar | grep -v -- '-tests.jar\|-bench.jar\|-sources.jar' | head -1)
tests=$(ls "$art"/te4j-*-tests.jar | head -1)
cp="$main:$tests:$art/lib/*"
jopts=(--enable-native-access=ALL-UNNAMED -Xmx8g -Dorg.slf4j.simpleLogger.defaultLogLevel=info)
fi

if [ "${SANITIZE_ONLY:-0}" != 1 ]; then
echo "== availability"
"$java" "${jopts[@]}" -cp "$cp" io.github.te4j.Availability || rc=1

echo "== TestNG groups: $groups"
"$java" "${jopts[@]}" -cp "$cp" org.testng.TestNG -verbose 2 -d "$out" -groups "$groups" ${TESTNG_EXCLUDE:+-excludegroups "$TESTNG_EXCLUDE"} -testjar "$tests"
st=$?
echo "TestNG exit $st (0 = all passed; 2 = some skipped; other = failures)"
[ "$st" = 0 ] || rc=1
[ -n "${OUT:-}" ] && cp "$out/testng-results.xml" "$OUT/" 2>/dev/null

echo "== two-rank example"
"$java" "${jopts[@]}" -cp "$cp" io.github.te4j.examples.TwoRankExample --platform cuda || rc=1

echo "== user-kernel example (NVRTC-compiled kernels launched from Java, both ranks on GPU 0)"
"$java" "${jopts[@]}" -cp "$cp" io.github.te4j.examples.UserKernelExample
st=$?
# 2: no GPU or no NVRTC here (the example says which); anything else but 0 is a failure.
[ "$st" = 0 ] || [ "$st" = 2 ] || rc=1
fi

cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
if [ "${SANITIZE:-0}" = 1 ]; then
  drv=${TE4J_CUDA_OPS:-}
  if [ -z "$drv" ]; then
    for c in target/cmake/tests/test_cuda_ops .carry/native/test_cuda_ops; do
      [ -x "$c" ] && { drv=$c; break; }
    done
  fi
  if [ -z "$drv" ] || [ ! -x "$drv" ]; then
    echo "no test_cuda_ops driver found (set TE4J_CUDA_OPS)"
    rc=1
  else
    echo "== test_cuda_ops without a tool ($drv)"
    "$drv" 2>&1 | tail -40
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    for tool in memcheck synccheck initcheck racecheck; do
      echo "== compute-sanitizer $tool (a C++ driver of the same kernels: $drv)"
      extra=()
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      log="$out/sanitize-$tool.log"
      TE4J_TIMEOUT_SCALE=${SANITIZE_TIMEOUT_SCALE:-10} timeout -k 10 "${SANITIZE_TIMEOUT:-600}" \
        "$cs" --tool "$tool" --target-processes all --error-exitcode 86 \
        ${extra[@]+"${extra[@]}"} "$drv" >"$log" 2>&1
      st=$?
      # The driver's verdict lines, then the tool's: one ERROR SUMMARY per process (3: the
      # driver and its two CUDA IPC ranks), and the first error reports if there are any.
      grep -E "^(OK|FAIL|SKIP|test_cuda_ops|in-process part|ipc part|\[ipc)" "$log" | tail -30
      grep -E "ERROR SUMMARY|LEAK SUMMARY" "$log"
      grep -v -E "ERROR SUMMARY|LEAK SUMMARY" "$log" | grep -E "^=========" | head -40
      grep -q "^SKIP" "$log" && { echo "the driver skipped: nothing was checked"; st=1; }
      echo "compute-sanitizer $tool exit $st (0 = clean; 86 = errors found; 124 = timed out)"
      [ -n "${OUT:-}" ] && cp "$log" "$OUT/" 2>/dev/null
      [ "$st" = 0 ] || rc=1
    done
  fi
fi

if [ "${SANITIZE_JVM:-0}" = 1 ]; then
  for tool in memcheck synccheck initcheck; do
    echo "== compute-sanitizer $tool (JVM, group cuda-inprocess)"
    # Sizes capped (the tools slow each access down); deadlines scaled up.
    timeout "${SANITIZE_TIMEOUT:-240}" "$cs" --tool "$tool" --target-processes all --error-exitcode 86 \
      "$java" "${jopts[@]}" -Dte4j.timeoutScale=20 -Dte4j.test.maxBytes=$((4 << 20)) -cp "$cp" \
      org.testng.TestNG -d "$out/$tool" -verbose 2 -groups cuda-inprocess -testjar "$tests" 2>&1 \
      | grep -E "^(PASSED|FAILED|SKIPPED)|Total tests|ERROR SUMMARY|=========" | tail -25
    st=${PIPESTATUS[0]}
    echo "compute-sanitizer $tool exit $st"
    [ "$st" = 0 ] || rc=1
  done
fi
exit $rc
