"""The main demo: compile the design's CSR SpMM script and run it on a graph.

    python -m sparsetir_torch.demo [--matrix PATH.mtx.gz] [--feat 32]

Without --matrix it generates a power-law (R-MAT) graph with 2^15 rows and 16
non-zeros per row on average. It prints the three IR stages of the kernel, the
generated C++ entry point, the compile and cached-load times, checks the result
against torch's own sparse matrix product, and times both.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import sparsetir_torch as st
from sparsetir_torch.kernels import kernel_script
from sparsetir_torch.matrix_market import read_matrix_market


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
    print(f"== generated C++ ({len(kernel.source.splitlines())} lines), entry point:")
    print(kernel.source[kernel.source.index('extern "C"'):])
    print(f"kernel {how} in {build_ms:.1f} ms (cache: {after['directory']})\n")

    B = torch.randn(n, args.feat)
    C = torch.empty(m, args.feat)
    indptr, indices = A.crow_indices().int(), A.col_indices().int()
    run = lambda: kernel(a=A.values(), b=B, c=C, indptr=indptr, indices=indices, m=m, n=n, feat_size=args.feat, nnz=nnz)
    run()
    reference = torch.sparse.mm(A.double(), B.double())
    error = (C.double() - reference).abs().max().item()
    scale = reference.abs().max().item() or 1.0
    print(f"max |error| vs float64 torch.sparse.mm: {error:.3g} (relative {error / scale:.3g})")
    if error > 1e-4 * scale:
        raise SystemExit("demo FAILED: the result does not match torch.sparse.mm")

    ours = median_ms(run)
    peer = median_ms(lambda: torch.sparse.mm(A, B))
    gflops = 2 * nnz * args.feat / (ours * 1e-3) / 1e9
    print(f"median time: sparsetir {ours:.3f} ms ({gflops:.2f} GFLOP/s), torch.sparse.mm {peer:.3f} ms "
          f"(ratio {peer / ours:.2f}x), {torch.get_num_threads()} threads")
    print("demo OK")


if __name__ == "__main__":
    main()
