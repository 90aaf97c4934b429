#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks, then builds and installs the
# project in editable mode against the installed torch. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

# System packages: a C++ compiler (also used at run time to build kernels),
# CMake and GoogleTest for the C++ core's tests, ninja for parallel builds.
need=()
for pkg in g++ cmake make libgtest-dev ninja-build; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# torch: the CUDA build (it runs on the CPU too, and brings the CUDA headers and
# NVRTC the GPU backend compiles against). Kept if some torch is already there.
if ! python3 -c "import torch" >/dev/null 2>&1; then
  python3 -m pip install -q torch==2.14.1
fi
python3 -m pip install -q numpy scipy pytest ninja matplotlib

# The extension, compiled against that torch (no isolated build environment,
# so no second torch is downloaded).
MAX_JOBS="${MAX_JOBS:-$(nproc)}" python3 -m pip install -q --no-build-isolation -e .
