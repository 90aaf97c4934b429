#!/usr/bin/env bash
# A part of the Python suite on an extension built with AddressSanitizer and
# UndefinedBehaviorSanitizer (SPARSETIR_SANITIZE, see setup.py): the
# operators' argument checks, conversions, validation and the compiler's
# front end called from Python, where torch tensors meet the C++ core. Any
# sanitizer report fails the run.
#
# SPARSETIR_CORE_BUILD names a CMake build of the core made with the same
# sanitizers to link instead of building another (tools/test.sh passes the C++
# suite's build/asan; see setup.py).
#
# The build goes to build/sanitized and is imported from there (PYTHONPATH),
# so the installed extension is left as it is. Python is not instrumented,
# so the ASan runtime is preloaded; leak detection is off (the interpreter
# and torch keep allocations until exit by design).
set -euo pipefail
SPARSETIR_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$SPARSETIR_ROOT"
. tools/python_env.sh
sparsetir_pick_python
sparsetir_pytest_jobs

echo "==> building the extension with ASan + UBSan into build/sanitized"
SPARSETIR_SANITIZE=address,undefined MAX_JOBS="${MAX_JOBS:-$(nproc)}" \
  "$PY" setup.py -q build --build-base build/sanitized >build/sanitized.log 2>&1 ||
  { tail -40 build/sanitized.log; exit 1; }
lib="$(ls -d build/sanitized/lib.*)"

# Python does not link libstdc++: preloaded with the ASan runtime, so that
# ASan finds __cxa_throw when it starts (else its interceptor aborts).
CXX_BIN="${CXX:-c++}"
export LD_PRELOAD="$("$CXX_BIN" -print-file-name=libasan.so):$("$CXX_BIN" -print-file-name=libstdc++.so.6)"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_odr_violation=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PYTHONPATH="$SPARSETIR_ROOT/$lib${PYTHONPATH:+:$PYTHONPATH}"
export SPARSETIR_EXPECT_EXTENSION_UNDER="$SPARSETIR_ROOT/$lib"  # checked by conftest.py
export SPARSETIR_CACHE_DIR="${SPARSETIR_CACHE_DIR:-$SPARSETIR_ROOT/build/test-kernel-cache}-sanitized"

# Run from the build folder: from the checkout, Python would put the source
# tree's sparsetir_torch (with the installed extension) first on sys.path.
cd "$lib"
tests="$SPARSETIR_ROOT/tests/python"
echo "==> a part of the Python suite on the ASan + UBSan extension"
"$PY" -m pytest -q -p no:cacheprovider --rootdir "$SPARSETIR_ROOT" "${PYTEST_JOBS[@]}" \
  "$tests/test_ops_errors.py" "$tests/test_hardening.py" "$tests/test_validate_every_call.py" \
  "$tests/test_conversions.py" "$tests/test_script.py" "$tests/test_kernel_errors.py" \
  "$tests/test_ops_numeric.py" "$tests/test_spmm_dense_backward.py" "$tests/test_dropout.py" \
  "$tests/test_ops_autograd.py::test_extremum_backward_sends_ties_to_the_first_attaining_nonzero" \
  "$tests/test_ops_autograd.py::test_extremum_backward_splits_skewed_rows_into_tasks_of_equal_work" "$@"
