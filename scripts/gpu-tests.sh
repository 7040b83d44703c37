#!/usr/bin/env bash
# Runs te4j's GPU test groups, the CUDA native drivers, the two-rank example and a te4j-bench
# smoke run from prebuilt artifacts, on a GPU host that has only a Java runtime (no Maven, no
# network). Works with any number of GPUs: the tests place rank r on GPU r modulo the GPUs present
# (all ranks on GPU 0 where there is one); CUDA_VISIBLE_DEVICES=0 forces that layout on a larger host.
#
#   scripts/gpu-tests.sh [ROOT] [GROUPS]
#     ROOT    a built checkout, or a copy of just its build outputs (default: this checkout):
#               target/te4j-<v>-tests.jar, te4j-<v>.jar, te4j-<v>-<platform>.jar and lib/
#                                                      (the library's tests and test support, the
#                                                       library and its natives, what they use)
#               bench/target/te4j-bench-<v>.jar, -tests.jar      (bench CLI and its tests)
#               examples/target/te4j-examples-<v>.jar            (TwoRankExample)
#               target/cmake/libte4j.so and tests/               (native drivers; optional)
#     GROUPS  TestNG groups to run (default: cuda,host)
#   JAVA       java executable (default: java on PATH)
#   PARTS      which parts to run, comma-separated (default: tests,bench,example,native): the
#              library tests' groups (labelled te4j-tests), the te4j-bench groups and its --gpus 0,0 run, the example, the
#              native drivers; e.g. PARTS=tests, then PARTS=bench,example,native, to stay under a
#              per-command time limit
#   NATIVE     0 skips the native drivers (default 1: test_cuda_ops, test_rdma_cuda_softnic in
#              both modes, test_ll_cuda, test_batch_kernel_cuda, test_transfer_batch_cuda_with_lib,
#              test_upstream_api_cuda, test_upstream_rdma_with_lib, test_mlx5_gpu_support, each
#              where it was built); same as
#              leaving native out of PARTS
#   TESTNG_EXCLUDE  TestNG groups to leave out
#   SANITIZE   when 1, also runs compute-sanitizer memcheck (--leak-check full), synccheck,
#              initcheck and racecheck around test_cuda_ops, a C++ driver of the same kernels
#              (src/test/cpp/test_cuda_ops.cpp: put/putWithSignal and every put variant,
#              signal, redAdd, waitSignal and its timeout, graph capture, verifyPeerAccess; 2 ranks
#              in one process and 2 processes over CUDA IPC), not around the JVM: under memcheck
#              the JVM did not even finish starting within 70 s. Each tool's ERROR SUMMARY is printed.
#     TE4J_CUDA_OPS      the driver (default: ROOT/target/cmake/tests/test_cuda_ops);
#                        libte4j.so must sit in the same folder or its parent (the driver's
#                        RUNPATH is $ORIGIN:$ORIGIN/..)
#     SANITIZE_TIMEOUT   seconds per tool (default 600); SANITIZE_TIMEOUT_SCALE multiplies the
#                        driver's deadlines (default 10); TE4J_CUDA_OPS_MAX_BYTES,
#                        TE4J_CUDA_OPS_VARIANTS, TE4J_CUDA_OPS_ADDS pass through (see the driver)
#   SANITIZE_JVM when 1, also the CUDA in-process TestNG group under memcheck, synccheck and
#              initcheck (--target-processes all around the JVM)
#   SANITIZE_ONLY when 1, runs only the compute-sanitizer part (no Java needed unless SANITIZE_JVM)
#   OUT        when set, everything the run wrote (its console, TestNG results, driver and
#              sanitizer logs, bench output) goes to ONE archive there: OUT/te4j-gpu-results.tar.gz
# It names first the host tools it lacks (ip, etcd, compute-sanitizer, python3) and what each
# absence skips. Exit status 0 only when everything ran and passed: a skip on a GPU host counts
# as a failure. scripts/gpu-bundle.sh packs this script with everything it needs for a GPU host
# that has no Java (its run.sh calls it).
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
groups=${2:-cuda,host}
java=${JAVA:-java}
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

rc=0
out=$(mktemp -d)

# With OUT the console goes to $out/console.log as well, and at exit all of $out becomes one
# archive in OUT: a caller that brings back only a few files still gets every log.
if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT" || exit 1
  exec 3>&1 4>&2 > >(tee "$out/console.log") 2>&1
  tee_pid=$!
  pack() {
    local st=$?
    exec 1>&3 2>&4 3>&- 4>&-
    # tee ends once every writer is gone; a rank process left behind must not hold the run.
    for _ in $(seq 50); do kill -0 "$tee_pid" 2>/dev/null || break; sleep 0.2; done
    tar -czf "$OUT/te4j-gpu-results.tar.gz" -C "$out" . && echo "results: $OUT/te4j-gpu-results.tar.gz"
    exit "$st"
  }
  trap pack EXIT
