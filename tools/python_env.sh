# Sourced by tools/install.sh, tools/test.sh and tools/python: picks the Python
# environment the project is installed into and sets $PY to its interpreter.
#
#  1. an active virtual environment ($VIRTUAL_ENV) or conda env ($CONDA_PREFIX);
#  2. else the project's own .venv, if tools/install.sh made one;
#  3. else $PYTHON or python3, unless it is externally managed (PEP 668: Debian
#     12 and Ubuntu 23.04 on mark their system Python so), in which case
#     tools/install.sh makes .venv and uses that.
# SPARSETIR_ROOT is the repository (set by the sourcing script).
sparsetir_pick_python() {
  if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then
    PY="$VIRTUAL_ENV/bin/python"
  elif [ -n "${CONDA_PREFIX:-}" ] && [ -x "$CONDA_PREFIX/bin/python" ]; then
    PY="$CONDA_PREFIX/bin/python"
  elif [ -x "$SPARSETIR_ROOT/.venv/bin/python" ]; then
    PY="$SPARSETIR_ROOT/.venv/bin/python"
  else
    PY="${PYTHON:-python3}"
  fi
  export PY
}

# True when $1 (an interpreter) refuses pip installs outside a virtual environment.
sparsetir_externally_managed() {
  "$1" - <<'PYEOF'
import os, sys, sysconfig
in_env = sys.prefix != sys.base_prefix
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if (not in_env and os.path.exists(marker)) else 1)
PYEOF
}

# Sets PYTEST_JOBS to the pytest arguments that spread a run over the cores
# (pytest-xdist, installed by tools/install.sh): most of a test's time is the
# system compiler building kernels, one process per compile, and the workers
# share one kernel cache (tests/python/conftest.py). Empty on one core, or
# without pytest-xdist, or when SPARSETIR_TEST_JOBS=1.
sparsetir_pytest_jobs() {
  local jobs="${SPARSETIR_TEST_JOBS:-$(nproc)}"
  PYTEST_JOBS=()
  if [ "$jobs" -gt 1 ] && "$PY" -c "import xdist" 2>/dev/null; then
    PYTEST_JOBS=(-n "$jobs")
  fi
}
