#!/usr/bin/env bash
# Makes NVRTC (CUDA's run-time compiler, which te4j's KernelCompiler loads with dlopen) available
# and prints the path of the libnvrtc to use (what TE4J_NVRTC_LIBRARY names). Exit 1, with the
# reason on stderr, when it cannot.
#
# An NVRTC 12 or newer already on this machine (the CUDA toolkit's lib64, or the loader's path) is
# used as it is. Otherwise Debian's own NVRTC is unpacked into a cache folder
# (TE4J_NVRTC_CACHE, default ~/.cache/te4j/nvrtc), which needs no GPU and no NVIDIA repository:
# - the version: te4j's device headers need nothing beyond NVRTC's built-in headers, except
#   mc_grid_sync, which needs the toolkit's <cooperative_groups.h> (KernelCompiler adds a toolkit
#   it finds; without one that call alone fails, naming the fix). The CUDA 13 toolkit's libcu++
#   (cuda/std), which cooperative groups include, refuses NVRTC before 12 ("CUDA versions below
#   12 are not supported"), so bookworm's non-free libnvrtc11.2 (NVRTC 11.8) is too old beside
#   it; trixie's non-free libnvrtc12 (NVRTC 12.4) is not, and it needs only libc6 >= 2.34
#   (bookworm has 2.36). The toolkit's headers themselves are not fetched: Debian ships them
#   only in nvidia-cuda-dev, a 0.9 GB package.
# - the way: apt-get with a state of its own (sources, lists and cache in the cache folder, no
#   dpkg status) downloads the two packages, checked against Debian's archive keyring as any
#   apt download is, and dpkg-deb -x unpacks them. Nothing is installed: the system's sources
#   and package set stay as they were (no trixie package for apt to upgrade or resolve against),
#   and no root is needed.
# te4j finds NVRTC's builtins library beside the libnvrtc it was given, so the printed path alone
# is enough: export TE4J_NVRTC_LIBRARY=<printed path> (or -Dte4j.nvrtc.library=).
set -euo pipefail

suite=trixie
package=libnvrtc12
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

say() { echo "fetch-nvrtc: $*" >&2; }

if [ -n "${TE4J_NVRTC_LIBRARY:-}" ]; then
  if [ -e "$TE4J_NVRTC_LIBRARY" ]; then echo "$TE4J_NVRTC_LIBRARY"; exit 0; fi
  say "TE4J_NVRTC_LIBRARY=$TE4J_NVRTC_LIBRARY does not exist; looking for another NVRTC"
fi

# One already here, newest first, as te4j's own search would find it.
for lib in /usr/local/cuda/lib64/libnvrtc.so.13 /usr/local/cuda/lib64/libnvrtc.so.12 \
           /usr/local/cuda/targets/*/lib/libnvrtc.so.13 /usr/local/cuda/targets/*/lib/libnvrtc.so.12; do
  if [ -e "$lib" ]; then echo "$lib"; exit 0; fi
done
for soname in libnvrtc.so.13 libnvrtc.so.12; do
  lib=$(/sbin/ldconfig -p 2>/dev/null | awk -v s="$soname" '$1 == s { print $NF; exit }')
  if [ -n "$lib" ]; then echo "$lib"; exit 0; fi
done

cache=${TE4J_NVRTC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/te4j/nvrtc}
found() { find "$cache/root" -name libnvrtc.so.12 2>/dev/null | head -1 || true; }
lib=$(found)
if [ -n "$lib" ] && compgen -G "$(dirname "$lib")/libnvrtc-builtins.so.12.*" >/dev/null; then
  echo "$lib"; exit 0
fi

if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  say "no NVRTC here and no apt-get/dpkg-deb to fetch Debian's; install NVRTC 12+ (the CUDA toolkit's libnvrtc)"
  exit 1
fi
if [ ! -r "$keyring" ]; then
  say "no NVRTC here and no Debian archive keyring ($keyring) to check Debian's packages with;"
  say "install the package debian-archive-keyring, or NVRTC 12+ (the CUDA toolkit's libnvrtc)"
  exit 1
fi

state=$cache/apt
rm -rf "$cache/root" "$state/debs"
mkdir -p "$state/sources" "$state/lists/partial" "$state/cache/archives/partial" "$state/debs" "$cache/root"
cat > "$state/sources/debian-$suite-non-free.sources" <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: non-free
Signed-By: $keyring
EOF
apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$state/sources"
          -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null")
# As root apt would drop to its _apt user, who cannot write into a private cache folder.
[ "$(id -u)" = 0 ] && apt_opts+=(-o "APT::Sandbox::User=root")
say "fetching Debian $suite non-free's $package into $cache"
if ! apt-get "${apt_opts[@]}" update -qq >&2; then
  say "apt-get update of Debian $suite non-free failed (no network to the Debian archive?)"
  exit 1
fi
# libnvrtc12 depends on the builtins package of its own minor version (libnvrtc-builtins12.4).
builtins=$(apt-cache "${apt_opts[@]}" show "$package" | sed -n 's/^Depends:.*\(libnvrtc-builtins[0-9.]*\).*/\1/p' | head -1)
if [ -z "$builtins" ]; then
  say "Debian $suite non-free offers no $package with a libnvrtc-builtins dependency"
  exit 1
fi
(cd "$state/debs" && apt-get "${apt_opts[@]}" download -qq "$package" "$builtins" >&2)
for deb in "$state/debs"/*.deb; do dpkg-deb -x "$deb" "$cache/root"; done
lib=$(found)
if [ -z "$lib" ]; then
  say "the unpacked $package holds no libnvrtc.so.12"
  exit 1
fi
say "NVRTC $(basename "$(readlink -f "$lib")" | sed 's/^libnvrtc\.so\.//') unpacked at $(dirname "$lib")"
echo "$lib"
