#!/bin/bash
# Final commit: the GPU groups (docs/gpu-runs/final-checks.sh), test_copy_helpers on the GPU
# host's 32 cores, then scripts/perf-gpu.sh once more (a repeat of run 22 on the final code).
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
bash docs/gpu-runs/final-checks.sh
echo "== test_copy_helpers"; timeout 60 .carry/native/test_copy_helpers 2>&1 | tail -1
OUT=$OUT BENCH_JAR=.carry/art/te4j-0.1.0-SNAPSHOT-bench.jar PEERS=.carry/peers bash scripts/perf-gpu.sh > $OUT/perf-stdout.txt 2>&1
echo "perf rc=$?"
sed -n '/== issue 5 targets/,$p' $OUT/perf-gpu.log | head -30
