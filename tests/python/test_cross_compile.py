"""Arm: the generated C++ of every built-in CPU kernel, scheduled for the NEON
and SVE levels, compiles with GCC for aarch64 (Debian's
g++-aarch64-linux-gnu, installed by tools/install.sh). The prelude's x86-only
paths are guarded, so nothing here may depend on an x86 intrinsic."""
import itertools
import os
import shutil
import subprocess

import pytest

from sparsetir_torch import _C

CROSS = shutil.which("aarch64-linux-gnu-g++")
pytestmark = pytest.mark.skipif(CROSS is None, reason="no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu)")

# Every CPU recipe with the sizes that change its schedule (vector / scalar
# widths, a non-dividing width, a wide row past the register budget).
KERNELS = [("csrmm", "csrmm", {"feat_size": f}) for f in (1, 20, 64, 256)] + \
          [("csrmm_max", "csrmm", {"feat_size": 64}), ("csrmm_min", "csrmm", {"feat_size": 20})] + \
          [("sddmm_dot", "sddmm", {"feat_size": f}) for f in (1, 64)] + \
          [("sddmm_dot_groups", "sddmm_dot_groups", {"feat_size": 64, "lanes": 4})] + \
          [("bsrmm", "bsrmm", {"block_h": 4, "block_w": 4, "feat_size": 64}),
           ("sparse_attention", "sparse_attention", {"head_dim": 64, "value_dim": 32}),
           ("attention_probs", "attention_probs", {"head_dim": 64}),
           ("attention_grad_scores", "attention_grad_scores", {"value_dim": 64}),
           ("csrmm_heads", "csrmm_heads", {"heads": 4, "feat_size": 16}),
           ("csrmm_heads", "csrmm_heads", {"heads": 8, "feat_size": 1}),
           ("sddmm_heads", "sddmm_heads", {"heads": 4, "feat_size": 16}),
           ("sddmm_add", "sddmm_add", {"feat_size": 4}),
           ("sddmm_mul", "sddmm_mul", {"feat_size": 64}),
           ("gat_attention", "gat_attention", {"heads": 4, "feat_size": 16})]
DTYPES = ("float32", "float64", "float16", "bfloat16")
LEVELS = {"neon": "-march=armv8-a", "sve": "-march=armv8.2-a+sve"}


def cross_compile(source: str, flag: str, path) -> subprocess.CompletedProcess:
    path.write_text(source)
    return subprocess.run([CROSS, "-std=c++17", "-O1", flag, "-fPIC", "-w", "-c", str(path), "-o", str(path) + ".o"],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("level", sorted(LEVELS))
@pytest.mark.parametrize("script,recipe,sizes", KERNELS, ids=lambda v: v if isinstance(v, str) else None)
def test_kernel_compiles_for_aarch64(level, script, recipe, sizes, tmp_path):
    # Every dtype and both index dtypes in one translation unit per dtype.
    for dtype, idtype in itertools.product(DTYPES, ("int32", "int64")):
        if (dtype, idtype) not in {("float32", "int32"), ("float64", "int64"), ("float16", "int32"),
                                   ("bfloat16", "int64")}:
            continue  # each dtype once, each index dtype twice: the index type only renames integer types
        if script == "sddmm_dot_groups" and dtype in ("float16", "bfloat16"):
            continue  # the operators run it on float32 and float64 only (16-bit values sum in float32 elsewhere)
        source = _C.op_kernel_source(script, recipe, dtype, idtype, sizes, f"cpu:{level}")
        r = cross_compile(source, LEVELS[level], tmp_path / f"{script}_{dtype}_{idtype}.cc")
        assert r.returncode == 0, f"{script} {dtype} {idtype} {level}:\n{r.stderr[-3000:]}"
        assert os.path.getsize(str(tmp_path / f"{script}_{dtype}_{idtype}.cc") + ".o") > 0


def test_neon_vectors_are_sixteen_bytes():
    source = _C.op_kernel_source("csrmm", "csrmm", "float32", "int32", {"feat_size": 64}, "cpu:neon")
    assert "sparsetir_floatx4 __attribute__((vector_size(16)" in source
    assert "sparsetir_floatx8 " not in source and "sparsetir_floatx16 " not in source
