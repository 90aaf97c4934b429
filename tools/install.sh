#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks, then builds and installs
# the project in editable mode against the installed torch. Safe to run again.
#
# Python: an active venv or conda env is used as it is; otherwise python3,
# unless it is externally managed (Debian 12's /usr/bin/python3), in which
# case a virtual environment .venv is made here and used (tools/python runs it).
# Set PYTHON to choose another interpreter, MAX_JOBS to bound the build.
set -euo pipefail
SPARSETIR_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$SPARSETIR_ROOT"
. tools/python_env.sh
export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1

STEP_START=$(date +%s)
step() { echo "==> [$(date +%H:%M:%S)] $*"; STEP_START=$(date +%s); }
done_step() { echo "    done in $(( $(date +%s) - STEP_START )) s"; }

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends "$@" >/dev/null
}

# System packages: a C++ compiler (also used at run time to build kernels),
# CMake and GoogleTest for the C++ core's tests, Boost.Context for the SIMT
# emulator's fibers, ninja for parallel builds,
# the aarch64 cross compiler that checks the generated Arm code, clang with
# its libFuzzer and sanitizer runtimes for the fuzz targets (tools/fuzz.sh).
need=()
for pkg in g++ cmake make libgtest-dev libboost-context-dev ninja-build g++-aarch64-linux-gnu clang libclang-rt-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  step "installing Debian packages: ${need[*]}"
  apt_install "${need[@]}"
  done_step
else
  echo "==> Debian packages: all present"
fi

sparsetir_pick_python
if [ "$PY" = "${PYTHON:-python3}" ] && sparsetir_externally_managed "$PY"; then
  step "$PY is externally managed (PEP 668): making a virtual environment in $SPARSETIR_ROOT/.venv"
  if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c "import ensurepip" >/dev/null 2>&1; then
    ver="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    apt_install "python${ver}-venv"
  fi
  "$PY" -m venv .venv
  PY="$SPARSETIR_ROOT/.venv/bin/python"
  echo "    use it with: source .venv/bin/activate   (or run tools/python)"
  done_step
fi
echo "==> Python: $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"

# The extension compiles against Python.h: a distribution's Python keeps it in
# a separate package (python3.X-dev on Debian/Ubuntu), absent on a stock image.
if ! "$PY" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  ver="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  step "installing the Python headers (python${ver}-dev) the extension compiles against"
  apt_install "python${ver}-dev"
  done_step
fi

# Build tools that `pip install --no-build-isolation` needs in the environment.
step "installing the build tools (setuptools, wheel, ninja)"
"$PY" -m pip install -q "setuptools>=64" wheel ninja
done_step

# torch: the CUDA build (it runs on the CPU too, and brings the CUDA headers and
# NVRTC the GPU backend compiles against). Kept if some torch is already there.
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  step "installing torch 2.14.1 (about 5.5 GB with its CUDA libraries; several minutes)"
  "$PY" -m pip install -q torch==2.14.1
  done_step
else
  echo "==> torch $("$PY" -c 'import torch; print(torch.__version__)') already installed"
fi
step "installing the test and benchmark tools (numpy, scipy, pytest, pytest-xdist, hypothesis, matplotlib, torch_geometric)"
"$PY" -m pip install -q numpy scipy pytest pytest-xdist hypothesis matplotlib torch_geometric
done_step

# The extension, compiled against that torch (no isolated build environment,
# so no second torch is downloaded). pip -v shows the build's output; only
# ninja's progress lines ("[12/86] ...") are printed, unbuffered (sed -u).
jobs="${MAX_JOBS:-$(nproc)}"
step "building the extension with $jobs jobs (about 5-15 minutes on 2 cores; progress below)"
set +e
MAX_JOBS="$jobs" "$PY" -m pip install -v --no-build-isolation -e . 2>&1 | tee build-install.log |
  sed -u -n 's/^ *\[\([0-9]*\/[0-9]*\)\] .* -c \([^ ]*\) .*/    [\1] compiled \2/p; t; s/^ *\[\([0-9]*\/[0-9]*\)\] \(.*\)/    [\1] \2/p' | sed -u 's/^\(.\{120\}\).*/\1/'
status=${PIPESTATUS[0]}
set -e
if [ "$status" != "0" ]; then
  tail -40 build-install.log
  echo "==> the build failed (exit $status); the whole log is in build-install.log" >&2
  exit "$status"
fi
rm -f build-install.log
done_step
echo "==> installed; try: tools/python -m sparsetir_torch.demo"