fi

# The host tools some checks need: without one, those checks skip (and a skip fails this run).
host_tools() {
  local cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
  echo "== host tools"
  if ! command -v ip >/dev/null; then
    echo "ip: MISSING (iproute2): the host-group tests that put ranks in two network namespaces over a" \
      "veth pair (RdmaMultiProcessTest, RdmaPeerFailureTest, TransferBatchMultiProcessTest) skip"
  elif [ "$(id -u)" != 0 ]; then
    echo "ip: $(command -v ip), but not root: the veth-pair tests (network namespaces) skip"
  else
    echo "ip: $(command -v ip)"
  fi
  if [ -n "${TE4J_ETCD:-}" ] && [ -x "$TE4J_ETCD" ]; then
    echo "etcd: $TE4J_ETCD (TE4J_ETCD)"
  elif command -v etcd >/dev/null; then
    echo "etcd: $(command -v etcd)"
  else
    echo "etcd: MISSING: te4j-bench's real-etcd rendezvous tests (BenchRendezvousTest) skip;" \
      "TE4J_ETCD=/path/to/etcd points at a binary"
  fi
  if [ -x "$cs" ]; then
    echo "compute-sanitizer: $cs"
  else
    echo "compute-sanitizer: MISSING ($cs; COMPUTE_SANITIZER names another): SANITIZE=1 and" \
      "SANITIZE_JVM=1 cannot run (neither is part of the default run)"
  fi
  if command -v python3 >/dev/null; then
    echo "python3: $(command -v python3)"
  else
    echo "python3: MISSING: the bench's JSON output is not checked (the bench still runs), and" \
      "te4j-bench --mode alltoall has no NCCL peer to compare with"
  fi
}
native_dir="$root/target/cmake/tests"

# The one file matching a pattern, or nothing (a missing artifact is reported where it is needed).
one() { ls $1 2>/dev/null | grep -v -- '-sources.jar\|-javadoc.jar' | head -1; }

tests_jar=$(one "$root/target/te4j-*-tests.jar")
# the library's jar and its natives jar (beside the tests jar), and what the tests use
te4j_jars=$(ls "$root"/target/te4j-*.jar 2>/dev/null | grep -v -- '-tests.jar\|-sources.jar\|-javadoc.jar\|-headers.jar' | paste -sd: -)
lib="$root/target/lib"
bench_jar=$(one "$root/bench/target/te4j-bench-*[0-9T].jar")
bench_tests=$(one "$root/bench/target/te4j-bench-*-tests.jar")
examples_jar=$(one "$root/examples/target/te4j-examples-*[0-9T].jar")
# The bench's own dependencies: in a checkout its jar is shaded and this folder repeats them; the
# bundle carries the plain jar and here only what lib/ lacks (so te4j's natives travel once).
bench_lib="$root/bench/target/lib"
jopts=(--enable-native-access=ALL-UNNAMED -Xmx8g -Dorg.slf4j.simpleLogger.defaultLogLevel=info)
parts=",${PARTS:-tests,bench,example,native},"
part() { [[ "$parts" == *",$1,"* ]]; }

# TestNG over one tests jar; $1 names the part, $2 the class path, $3 the jar.
testng() {
  local name=$1 cp=$2 jar=$3
  echo "== TestNG groups $groups: $name"
  "$java" "${jopts[@]}" -cp "$cp" org.testng.TestNG -verbose 2 -d "$out/$name" -groups "$groups" \
    ${TESTNG_EXCLUDE:+-excludegroups "$TESTNG_EXCLUDE"} -testjar "$jar"
  local st=$?
  bash "$(dirname "$0")/testng-report.sh" "$out/$name/testng-results.xml" "$name"
  echo "TestNG $name exit $st (0 = all passed; 2 = some skipped; other = failures)"
  [ "$st" = 0 ] || rc=1
}

# One native driver; a SKIP on a GPU host is a failure (nothing was checked).
native() {
  local drv=$1; shift
  if [ ! -x "$drv" ]; then
    echo "== $(basename "$drv") $*: not built here (no $drv): skipped"
    return
  fi
  echo "== native: $(basename "$drv") $*"
  local log="$out/$(basename "$drv")${1:+-${1#--}}.log"
  timeout -k 10 "${NATIVE_TIMEOUT:-600}" "$drv" "$@" >"$log" 2>&1
  local st=$?
  tail -25 "$log"
  grep -q "SKIP" "$log" && { echo "$(basename "$drv") skipped on a GPU host: nothing was checked"; st=1; }
  echo "$(basename "$drv") $* exit $st"
  [ "$st" = 0 ] || rc=1
}

