#!/usr/bin/env bash
# Runs te4j's GPU test groups and the two-rank example from prebuilt artifacts, on a GPU host
# that has only a Java runtime (no Maven, no network).
#
#   scripts/gpu-tests.sh [ARTIFACTS] [GROUPS]
#     ARTIFACTS  folder with te4j-*.jar, te4j-*-tests.jar and lib/*.jar (default: target)
#     GROUPS     TestNG groups to run (default: cuda,host)
#   JAVA       java executable (default: java on PATH)
#   SANITIZE   when 1, also runs the CUDA in-process group under compute-sanitizer
#              memcheck, synccheck and initcheck (--target-processes all around the JVM)
set -uo pipefail
art=${1:-target}
groups=${2:-cuda,host}
java=${JAVA:-java}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

main=$(ls "$art"/te4j-*.jar | grep -v -- '-tests.jar\|-bench.jar\|-sources.jar' | head -1)
tests=$(ls "$art"/te4j-*-tests.jar | head -1)
cp="$main:$tests:$art/lib/*"
jopts=(--enable-native-access=ALL-UNNAMED -Xmx8g -Dorg.slf4j.simpleLogger.defaultLogLevel=info)
rc=0

echo "== availability"
"$java" "${jopts[@]}" -cp "$cp" io.github.te4j.Availability || rc=1

echo "== TestNG groups: $groups"
out=$(mktemp -d)
"$java" "${jopts[@]}" -cp "$cp" org.testng.TestNG -verbose 2 -d "$out" -groups "$groups" -testjar "$tests"
st=$?
echo "TestNG exit $st (0 = all passed; 2 = some skipped; other = failures)"
[ "$st" = 0 ] || rc=1
[ -n "${OUT:-}" ] && cp "$out/testng-results.xml" "$OUT/" 2>/dev/null

echo "== two-rank example"
"$java" "${jopts[@]}" -cp "$cp" io.github.te4j.examples.TwoRankExample --platform cuda || rc=1

if [ "${SANITIZE:-0}" = 1 ]; then
  cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
  for tool in memcheck synccheck initcheck; do
    echo "== compute-sanitizer $tool (JVM, group cuda-inprocess)"
    "$cs" --tool "$tool" --target-processes all --error-exitcode 86 \
      "$java" "${jopts[@]}" -Dte4j.timeoutScale=20 -cp "$cp" org.testng.TestNG -d "$out/$tool" \
      -verbose 2 -groups cuda-inprocess -testjar "$tests" 2>&1 | tail -25
    st=${PIPESTATUS[0]}
    echo "compute-sanitizer $tool exit $st"
    [ "$st" = 0 ] || rc=1
  done
fi
exit $rc
