"""Per-call cost of st.validate_every_call (the opt-in re-check of structures
changed behind the version counter): the same spmm with the switch off and
on, interleaved rounds, medians; prints the machine. About 20 s.

    python3 benchmarks/bench_revalidation.py [--threads 1] [--k 1 32] [--matrices email-Enron bcsstk16]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import sparsetir_torch as st
from bench_common import DATASETS, machine_info, machine_line
from sparsetir_torch.matrix_market import read_matrix_market


def per_call(fn, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--matrices", nargs="+", default=["email-Enron", "bcsstk16"])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(machine_line(machine_info()))
    ops = torch.ops.sparsetir
    for name in args.matrices:
        a = read_matrix_market(os.path.join(DATASETS, name + ".mtx.gz"))
        indptr, indices = a.indptr.int(), a.indices.int()
        values = torch.rand(indices.numel())
        for k in args.k:
            b = torch.rand(a.shape[1], k)

            def call():
                ops.spmm(indptr, indices, values, b, "sum")

            off, on = [], []
            for round_ in range(args.rounds + 1):  # the first round warms up
                t_off = per_call(call, args.calls)
                with st.validate_every_call():
                    t_on = per_call(call, args.calls)
                if round_:
                    off.append(t_off)
                    on.append(t_on)
            o, n = statistics.median(off), statistics.median(on)
            print(f"{name} ({indices.numel()} nnz) K={k}: off {o * 1e3:.3f} ms, on {n * 1e3:.3f} ms, "
                  f"+{(n - o) * 1e3:.3f} ms per call, on/off {n / o:.2f}")


if __name__ == "__main__":
    main()
