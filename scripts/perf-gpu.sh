#!/usr/bin/env bash
# Issue 5 on the 2xH200 host in one command (< 8 minutes): every te4j variant beside its
# baselines, host platform included, peers (NVSHMEM/NCCL) when present, and the issue-5 target
# table printed LAST over all of it. Runs from prebuilt artifacts (no Maven needed there).
#
#   scripts/perf-gpu.sh
#   JAVA       java executable (default: java on PATH, else .carry/jre.tgz unpacked to /tmp/jre)
#   BENCH_JAR  the shaded bench jar (default: the newer of .carry/art/ and target/ te4j-*-bench.jar)
#   PEERS      folder with run-peers.sh (default: .carry/peers, else ../shared/peers); PEERS=none skips
#   OUT        where logs and results go (default: /tmp/te4j-perf): perf-gpu.log (everything),
#              perf-issue5.csv (every row), perf-rows.txt (rows, RowCodec: rerun the report with
#              java -jar BENCH_JAR --report perf-rows.txt)
#   QUICK=1    fewer iterations (a smoke run)
#
# Variants (te4j/tuning.h; te4j-bench --variant): put=base|u8|u16|u8c|tma|tma8|tma3,
# signal=atom|red, pdl=0|1, wait=sleep|spin, hostcopy=memmove|memcpy|nt, threads=N.
set -uo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
[ -d /usr/local/cuda/bin ] && export PATH=/usr/local/cuda/bin:$PATH
if [ -z "${JAVA:-}" ] && ! command -v java >/dev/null && [ -f .carry/jre.tgz ]; then
  tar xzf .carry/jre.tgz -C /tmp && JAVA=/tmp/jre/bin/java  # the carried runtime
fi
java=${JAVA:-java}
jar=${BENCH_JAR:-$(ls -t .carry/art/te4j-*-bench.jar target/te4j-*-bench.jar 2>/dev/null | head -1)}
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
  for d in .carry/peers ../shared/peers; do [ -f "$d/run-peers.sh" ] && { peers=$d; break; }; done
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

# 1. Bulk put, <= 16 SMs: every copy variant at 64 MiB and 1 GiB (targets 1, 2).
bench bw16 120 --platform cuda --mode bandwidth --sizes 64M,1G --blocks 16 --threads 512 \
  --iterations "$it" --warmup 2 \
  --variant default --variant put=u8 --variant put=u16 --variant put=u8c \
  --variant put=tma --variant put=tma8 --variant put=tma3 \
  --variant put=u8,threads=1024 --variant threads=1024

# 2. Bulk put, best on any SM count (target 1b).
bench bwany 90 --platform cuda --mode bandwidth --sizes 1G --blocks 32,132 --threads 512 \
  --iterations "$it" --warmup 2 --variant default --variant put=u8 --variant put=tma

# 3. put(8 B)+signal ping-pong, one warp a side (target 3), the raw flag and the floor.
bench lat 60 --platform cuda --mode latency --latency-sizes 8 --iterations 20 --warmup 2 \
  --variant default --variant wait=spin --variant signal=red --variant wait=spin,signal=red

# 4. 64 KiB putWithSignal back to back: Java loop, Java graph, C++ loop (targets 4, 5).
bench rate 90 --platform cuda --mode rate --rate-sizes 64K --blocks 0,4 --iterations 20 --warmup 2 \
  --variant default --variant put=u8 --variant put=u8,pdl=1 --variant put=u8,pdl=1,signal=red \
  --variant put=u8,pdl=1,threads=1024

# 5. Host platform (targets 6, 7).
bench host 90 --platform host --mode bandwidth,latency --sizes 1M,16M,64M --latency-sizes 8 \
  --iterations "$it" --warmup 2 --variant default --variant hostcopy=memcpy --variant hostcopy=nt \
  --variant wait=spin

# 6. Peers (NVSHMEM putmem_on_stream for target 4), last: they take minutes to build and run.
# Skipped when the runs above took long: the whole script stays under 8 minutes.
if [ -n "$peers" ] && [ "$peers" != none ] && [ "$SECONDS" -gt 300 ]; then
  echo "== peers skipped: $SECONDS s used already (run them alone: PEERS=... with the rate step)" | tee -a "$log"
elif [ -n "$peers" ] && [ "$peers" != none ]; then
  bench peers 180 --platform cuda --mode rate --rate-sizes 64K --blocks 0 --iterations 5 --warmup 1 \
    --peers --peers-dir "$peers"
fi

# Software-NIC RDMA (target 8): measured here once te4j-bench has --transport rdma-soft.
timeout 60 "$java" -jar "$jar" --transport rdma-soft --platform host --mode latency --iterations 1 \
  --warmup 0 --timeout 10s >/dev/null 2>&1
st=$?
if [ "$st" != 3 ] && [ "$st" != 2 ]; then  # 3 = unavailable in this build, 2 = unknown option
  bench rdma 90 --transport rdma-soft --platform host --mode bandwidth,latency --sizes 64K,1M,16M \
    --latency-sizes 8 --iterations "$it" --warmup 2
fi

rows=$(ls "$work"/*.rows 2>/dev/null | paste -sd, -)
cat "$work"/*.rows >"$out/perf-rows.txt" 2>/dev/null
echo "== report over: ${rows:-nothing}" | tee -a "$log"
"$java" -jar "$jar" --report "${rows:-/nonexistent}" --format csv --output "$out/perf-issue5.csv" 2>&1 |
  tee -a "$log"
rc=${PIPESTATUS[0]}
rm -rf "$work"
exit "$rc"
