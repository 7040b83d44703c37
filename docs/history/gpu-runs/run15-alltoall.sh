#!/bin/bash
# Final commit: the all-to-all bench on 2 GPUs beside NCCL (torch), the CUDA TestNG group (with
# the new all-to-all test), the example, and the C++ driver on the default knobs.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && export JAVA=/tmp/jre/bin/java
echo "== test_cuda_ops default"; TE4J_CUDA_OPS_VARIANTS="default;arrival=sys;signal=set" timeout 120 .carry/native/test_cuda_ops > $OUT/ops.log 2>&1; echo "rc=$?"; tail -1 $OUT/ops.log
echo "== alltoall"; timeout 300 $JAVA --enable-native-access=ALL-UNNAMED -Xmx8g -jar .carry/art/te4j-0.1.0-SNAPSHOT-bench.jar --timeout 60s --platform cuda --mode alltoall --ranks 2 --a2a-sizes 4K,64K,1M,16M,256M --iterations 10 --warmup 2 --peers --save-rows $OUT/a2a.rows > $OUT/a2a.log 2>&1; echo "exit $?"
grep -vE "^\[|INFO" $OUT/a2a.log | tail -25
timeout 280 bash scripts/gpu-tests.sh .carry/art cuda > $OUT/gpu-tests.log 2>&1; echo "gpu-tests rc=$? (2 skips expected: 3-GPU tests)"
grep -E "^(PASSED|FAILED|SKIPPED)|Total tests|example passed|example FAILED" $OUT/gpu-tests.log | cut -c1-200
