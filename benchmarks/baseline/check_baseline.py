"""Correctness check of the AVX-512 baseline against scipy (float64), for every supported K, 1-3 threads and edge
cases: empty rows (leading, inner, trailing), a row holding most of the non-zeros, fewer rows than threads, a
non-square matrix, and an unsupported K.

    python benchmarks/baseline/check_baseline.py
"""
from __future__ import annotations

import os
import sys

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from baseline.build import SUPPORTED_K, load_spmm_avx512  # noqa: E402


def case(name, A: sp.csr_matrix, K: int, threads: int, spmm, rng) -> None:
    A = A.astype(np.float32)
    A.sort_indices()
    B = rng.uniform(-1, 1, size=(A.shape[1], K)).astype(np.float32)
    C = torch.full((A.shape[0], K), float("nan"))
    spmm(torch.from_numpy(A.indptr.astype(np.int32)), torch.from_numpy(A.indices.astype(np.int32)),
         torch.from_numpy(A.data), torch.from_numpy(B), C, threads)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    scale = abs(A.astype(np.float64)) @ np.abs(B.astype(np.float64))
    c = C.numpy().astype(np.float64)
    ok = np.all(np.isfinite(c)) and np.all(np.abs(c - ref) <= 1e-5 * scale)
    ok = ok and np.all(c[scale == 0] == 0)
    if not ok:
        raise SystemExit(f"FAIL {name} K={K} threads={threads}")


def random_csr(m: int, n: int, nnz: int, rng) -> sp.csr_matrix:
    rows, cols = rng.integers(0, m, nnz), rng.integers(0, n, nnz)
    return sp.csr_matrix((rng.uniform(0.5, 1.5, nnz), (rows, cols)), shape=(m, n))  # duplicates summed


def main() -> None:
    spmm = load_spmm_avx512()
    rng = np.random.default_rng(1)
    mats = {}
    r = random_csr(3000, 2500, 75000, rng).tolil()
    r[:50, :] = 0      # leading empty rows
    r[1000:1200, :] = 0  # inner
    r[-300:, :] = 0    # trailing (the nnz-balanced split must still zero them)
    mats["random_with_empty_rows"] = r.tocsr()
    mats["random_with_empty_rows"].eliminate_zeros()
    n = 20000  # one row with half of the non-zeros, plus the diagonal (big enough for the multi-threaded path)
    rows = np.concatenate([np.full(n, 7), np.arange(n)])
    cols = np.concatenate([np.arange(n), np.arange(n)])
    mats["one_heavy_row"] = sp.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(n, n))  # duplicates summed
    mats["tiny_1x1"] = sp.csr_matrix(np.array([[3.0]]))
    mats["two_rows"] = sp.csr_matrix(np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]))
    mats["all_empty"] = sp.csr_matrix((5, 4))
    # (the kernel runs on one thread below nnz * K = 2^20; these are above it for every K)
    mats["large_random"] = random_csr(40000, 30000, 600000, rng)
    for name, A in mats.items():
        for K in SUPPORTED_K:
            for threads in (1, 2, 3):
                case(name, A, K, threads, spmm, rng)
    try:
        case("bad_K", mats["tiny_1x1"], 48, 2, spmm, rng)
    except ValueError:
        pass
    else:
        raise SystemExit("FAIL: K=48 was accepted")
    print(f"baseline OK: {len(mats)} matrices x K in {SUPPORTED_K} x threads in (1, 2, 3), unsupported K rejected")


if __name__ == "__main__":
    main()
