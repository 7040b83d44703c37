#!/bin/bash
# LL words in flight: timing per setting in test_ll_cuda, SASS of its kernels and of the bench loop.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && JAVA=/tmp/jre/bin/java
echo "== test_ll_cuda"; timeout 90 .carry/native/test_ll_cuda; echo "rc=$?"
cuobjdump -sass .carry/native/test_ll_cuda > $OUT/test-ll-sass.txt 2>&1
cuobjdump -sass .carry/native/libte4j.so 2>/dev/null | awk '/Function : /{p = /bench_ll_kernel|bench_te4j_kernel/} p' > $OUT/bench-ll-sass.txt
timeout 60 $JAVA --enable-native-access=ALL-UNNAMED -jar .carry/art/te4j-0.1.0-SNAPSHOT-bench.jar --timeout 60s \
  --platform cuda --mode latency --latency-sizes 8,64,256,4K --iterations 20 --warmup 2 --variant default --variant wait=spin 2>&1 | grep -E "^(te4j|raw)"
