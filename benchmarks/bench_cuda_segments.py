"""The two settings of the CUDA spmm (sum) recipe, swept against cuSPARSE on the matrices and R-MAT graphs of
bench_cuda.py in one run: the row segment length L and the features per thread V.

L: a long row is one thread group's serial work in the whole-row kernel (csrmm); with segments (csrmm_segments) it
is ceil(length / L) groups' work, each adding its partial row into the zeroed output atomically. The operator cuts
rows only when some row is longer than L ($SPARSETIR_CUDA_ROW_SEGMENT; 0 keeps rows whole).
V: a thread owns V consecutive features of a tile of 32 V ($SPARSETIR_CUDA_FEATURES_PER_THREAD), where 32 V divides
K (a setting whose V does not divide K is not run).
Both are read at every call, so each setting is the operator as it would run with it. Checking and timing as in
bench_cuda.py (float64 reference, CUDA events, L2 flushed before each call, medians).

    python benchmarks/bench_cuda_segments.py [--settings 0:1 128:1 128:4 ...] [--k 32 128 512] [--out DIR]

Writes DIR/segments.csv (one row per matrix, K and setting) and prints the geometric mean (and worst case) of the
ratios cuSPARSE time / ours per K and setting. Without a CUDA device it says so and exits 0.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cuda as bc  # noqa: E402  (the matrices, the timer and the checks are bench_cuda's)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=bc.default_datasets())
    p.add_argument("--settings", nargs="+", default=["0:1", "32:1", "64:1", "128:1", "256:1", "0:2", "0:4", "128:2",
                                                     "128:4", "64:4"],
                   help="L:V pairs (row segment length, features per thread); L = auto: the operator's own choice, "
                        "V = 0: the recipe's")
    p.add_argument("--k", type=int, nargs="+", default=[32, 128, 512])
    p.add_argument("--matrices", default=".", help="regex on matrix names")
    p.add_argument("--budget", type=float, default=0.1, help="seconds of timed calls per setting and case")
    p.add_argument("--out", default=None, help="output folder (default: a new benchmarks/results/cuda-segments-<time>)")
    args = p.parse_args()
    args.quick = False
    args.settings = [(pair.split(":")[0], int(pair.split(":")[1])) for pair in args.settings]
    return args


def main() -> int:
    args = parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to time")
        return 0
    ops, why = bc.detect_ours()
    if ops is None:
        print(f"sparsetir CUDA ops: not available ({why})")
        return 1
    out_dir = args.out or os.path.join(bc.RESULTS, time.strftime("cuda-segments-%Y%m%d-%H%M%S"))
    os.makedirs(out_dir, exist_ok=True)
    env = bc.device_env()
    print(f"device {env['device']}; torch {env['torch']}, CUDA {env['cuda']}")
    timer = bc.GpuTimer(args.budget, flush_l2=True)
    rows = []
    for G in bc.load_graphs(args):
        A = G.csr(G.values)
        max_row = int((G.indptr[1:] - G.indptr[:-1]).max().item()) if G.m else 0
        for K in args.k:
            B = bc.uniform(G.n, K, seed=K, dtype=torch.float32)
            ref, mag = bc.spmm_reference(G, G.values, B)
            peer = timer.measure(lambda: torch.sparse.mm(A, B)).ms
            for length, per_thread in args.settings:
                if per_thread > 1 and K % (32 * per_thread):
                    continue
                if length == "auto":
                    os.environ.pop("SPARSETIR_CUDA_ROW_SEGMENT", None)
                else:
                    os.environ["SPARSETIR_CUDA_ROW_SEGMENT"] = length
                os.environ["SPARSETIR_CUDA_FEATURES_PER_THREAD"] = str(per_thread)
                fn = lambda: ops.spmm(G.indptr, G.indices, G.values, B)  # noqa: E731
                bad = bc.compare(fn(), ref, mag, bc.TOL[torch.float32])
                ms = None if bad else timer.measure(fn).ms
                rows.append({"matrix": G.name, "rows": G.m, "nnz": G.nnz, "max_row": max_row, "K": K,
                             "length": length, "per_thread": per_thread, "split": None if length == "auto" else max_row > int(length) > 0, "cusparse_ms": peer,
                             "ours_ms": ms, "ratio": peer / ms if ms else None, "note": bad or "", **env})
                print(f"  {G.name} K={K} L={length} V={per_thread}: cuSPARSE {peer:.4f} ms, ours "
                      f"{'WRONG ' + bad if bad else f'{ms:.4f} ms, ratio {peer / ms:.2f}'}", flush=True)
            del B, ref, mag
        torch.cuda.empty_cache()
    os.environ.pop("SPARSETIR_CUDA_ROW_SEGMENT", None)
    os.environ.pop("SPARSETIR_CUDA_FEATURES_PER_THREAD", None)
    with open(os.path.join(out_dir, "segments.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("\ngeometric mean of cuSPARSE time / ours (worst case), per K and setting L:V (L = 0: rows whole)")
    for K in args.k:
        cells = []
        for length, per_thread in args.settings:
            r = [x["ratio"] for x in rows
                 if x["K"] == K and x["length"] == length and x["per_thread"] == per_thread and x["ratio"]]
            if r:
                g = math.exp(sum(map(math.log, r)) / len(r))
                cells.append(f"{length}:{per_thread} {g:.2f} ({min(r):.2f})")
        print(f"  K={K}: " + ", ".join(cells))
    print(f"wrote {os.path.join(out_dir, 'segments.csv')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
