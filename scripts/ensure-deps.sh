#!/usr/bin/env bash
# Installs, on Debian/Ubuntu, the build tools te4j needs that are missing: JDK 17, Maven, CMake,
# g++ (and iproute2 for the network-namespace tests). nvcc is optional: with it (e.g. the CUDA
# toolkit in /usr/local/cuda) the CUDA platform is built too.
set -euo pipefail
need=()
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v mvn   >/dev/null || need+=(maven)
command -v cmake >/dev/null || need+=(cmake)
command -v g++   >/dev/null || need+=(g++)
command -v make  >/dev/null || need+=(make)
command -v ip    >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "installing: ${need[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
