#!/usr/bin/env bash
# Installs, on Debian/Ubuntu, the build tools te4j needs that are missing: JDK 17, Maven, CMake,
# g++, clang-format (scripts/format.sh), clang with libFuzzer and OpenSSL's headers (scripts/fuzz.sh), rdma-core's headers
# (libibverbs-dev), etcd (te4j-etcd's tests), iproute2 for the network-namespace tests, and the
# newest kernel headers package,
# whose include/linux/mlx5/mlx5_ifc.h test_devx_layout checks the DevX command layout against.
# nvcc is optional: with it (e.g. the CUDA toolkit in /usr/local/cuda) the CUDA platform is
# built too. NVRTC (KernelCompiler's run-time compiler; compiles without a GPU) comes from
# scripts/fetch-nvrtc.sh when the machine has none: Debian's libnvrtc12, unpacked into a cache
# folder, not installed (scripts/test.sh points the tests at it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
need=()
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn   >/dev/null || need+=(maven)
command -v cmake >/dev/null || need+=(cmake)
command -v g++   >/dev/null || need+=(g++)
command -v make  >/dev/null || need+=(make)
command -v ip    >/dev/null || need+=(iproute2)
# The C/C++/CUDA style check of scripts/test.sh (scripts/format.sh --check, .clang-format).
command -v clang-format >/dev/null || need+=(clang-format)
# rdma-core's headers (infiniband/mlx5dv.h): the mlx5 backend is built from them (rdma-core itself
# is loaded at run time, never linked) and the RDMA exact-format tests check against them.
[ -e /usr/include/infiniband/mlx5dv.h ] || need+=(libibverbs-dev)
# etcd for te4j-etcd's tests, which start their own servers on free loopback ports.
command -v etcd  >/dev/null || [ -x /usr/bin/etcd ] || need+=(etcd-server)
# clang with compiler-rt's libFuzzer and sanitizers for scripts/fuzz.sh (its own build folder; te4j
# itself builds with g++), and OpenSSL's headers for the target that checks the NIC's HMAC.
command -v clang++ >/dev/null || need+=(clang)
compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null ||
  compgen -G "/usr/lib/llvm-*/lib/clang/*/lib/x86_64-*/libclang_rt.fuzzer.a" >/dev/null || need+=(libclang-rt-dev)
[ -e /usr/include/openssl/hmac.h ] || need+=(libssl-dev)
# A header new enough to declare the DevX umem fields of create_qp_in (kernel 6.4 or so).
ifc_ok() { grep -qs wq_umem_offset /usr/src/linux-headers-*/include/linux/mlx5/mlx5_ifc.h; }
if [ ${#need[@]} -gt 0 ] || ! ifc_ok; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  if ! ifc_ok; then
    headers=$(bash "$here/kernel-headers-package.sh")
    if [ -n "$headers" ]; then
      need+=("$headers")
    else
      echo "warning: apt offers no linux-headers package: test_devx_layout will fail" >&2
    fi
  fi
  if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
  # Debian 12's own kernel (6.1) predates the DevX umem fields; the 6.12 headers come from
  # bookworm-security, which a standard install lists but a minimal chroot may not.
  if ! ifc_ok; then
    echo "warning: the newest linux-headers package apt offers has an mlx5_ifc.h without the DevX umem" \
      "fields (kernel 6.4+): test_devx_layout will fail; enable the distribution's security and updates" \
      "sources (Debian 12: bookworm-security carries 6.12) and run this again" >&2
  fi
fi
# NVRTC last: it is optional (without it the NVRTC tests skip, saying why).
if nvrtc=$(bash "$here/fetch-nvrtc.sh"); then
  echo "NVRTC: $nvrtc (for your own runs: export TE4J_NVRTC_LIBRARY=$nvrtc)" >&2
else
  echo "warning: no NVRTC: KernelCompiler's tests will skip" >&2
fi
