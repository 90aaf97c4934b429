"""The hand-written CPU baselines (benchmarks/baseline/): every level this host runs is built and checked against
scipy / numpy in float64 (random matrices with empty rows, K = 32 and 128, one and two threads); the levels it
cannot run are at least compiled (AVX-512 with the host compiler, NEON with an aarch64 cross compiler if present).
The full edge-case sweep is benchmarks/baseline/check_baseline.py."""
import os
import platform
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks"))
from baseline import build as bl  # noqa: E402
from baseline.check_baseline import check_sddmm, check_spmm, random_csr, with_empty_rows  # noqa: E402

CHECKS = {"spmm": check_spmm, "sddmm": check_sddmm}
MISSING_FEATURE = {"avx2": "avx2 and fma", "avx512": "avx512f (with bw, cd, dq, vl)", "neon": "aarch64 asimd"}


def _matrices():
    rng = np.random.default_rng(7)
    small = with_empty_rows(random_csr(300, 200, 3000, rng), [(0, 5), (100, 130), (290, 300)])
    # above nnz * K = 2^20 at K = 32, so two threads really split the rows
    large = with_empty_rows(random_csr(20000, 15000, 40000, rng), [(0, 100), (9000, 9500), (19000, 20000)])
    return {"small": small, "large": large}


MATRICES = _matrices()


def _aarch64_compiler():
    """A compiler for the NEON sources: the host's on aarch64, else a cross compiler if installed, else None."""
    if platform.machine().lower() in ("aarch64", "arm64"):
        return bl.CXX
    return "aarch64-linux-gnu-g++" if shutil.which("aarch64-linux-gnu-g++") else None


@pytest.fixture(scope="module", autouse=True)
def _prebuild():
    """Builds every library and object the tests below use at once (each compile is seconds of one core), so the
    module stays fast on a cold build cache; the tests then find them in the cache. A failed build is left for its
    test to report."""
    jobs = [dict(op=op, isa=isa) for isa in bl.available_isas() for op in bl.OPS]
    if platform.machine().lower() in ("x86_64", "amd64"):
        jobs += [dict(op=op, isa="avx512", object_only=True) for op in bl.OPS]
    if _aarch64_compiler():
        jobs += [dict(op=op, isa="neon", cxx=_aarch64_compiler(), object_only=True) for op in bl.OPS]
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as ex:
        for f in [ex.submit(bl.build, **job) for job in jobs]:
            f.exception()  # wait; errors resurface in the test that builds the same thing


def _require(isa: str) -> None:
    if isa not in bl.available_isas():
        pytest.skip(f"host ({platform.machine()}) lacks {MISSING_FEATURE[isa]}: cannot run the {isa} baselines")


@pytest.mark.parametrize("isa", sorted(bl.ISA_FLAGS))
@pytest.mark.parametrize("op", bl.OPS)
def test_baseline_matches_scipy(op, isa):
    _require(isa)
    kernel = bl.load_baseline(op, isa)
    rng = np.random.default_rng(3)
    for name, A in MATRICES.items():
        for K in (32, 128):
            for threads in (1, 2):
                assert CHECKS[op](A, K, threads, kernel, rng), f"{op}_{isa} {name} K={K} threads={threads}"


@pytest.mark.parametrize("isa", sorted(bl.ISA_FLAGS))
@pytest.mark.parametrize("op", bl.OPS)
def test_baseline_rejects_unsupported_k(op, isa):
    _require(isa)
    kernel = bl.load_baseline(op, isa)
    with pytest.raises(ValueError, match="unsupported K=48"):
        CHECKS[op](sp.csr_matrix(np.array([[2.0]])), 48, 1, kernel, np.random.default_rng(0))


@pytest.mark.parametrize("op", bl.OPS)
def test_avx512_sources_compile(op):
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("AVX-512 is x86-only")
    assert os.path.getsize(bl.build(op=op, isa="avx512", object_only=True)) > 0


@pytest.mark.parametrize("op", bl.OPS)
def test_neon_sources_compile(op):
    cxx = _aarch64_compiler()
    if cxx is None:
        pytest.skip("no aarch64 compiler: install g++-aarch64-linux-gnu to compile the NEON baselines")
    assert os.path.getsize(bl.build(op=op, isa="neon", cxx=cxx, object_only=True)) > 0


def test_load_baseline_refuses_foreign_isa():
    foreign = [isa for isa in bl.ISA_FLAGS if isa not in bl.available_isas()]
    if not foreign:
        pytest.skip("this host runs every level")
    with pytest.raises(RuntimeError, match="cannot run"):
        bl.load_baseline("spmm", foreign[0])
