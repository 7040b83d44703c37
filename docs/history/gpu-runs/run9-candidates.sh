#!/bin/bash
# v6 candidates: arrival=gpu (target 4), signal=set (targets 3, 7): correctness, then the rates and
# round trips beside the defaults, raw flag, floor and NVSHMEM in one run.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && export JAVA=/tmp/jre/bin/java
echo "== test_host_ops"; timeout 60 .carry/native/test_host_ops 2>&1 | tail -1
echo "== test_cuda_ops"; TE4J_CUDA_OPS_VARIANTS="default;arrival=gpu;put=cluster,arrival=gpu;signal=set" timeout 150 .carry/native/test_cuda_ops > $OUT/ops.log 2>&1; echo "rc=$?"; tail -1 $OUT/ops.log; grep -E "^\s+\[|FAIL" $OUT/ops.log | head -8
B=.carry/art/te4j-0.1.0-SNAPSHOT-bench.jar
J="$JAVA --enable-native-access=ALL-UNNAMED -Xmx8g -jar $B --timeout 60s"
timeout 100 $J --platform cuda --mode latency --latency-sizes 8 --iterations 20 --warmup 2 --variant default --variant wait=spin --variant signal=set --variant signal=set,wait=spin --save-rows $OUT/lat.rows > $OUT/lat.log 2>&1
echo "lat exit $?"; grep -E "^\[|ping-pong|flag" $OUT/lat.log | head -20
timeout 200 $J --platform cuda --mode rate --rate-sizes 4K,64K --blocks 0 --iterations 20 --warmup 2 --variant default --variant arrival=gpu --variant put=cluster --variant put=cluster,arrival=gpu --peers --peers-dir .carry/peers --save-rows $OUT/rate.rows > $OUT/rate.log 2>&1
echo "rate exit $?"; grep -E "graph|putmem_on_stream|loop" $OUT/rate.log | grep -v "1048576\|16777216" | head -30
