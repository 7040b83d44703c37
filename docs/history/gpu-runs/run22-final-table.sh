#!/bin/bash
# Final table (issue 5, v7): perf-gpu.sh, then the LL driver under the four compute-sanitizer tools.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")/../.."  # the repository root
OUT=$OUT BENCH_JAR=.carry/art/te4j-0.1.0-SNAPSHOT-bench.jar PEERS=.carry/peers bash scripts/perf-gpu.sh > $OUT/perf-stdout.txt 2>&1
echo "perf rc=$?"
sed -n '/== issue 5 targets/,$p' $OUT/perf-gpu.log | head -30
grep -E "^   \(" $OUT/perf-gpu.log
for tool in memcheck racecheck synccheck initcheck; do
  timeout 90 compute-sanitizer --tool $tool .carry/native/test_ll_cuda quick > $OUT/ll-$tool.log 2>&1
  echo "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $OUT/ll-$tool.log | tail -1) $(grep -c 'all checks passed' $OUT/ll-$tool.log)"
done
