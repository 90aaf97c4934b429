"""st.nn.functional.dropout against torch.nn.functional.dropout on the CPU:
the forward alone and forward + backward (the gradient of a sum), per
tensor size and dtype, timed interleaved (ours, torch's, ours, ...) after
a warm-up; medians in milliseconds and the ratio torch / ours (> 1: ours
faster), at each thread count asked for.

    python3 benchmarks/bench_dropout.py [--shapes 36692x64,4096x4096] [--dtypes float32,bfloat16] [--threads 1 2]
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, rounds: int) -> list:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="36692x64,36692x16,4096x4096", help="rows x columns, comma separated")
    p.add_argument("--dtypes", default="float32,float64,bfloat16,float16")
    p.add_argument("--p", type=float, default=0.5)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds per case (after 2 of warm-up)")
    args = p.parse_args()

    import sparsetir_torch as st
    from bench_common import machine_info, machine_line

    print(machine_line(dict(machine_info(), threads=", ".join(map(str, args.threads)))))
    print(f"{'threads':>7} {'shape':>12} {'dtype':>9} {'pass':>17} {'ours ms':>8} {'torch ms':>9} {'torch / ours':>13}")
    for threads in args.threads:
        torch.set_num_threads(threads)
        for shape in args.shapes.split(","):
            rows, cols = (int(v) for v in shape.split("x"))
            for name in args.dtypes.split(","):
                x = torch.randn(rows, cols, dtype=getattr(torch, name))
                xg = x.clone().requires_grad_()
                cases = {
                    "forward": (lambda: st.nn.functional.dropout(x, args.p), lambda: F.dropout(x, args.p)),
                    "forward+backward": (lambda: st.nn.functional.dropout(xg, args.p).sum().backward(),
                                         lambda: F.dropout(xg, args.p).sum().backward()),
                }
                for case, (ours, theirs) in cases.items():
                    timed(ours, 2), timed(theirs, 2)
                    t_ours, t_theirs = [], []
                    for _ in range(args.rounds):
                        t_ours += timed(ours, 1)
                        t_theirs += timed(theirs, 1)
                    a, b = statistics.median(t_ours) * 1e3, statistics.median(t_theirs) * 1e3
                    print(f"{threads:>7} {shape:>12} {name:>9} {case:>17} {a:8.2f} {b:9.2f} {b / a:13.2f}", flush=True)


if __name__ == "__main__":
    main()
