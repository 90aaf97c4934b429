"""A GAT layer's attention (scores, edge softmax, weighted sum of neighbours,
every head) four ways, forward alone and forward + backward, on real graphs:

    fused     sparsetir::gat_attention: one kernel for all heads
    composed  our three kernels, each for all heads: sddmm(op="add") ->
              leaky_relu -> edge_softmax -> spmm with per-head values
    per-head  edge_softmax for all heads, then one spmm per head (the layer
              before the multi-head kernels)
    torch     what a user writes with torch alone (gather, scatter_reduce
              amax, exp, index_add sum, division, index_add of the weighted
              rows), as message-passing libraries do without compiled kernels

    python benchmarks/bench_gat.py [--graphs email-Enron cond-mat-2005 rmat16] [--heads 4] [--channels 16 64]
                                   [--rounds 9] [--threads 1 2]

The variants take turns within each round (interference hits all alike); the
medians over the rounds are printed with ratios against the fused kernel.
Every variant's output is checked against the fused one before timing.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_common import DATASETS, machine_info, machine_line  # noqa: E402

import sparsetir_torch as st  # noqa: E402
from sparsetir_torch.demo import rmat  # noqa: E402
from sparsetir_torch.matrix_market import read_matrix_market  # noqa: E402

ops = torch.ops.sparsetir


def load(name: str):
    if name.startswith("rmat"):
        r = rmat(int(name[4:]), 16)
        return r.crow_indices().int(), r.col_indices().int(), r.shape[0]
    m = read_matrix_market(os.path.join(DATASETS, f"{name}.mtx.gz"))
    return m.indptr.int(), m.indices.int(), m.shape[0]


def variants(indptr, indices, n):
    rows = torch.repeat_interleave(torch.arange(n), indptr.diff().long())
    cols = indices.long()

    def fused(a_dst, a_src, x):
        return ops.gat_attention(indptr, indices, a_dst, a_src, x, 0.2)

    def composed(a_dst, a_src, x):
        scores = F.leaky_relu(ops.sddmm(indptr, indices, None, a_dst, a_src, "add"), 0.2)
        return ops.spmm(indptr, indices, ops.edge_softmax(indptr, indices, scores), x, "sum")

    def per_head(a_dst, a_src, x):
        scores = F.leaky_relu(a_dst.index_select(0, rows) + a_src.index_select(0, cols), 0.2)
        alpha = ops.edge_softmax(indptr, indices, scores)
        return torch.stack([ops.spmm(indptr, indices, alpha[:, h].contiguous(), x[:, h].contiguous(), "sum")
                            for h in range(x.shape[1])], dim=1)

    def plain_torch(a_dst, a_src, x):
        scores = F.leaky_relu(a_dst.index_select(0, rows) + a_src.index_select(0, cols), 0.2)
        row_max = torch.full_like(a_dst, float("-inf")).scatter_reduce(
            0, rows.unsqueeze(1).expand_as(scores), scores, "amax", include_self=True)
        e = (scores - row_max.index_select(0, rows)).exp()
        alpha = e / torch.zeros_like(a_dst).index_add(0, rows, e).index_select(0, rows)
        return torch.zeros(n, *x.shape[1:]).index_add(0, rows, alpha.unsqueeze(-1) * x.index_select(0, cols))

    return {"fused": fused, "composed": composed, "per-head": per_head, "torch": plain_torch}


def timed(fn, inputs, backward: bool) -> float:
    start = time.perf_counter()
    out = fn(*inputs)
    if backward:
        out.backward(torch.ones_like(out))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graphs", nargs="+", default=["email-Enron", "cond-mat-2005", "rmat16"])
    parser.add_argument("--heads", nargs="+", type=int, default=[4])
    parser.add_argument("--channels", nargs="+", type=int, default=[16, 64])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    args = parser.parse_args()
    print(machine_line(machine_info()))
    print("graph,heads,channels,threads,pass,variant,median_ms,ratio_vs_fused")
    for graph in args.graphs:
        indptr, indices, n = load(graph)
        fns = variants(indptr, indices, n)
        for heads in args.heads:
            for channels in args.channels:
                g = torch.Generator().manual_seed(0)
                base = [torch.randn(n, heads, generator=g), torch.randn(n, heads, generator=g),
                        torch.randn(n, heads, channels, generator=g)]
                reference = fns["fused"](*base)
                for name, fn in fns.items():
                    torch.testing.assert_close(fn(*base), reference, rtol=1e-4, atol=1e-4, msg=name)
                for threads in args.threads:
                    torch.set_num_threads(threads)
                    for backward in (False, True):
                        times = {name: [] for name in fns}
                        for _ in range(args.rounds + 1):  # the first round warms up
                            for name, fn in fns.items():
                                inputs = [t.clone().requires_grad_(backward) for t in base]
                                times[name].append(timed(fn, inputs, backward))
                        medians = {name: statistics.median(ts[1:]) * 1e3 for name, ts in times.items()}
                        for name, ms in medians.items():
                            print(f"{graph},{heads},{channels},{threads},{'fwd+bwd' if backward else 'fwd'},{name},"
                                  f"{ms:.3f},{ms / medians['fused']:.2f}", flush=True)


if __name__ == "__main__":
    main()
