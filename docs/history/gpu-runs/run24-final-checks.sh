#!/bin/bash
# Final commit: the GPU groups, and the LL series once more beside put+signal and the raw flag.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
bash docs/gpu-runs/final-checks.sh
JAVA=/tmp/jre/bin/java
timeout 60 $JAVA --enable-native-access=ALL-UNNAMED -jar .carry/art/te4j-0.1.0-SNAPSHOT-bench.jar --timeout 60s \
  --platform cuda --mode latency --latency-sizes 8 --iterations 20 --warmup 2 --variant default --variant wait=spin --targets 2>&1 | grep -E "^(te4j|raw)|^3"
