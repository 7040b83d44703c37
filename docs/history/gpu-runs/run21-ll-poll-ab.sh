#!/bin/bash
# A/B of the LL poll loop: A = nested loop (clock after each 256 polls), B = one loop with a
# polls%256 clock test; each jar twice, alternating, in one call.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && JAVA=/tmp/jre/bin/java
for i in 1 2; do for v in A B; do
  jar=.carry/art/te4j-0.1.0-SNAPSHOT-bench.jar; [ $v = B ] && jar=.carry/art/te4jB-bench.jar
  echo "== $v run $i"
  timeout 60 $JAVA --enable-native-access=ALL-UNNAMED -jar $jar --timeout 60s \
    --platform cuda --mode latency --latency-sizes 8,64 --iterations 20 --warmup 2 2>&1 | grep -E "^(te4j|raw)"
done; done
