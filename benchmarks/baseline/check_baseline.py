"""Correctness check of every hand-written baseline this host can run (SpMM and SDDMM, at each instruction set level
of build.available_isas()) against scipy / numpy in float64: every supported K, 1-3 threads and edge cases: empty
rows (leading, inner, trailing), a row holding most of the non-zeros, fewer rows than threads, a non-square matrix,
and an unsupported K.

    python benchmarks/baseline/check_baseline.py               # every level the host runs
    python benchmarks/baseline/check_baseline.py --isa avx2    # one level
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from baseline.build import OPS, SUPPORTED_K, available_isas, load_baseline  # noqa: E402

# Error bound per element, relative to the same sum taken over absolute values (the scale of float32 rounding).
RTOL = 1e-5


def _csr_arrays(A: sp.csr_matrix):
    return (torch.from_numpy(A.indptr.astype(np.int32)), torch.from_numpy(A.indices.astype(np.int32)),
            torch.from_numpy(A.data.astype(np.float32)))


def _close(got: np.ndarray, ref: np.ndarray, scale: np.ndarray) -> bool:
    """Every element finite and within RTOL * scale of ref; exactly 0 where the scale is 0 (nothing to add)."""
    return bool(np.all(np.isfinite(got)) and np.all(np.abs(got - ref) <= RTOL * scale) and np.all(got[scale == 0] == 0))


def check_spmm(A: sp.csr_matrix, K: int, threads: int, spmm, rng) -> bool:
    B = rng.uniform(-1, 1, size=(A.shape[1], K)).astype(np.float32)
    C = torch.full((A.shape[0], K), float("nan"))  # an element the kernel does not write fails the check
    spmm(*_csr_arrays(A), torch.from_numpy(B), C, threads)
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    return _close(C.numpy().astype(np.float64), A64 @ B64, abs(A64) @ np.abs(B64))


def sddmm_reference(A: sp.csr_matrix, X: np.ndarray, Y: np.ndarray):
    """(values * rowwise X[i] . Y[j], |values| * |X[i]| . |Y[j]|) in float64, in blocks of non-zeros so that a
    large nnz x K never sits in memory at once."""
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    vals = A.data.astype(np.float64)
    ref, scale = np.empty(A.nnz), np.empty(A.nnz)
    X64, Y64 = X.astype(np.float64), Y.astype(np.float64)
    for s in range(0, A.nnz, 1 << 16):
        e = min(A.nnz, s + (1 << 16))
        xs, ys = X64[rows[s:e]], Y64[A.indices[s:e]]
        ref[s:e] = vals[s:e] * np.einsum("ij,ij->i", xs, ys)
        scale[s:e] = np.abs(vals[s:e]) * np.einsum("ij,ij->i", np.abs(xs), np.abs(ys))
    return ref, scale


def check_sddmm(A: sp.csr_matrix, K: int, threads: int, sddmm, rng) -> bool:
    X = rng.uniform(-1, 1, size=(A.shape[0], K)).astype(np.float32)
    Y = rng.uniform(-1, 1, size=(A.shape[1], K)).astype(np.float32)
    out = torch.full((A.nnz,), float("nan"))
    sddmm(*_csr_arrays(A), torch.from_numpy(X), torch.from_numpy(Y), out, threads)
    ref, scale = sddmm_reference(A, X, Y)
    return _close(out.numpy().astype(np.float64), ref, scale)


CHECKS = {"spmm": check_spmm, "sddmm": check_sddmm}


def random_csr(m: int, n: int, nnz: int, rng) -> sp.csr_matrix:
    rows, cols = rng.integers(0, m, nnz), rng.integers(0, n, nnz)
    return sp.csr_matrix((rng.uniform(0.5, 1.5, nnz), (rows, cols)), shape=(m, n))  # duplicates summed


def with_empty_rows(A: sp.csr_matrix, ranges) -> sp.csr_matrix:
    """A with the rows of each (begin, end) range emptied."""
    keep = np.ones(A.shape[0])
    for begin, end in ranges:
        keep[begin:end] = 0
    out = (sp.diags(keep) @ A).tocsr()
    out.eliminate_zeros()
    return out


def edge_case_matrices(rng) -> dict:
    mats = {}
    # leading, inner and trailing empty rows (the nnz-balanced split must still zero the trailing ones)
    mats["random_with_empty_rows"] = with_empty_rows(random_csr(3000, 2500, 75000, rng),
                                                     [(0, 50), (1000, 1200), (2700, 3000)])
    n = 20000  # one row with half of the non-zeros, plus the diagonal (big enough for the multi-threaded path)
    rows = np.concatenate([np.full(n, 7), np.arange(n)])
    cols = np.concatenate([np.arange(n), np.arange(n)])
    mats["one_heavy_row"] = sp.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(n, n))  # duplicates summed
    mats["tiny_1x1"] = sp.csr_matrix(np.array([[3.0]]))
    mats["two_rows"] = sp.csr_matrix(np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]))
    mats["all_empty"] = sp.csr_matrix((5, 4))
    # (the kernels run on one thread below nnz * K = 2^20; these are above it for every K)
    mats["large_random"] = random_csr(40000, 30000, 600000, rng)
    mats["wide_few_rows"] = random_csr(2, 50000, 60000, rng)  # fewer rows than threads, above the threshold
    for A in mats.values():
        A.sort_indices()
    return mats


def check_unsupported_k(op: str, kernel, rng) -> bool:
    A = sp.csr_matrix(np.array([[3.0]]))
    try:
        if op == "spmm":
            check_spmm(A, 48, 2, kernel, rng)
        else:
            check_sddmm(A, 48, 2, kernel, rng)
    except ValueError:
        return True
    return False


def check_isa(isa: str, mats: dict, rng) -> list:
    """Runs every check of one instruction set level; returns the failures as strings."""
    failures = []
    for op in OPS:
        kernel = load_baseline(op, isa)
        for name, A in mats.items():
            for K in SUPPORTED_K:
                for threads in (1, 2, 3):
                    if not CHECKS[op](A, K, threads, kernel, rng):
                        failures.append(f"{op}_{isa} {name} K={K} threads={threads}")
        if not check_unsupported_k(op, kernel, rng):
            failures.append(f"{op}_{isa}: K=48 was accepted")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--isa", nargs="+", default=None, help="levels to check (default: all the host runs)")
    args = parser.parse_args()
    isas = tuple(args.isa) if args.isa else available_isas()
    if not isas:
        raise SystemExit("this host runs none of the baselines")
    rng = np.random.default_rng(1)
    mats = edge_case_matrices(rng)
    failures = []
    for isa in isas:
        failures += check_isa(isa, mats, rng)
    if failures:
        raise SystemExit("FAIL\n" + "\n".join(failures))
    print(f"baselines OK: {' '.join(f'{op}_{isa}' for isa in isas for op in OPS)}: {len(mats)} matrices x K in "
          f"{SUPPORTED_K} x threads in (1, 2, 3), unsupported K rejected")


if __name__ == "__main__":
    main()
