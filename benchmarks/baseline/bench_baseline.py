"""Times the hand-written baselines of one instruction set level against torch on CPU:

    spmm    <op>_<isa>: C = A @ B            vs  torch.sparse.mm on a torch CSR float32 tensor
    sddmm   <op>_<isa>: values * X[i] . Y[j]  vs  torch.sparse.sampled_addmm (beta=0), where this torch runs it on CPU

on two generated 100k x 100k matrices: "powerlaw" (Pareto(1.5) row degrees scaled to ~2M non-zeros, columns drawn
with density skewed toward a few hot ones, then relabelled) and "banded" (21 diagonals, 2.1M non-zeros). Every
result is compared with torch's before it is timed. Times are medians of --reps runs after --warmup runs; the
methods are interleaved (alternating order between rounds), so a disturbance on a shared machine hits them alike.
torch runs with torch.set_num_threads(threads).

    python benchmarks/baseline/bench_baseline.py                  # the host's highest level, K 32 128, 1 2 threads
    python benchmarks/baseline/bench_baseline.py --isa avx2 --k 32 --threads 2
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from typing import Callable, Dict

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from baseline.build import SUPPORTED_K, available_isas, load_baseline  # noqa: E402

warnings.filterwarnings("ignore", message=".*[Ss]parse.*")  # torch's beta warnings for sparse CSR


def powerlaw(m: int = 100_000, nnz: int = 2_000_000, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    deg = rng.pareto(1.5, m) + 1
    deg = np.minimum(np.floor(deg * nnz / deg.sum()).astype(np.int64), m // 4)
    rows = np.repeat(np.arange(m), deg)
    hot = np.minimum((m * rng.random(rows.size) ** 3).astype(np.int64), m - 1)  # u^3: most mass near 0
    cols = rng.permutation(m)[hot]
    A = sp.csr_matrix((rng.uniform(0.5, 1.5, rows.size), (rows, cols)), shape=(m, m))
    A.sum_duplicates()
    return A.astype(np.float32)


def banded(m: int = 100_000, half: int = 10, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    offsets = np.arange(-half, half + 1)
    A = sp.diags([rng.uniform(0.5, 1.5, m) for _ in offsets], offsets, shape=(m, m), format="csr")
    A.sort_indices()
    return A.astype(np.float32)


def median_times(fns: Dict[str, Callable], threads: int, warmup: int, reps: int) -> Dict[str, float]:
    """Milliseconds per call, median over reps, the methods interleaved."""
    times = {k: [] for k in fns}
    names = list(fns)
    torch.set_num_threads(threads)
    for r in range(warmup + reps):
        for k in names if r % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            fns[k]()
            elapsed = time.perf_counter() - start
            if r >= warmup:
                times[k].append(elapsed * 1e3)
    return {k: statistics.median(v) for k, v in times.items()}


def torch_sddmm(At, X, Y):
    """torch's CPU SDDMM if this torch has one, else None."""
    try:
        torch.sparse.sampled_addmm(At, X, Y.t(), beta=0.0)
    except (RuntimeError, NotImplementedError):
        return None
    return lambda: torch.sparse.sampled_addmm(At, X, Y.t(), beta=0.0)


def bench_matrix(name: str, A: sp.csr_matrix, isa: str, ks, threads_list, args, rng) -> None:
    spmm, sddmm = load_baseline("spmm", isa), load_baseline("sddmm", isa)
    ip, ix, v = (torch.from_numpy(a) for a in (A.indptr.astype(np.int32), A.indices.astype(np.int32), A.data))
    At = torch.sparse_csr_tensor(ip.long(), ix.long(), v, size=A.shape)
    rows = torch.repeat_interleave(torch.arange(A.shape[0]), torch.diff(ip.long()))
    for K in ks:
        B = torch.from_numpy(rng.uniform(-1, 1, (A.shape[1], K)).astype(np.float32))  # also Y of the SDDMM
        X = torch.from_numpy(rng.uniform(-1, 1, (A.shape[0], K)).astype(np.float32))
        C, out = torch.empty(A.shape[0], K), torch.empty(A.nnz)
        for t in threads_list:
            spmm(ip, ix, v, B, C, t)
            sddmm(ip, ix, v, X, B, out, t)
            if not torch.allclose(C, torch.sparse.mm(At, B), rtol=1e-4, atol=1e-4):
                raise SystemExit(f"spmm_{isa} disagrees with torch on {name} K={K} threads={t}")
            if not torch.allclose(out, v * (X[rows] * B[ix.long()]).sum(1), rtol=1e-4, atol=1e-4):
                raise SystemExit(f"sddmm_{isa} disagrees with torch on {name} K={K} threads={t}")
            fns = {f"spmm_{isa}": lambda: spmm(ip, ix, v, B, C, t), "torch.sparse.mm": lambda: torch.sparse.mm(At, B),
                   f"sddmm_{isa}": lambda: sddmm(ip, ix, v, X, B, out, t)}
            ref_sddmm = torch_sddmm(At, X, B)
            if ref_sddmm is not None:
                fns["torch.sampled_addmm"] = ref_sddmm
            r = median_times(fns, t, args.warmup, args.reps)
            line = "  ".join(f"{k} {ms:8.2f}" for k, ms in r.items())
            ratio = f"  spmm: torch/base {r['torch.sparse.mm'] / r[f'spmm_{isa}']:.2f}x"
            if ref_sddmm is not None:
                ratio += f", sddmm: torch/base {r['torch.sampled_addmm'] / r[f'sddmm_{isa}']:.2f}x"
            print(f"{name:8s} nnz={A.nnz:8d} K={K:3d} threads={t}: {line}{ratio}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--isa", default=None, help="baseline level (default: the host's highest)")
    parser.add_argument("--k", type=int, nargs="+", default=[32, 128], choices=list(SUPPORTED_K))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    isa = args.isa or (available_isas() or (None,))[-1]
    if isa is None:
        raise SystemExit("this host runs none of the baselines")
    print(f"times in ms, medians of {args.reps} interleaved runs after {args.warmup} warm-up runs; torch "
          f"{torch.__version__}")
    rng = np.random.default_rng(0)
    for name, make in (("powerlaw", powerlaw), ("banded", banded)):
        bench_matrix(name, make(), isa, args.k, args.threads, args, rng)


if __name__ == "__main__":
    main()
