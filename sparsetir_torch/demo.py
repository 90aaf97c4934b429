"""The main demo: compile the design's CSR SpMM script and run it on a graph.

    python -m sparsetir_torch.demo [--matrix PATH.mtx.gz] [--feat 32]

Without --matrix it generates a power-law (R-MAT) graph with 2^15 rows and 16
non-zeros per row on average. It prints the three IR stages of the kernel, the
compile and cached-load times, then schedules it for the CPU (specialized
width, SIMD, register-resident rows, threads) and prints the trace and the
generated C++; it checks both kernels against torch's own sparse matrix product
and times them side by side.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script
from sparsetir_torch.matrix_market import read_matrix_market
from sparsetir_torch.recipes import cpu_target, spmm_cpu
from sparsetir_torch.torch_warnings import quiet_sparse_warnings


def rmat(scale: int, edge_factor: int, seed: int = 0) -> torch.Tensor:
    """A power-law R-MAT graph (a=0.57, b=c=0.19) as a float32 CSR tensor."""
    g = torch.Generator().manual_seed(seed)
    n, m = 1 << scale, edge_factor << scale
    rows = torch.zeros(m, dtype=torch.int64)
    cols = torch.zeros(m, dtype=torch.int64)
    for bit in range(scale):
        r = torch.rand(m, generator=g)
        down = (r >= 0.57 + 0.19).long()  # c or d quadrant
        right = ((r >= 0.57) & (r < 0.76) | (r >= 0.95)).long()  # b or d quadrant
        rows |= down << bit
        cols |= right << bit
    values = torch.rand(m, generator=g) + 0.5
    with quiet_sparse_warnings():
        return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (n, n)).coalesce().to_sparse_csr()


def _busy_seconds() -> float:
    """CPU seconds all processes spent busy since boot (/proc/stat), or -1."""
    try:
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
    except (OSError, ValueError):
        return -1.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def interleaved_medians(fns: dict, rounds: int = 15) -> tuple:
    """Median milliseconds of each function, timed in interleaved rounds (one
    call of each per round, after a warm-up call), so that load from other
    processes hits all of them alike; and the share of the CPUs that other
    processes used meanwhile (0-1; -1 where unknown)."""
    for fn in fns.values():
        fn()
    times = {label: [] for label in fns}
    busy0, own0, wall0 = _busy_seconds(), time.process_time(), time.perf_counter()
    for _ in range(rounds):
        for label, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[label].append((time.perf_counter() - t) * 1e3)
    busy1, own1, wall1 = _busy_seconds(), time.process_time(), time.perf_counter()
    others = -1.0
    if busy0 >= 0 and busy1 >= 0:
        others = max(0.0, (busy1 - busy0) - (own1 - own0)) / ((wall1 - wall0) * (os.cpu_count() or 1))
    return {label: statistics.median(ts) for label, ts in times.items()}, others


def load_note(others: float) -> str:
    """A warning when other processes kept the CPUs busy while timing."""
    if others < 0.15:
        return ""
    return (f"note: other processes used {100 * others:.0f}% of the CPUs while this timed: the figures swing "
            f"between runs\n      on a loaded machine; compare the ratios, and rerun on an idle machine for figures")


def readable_cpp(source: str, width: int = 110) -> str:
    """The kernel part of a generated source (from the launcher's task
    template on; the prelude and ABI declarations above it are left out),
    with lines longer than `width` broken after commas and semicolons."""
    start = source.find("template <typename F>")
    text = source[start if start >= 0 else 0:]
    abi = next((line for line in text.splitlines() if line.startswith("typedef union")), None)
    if abi is not None:  # the ABI declarations (codegen/abi.h) as one line: not the kernel
        text = text.replace(abi + "\n", "// (the ABI declarations of codegen/abi.h)\n")
    out = []
    for line in text.splitlines():
        indent = " " * (len(line) - len(line.lstrip()) + 4)
        while len(line) > width:
            cuts = [line.rfind(sep, len(indent), width) for sep in (", ", "; ")]
            cut = max(cuts)
            if cut < 0:
                break
            out.append(line[:cut + 1])
            line = indent + line[cut + 1:].lstrip()
        out.append(line)
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--matrix", help="a Matrix Market file (.mtx or .mtx.gz)")
    parser.add_argument("--feat", type=int, default=32, help="columns of the dense operand (default 32)")
    args = parser.parse_args()

    if args.matrix:
        A = read_matrix_market(args.matrix).to_torch(torch.float32)
        name = args.matrix
    else:
        A = rmat(scale=15, edge_factor=16)
        name = "R-MAT graph, scale 15, edge factor 16"
    m, n = A.shape
    nnz = A.values().numel()
    print(f"matrix: {name}: {m} x {n}, {nnz} non-zeros; dense operand {n} x {args.feat}\n")

    f = st.parse(kernel_script("csrmm"))
    print("== stage I (the script)\n" + f.script())
    stage_ii = st.lower_sparse_iter(f)
    print("== stage II (loops over positions)\n" + stage_ii.script())
    print("== stage III (flat buffers)\n" + st.lower_sparse_buffer(stage_ii).script())

    before = st.cache_info()
    t = time.perf_counter()
    kernel = st.compile(f)
    build_ms = (time.perf_counter() - t) * 1e3
    after = st.cache_info()
    how = "compiled" if after["compiles"] > before["compiles"] else "loaded from the disk cache"
    print(f"plain kernel {how} in {build_ms:.1f} ms (cache: {after['directory']})\n")

    sch = spmm_cpu(args.feat)
    print("== schedule trace (replayable Python)\n" + sch.trace)
    t = time.perf_counter()
    fast = st.compile(sch)
    target = cpu_target()
    print(f"scheduled kernel built in {(time.perf_counter() - t) * 1e3:.1f} ms for {target['target']} "
          f"({' '.join(target['compiler_flags'])}); its generated C++:")
    print(readable_cpp(fast.source))

    B = torch.randn(n, args.feat)
    indptr, indices = A.crow_indices().int(), A.col_indices().int()
    reference = torch.sparse.mm(A.double(), B.double())
    scale = reference.abs().max().item() or 1.0
    runs = {}
    for label, k in (("plain", kernel), ("scheduled", fast)):
        C = torch.empty(m, args.feat)
        run = lambda k=k, C=C: k(a=A.values(), b=B, c=C, indptr=indptr, indices=indices, m=m, n=n,
                                 feat_size=args.feat, nnz=nnz)
        run()
        error = (C.double() - reference).abs().max().item()
        print(f"{label}: max |error| vs float64 torch.sparse.mm {error:.3g} (relative {error / scale:.3g})")
        if error > 1e-4 * scale:
            raise SystemExit(f"demo FAILED: the {label} kernel does not match torch.sparse.mm")
        runs[label] = run
    runs["torch.sparse.mm"] = lambda: torch.sparse.mm(A, B)
    results, others = interleaved_medians(runs)
    peer = results["torch.sparse.mm"]
    flops = 2 * nnz * args.feat
    print(f"\nmedian times of 15 interleaved rounds, {torch.get_num_threads()} threads, K = {args.feat}:")
    for label, ms in results.items():
        print(f"  {label:16s} {ms:8.3f} ms  {flops / (ms * 1e-3) / 1e9:6.2f} GFLOP/s  (torch.sparse.mm / this = {peer / ms:.2f})")
    if load_note(others):
        print(load_note(others))

    # The operator library: the same product through torch.ops.sparsetir with
    # autograd, after the per-graph format choice.
    print("\n== operators: st.spmm with autograd")
    Bg = B.clone().requires_grad_()
    out = st.spmm(A, Bg)
    out.square().sum().backward()
    with quiet_sparse_warnings():
        expected = torch.sparse.mm(A.t().to_sparse_csr().double(), 2 * reference)
    grad_error = (Bg.grad.double() - expected).abs().max().item() / (expected.abs().max().item() or 1.0)
    print(f"st.spmm: max relative |error| {((out.detach().double() - reference).abs().max().item() / scale):.3g}; "
          f"d/dB relative |error| {grad_error:.3g}")
    if grad_error > 1e-4:
        raise SystemExit("demo FAILED: the gradient of st.spmm does not match torch")
    choice = st.explain(A, op="spmm", k=args.feat)
    print(f"format chosen for this graph at K = {args.feat}: {choice['format']}"
          + (f" {choice['block']}x{choice['block']}" if choice.get("block") else "") + f" ({choice['source']})")
    ours, others = interleaved_medians({"st.spmm": lambda: st.spmm(A, B), "torch.sparse.mm": runs["torch.sparse.mm"]})
    print(f"  st.spmm {ours['st.spmm']:8.3f} ms  (torch.sparse.mm / this = {ours['torch.sparse.mm'] / ours['st.spmm']:.2f})")
    if load_note(others):
        print(load_note(others))
    print("demo OK")


if __name__ == "__main__":
    main()