host_tools
if [ "${SANITIZE_ONLY:-0}" != 1 ]; then
  [ -n "${TESTNG_EXCLUDE:-}" ] && echo "(excluding groups $TESTNG_EXCLUDE)"
  command -v nvidia-smi >/dev/null && nvidia-smi -L
  echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-(unset)}"
  if [ -z "$tests_jar" ] || [ ! -d "$lib" ]; then
    echo "no target/te4j-<v>-tests.jar or target/lib/ under $root: build with mvn package first"
    exit 1
  fi
  cp="$tests_jar:$te4j_jars:$lib/*"

  echo "== availability"
  "$java" "${jopts[@]}" -cp "$cp" io.github.te4j.Availability || rc=1

  part tests && testng te4j-tests "$cp" "$tests_jar"

  if ! part bench; then
    :
  elif [ -n "$bench_jar" ] && [ -n "$bench_tests" ]; then
    bcp="$bench_jar:$bench_lib/*:$tests_jar:$te4j_jars:$lib/*"
    bench=("$java" --enable-native-access=ALL-UNNAMED -cp "$bcp" io.github.te4j.bench.BenchMain)
    testng te4j-bench "$bench_tests:$bcp" "$bench_tests"
    echo "== te4j-bench: both ranks on GPU 0 (--gpus 0,0), json on stdout"
    json="$out/bench.json"
    "${bench[@]}" --platform cuda --gpus 0,0 --mode bandwidth,latency \
      --sizes 4K,1M --latency-sizes 8 --warmup 1 --iterations 3 --batch 10 --timeout 60s --format json >"$json"
    st=$?
    echo "te4j-bench exit $st"
    [ "$st" = 0 ] || rc=1
    if [ "$st" = 0 ] && command -v python3 >/dev/null; then
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("te4j-bench json: %d rows, all ok: %s" % (len(d["rows"]), all(r["ok"] for r in d["rows"])))' "$json" || rc=1
    fi
    echo "== te4j-bench --mode batch: KV-cache shapes on GPU 0 (te4j batch kernel vs cudaMemcpyAsync loop, cudaMemcpyBatchAsync, contiguous copy)"
    "${bench[@]}" --platform cuda --mode batch --iterations 20
    st=$?
    echo "te4j-bench --mode batch exit $st"
    [ "$st" = 0 ] || rc=1
    echo "== te4j-bench --mode kvcache: 32 layers x 256 blocks x 16 KiB handed over on GPU 0 (time-to-notify per layer and"
    echo "   the whole handoff vs cudaMemcpyAsync loop, cudaMemcpyBatchAsync, contiguous copy)"
    "${bench[@]}" --platform cuda --mode kvcache --kv-layers 32 --kv-blocks 256 --kv-block-size 16K --iterations 20
    st=$?
    echo "te4j-bench --mode kvcache exit $st"
    [ "$st" = 0 ] || rc=1
    "${bench[@]}" -V
  else
    echo "== te4j-bench: no bench/target/te4j-bench-<v>.jar and -tests.jar under $root"
    rc=1
  fi

  if ! part example; then
    :
  elif [ -n "$examples_jar" ]; then
    ecp="$examples_jar:$tests_jar:$te4j_jars:$lib/*"
    echo "== two-rank example, default device map"
    "$java" "${jopts[@]}" -cp "$ecp" io.github.te4j.examples.TwoRankExample --platform cuda || rc=1
    echo "== two-rank example, both ranks on GPU 0"
    "$java" "${jopts[@]}" -cp "$ecp" io.github.te4j.examples.TwoRankExample --platform cuda --device 0 || rc=1
    echo "== KV-cache handoff example, both ranks on GPU 0 (32 layers x 256 blocks x 16 KiB)"
    "$java" "${jopts[@]}" -cp "$ecp" io.github.te4j.examples.KvCacheHandoff --platform cuda --device 0 \
      --layers 32 --blocks 256 --block-size 16K || rc=1
    echo "== user-kernel example (NVRTC-compiled kernels launched from Java, both ranks on GPU 0)"
    "$java" "${jopts[@]}" -cp "$ecp" io.github.te4j.examples.UserKernelExample
    st=$?
    # 2: no GPU or no NVRTC here (the example says which): a failure on a GPU host
    [ "$st" = 0 ] || rc=1
  else
    echo "== two-rank example: no examples/target/te4j-examples-<v>.jar under $root"
    rc=1
  fi

  if [ "${NATIVE:-1}" = 1 ] && part native; then
    native "$native_dir/test_cuda_ops"
    native "$native_dir/test_rdma_cuda_softnic"
    native "$native_dir/test_rdma_cuda_softnic" --threads
    native "$native_dir/test_ll_cuda"
    native "$native_dir/test_batch_kernel_cuda"
    native "$native_dir/test_transfer_batch_cuda_with_lib"
    native "$native_dir/test_transfer_list_cuda_with_lib"
    native "$native_dir/test_upstream_api_cuda"
    native "$native_dir/test_upstream_rdma_with_lib"
    native "$native_dir/test_mlx5_gpu_support"
  fi
