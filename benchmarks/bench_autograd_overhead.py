"""Per-call cost of the operators' autograd kernels on tiny inputs, where the
call, not the arithmetic, is the time: a 4x4 BSR matrix of 2x2 blocks
(bsrmm, bsr_linear), an 8-node attention pattern, edge_softmax over 8 edges,
and spmm / sddmm on 8 non-zeros.

Each op is timed three ways: forward with no input requiring grad, forward
with an input requiring grad (the autograd node is built), and forward +
backward (torch.autograd.grad). Every (op, mode) runs `--number` calls per
sample, samples of all (op, mode) pairs are interleaved, and the table shows
the median over `--repeat` samples in microseconds per call.

    python3 benchmarks/bench_autograd_overhead.py                  # the sparsetir_torch on sys.path
    python3 benchmarks/bench_autograd_overhead.py --builds A B     # two checkouts, each with a built
                                                                   # extension, in alternating processes

With --builds, every round runs one process per build (A, B, A, B, ...), and
the table shows the median over rounds of each process's median, so both
builds see the same machine load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import timeit

MODES = ("forward", "forward, requires_grad", "forward + backward")


def cpu_model() -> str:
    """The CPU's model name, its logical cores and whether it has AVX-512
    (a VM may report a bare "AMD EPYC")."""
    model, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    isa = ", AVX-512" if "avx512f" in flags else ", AVX2" if "avx2" in flags else ""
    return f"{model} ({os.cpu_count()} logical cores{isa})"


def cases():
    """name -> (function of the differentiable inputs, those inputs)."""
    import torch

    import sparsetir_torch  # noqa: F401  (registers the operators)

    ops = torch.ops.sparsetir
    g = torch.Generator().manual_seed(0)

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=torch.float32) + 0.5

    # 4x4 BSR with 2x2 blocks: two block rows, one block each, plus one off the diagonal.
    b_ip, b_ix = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    # 8-node attention: each node attends to itself and its two neighbours.
    a_ip = torch.tensor([0, 2, 5, 8, 11, 14, 17, 20, 22])
    a_ix = torch.tensor([0, 1, 0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5, 4, 5, 6, 5, 6, 7, 6, 7])
    # 8 edges over 4 nodes (2 per row); also the spmm / sddmm structure.
    e_ip, e_ix = torch.tensor([0, 2, 4, 6, 8]), torch.tensor([0, 1, 1, 2, 2, 3, 3, 0])
    return {
        "bsrmm 4x4, 2x2 blocks, K=4": (lambda b, d: ops.bsrmm(b_ip, b_ix, b, d), (rand(3, 2, 2), rand(4, 4))),
        "bsr_linear 4x4, 2x2 blocks, x 2x4": (lambda x, b: ops.bsr_linear(x, b_ip, b_ix, b),
                                              (rand(2, 4), rand(3, 2, 2))),
        "sparse_attention 8 nodes, D=4": (lambda q, k, v: ops.sparse_attention(a_ip, a_ix, q, k, v),
                                          (rand(8, 4), rand(8, 4), rand(8, 4))),
        "edge_softmax 8 edges": (lambda s: ops.edge_softmax(e_ip, e_ix, s), (rand(8),)),
        "spmm 4x4, 8 nnz, K=4 (C++ before too)": (lambda v, d: ops.spmm(e_ip, e_ix, v, d), (rand(8), rand(4, 4))),
        "sddmm 4x4, 8 nnz, K=4 (C++ before too)": (lambda x, y: ops.sddmm(e_ip, e_ix, None, x, y),
                                                   (rand(4, 4), rand(4, 4))),
    }


def statements():
    """(case, mode) -> a no-argument callable doing one call."""
    import torch

    result = {}
    for name, (fn, inputs) in cases().items():
        plain = tuple(t.detach() for t in inputs)
        grad_in = tuple(t.detach().requires_grad_() for t in inputs)
        grad_out = torch.ones_like(fn(*plain))
        result[(name, MODES[0])] = lambda fn=fn, a=plain: fn(*a)
        result[(name, MODES[1])] = lambda fn=fn, a=grad_in: fn(*a)
        result[(name, MODES[2])] = lambda fn=fn, a=grad_in, go=grad_out: torch.autograd.grad(fn(*a), a, go)
    return result


def measure(number: int, repeat: int, threads: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    stmts = statements()
    timers = {key: timeit.Timer(stmt) for key, stmt in stmts.items()}
    for timer in timers.values():  # warm-up: kernels compiled or loaded, caches filled
        timer.timeit(number)
    samples = {key: [] for key in timers}
    for _ in range(repeat):
        for key, timer in timers.items():  # interleaved: one sample of every pair per round
            samples[key].append(timer.timeit(number) / number * 1e6)
    return {
        "cpu": cpu_model(), "torch": torch.__version__, "threads": threads,
        "results": [[name, mode, statistics.median(s)] for (name, mode), s in samples.items()],
    }


def print_table(columns: dict, info: dict, note: str) -> None:
    """columns: label -> {(case, mode): microseconds}."""
    print(f"CPU: {info['cpu']}; torch {info['torch']}; {info['threads']} thread(s); {note}")
    labels = list(columns)
    keys = list(next(iter(columns.values())))
    width = max(len(f"{c}  [{m}]") for c, m in keys)
    header = f"{'op  [mode]':<{width}}" + "".join(f"  {label:>14}" for label in labels)
    if len(labels) == 2:
        header += f"  {'ratio':>6}"
    print(header)
    print("-" * len(header))
    for key in keys:
        row = f"{key[0] + '  [' + key[1] + ']':<{width}}" + "".join(f"  {columns[l][key]:>11.2f} us" for l in labels)
        if len(labels) == 2:
            row += f"  {columns[labels[1]][key] / columns[labels[0]][key]:>6.2f}"
        print(row)


def compare(builds: list, rounds: int, args) -> None:
    per_build = {build: [] for build in builds}
    info = None
    for _ in range(rounds):
        for build in builds:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(build))
            cmd = [sys.executable, os.path.abspath(__file__), "--json", "--number", str(args.number),
                   "--repeat", str(args.repeat), "--threads", str(args.threads)]
            run = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/")
            if run.returncode != 0:
                sys.exit(f"the run with PYTHONPATH={env['PYTHONPATH']} failed:\n{run.stderr}")
            info = json.loads(run.stdout.splitlines()[-1])
            per_build[build].append({(c, m): t for c, m, t in info["results"]})
    columns = {}
    for build, runs in per_build.items():
        columns[os.path.basename(os.path.normpath(build))] = {
            key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print_table(columns, info, f"median of {rounds} alternating processes x {args.repeat} samples "
                f"x {args.number} calls; ratio = {list(columns)[1]} / {list(columns)[0]}"
                if len(columns) == 2 else f"median of {rounds} processes")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--number", type=int, default=200, help="calls per sample")
    parser.add_argument("--repeat", type=int, default=25, help="interleaved samples per (op, mode)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: least noise)")
    parser.add_argument("--builds", nargs="+", help="checkouts to compare, each with a built extension")
    parser.add_argument("--rounds", type=int, default=5, help="with --builds: processes per build")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.builds:
        compare(args.builds, args.rounds, args)
        return
    result = measure(args.number, args.repeat, args.threads)
    if args.json:
        print(json.dumps(result))
        return
    import sparsetir_torch

    columns = {"us/call": {(c, m): t for c, m, t in result["results"]}}
    print_table(columns, result, f"sparsetir_torch from {os.path.dirname(sparsetir_torch.__file__)}; "
                f"median of {args.repeat} samples x {args.number} calls")


if __name__ == "__main__":
    main()
