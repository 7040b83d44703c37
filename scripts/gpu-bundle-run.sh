#!/usr/bin/env bash
# The one command of the GPU bundle (scripts/gpu-bundle.sh puts this file at te4j-gpu/run.sh):
# on a GPU host with no Java, Maven or network,
#
#   tar -xJf te4j-gpu.tar.xz && ./te4j-gpu/run.sh [OUTDIR]
#
# runs scripts/gpu-tests.sh over the bundle with the bundle's own Java runtime: the CUDA and host
# TestNG groups of the library's tests and te4j-bench, the examples, the CUDA native drivers and a short
# bench. It says first which host tools are missing and what each absence skips, and writes
# everything (console, TestNG results, driver logs, bench output) to ONE archive,
# OUTDIR/te4j-gpu-results.tar.gz (OUTDIR defaults to the current folder).
# The environment of scripts/gpu-tests.sh passes through (PARTS, SANITIZE, CUDA_VISIBLE_DEVICES,
# TESTNG_EXCLUDE...); TE4J_GROUPS replaces the TestNG groups (default cuda,host).
# Exit status: gpu-tests.sh's (0 only when everything ran and passed).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
outdir=${1:-$PWD}
mkdir -p "$outdir" || exit 1
outdir=$(cd "$outdir" && pwd)
java="$here/java/bin/java"
# The bundle's etcd and ip, where the host has none of its own (gpu-bundle.sh says why both).
[ -d "$here/tools/bin" ] && export PATH="$PATH:$here/tools/bin"

# The drivers load libte4j.so from beside tests/ (their RUNPATH is $ORIGIN:$ORIGIN/..). The
# bundle carries that library once, inside te4j's platform jar: JavaCPP's loader unpacks it
# (and checks that it loads), and the drivers get that copy.
lib_dir="$here/target/cmake"
if [ ! -e "$lib_dir/libte4j.so" ]; then
  cache="$here/.javacpp-cache"
  "$java" -Dorg.bytedeco.javacpp.cachedir="$cache" -cp "$here/target/*:$here/target/lib/*" \
    io.github.te4j.Availability >/dev/null 2>&1
  so=$(find "$cache" -name libte4j.so -print -quit 2>/dev/null)
  if [ -n "$so" ]; then
    cp "$so" "$lib_dir/libte4j.so"
  else
    echo "could not unpack libte4j.so from te4j's platform jar: the native drivers will fail to start"
  fi
fi

JAVA="$java" OUT="$outdir" bash "$here/scripts/gpu-tests.sh" "$here" "${TE4J_GROUPS:-cuda,host}"
