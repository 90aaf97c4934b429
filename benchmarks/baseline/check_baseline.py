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


def main() -> None:
    spmm = load_spmm_avx512()
    rng = np.random.default_rng(1)
    mats = {}
    r = sp.random(3000, 2500, density=0.01, format="csr", random_state=2, data_rvs=lambda k: rng.uniform(0.5, 1.5, k))
    r = r.tolil()
    r[:50, :] = 0      # leading empty rows
    r[1000:1200, :] = 0  # inner
    r[-300:, :] = 0    # trailing (the nnz-balanced split must still zero them)
    mats["random_with_empty_rows"] = r.tocsr()
    heavy = sp.lil_matrix((2000, 2000))
    heavy[7, :] = 1.0  # one row with most of the non-zeros
    heavy[np.arange(2000), np.arange(2000)] = 2.0
    mats["one_heavy_row"] = heavy.tocsr()
    mats["tiny_1x1"] = sp.csr_matrix(np.array([[3.0]]))
    mats["two_rows"] = sp.csr_matrix(np.array([[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]]))
    mats["all_empty"] = sp.csr_matrix((5, 4))
    mats["large_random"] = sp.random(40000, 30000, density=5e-4, format="csr", random_state=3)
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
