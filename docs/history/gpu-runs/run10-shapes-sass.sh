#!/bin/bash
# v6 (arrival=gpu default, solo-lane ping-pong): correctness, SASS of the latency kernels, the
# ping-pong variants and a 64 KiB launch-shape sweep beside NVSHMEM.
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/../.."  # the repository root
tar xzf .carry/jre.tgz -C /tmp && export JAVA=/tmp/jre/bin/java
echo "== test_cuda_ops"; TE4J_CUDA_OPS_VARIANTS="default;arrival=sys;put=cluster;signal=set" timeout 150 .carry/native/test_cuda_ops > $OUT/ops.log 2>&1; echo "rc=$?"; tail -1 $OUT/ops.log; grep -E "^\s+\[|FAIL" $OUT/ops.log | head -8
CO=$(ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || command -v cuobjdump)
if [ -n "$CO" ]; then
  $CO -sass .carry/native/libte4j.so > $OUT/sass-all.txt 2>&1
  awk '/Function : .*bench_te4j_kernelILb1ELi2E|Function : .*bench_raw_flag_kernelILb1E|Function : .*mc_put_lean_kernelILb0E/{p=1} p&&/\.\.\.\.\.\.\.\.\.\./{p=0} p' $OUT/sass-all.txt > $OUT/sass-latency.txt
  wc -l $OUT/sass-all.txt $OUT/sass-latency.txt; rm -f $OUT/sass-all.txt
else echo "no cuobjdump"; fi
B=.carry/art/te4j-0.1.0-SNAPSHOT-bench.jar
J="$JAVA --enable-native-access=ALL-UNNAMED -Xmx8g -jar $B --timeout 60s"
timeout 100 $J --platform cuda --mode latency --latency-sizes 8 --iterations 20 --warmup 2 --variant default --variant wait=spin --variant signal=set --variant signal=set,wait=spin --save-rows $OUT/lat.rows > $OUT/lat.log 2>&1
echo "lat exit $?"; grep -E "^te4j|^raw" $OUT/lat.log | head -20
timeout 240 $J --platform cuda --mode rate --rate-sizes 64K --blocks 8,16,32 --iterations 20 --warmup 2 --variant default --variant threads=256 --variant threads=128 --variant arrival=sys --peers --peers-dir .carry/peers --save-rows $OUT/rate.rows > $OUT/rate.log 2>&1
echo "rate exit $?"; grep -E "graph|putmem_on_stream|C\+\+ loop" $OUT/rate.log | grep -E "us/op|^te4j" | grep -v "1048576\|16777216" | head -40
