#!/usr/bin/env bash
# Makes the GPU bundle: one archive that runs te4j's GPU checks on a GPU host with no Java, Maven
# or network. On that host:
#
#   tar -xJf te4j-gpu.tar.xz && ./te4j-gpu/run.sh [OUTDIR]
#
# (scripts/gpu-bundle-run.sh, which runs scripts/gpu-tests.sh over the bundle and writes
# OUTDIR/te4j-gpu-results.tar.gz). The archive holds te4j-gpu/ with
#   java/                      a jlink runtime of this JDK with the modules jdeps finds in the jars
#   target/                    the library's jar, its natives jar, its tests jar (tests and test
#                              support) and lib/ (TestNG, JavaCPP, the CUDA presets, a logger)
#   bench/target/         the plain bench jar, its tests jar, and lib/ with only the bench's
#                              dependencies that target/ lacks (each jar, and so each
#                              native library, once: checked below)
#   examples/target/      the examples jar
#   target/cmake/tests/   the native test drivers, RUNPATH $ORIGIN:$ORIGIN/.. only (checked
#                              below); run.sh puts libte4j.so beside tests/ from te4j's jar
#   scripts/gpu-tests.sh, scripts/testng-report.sh, run.sh
#   tools/                     etcd and ip from this machine, for a host without them (NO_TOOLS=1: none)
#
#   scripts/gpu-bundle.sh [ARCHIVE]    (default target/te4j-gpu.tar.xz)
#   NO_BUILD=1  uses the build outputs as they are (default: mvn package -DskipTests first)
#   FORMAT=gz   a .tar.gz instead of .tar.xz (for a host without xz; larger)
# Fails when the archive exceeds 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
format=${FORMAT:-xz}
archive=${1:-target/te4j-gpu.tar.$format}
max_bytes=$((60 << 20))

