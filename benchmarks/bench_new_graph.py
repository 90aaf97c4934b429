"""Per-call cost of st.spmm when every call brings a graph it has not seen, as
in minibatch GNN training where each step samples a new subgraph: the call
then validates the structure, weighs the formats it could run and converts
the tensor, before the kernel itself. Float32, 1 thread by default.

Per size (nodes, edges): a pool of random CSR graphs, each used once per
variant, and per call

    st.spmm(A, X)           the Python API on a torch CSR tensor (chooser included)
    ops.spmm(...)           the operator on the same tensor's components (no chooser)
    torch.sparse.mm(A, X)   the peer, on the same tensors
    ... training            forward and backward with X requiring grad (the
                            backward multiplies by A's transpose, built per graph)

timed interleaved graph by graph (the graph's tensors are built just before
and are warm in the cache, as after a sampler), with "same graph" rows for
a second call on a graph already seen. The table shows medians in
microseconds and the ratio torch / st.spmm (> 1: ours faster).

    python3 benchmarks/bench_new_graph.py [--sizes 500x5000,2000x20000,20000x200000] [--k 64] [--threads 1]
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch


def random_csr(nodes: int, edges: int, generator: torch.Generator) -> torch.Tensor:
    rows = torch.randint(0, nodes, (edges,), generator=generator)
    cols = torch.randint(0, nodes, (edges,), generator=generator)
    values = torch.rand(edges, generator=generator)
    with warnings.catch_warnings():  # torch: sparse CSR support is in beta
        warnings.simplefilter("ignore")
        return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (nodes, nodes)).coalesce().to_sparse_csr()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="500x5000,2000x20000,20000x200000", help="nodes x edges, comma separated")
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--graphs", type=int, default=300, help="new graphs per size")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)

    import sparsetir_torch as st
    from bench_common import machine_info, machine_line

    spmm = torch.ops.sparsetir.spmm.default
    print(machine_line(machine_info()))
    print(f"{'nodes x edges':>15} {'call':<26} {'us':>9} {'torch / ours':>13}")
    generator = torch.Generator().manual_seed(0)
    for size in args.sizes.split(","):
        nodes, edges = (int(s) for s in size.split("x"))
        X = torch.randn(nodes, args.k)
        times = {name: [] for name in ("st.spmm new graph", "ops.spmm new graph", "torch.sparse.mm new graph",
                                       "st.spmm same graph", "torch.sparse.mm same graph",
                                       "st.spmm training", "torch.sparse.mm training")}
        Xg = X.clone().requires_grad_()
        G = torch.randn(nodes, args.k)

        def train(mm, A):
            mm(A, Xg).backward(G)
            Xg.grad = None
        graphs = max(20, args.graphs if nodes <= 5000 else args.graphs // 10)
        for g in range(graphs + 10):
            # One graph per variant, made just before its call: every call sees a new structure.
            calls = (("st.spmm new graph", lambda A: st.spmm(A, X)),
                     ("ops.spmm new graph", lambda A: spmm(A.crow_indices(), A.col_indices(), A.values(), X, "sum")),
                     ("torch.sparse.mm new graph", lambda A: torch.sparse.mm(A, X)),
                     ("st.spmm training", lambda A: train(st.spmm, A)),
                     ("torch.sparse.mm training", lambda A: train(torch.sparse.mm, A)))
            for name, call in calls:
                A = random_csr(nodes, edges, generator)
                start = time.perf_counter()
                call(A)
                elapsed = time.perf_counter() - start
                if g >= 10:  # the first graphs compile the kernels
                    times[name].append(elapsed)
                if name == "st.spmm new graph":
                    for again, peer in (("st.spmm same graph", lambda: st.spmm(A, X)),
                                        ("torch.sparse.mm same graph", lambda: torch.sparse.mm(A, X))):
                        start = time.perf_counter()
                        peer()
                        if g >= 10:
                            times[again].append(time.perf_counter() - start)
        median = {name: 1e6 * statistics.median(t) for name, t in times.items()}
        for name, us in median.items():
            peer = median["torch.sparse.mm " + name.split(" ", 1)[1]] if name.startswith("st.spmm") else None
            ratio = f"{peer / us:13.2f}" if peer else ""
            print(f"{size:>15} {name:<26} {us:9.1f} {ratio}")


if __name__ == "__main__":
    main()
