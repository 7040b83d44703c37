#!/usr/bin/env bash
# Issue 5 on the 2xH200 host in one command (about 5 minutes): what changed since the first run
# (new defaults, the lean putWithSignal kernel, the hybrid bulk variants, the ping-pong loop, the
# software-NIC RDMA series) beside the baselines, host platform, peers (NVSHMEM/NCCL) when
# present, and the performance target table printed LAST over all of it. Runs from prebuilt artifacts (no Maven needed there).
#
#   scripts/perf-gpu.sh
#   JAVA       java executable (default: java on PATH, else .carry/jre.tgz unpacked to /tmp/jre)
#   BENCH_JAR  the shaded bench jar (default: the newer of .carry/art/ and bench/target/
#              te4j-bench-<version>.jar)
#   PEERS      folder with run-peers.sh (default: .carry/peers, else shared/peers); PEERS=none skips
#   OUT        where logs and results go (default: /tmp/te4j-perf): perf-gpu.log (everything),
#              perf-issue5.csv (every row), perf-rows.txt (rows, RowCodec: rerun the report with
#              java -jar BENCH_JAR --report perf-rows.txt)
#   QUICK=1    fewer iterations (a smoke run)
#
# Variants (te4j-bench --variant; te4j/tuning.h and the bench's te4j/bench_knobs.h): put=auto|base|ce|cesm
# (te4j's) or put=u8|u16|u8c|tma|tma8|tma3|tmah|tmaq|cluster (the put kernel's experiment variants,
# compiled into te4j-bench's own libte4jbench), cesplit=50..95 (put=cesm's copy-engine percent),
# signal=red|atom|set, pdl=1|0, arrival=gpu|sys (first value = default), wait=sleep|spin,
# hostcopy=memmove|memcpy|nt, hostthreads=4|1|2|8, threads=N.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
if [ -z "${JAVA:-}" ] && ! command -v java >/dev/null && [ -f .carry/jre.tgz ]; then
  tar xzf .carry/jre.tgz -C /tmp && JAVA=/tmp/jre/bin/java  # the carried runtime
fi
java=${JAVA:-java}
jar=${BENCH_JAR:-$(ls -t .carry/art/te4j-bench-*.jar bench/target/te4j-bench-*.jar 2>/dev/null \
  | grep -v -- 'original-\|-tests.jar\|-sources.jar\|-javadoc.jar' | head -1)}
out=${OUT:-/tmp/te4j-perf}
mkdir -p "$out"
work=$(mktemp -d)
log="$out/perf-gpu.log"
: >"$log"
if [ -z "$jar" ] || [ ! -f "$jar" ]; then
  echo "perf-gpu: no bench jar (set BENCH_JAR)" | tee -a "$log"; exit 3
fi
peers=${PEERS:-}
if [ -z "$peers" ]; then
  for d in .carry/peers shared/peers; do [ -f "$d/run-peers.sh" ] && { peers=$d; break; }; done
fi
it=${QUICK:+3}; it=${it:-10}
bench() {  # name, seconds, args...: one te4j-bench run, rows kept in $work/NAME.rows
  local name=$1 secs=$2; shift 2
  echo "== $name: te4j-bench $*" | tee -a "$log"
  local t0=$SECONDS
  timeout -k 10 "$secs" "$java" --enable-native-access=ALL-UNNAMED -Xmx8g -jar "$jar" --timeout 60s \
    --save-rows "$work/$name.rows" "$@" 2>&1 | tee -a "$log" | grep -E "^te4j-bench|FAILED|Exception|failed"
  local st=${PIPESTATUS[0]}
  echo "   ($name: $((SECONDS - t0)) s, exit $st${st:+$([ "$st" = 124 ] && echo ': TIMED OUT')})" | tee -a "$log"
}

{
  echo "== host: $(hostname) $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv 2>&1 | head -4
  nvidia-smi topo -m 2>&1 | head -4
  "$java" -version 2>&1 | head -1
  echo "jar: $jar  peers: ${peers:-none}  TE4J_TUNING=${TE4J_TUNING:-}"
} | tee -a "$log"

# Run 4: the copy-engine routes beside the kernels, plus every row the target table needs.
# Defaults: put=auto,signal=red,pdl=1,arrival=gpu (earlier runs' variant sweeps: docs/history/PERFORMANCE-notebook.md).

