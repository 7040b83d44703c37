#!/bin/bash
# LL put first look: the CUDA driver, the SASS of the bench loop, the latency series.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export PATH=/usr/local/cuda/bin:$PATH
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && JAVA=/tmp/jre/bin/java
echo "== test_ll_cuda"; timeout 90 .carry/native/test_ll_cuda; echo "rc=$?"
cuobjdump -sass .carry/native/libte4j.so 2>/dev/null | awk '/Function : /{p = /bench_ll_kernel|bench_raw_flag_kernel/} p' > $OUT/ll-sass.txt
wc -l $OUT/ll-sass.txt
timeout 120 $JAVA --enable-native-access=ALL-UNNAMED -Xmx8g -jar .carry/art/te4j-0.1.0-SNAPSHOT-bench.jar --timeout 60s \
  --platform cuda --mode latency --latency-sizes 8,64,256,4K --iterations 20 --warmup 2 \
  --variant default --variant wait=spin --targets --output $OUT/lat.txt 2>&1 | tail -40
