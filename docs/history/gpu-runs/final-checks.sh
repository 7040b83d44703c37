#!/bin/bash
# Final commit: the CUDA and rdma-hw TestNG groups, the example, the C++ drivers.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && export JAVA=/tmp/jre/bin/java
echo "== test_cuda_ops (every variant)"; timeout 150 .carry/native/test_cuda_ops > $OUT/ops.log 2>&1; echo "rc=$?"; tail -1 $OUT/ops.log
echo "== test_ll_cuda"; timeout 60 .carry/native/test_ll_cuda > $OUT/ll.log 2>&1; echo "rc=$?"; tail -1 $OUT/ll.log
echo "== test_rdma_cuda_softnic"; timeout 100 .carry/native/test_rdma_cuda_softnic > $OUT/soft.log 2>&1; echo "rc=$?"; tail -1 $OUT/soft.log
timeout 300 bash scripts/gpu-tests.sh .carry/art cuda,rdma-hw > $OUT/gpu-tests.log 2>&1; echo "gpu-tests rc=$? (skips give 1)"
grep -E "^(PASSED|FAILED|SKIPPED)|Total tests|example passed|example FAILED" $OUT/gpu-tests.log | cut -c1-200
