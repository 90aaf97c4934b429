"""Per-call time of st.spmm on a graph whose chosen format is hyb, in two
checkouts of this project side by side (say, before and after a change to
the hyb path):

    python benchmarks/bench_hyb_call.py --checkouts /path/to/old /path/to/new [--k 32 128] [--rounds 15] [--threads 2]

Each checkout runs in a worker process of its own (PYTHONPATH set to it);
the workers take turns, one measurement each per round, so interference from
other processes hits both alike, and the medians over the rounds are
printed. The choice is forced (hyb(1, w), w the longest row rounded up to a
power of two), as the chooser keeps hyb only where it wins. Cases per graph
and K: "infer" (values without grad) and "train" (values and the dense
operand require grad: forward and backward). Graphs: email-Enron (from the
datasets folder), an R-MAT graph (2^16 vertices, 16 edges per vertex) and a
tiny one (8 x 8, 12 non-zeros), where the time is the per-call overhead.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# --------------------------------------------------------------------------- worker


def _graphs(datasets: str):
    import torch

    import sparsetir_torch as st
    from sparsetir_torch.demo import rmat
    from sparsetir_torch.matrix_market import read_matrix_market

    m = read_matrix_market(os.path.join(datasets, "email-Enron.mtx.gz"))
    values = torch.rand(m.nnz, generator=torch.Generator().manual_seed(0)) + 0.5
    yield "email-Enron", st.SparseMatrix(m.indptr.int(), m.indices.int(), values, m.shape)
    r = rmat(16, 16)
    yield "rmat16", st.SparseMatrix(r.crow_indices().int(), r.col_indices().int(), r.values().clone(), r.shape)
    indptr = torch.tensor([0, 1, 3, 3, 5, 6, 8, 11, 12], dtype=torch.int32)
    indices = torch.tensor([0, 1, 2, 0, 7, 3, 4, 5, 0, 1, 6, 2], dtype=torch.int32)
    yield "tiny", st.SparseMatrix(indptr, indices, torch.rand(12) + 0.5, (8, 8))


def _calls(A, K: int, case: str):
    """A function making one call of the case."""
    import torch

    import sparsetir_torch as st

    longest = int((A.indptr[1:] - A.indptr[:-1]).max())
    width = 1 << max(0, (longest - 1).bit_length())
    A._derived[("choice", "spmm", K, torch.float32)] = {"format": "hyb", "parts": 1, "max_width": width,
                                                        "block": None, "candidates": [], "source": "bench"}
    B = torch.randn(A.shape[1], K, generator=torch.Generator().manual_seed(1))
    if case == "infer":
        return lambda: st.spmm(A, B)
    values = A.values.clone().requires_grad_()
    Ag = A.with_values(values)
    Bg = B.clone().requires_grad_()
    grad = torch.ones(A.shape[0], K)

    def train():
        values.grad = Bg.grad = None
        st.spmm(Ag, Bg).backward(grad)

    return train


def worker(datasets: str, threads: int) -> None:
    import torch

    torch.set_num_threads(threads)
    graphs = dict(_graphs(datasets))
    fns = {}
    print(json.dumps({"ready": True, "threads": torch.get_num_threads()}), flush=True)
    for line in sys.stdin:
        graph, K, case, calls = json.loads(line)
        key = (graph, K, case)
        if key not in fns:
            fns[key] = _calls(graphs[graph], K, case)
            for _ in range(3):
                fns[key]()  # compile, convert, warm the caches
        fn = fns[key]
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        print(json.dumps((time.perf_counter() - start) / calls), flush=True)


# --------------------------------------------------------------------------- driver


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkouts", nargs=2, required=True, help="two checkouts with built extensions")
    parser.add_argument("--k", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--datasets", default=os.path.join(HERE, "..", "tests", "data", "matrices"))
    args = parser.parse_args()
    workers = []
    for path in args.checkouts:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(path))
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", args.datasets,
                              str(args.threads)], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        print(path, p.stdout.readline().strip(), flush=True)
        workers.append(p)
    cases = [(g, K, c) for g in ("email-Enron", "rmat16") for K in args.k for c in ("infer", "train")]
    cases += [("tiny", 32, "infer"), ("tiny", 32, "train")]
    times = {case: ([], []) for case in cases}
    for _ in range(args.rounds):
        for case in cases:
            calls = 2000 if case[0] == "tiny" else 5
            for w, p in enumerate(workers):
                p.stdin.write(json.dumps([*case, calls]) + "\n")
                p.stdin.flush()
                times[case][w].append(json.loads(p.stdout.readline()))
    for p in workers:
        p.stdin.close()
        p.wait()
    print(f"{'graph':12s} {'K':>4s} {'case':6s} {'first (ms)':>11s} {'second (ms)':>12s} {'first/second':>13s}")
    for case in cases:
        a, b = (statistics.median(t) * 1e3 for t in times[case])
        print(f"{case[0]:12s} {case[1]:4d} {case[2]:6s} {a:11.4f} {b:12.4f} {a / b:13.2f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]))
    else:
        main()
