#!/usr/bin/env bash
# The software NIC against raw TCP across a veth pair: two te4j-bench ranks in two network
# namespaces (root, iproute2), rank 0 reporting. Arguments after the jar go to both ranks.
#   scripts/bench-soft-netns.sh bench/target/te4j-bench-0.1.0-SNAPSHOT.jar \
#       --mode latency,bandwidth,rate --latency-sizes 8 --sizes 4K,1M,16M --rate-sizes 4K --targets
set -u
jar=${1:?usage: $0 TE4J_BENCH_JAR [bench options]}
shift
a=te4jsoft-a b=te4jsoft-b ipa=10.213.251.1 ipb=10.213.251.2
cleanup() { ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; }
trap cleanup EXIT
cleanup
ip netns add "$a" && ip netns add "$b" && ip link add t4sa type veth peer name t4sb &&
  ip link set t4sa netns "$a" && ip link set t4sb netns "$b" &&
  ip -n "$a" addr add "$ipa/24" dev t4sa && ip -n "$b" addr add "$ipb/24" dev t4sb &&
  ip -n "$a" link set t4sa up && ip -n "$b" link set t4sb up &&
  ip -n "$a" link set lo up && ip -n "$b" link set lo up || { echo "cannot make the namespaces (root?)" >&2; exit 2; }
common=(--transport rdma-soft --platform host --ranks 2 --rendezvous "$ipa:29611" --timeout 120s "$@")
# Every wait of the bench is bounded; the outer timeout only guards against a wedged JVM.
ip netns exec "$b" timeout 600 java -jar "$jar" "${common[@]}" --rank 1 --soft-nic "soft@$ipb" \
  > "${TMPDIR:-/tmp}/bench-soft-netns-rank1.log" 2>&1 &
rank1=$!
ip netns exec "$a" timeout 600 java -jar "$jar" "${common[@]}" --rank 0 --bind "$ipa" --soft-nic "soft@$ipa"
rc=$?
wait "$rank1" || { echo "rank 1 failed: see ${TMPDIR:-/tmp}/bench-soft-netns-rank1.log" >&2; rc=1; }
exit $rc
