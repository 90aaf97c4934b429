"""What relabelling a graph once with st.reorder (reverse Cuthill-McKee) is
worth to SpMM (float32, 2 threads by default):

    python benchmarks/bench_reorder.py [--matrices mdual,copter2] [--k 32 64 128 256]

Per matrix: the bandwidth before and after and the one-time cost of
st.reorder (ms). Per K: torch.ops.sparsetir.spmm on the graph as stored and
on the relabelled graph with its features permuted once (medians of
interleaved rounds, ms) and their ratio. Both run the same CSR kernel; only
the order of the rows and columns differs.
"""
from __future__ import annotations

import os
import time

import numpy as np
import torch

from bench_locality import dataset_arguments, interleaved_medians


def bandwidth(indptr: torch.Tensor, indices: torch.Tensor) -> int:
    ip = indptr.numpy()
    rows = np.repeat(np.arange(ip.size - 1), np.diff(ip))
    return int(np.abs(rows - indices.numpy()).max(initial=0))


def main() -> None:
    args = dataset_arguments(__doc__, "mdual,copter2,horse-laplacian,email-Enron,cond-mat-2005,bcsstk16", 15)
    import sparsetir_torch as st
    from sparsetir_torch.matrix_market import read_matrix_market

    spmm = torch.ops.sparsetir.spmm
    for name in args.matrices.split(","):
        m = read_matrix_market(os.path.join(args.datasets, name + ".mtx.gz"))
        A = st.SparseMatrix(torch.as_tensor(m.indptr).int(), torch.as_tensor(m.indices).int(),
                            torch.rand(len(m.indices)) + 0.5, m.shape)
        start = time.perf_counter()
        R, order = st.reorder(A)
        reorder_ms = (time.perf_counter() - start) * 1e3
        print(f"{name:16s} bandwidth {bandwidth(A.indptr, A.indices):7d} -> {bandwidth(R.indptr, R.indices):7d}"
              f"  st.reorder {reorder_ms:7.1f} ms (once)", flush=True)
        for K in args.k:
            X = torch.rand(m.shape[1], K)
            X_relabelled = X[order.long()]
            t = interleaved_medians({"stored": lambda: spmm(A.indptr, A.indices, A.values, X),
                                     "relabelled": lambda: spmm(R.indptr, R.indices, R.values, X_relabelled)},
                                    args.rounds)
            print(f"{name:16s} K={K:3d}  stored {t['stored']:8.3f} ms  relabelled {t['relabelled']:8.3f} ms  "
                  f"stored/relabelled {t['stored'] / t['relabelled']:5.2f}", flush=True)


if __name__ == "__main__":
    main()
