#!/usr/bin/env bash
# The extension on a CPU-only build of torch: a virtual environment of its
# own (build/cpu-torch-venv) with the CPU wheel of torch, the extension
# built against it into build/cpu-torch, then the operator tests there. The
# library links no CUDA library and loads NVRTC and the driver only when a
# CUDA tensor or the emulator asks for them, so this build must import and
# pass the CPU operators' tests as the CUDA build of torch does.
#
#   bash tools/test_cpu_torch.sh                 # torch==$SPARSETIR_CPU_TORCH (2.13.0) from the package index
#   SPARSETIR_CPU_TORCH=2.13.0 bash tools/test_cpu_torch.sh -k spmm
#
# It takes a few minutes more than one build of the extension; the CI does
# not run it (the main build, on torch's CUDA wheel, is what the CI tests).
set -euo pipefail
SPARSETIR_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$SPARSETIR_ROOT"
. tools/python_env.sh
sparsetir_pick_python
sparsetir_pytest_jobs

venv="$SPARSETIR_ROOT/build/cpu-torch-venv"
version="${SPARSETIR_CPU_TORCH:-2.13.0}"
if [ ! -x "$venv/bin/python" ]; then
  "$PY" -m venv "$venv"
fi
echo "==> torch==$version (CPU) and the test dependencies into $venv"
"$venv/bin/python" -m pip install -q "torch==$version" numpy scipy pytest pytest-xdist ninja setuptools wheel
"$venv/bin/python" - <<'EOF'
import torch
assert not torch.backends.cuda.is_built(), f"torch {torch.__version__} is a CUDA build; this check wants a CPU-only one"
print(f"torch {torch.__version__}: CPU-only")
EOF

echo "==> building the extension against it into build/cpu-torch"
MAX_JOBS="${MAX_JOBS:-$(nproc)}" "$venv/bin/python" setup.py -q build --build-base build/cpu-torch \
  >build/cpu-torch.log 2>&1 || { tail -40 build/cpu-torch.log; exit 1; }
lib="$(ls -d build/cpu-torch/lib.*)"
export PYTHONPATH="$SPARSETIR_ROOT/$lib${PYTHONPATH:+:$PYTHONPATH}"
export SPARSETIR_EXPECT_EXTENSION_UNDER="$SPARSETIR_ROOT/$lib"  # checked by conftest.py
export SPARSETIR_CACHE_DIR="${SPARSETIR_CACHE_DIR:-$SPARSETIR_ROOT/build/test-kernel-cache}-cpu-torch"

# From the build folder, so that the source tree's package (with the other
# build's extension) is not the one imported.
cd "$lib"
echo "==> the operator tests on the CPU-only torch"
"$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$SPARSETIR_ROOT" "${PYTEST_JOBS[@]}" \
  "$SPARSETIR_ROOT/tests/python/test_ops_numeric.py" "$SPARSETIR_ROOT/tests/python/test_ops_autograd.py" \
  "$SPARSETIR_ROOT/tests/python/test_ops_errors.py" "$SPARSETIR_ROOT/tests/python/test_cuda_backend.py" "$@"
