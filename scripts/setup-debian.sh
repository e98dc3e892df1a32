#!/usr/bin/env bash
# Installs every Debian package stalldx builds and tests with. Idempotent; run as root (or with sudo).
# python3-torch / python3-torchvision (CPU, Debian's interpreter /usr/bin/python3): the zero-change
# PyTorch hook of `stalldx record` is tested against them.
set -euo pipefail
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ clang libclang-rt-dev pkg-config \
  libtbb-dev libturbojpeg0-dev libjpeg62-turbo-dev libcli11-dev libfmt-dev nlohmann-json3-dev zlib1g-dev libtomlplusplus-dev libsimdjson-dev libhwy-dev libopenmpi-dev openmpi-bin chromium \
  libgtest-dev libgmock-dev libbenchmark-dev libre2-dev \
  python3-torch python3-torchvision >/dev/null
echo "stalldx: Debian packages installed"