fi

cs=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
if [ "${SANITIZE:-0}" = 1 ]; then
  drv=${TE4J_CUDA_OPS:-$native_dir/test_cuda_ops}
  if [ ! -x "$drv" ]; then
    echo "no test_cuda_ops driver found at $drv (set TE4J_CUDA_OPS)"
    rc=1
  else
    echo "== test_cuda_ops without a tool ($drv)"
    "$drv" 2>&1 | tail -40
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    for tool in memcheck synccheck initcheck racecheck; do
      echo "== compute-sanitizer $tool (a C++ driver of the same kernels: $drv)"
      extra=()
      [ "$tool" = memcheck ] && extra=(--leak-check full)
      # initcheck tracks initialization per process: with both IPC ranks on one GPU, each sees
      # the other's buffer (zero-filled and synchronized by its owner before export) as never
      # written and reports every read of it. Across two GPUs it does not. On one GPU its run
      # covers the in-process part; memcheck, synccheck and racecheck still cover the IPC part.
      ipc=${TE4J_CUDA_OPS_IPC:-1}
      if [ "$tool" = initcheck ] && [ "${gpus:-0}" -lt 2 ]; then
        ipc=0
        echo "   (initcheck on one GPU: the two-process IPC part left out, see the comment here)"
      fi
      log="$out/sanitize-$tool.log"
      TE4J_CUDA_OPS_IPC=$ipc TE4J_TIMEOUT_SCALE=${SANITIZE_TIMEOUT_SCALE:-10} timeout -k 10 "${SANITIZE_TIMEOUT:-600}" \
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
      [ "$st" = 0 ] || rc=1
    done
  fi
fi

# The transfer-batch kernel's driver (one process, no libte4j) and the transfer list's (libte4j's
# list on one GPU) under compute-sanitizer memcheck and racecheck.
if [ "${SANITIZE:-0}" = 1 ]; then
  for bdrv in "$native_dir/test_batch_kernel_cuda" "$native_dir/test_transfer_list_cuda_with_lib"; do
  if [ ! -x "$bdrv" ]; then
    echo "no driver found at $bdrv"
    rc=1
  else
    for tool in memcheck racecheck; do
      echo "== compute-sanitizer $tool ($bdrv)"
      log="$out/sanitize-$(basename "$bdrv")-$tool.log"
      timeout -k 10 "${SANITIZE_TIMEOUT:-600}" "$cs" --tool "$tool" --error-exitcode 86 "$bdrv" >"$log" 2>&1
      st=$?
      grep -E "^(round|shape|PASS|FAIL|SKIP)|ERROR SUMMARY" "$log" | tail -20
      grep -q "^SKIP" "$log" && { echo "the driver skipped: nothing was checked"; st=1; }
      echo "compute-sanitizer $tool exit $st (0 = clean; 86 = errors found; 124 = timed out)"
      [ "$st" = 0 ] || rc=1
    done
  fi
  done
fi

if [ "${SANITIZE_JVM:-0}" = 1 ]; then
  cp="$tests_jar:$te4j_jars:$lib/*"
  for tool in memcheck synccheck initcheck; do
    echo "== compute-sanitizer $tool (JVM, group cuda-inprocess)"
    # Sizes capped (the tools slow each access down); deadlines scaled up.
    timeout "${SANITIZE_TIMEOUT:-240}" "$cs" --tool "$tool" --target-processes all --error-exitcode 86 \
      "$java" "${jopts[@]}" -Dte4j.timeoutScale=20 -Dte4j.test.maxBytes=$((4 << 20)) -cp "$cp" \
      org.testng.TestNG -d "$out/$tool" -verbose 2 -groups cuda-inprocess -testjar "$tests_jar" 2>&1 \
      | grep -E "^(PASSED|FAILED|SKIPPED)|Total tests|ERROR SUMMARY|=========" | tail -25
    st=${PIPESTATUS[0]}
    echo "compute-sanitizer $tool exit $st"
    [ "$st" = 0 ] || rc=1
  done
fi

# Again at the end, where a caller that keeps only the last lines of the output looks.
echo "== summary"
host_tools
for r in "$out"/*/testng-results.xml; do
  [ -e "$r" ] && bash "$(dirname "$0")/testng-report.sh" "$r" "$(basename "$(dirname "$r")")"
done
echo "gpu-tests.sh exit $rc (0 = everything ran and passed)"
exit $rc
