"""How much any storage format could gain over our CSR SpMM on a graph, and
how hyb compares (float32, 2 threads by default):

    python benchmarks/bench_locality.py [--matrices email-Enron,cond-mat-2005] [--k 32 64 128 256]

Per matrix and K, medians of interleaved rounds (ms) of
- csr: torch.ops.sparsetir.spmm on the graph;
- l2: the same row lengths with the columns folded into a span whose dense
  rows fit a quarter of L2 (1 MiB; or the longest row's columns): every
  gather could hit L2;
- one-row: every column index 0, so every gather hits one cached row. No
  layout of the data can make the gathers cheaper than this: csr/one-row
  bounds what a format that improves locality can gain;
- rcm: the graph relabelled by reverse Cuthill-McKee (scipy), rows and
  columns, with the per-call cost of using it on unrelabelled data: the
  dense operand's rows permuted in, the output's rows permuted back
  (rcm-kernel: the product alone);
- rcm-rows: only the rows in RCM order, the product alone (its output rows
  come out in that order: written back in place, they would be scattered);
- hyb: torch.ops.sparsetir._spmm_hyb in the graph's hyb form.
"""
from __future__ import annotations

import argparse
import os
import time

import torch

from bench_common import DATASETS

L2_SHARE_BYTES = 1 << 20


def interleaved_medians(fns: dict, rounds: int) -> dict:
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: sorted(t)[rounds // 2] * 1e3 for name, t in times.items()}


def folded_columns(indptr: torch.Tensor, indices: torch.Tensor, span: int) -> torch.Tensor:
    """Each row's columns mapped into [0, span) (span >= the longest row),
    kept distinct and sorted: collisions take the smallest free columns."""
    out = torch.empty_like(indices)
    for r in range(indptr.numel() - 1):
        s, e = int(indptr[r]), int(indptr[r + 1])
        cols = torch.unique(indices[s:e] % span)
        if cols.numel() < e - s:
            free = torch.ones(span, dtype=torch.bool)
            free[cols.long()] = False
            cols = torch.cat([cols, torch.nonzero(free).view(-1)[: e - s - cols.numel()].to(cols.dtype)]).sort()[0]
        out[s:e] = cols
    return out


def rcm_relabelled(indptr, indices, values, shape):
    """(perm, inverse, indptr, indices, values) of P A P^T for the RCM order
    P, and (indptr, indices, values) of P A (rows only)."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    a = sp.csr_matrix((values.numpy(), indices.numpy(), indptr.numpy()), shape=shape)
    perm = reverse_cuthill_mckee(a, symmetric_mode=True).astype(np.int64)
    rows = a[perm].tocsr()
    rows.sort_indices()
    p = rows[:, perm].tocsr()
    p.sort_indices()
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(perm.size)

    def arrays(x):
        return torch.from_numpy(x.indptr).int(), torch.from_numpy(x.indices).int(), torch.from_numpy(x.data)

    return (torch.from_numpy(perm), torch.from_numpy(inverse), *arrays(p)), arrays(rows)


def dataset_arguments(doc: str, matrices: str, rounds: int) -> argparse.Namespace:
    """--matrices, --k, --rounds and --datasets of the dataset benchmarks."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrices", default=matrices)
    parser.add_argument("--k", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--datasets", default=DATASETS)
    return parser.parse_args()


def main() -> None:
    args = dataset_arguments(__doc__, "email-Enron,cond-mat-2005", 11)
    import sparsetir_torch as st
    from sparsetir_torch.matrix_market import read_matrix_market
    from sparsetir_torch import tuning

    spmm = torch.ops.sparsetir.spmm.default
    for name in args.matrices.split(","):
        m = read_matrix_market(os.path.join(args.datasets, name + ".mtx.gz"))
        indptr, indices = torch.as_tensor(m.indptr).int(), torch.as_tensor(m.indices).int()
        values = torch.rand(indices.numel()) + 0.5
        A = st.SparseMatrix(indptr, indices, values, m.shape)
        zeros = torch.zeros_like(indices)
        relabelled, rows_only = rcm_relabelled(indptr, indices, values, m.shape) if m.shape[0] == m.shape[1] \
            else (None, None)
        for K in args.k:
            B = torch.randn(m.shape[1], K)
            longest = int((indptr[1:] - indptr[:-1]).max())
            span = min(m.shape[1], max(longest, L2_SHARE_BYTES // (4 * K)))
            folded = folded_columns(indptr, indices, span)
            fns = {
                "csr": lambda: spmm(indptr, indices, values, B, "sum"),
                "l2": lambda: spmm(indptr, folded, values, B, "sum"),
                "one-row": lambda: spmm(indptr, zeros, values, B, "sum"),
            }
            if relabelled is not None:
                perm, inverse, r_indptr, r_indices, r_values = relabelled
                fns["rcm-kernel"] = lambda: spmm(r_indptr, r_indices, r_values, B, "sum")
                fns["rcm"] = lambda: spmm(r_indptr, r_indices, r_values, B.index_select(0, perm), "sum") \
                    .index_select(0, inverse)
                fns["rcm-rows"] = lambda: spmm(*rows_only, B, "sum")
            # The hyb form of a skewed graph, timed even where the chooser
            # skips it for padding more than tuning.HYB_MAX_PADDING.
            form = tuning.hyb_form(A)
            if form is not None:
                fns["hyb"] = lambda: torch.ops.sparsetir._spmm_hyb(indptr, indices, values, B, *form)
            t = interleaved_medians(fns, args.rounds)
            line = (f"{name:14s} K={K:3d}  csr {t['csr']:7.3f}  l2 {t['l2']:7.3f} ({t['csr'] / t['l2']:.2f}x)  "
                    f"one-row {t['one-row']:7.3f} ({t['csr'] / t['one-row']:.2f}x)")
            if relabelled is not None:
                line += (f"  rcm {t['rcm']:7.3f} ({t['csr'] / t['rcm']:.2f}x; "
                         f"kernel alone {t['csr'] / t['rcm-kernel']:.2f}x)  "
                         f"rcm-rows {t['rcm-rows']:7.3f} ({t['csr'] / t['rcm-rows']:.2f}x)")
            if form is not None:
                line += f"  hyb{form} {t['hyb']:7.3f} ({t['csr'] / t['hyb']:.2f}x)"
            print(line + "  (ms)", flush=True)


if __name__ == "__main__":
    main()