# 1. Bulk put, <= 16 SMs (targets 1, 2): auto (the copy engine from 32 MiB since run 4), the
#    best SM kernels (tma8, u8: row 1s) and put=cesm (65 % by the copy engine, the rest by the
#    16 SMs at once; run 4: 376 GB/s, the two paths do not add up on NVLink).
bench bw16 120 --platform cuda --mode bandwidth --sizes 64M,1G --blocks 16 --threads 512 \
  --iterations "$it" --warmup 2 \
  --variant default --variant put=tma8 --variant put=u8 --variant put=cesm,cesplit=65

# 2. Bulk put, best on any SM count (target 1b).
bench bwany 80 --platform cuda --mode bandwidth --sizes 1G --blocks 132 --threads 512 \
  --iterations "$it" --warmup 2 --variant default --variant put=tma --variant put=cesm,cesplit=60

# 3. Mid sizes on te4j's own launch shape: the lean kernel vs u8 vs the copy engine.
bench bwmid 60 --platform cuda --mode bandwidth --sizes 64K,1M,16M --blocks 0 \
  --iterations "$it" --warmup 2 --variant default --variant put=u8 --variant put=ce

# 4. put(8 B)+signal ping-pong (target 3): the bench loop now resolves routes once and keeps
#    the payload in the signalling lane's registers; raw flag and the floor 3f beside it.
#    signal=set: the signal as mc_signal_set's release store instead of a remote atomic add.
bench lat 60 --platform cuda --mode latency --latency-sizes 8 --iterations 20 --warmup 2 \
  --variant default --variant wait=spin --variant signal=atom --variant signal=set \
  --variant signal=set,wait=spin

# 4b. The LL put (flag in every 8-byte word, no fence; v7) beside put+signal and the raw flag,
#     over message sizes: where the fence-free path wins and where its polling stops paying.
bench ll 60 --platform cuda --mode latency --latency-sizes 8,64,256,1K,4K --iterations 20 --warmup 2

# 5. putWithSignal back to back (targets 4, 5): the lean kernel (default), u8+pdl+red, and the
#    copy engine followed by the signal kernel (put=ce), the lean kernel as one thread-block
#    cluster (put=cluster: the blocks meet at the cluster barrier), 4 KiB (one block) and 64 KiB.
#    arrival=sys: the v2-v5 arrival (a system-scope fence per block; default since v6: one per op).
bench rate 120 --platform cuda --mode rate --rate-sizes 4K,64K --blocks 0 --iterations 20 --warmup 2 \
  --variant default --variant arrival=sys --variant put=u8,pdl=1,signal=red --variant put=ce \
  --variant put=cluster

# What else runs before the CPU-bound host step (run 4 saw the 1 MiB host put at 0.36-0.59 x
# memcpy here, 0.88-0.90 on the same host alone).
{ echo "== load before the host step: $(cat /proc/loadavg)"; ps -eo pid,pcpu,etimes,comm --sort=-pcpu | head -6; } >>"$log"

# 6. Host platform (targets 6, 7): defaults, signal=set, and hostthreads=1 (v7: puts of >= 4 MiB
#    copy in chunks on 4 threads by default; 1 = the single-thread copy of v0-v6).
bench host 90 --platform host --mode bandwidth,latency --sizes 1M,16M,64M --latency-sizes 8 \
  --iterations "$it" --warmup 2 --variant default --variant signal=set --variant hostthreads=1

# 7. Peers (NVSHMEM putmem_on_stream for target 4), skipped when the run is already long.
if [ -n "$peers" ] && [ "$peers" != none ] && [ "$SECONDS" -gt 300 ]; then
  echo "== peers skipped: $SECONDS s used already" | tee -a "$log"
elif [ -n "$peers" ] && [ "$peers" != none ]; then
  bench peers 150 --platform cuda --mode rate --rate-sizes 64K --blocks 0 --iterations 5 --warmup 1 \
    --peers --peers-dir "$peers"
fi

# 8. Software-NIC RDMA on the host platform (target 8, report only): put bandwidth, put+signal
#    round trip as stream ops (8 B and 4 KiB), putWithSignal rate; the NIC's counters as INFO.
bench rdma 90 --transport rdma-soft --platform host --mode bandwidth,latency,rate --sizes 64K,1M,16M \
  --latency-sizes 8,4K --rate-sizes 64K --iterations "$it" --warmup 2

rows=$(ls "$work"/*.rows 2>/dev/null | paste -sd, -)
cat "$work"/*.rows >"$out/perf-rows.txt" 2>/dev/null
echo "== report over: ${rows:-nothing}" | tee -a "$log"
"$java" -jar "$jar" --report "${rows:-/nonexistent}" --format csv --output "$out/perf-issue5.csv" 2>&1 |
  tee -a "$log"
rc=${PIPESTATUS[0]}
rm -rf "$work"
exit "$rc"