if [ "${NO_BUILD:-0}" != 1 ]; then
  [ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
  mvn -B -ntp -q -f parent/pom.xml package -DskipTests -pl :te4j,:te4j-bench,:te4j-examples -am
fi

# The one build output matching a pattern; a missing one stops the bundle.
one() {
  local f
  f=$(ls $1 2>/dev/null | grep -v -- '-sources.jar\|-javadoc.jar' | head -1 || true)
  [ -n "$f" ] || { echo "gpu-bundle: no $1 (build with mvn package first)" >&2; exit 1; }
  echo "$f"
}
tests_jar=$(one "target/te4j-*-tests.jar")
# the API jar: te4j-<v>.jar, the one without a classifier
lib_jar=$(ls target/te4j-*.jar 2>/dev/null | grep -v -- '-tests.jar\|-sources.jar\|-javadoc.jar\|-headers.jar\|-linux-' | head -1 || true)
[ -n "$lib_jar" ] || { echo "gpu-bundle: no target/te4j-<v>.jar (build with mvn package first)" >&2; exit 1; }
natives_jar=$(one "target/te4j-*-linux-*.jar")
plain_bench=$(one "bench/target/original-te4j-bench-*.jar")
bench_tests=$(one "bench/target/te4j-bench-*-tests.jar")
examples_jar=$(one "examples/target/te4j-examples-*[0-9T].jar")
for d in target/lib bench/target/lib target/cmake/tests; do
  [ -d "$d" ] || { echo "gpu-bundle: no $d (build with mvn package first)" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
b="$stage/te4j-gpu"
mkdir -p "$b/target/lib" "$b/bench/target/lib" "$b/examples/target" \
  "$b/target/cmake/tests" "$b/scripts"

cp "$tests_jar" "$lib_jar" "$natives_jar" "$b/target/"
cp target/lib/*.jar "$b/target/lib/"
# The plain jar under the shaded one's name (scripts/gpu-tests.sh finds it so).
cp "$plain_bench" "$b/bench/target/$(basename "$plain_bench" | sed 's/^original-//')"
cp "$bench_tests" "$b/bench/target/"
for j in bench/target/lib/*.jar; do
  [ -e "$b/target/lib/$(basename "$j")" ] || [ -e "$b/target/$(basename "$j")" ] || cp "$j" "$b/bench/target/lib/"
done
cp "$examples_jar" "$b/examples/target/"
cp scripts/gpu-tests.sh scripts/testng-report.sh "$b/scripts/"
cp scripts/gpu-bundle-run.sh "$b/run.sh"
chmod +x "$b/run.sh" "$b/scripts/gpu-tests.sh"

# Every native library once, across all the jars (a second copy is dead weight, and two
# different ones under one name would load whichever comes first).
dups=$(for j in $(find "$b" -name '*.jar'); do unzip -Z1 "$j" | { grep '\.so[.0-9]*$' || true; }; done |
  sed 's|.*/||' | sort | uniq -d)
if [ -n "$dups" ]; then
  echo "gpu-bundle: native libraries carried more than once: $dups" >&2
  exit 1
fi

# The native drivers, each with a RUNPATH of $ORIGIN entries only (else it names a folder of
# this machine, and on the GPU host a library there or nothing).
for t in target/cmake/tests/*; do
  [ -f "$t" ] && [ -x "$t" ] || continue
  runpath=$(readelf -d "$t" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  if [ -n "$runpath" ] && tr ':' '\n' <<<"$runpath" | grep -qv '^\$ORIGIN'; then
    echo "gpu-bundle: $t has RUNPATH $runpath (rebuild: CMakeLists.txt gives drivers \$ORIGIN only)" >&2
    exit 1
  fi
  cp "$t" "$b/target/cmake/tests/"
done

# The host tools some checks need that a bare GPU host may lack: etcd (a static-enough Go
# program: libc only) and ip (iproute2, with the libraries it links beside it). run.sh appends
# tools/bin to PATH, so the host's own tools still win. ip starts through the loader with
# --library-path rather than LD_LIBRARY_PATH: `ip netns exec NS java ...` must not hand these
# libraries to the programs it runs.
if [ "${NO_TOOLS:-0}" != 1 ]; then
  mkdir -p "$b/tools/bin" "$b/tools/lib" "$b/tools/libexec"
  etcd_bin=$(command -v etcd || true)
  if [ -n "$etcd_bin" ]; then
    cp "$etcd_bin" "$b/tools/bin/etcd"
    echo "gpu-bundle: carries etcd ($("$etcd_bin" --version 2>/dev/null | head -1))"
  else
    echo "gpu-bundle: no etcd here (apt-get install etcd-server): the bundle's real-etcd tests skip where the host has none"
  fi
  ip_bin=$(command -v ip || true)
  if [ -n "$ip_bin" ]; then
    cp "$ip_bin" "$b/tools/libexec/ip"
    ldd "$ip_bin" | awk '/=> \// {print $3}' | grep -v '/libc\.so\|/ld-linux' | xargs -r cp -L -t "$b/tools/lib/"
    cat >"$b/tools/bin/ip" <<'IP'
#!/bin/sh
d=$(cd "$(dirname "$0")/.." && pwd)
exec /lib64/ld-linux-x86-64.so.2 --library-path "$d/lib" "$d/libexec/ip" "$@"
IP
    chmod +x "$b/tools/bin/ip"
    "$b/tools/bin/ip" -V >/dev/null || { echo "gpu-bundle: the carried ip does not start" >&2; exit 1; }
    echo "gpu-bundle: carries ip ($("$b/tools/bin/ip" -V))"
  else
    echo "gpu-bundle: no ip here (apt-get install iproute2): the bundle's veth-pair tests skip where the host has none"
  fi
fi

# A Java runtime with exactly the modules the carried jars use, as jdeps finds them. jdeps reads
# their classes unpacked: given the jars, it resolves the module-info of those that have one
# and stops at a module they name but nobody ships (vert.x's optional netty proxy handler).
# A multi-release jar's classes for Java 17 and below count too.
classes="$stage/jdeps"
mkdir -p "$classes/base" "$classes/mr"
for j in $(find "$b" -name '*.jar'); do
  unzip -q -o "$j" '*.class' -x '*module-info.class' 'META-INF/*' -d "$classes/base" 2>/dev/null || true
  for v in $(unzip -Z1 "$j" 'META-INF/versions/*.class' 2>/dev/null | cut -d/ -f3 | sort -u); do
    [ "$v" -le 17 ] || continue
    unzip -q -o "$j" "META-INF/versions/$v/*.class" -x '*module-info.class' -d "$classes/mr" 2>/dev/null || true
  done
done
modules=$(jdeps --ignore-missing-deps --print-module-deps "$classes/base" \
  $(ls -d "$classes"/mr/META-INF/versions/* 2>/dev/null))
if ! [[ "$modules" =~ ^[a-z][a-z0-9.,]*$ ]]; then
  echo "gpu-bundle: jdeps did not name the modules: $modules" >&2
  exit 1
fi
echo "gpu-bundle: Java modules (jdeps): $modules"
jlink --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --output "$b/java"
"$b/java/bin/java" -version 2>&1 | head -1

mkdir -p "$(dirname "$archive")"
case "$format" in
  xz) tar -C "$stage" -cf - te4j-gpu | xz -9 -T2 >"$archive" ;;
  gz) tar -C "$stage" -czf "$archive" te4j-gpu ;;
  *) echo "gpu-bundle: FORMAT is xz or gz" >&2; exit 1 ;;
esac
bytes=$(stat -c %s "$archive")
echo "gpu-bundle: $archive, $((bytes >> 20)) MiB ($bytes bytes; unpacked $(du -sm "$b" | cut -f1) MiB)"
if [ "$bytes" -gt "$max_bytes" ]; then
  echo "gpu-bundle: larger than 60 MiB" >&2
  exit 1
fi
flag=$([ "$format" = xz ] && echo J || echo z)
echo "on the GPU host: tar -x${flag}f $(basename "$archive") && ./te4j-gpu/run.sh OUTDIR"
