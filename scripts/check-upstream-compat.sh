#!/usr/bin/env bash
# check-upstream-compat.sh — compiles upstream Mooncake's Device API clients, unchanged, against
# te4j's shipped device headers (nvcc -c, no GPU needed) and prints the errors of each file.
#
#   scripts/check-upstream-compat.sh <mooncake-checkout-or-git-dir> [--control] [--keep]
#
# The clients: the transfer engine's example (example/device_transport_example.cu), the EP
# kernels (mooncake-ep/src/mooncake_ep_kernel.cu, mooncake_ep_elastic_kernel.cu) and the
# elastic transport header (mooncake-ep/include/elastic/mooncake_ep_elastic_transport.cuh).
# They are taken from the given checkout (or git directory: HEAD is extracted with git
# archive) into a temporary folder, upstream's own include/transport/device/ is removed there,
# and te4j's src/main/{cpp,cuda}/include come first on the include path; upstream's other headers
# (EP, cuda_alike.h, transfer_engine.h) stay beside them, as a user's build would have them.
#
# --control compiles the same files against upstream's own device headers as well (shows what
# the environment itself lacks). --keep leaves the temporary folder and the logs.
# Needs: nvcc (PATH or /usr/local/cuda/bin), git for a git directory; the EP headers include
# rdma-core's infiniband/mlx5dv.h (libibverbs-dev) and the example glog, gflags, jsoncpp and
# numa.h (libgoogle-glog-dev, libgflags-dev, libjsoncpp-dev, libnuma-dev). A missing one shows
# as a "fatal error: ... No such file" of that file, in both runs with --control.
# Exit status: 0 when every file compiled against te4j's headers, 1 otherwise, 2 on bad usage.
set -euo pipefail

usage() {
  echo "usage: $0 <mooncake-checkout-or-git-dir> [--control] [--keep]" >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
src="$1"
shift
control=0
keep=0
for arg in "$@"; do
  case "$arg" in
    --control) control=1 ;;
    --keep) keep=1 ;;
    *) usage ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
te4j_include="$here/src/main/cuda/include"
te4j_host_include="$here/src/main/cpp/include"
[[ -d "$te4j_include/transport/device" ]] || { echo "te4j headers not found under $te4j_include" >&2; exit 2; }
command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null 2>&1 || { echo "nvcc not found (install the CUDA toolkit or add it to PATH)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/te4j-upstream-compat.XXXXXX")"
cleanup() { [[ $keep -eq 1 ]] || rm -rf "$work"; }
trap cleanup EXIT

paths=(mooncake-ep/include mooncake-ep/src/mooncake_ep_kernel.cu mooncake-ep/src/mooncake_ep_elastic_kernel.cu
       mooncake-transfer-engine/include mooncake-transfer-engine/example/device_transport_example.cu)
mkdir -p "$work/upstream"
if [[ -d "$src/mooncake-ep" ]]; then
  for p in "${paths[@]}"; do
    mkdir -p "$work/upstream/$(dirname "$p")"
    cp -R "$src/$p" "$work/upstream/$p"
  done
  revision="$(git -C "$src" rev-parse HEAD 2>/dev/null || echo "a checkout without git")"
elif git --git-dir="$src" rev-parse --verify -q HEAD >/dev/null; then
  git --git-dir="$src" archive HEAD "${paths[@]}" | tar -x -C "$work/upstream"
  revision="$(git --git-dir="$src" rev-parse HEAD)"
else
  echo "$src is neither a Mooncake checkout nor a git directory" >&2
  exit 2
fi

# Upstream's device headers, kept aside for --control only.
mkdir -p "$work/upstream-device/transport"
mv "$work/upstream/mooncake-transfer-engine/include/transport/device" "$work/upstream-device/transport/device"
ln -s "$work/upstream/mooncake-transfer-engine/include/cuda_alike.h" "$work/upstream-device/cuda_alike.h"

# The elastic transport header is a header: compile a unit that includes only it.
printf '#include <elastic/mooncake_ep_elastic_transport.cuh>\n' > "$work/elastic_transport_unit.cu"

ep_inc=(-I"$work/upstream/mooncake-ep/include" -I"$work/upstream/mooncake-transfer-engine/include")
common=(-c -o /dev/null -arch=sm_90 -DUSE_CUDA --expt-relaxed-constexpr -w)
extra_inc=()
[[ -d /usr/include/jsoncpp ]] && extra_inc+=(-I/usr/include/jsoncpp)

names=(device_transport_example.cu mooncake_ep_kernel.cu mooncake_ep_elastic_kernel.cu mooncake_ep_elastic_transport.cuh)
files=("$work/upstream/mooncake-transfer-engine/example/device_transport_example.cu"
       "$work/upstream/mooncake-ep/src/mooncake_ep_kernel.cu"
       "$work/upstream/mooncake-ep/src/mooncake_ep_elastic_kernel.cu"
       "$work/elastic_transport_unit.cu")
stds=(-std=c++20 -std=c++17 -std=c++17 -std=c++17)

# compile <device-include-dirs...> -- <label>: one line per file, "<errors> <name>".
run_set() {
  local label="$1"
  shift
  local failed=0
  echo "== against $label"
  for i in "${!files[@]}"; do
    local log="$work/${label// /_}-${names[$i]}.log"
    if nvcc "${common[@]}" "${stds[$i]}" "$@" "${ep_inc[@]}" "${extra_inc[@]}" "${files[$i]}" >"$log" 2>&1; then
      printf '%4d errors  %s\n' 0 "${names[$i]}"
    else
      local n
      n="$(grep -cE '(error|fatal error)' "$log" || true)"
      [[ "$n" -gt 0 ]] || n=1
      printf '%4d errors  %s (first: %s)\n' "$n" "${names[$i]}" "$(grep -m1 -E 'error' "$log" | sed "s|$work/||g")"
      failed=1
    fi
  done
  return $failed
}

echo "upstream: $revision"
echo "te4j headers: $te4j_include"
status=0
run_set "te4j headers" -I"$te4j_include" -I"$te4j_host_include" || status=1
if [[ $control -eq 1 ]]; then
  run_set "upstream headers" -I"$work/upstream-device" || true
fi
[[ $keep -eq 1 ]] && echo "logs: $work"
exit $status
