"""The per-graph format choice of st.spmm (sparsetir_torch/tuning.py) against
plain CSR, on dataset matrices, float32, with a fresh private kernel/choice
cache (so every choice is measured, kernels compiled):

    python benchmarks/bench_tuning.py [--matrices bcsstk16,email-Enron] [--k 32 64 128 256]

Prints, per matrix and K: the chosen format, the CSR op time, the tuned
st.spmm time (median of 9 calls), their ratio, the time the choice took (also
in CSR-call equivalents) and the candidates' measured times.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch


def median_ms(fn, repeats: int = 9) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[repeats // 2] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrices", default="bcsstk16,email-Enron,cond-mat-2005,copter2")
    parser.add_argument("--k", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--datasets", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "datasets"))
    args = parser.parse_args()
    os.environ["SPARSETIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="sparsetir-tuning-")
    import sparsetir_torch as st
    from sparsetir_torch.matrix_market import read_matrix_market

    for name in args.matrices.split(","):
        m = read_matrix_market(os.path.join(args.datasets, name + ".mtx.gz"))
        A = st.SparseMatrix(torch.as_tensor(m.indptr).long(), torch.as_tensor(m.indices).long(),
                            torch.rand(len(m.indices)) + 0.5, m.shape)
        for K in args.k:
            B = torch.randn(m.shape[1], K)
            csr = median_ms(lambda: torch.ops.sparsetir.spmm(A.indptr, A.indices, A.values, B))
            start = time.perf_counter()
            info = st.explain(A, k=K)
            tuning_ms = (time.perf_counter() - start) * 1e3
            tuned = median_ms(lambda: st.spmm(A, B))
            chosen = info["format"] + (f" {info['block']}x{info['block']}" if info.get("block") else "")
            candidates = ", ".join(f"{c['format']}{c.get('block') or ''} {c['time_ms']:.3f}" for c in info["candidates"]
                                   if "time_ms" in c)
            print(f"{name:16s} K={K:3d}  chosen {chosen:8s}  csr {csr:8.3f} ms  tuned {tuned:8.3f} ms  "
                  f"csr/tuned {csr / tuned:5.2f}  choice took {tuning_ms:7.0f} ms (= {tuning_ms / csr:6.0f} CSR calls)"
                  + (f"  [{candidates}]" if candidates else ""))


if __name__ == "__main__":
    main()
