#!/usr/bin/env bash
# Runs the whole test suite: the C++ core's GoogleTest suite through CMake/ctest
# (no torch involved), then the Python suite through pytest.
set -euo pipefail
SPARSETIR_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$SPARSETIR_ROOT"
. tools/python_env.sh
sparsetir_pick_python
sparsetir_pytest_jobs
# Each step's start, with the time, so that a slow run shows where it went.
step() { echo "==> [$(date -u +%T)] $*"; }

# Kernels compiled by the tests go to a private cache, not the user's.
export SPARSETIR_CACHE_DIR="${SPARSETIR_CACHE_DIR:-$PWD/build/test-kernel-cache}"
rm -rf "$SPARSETIR_CACHE_DIR"

step "the C++ suite (ctest)"
cmake -S . -B build/cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSETIR_BUILD_TESTS=ON >/dev/null
cmake --build build/cmake -j "$(nproc)"
ctest --test-dir build/cmake --output-on-failure -j "$(nproc)"
# The C++ suite once more under AddressSanitizer, UndefinedBehaviorSanitizer
# and LeakSanitizer: any report fails the run.
step "the C++ suite under ASan + UBSan"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSPARSETIR_BUILD_TESTS=ON \
  "-DCMAKE_CXX_FLAGS=-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined" >/dev/null
cmake --build build/asan -j "$(nproc)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 SPARSETIR_CACHE_DIR="$SPARSETIR_CACHE_DIR-asan" \
  ctest --test-dir build/asan --output-on-failure -j "$(nproc)"
# The parser, the lowering pipeline and the CSR validation under libFuzzer
# (clang, ASan + UBSan), a bounded time per target: any finding fails the run.
step "the fuzzers"
bash tools/fuzz.sh
step "the Python suite"
"$PY" -m pytest tests/python -q -rs "${PYTEST_JOBS[@]}" "$@"
# The CUDA path once more, without a GPU: the operators' numeric and autograd
# tests with every spmm / sddmm / sparse_attention / bsrmm call running the generated
# CUDA kernels under the SIMT emulator, in its race-check mode (each launch
# runs in order, then reversed and shuffled, and fails if what it wrote
# differs).
step "the operators' CUDA kernels under the emulator, race-checked"
SPARSETIR_EMULATE_CUDA=1 SPARSETIR_EMULATE_ORDER=check "$PY" -m pytest tests/python/test_ops_numeric.py tests/python/test_ops_autograd.py \
  -q -k "spmm or sddmm or attention or bsrmm" "${PYTEST_JOBS[@]}" "$@"
# The operators once more at every lower x86-64 level this CPU runs (generic
# SSE2, and AVX2 on an AVX-512 host): kernels built for that level
# ($SPARSETIR_CPU_ISA), into a cache of their own.
for isa in $("$PY" -c "from sparsetir_torch.recipes import runnable_levels; print(' '.join(runnable_levels()[1:]))"); do
  step "the operator tests with kernels built for $isa"
  SPARSETIR_CPU_ISA="$isa" SPARSETIR_CACHE_DIR="$SPARSETIR_CACHE_DIR-$isa" \
    "$PY" -m pytest tests/python/test_ops_numeric.py tests/python/test_ops_autograd.py tests/python/test_dropout.py \
      -q "${PYTEST_JOBS[@]}" "$@"
done
# A part of the Python suite once more on an extension built with ASan + UBSan.
# Its core is the one the C++ suite under ASan + UBSan was built with.
step "the sanitized extension"
SPARSETIR_CORE_BUILD=build/asan bash tools/test_sanitized.sh "$@"
step "done"
