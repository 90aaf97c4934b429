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
import statistics
import time

import torch

import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script
from sparsetir_torch.matrix_market import read_matrix_market
from sparsetir_torch.recipes import spmm_cpu


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
    return torch.sparse_coo_tensor(torch.stack([rows, cols]), values, (n, n)).coalesce().to_sparse_csr()


def median_ms(fn, repeats: int = 20) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


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
    print(f"scheduled kernel built in {(time.perf_counter() - t) * 1e3:.1f} ms; its generated C++:")
    print(fast.source[fast.source.index("static void sparsetir_task"):])

    B = torch.randn(n, args.feat)
    indptr, indices = A.crow_indices().int(), A.col_indices().int()
    reference = torch.sparse.mm(A.double(), B.double())
    scale = reference.abs().max().item() or 1.0
    results = {}
    for label, k in (("plain", kernel), ("scheduled", fast)):
        C = torch.empty(m, args.feat)
        run = lambda k=k, C=C: k(a=A.values(), b=B, c=C, indptr=indptr, indices=indices, m=m, n=n,
                                 feat_size=args.feat, nnz=nnz)
        run()
        error = (C.double() - reference).abs().max().item()
        print(f"{label}: max |error| vs float64 torch.sparse.mm {error:.3g} (relative {error / scale:.3g})")
        if error > 1e-4 * scale:
            raise SystemExit(f"demo FAILED: the {label} kernel does not match torch.sparse.mm")
        results[label] = median_ms(run)
    peer = median_ms(lambda: torch.sparse.mm(A, B))
    flops = 2 * nnz * args.feat
    print(f"\nmedian times, {torch.get_num_threads()} threads, K = {args.feat}:")
    for label, ms in (*results.items(), ("torch.sparse.mm", peer)):
        print(f"  {label:16s} {ms:8.3f} ms  {flops / (ms * 1e-3) / 1e9:6.2f} GFLOP/s  (torch.sparse.mm / this = {peer / ms:.2f})")

    # The operator library: the same product through torch.ops.sparsetir with
    # autograd, after the per-graph format choice.
    print("\n== operators: st.spmm with autograd")
    Bg = B.clone().requires_grad_()
    out = st.spmm(A, Bg)
    out.square().sum().backward()
    expected = torch.sparse.mm(A.t().to_sparse_csr().double(), 2 * reference)
    grad_error = (Bg.grad.double() - expected).abs().max().item() / (expected.abs().max().item() or 1.0)
    print(f"st.spmm: max relative |error| {((out.detach().double() - reference).abs().max().item() / scale):.3g}; "
          f"d/dB relative |error| {grad_error:.3g}")
    if grad_error > 1e-4:
        raise SystemExit("demo FAILED: the gradient of st.spmm does not match torch")
    choice = st.explain(A, op="spmm", k=args.feat)
    print(f"format chosen for this graph at K = {args.feat}: {choice['format']}"
          + (f" {choice['block']}x{choice['block']}" if choice.get("block") else "") + f" ({choice['source']})")
    print(f"  st.spmm {median_ms(lambda: st.spmm(A, B)):8.3f} ms")
    print("demo OK")


if __name__ == "__main__":
    main()
