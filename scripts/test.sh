#!/usr/bin/env bash
# The test command of the README: checks the C/C++/CUDA style (scripts/format.sh --check), builds everything (CMake via Maven, JavaCPP glue), runs the
# Java tests (unit, host-platform multi-process ranks; GPU and RDMA-hardware tests skip here with
# their reason) and the library's host group alone, then the native C++ test drivers, plain and under sanitizers (scripts/sanitize.sh),
# then a bounded libFuzzer run of the native decoders (scripts/fuzz.sh, FUZZ_SECONDS per target).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/ensure-deps.sh
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
# The NVRTC ensure-deps.sh found or unpacked (a cache hit here): KernelCompiler's tests compile with it.
if [ -z "${TE4J_NVRTC_LIBRARY:-}" ] && nvrtc=$(bash scripts/fetch-nvrtc.sh 2>/dev/null); then
  export TE4J_NVRTC_LIBRARY=$nvrtc
fi
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

echo "== C/C++/CUDA style (.clang-format)"
bash scripts/format.sh --check

# Everything: the library at the root and the artifacts beside it (parent/pom.xml lists them).
mvn -B -ntp -f parent/pom.xml verify "$@"

# TestNG runs a test's setup only for the groups it names: a test run by group, as
# scripts/gpu-tests.sh does on a GPU host, can meet what a run of everything never shows.
echo "== the library's tests, host group alone (TestNG -groups host)"
failed=0
tests_jar=$(ls target/te4j-*-tests.jar 2>/dev/null | head -1 || true)
host_out=target/testng-host
rm -rf "$host_out"
[ -n "$tests_jar" ] && java --enable-native-access=ALL-UNNAMED -cp "$tests_jar:target/classes:target/lib/*" org.testng.TestNG \
  -d "$host_out" -groups host -testjar "$tests_jar" >"$host_out.log" 2>&1 || true
if ! bash scripts/testng-report.sh "$host_out/testng-results.xml" "host group"; then
  echo "FAILED: te4j tests -groups host (log: $host_out.log)"
  failed=1
fi

echo "== native test drivers"
for t in target/cmake/tests/*; do
  [ -x "$t" ] || continue
  echo "-- $(basename "$t")"
  if ! timeout 600 "$t"; then echo "FAILED: $t"; failed=1; fi
done

echo "== separate Maven project using the installed jar"
bash scripts/consumer-test.sh || failed=1

echo "== native test drivers under ASan/UBSan and TSan (scripts/sanitize.sh)"
if ! bash scripts/sanitize.sh; then echo "FAILED: scripts/sanitize.sh"; failed=1; fi

echo "== libFuzzer on the native decoders (scripts/fuzz.sh, ${FUZZ_SECONDS:-30} s per target)"
if ! bash scripts/fuzz.sh; then echo "FAILED: scripts/fuzz.sh"; failed=1; fi

echo "== surefire summary"
grep -h "Tests run" target/surefire-reports/*.txt */target/surefire-reports/*.txt || true
exit $failed
