"""What feature (K) tiling could give SDDMM at large K, measured from outside
the kernel: the operator on K-slices of X and Y (copied beforehand, the copies
not timed), the slices' outputs summed, against the operator at full K and
against torch.sparse.sampled_addmm. Each slice's pass gathers rows of Y of
c features, so its working set is n x c x 4 bytes instead of n x K x 4: at
c = 64 it fits the L3 (or the L2) where the whole Y does not. A kernel that
did this itself would need dense rows with a leading dimension other than
their width (no copies) and would keep the partial sums of one non-zero in
the output between passes.

    python3 benchmarks/bench_sddmm_feature_tiles.py [--matrices REGEX] [--k 128 256] [--slices 16 32 64]

One thread, float32, medians of 7 calls after a warm-up, in milliseconds.
"""
from __future__ import annotations

import argparse

import torch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--matrices", default="bcsstk|email|cond|horse|copter|mdual|rmat17")
    p.add_argument("--k", type=int, nargs="+", default=[128, 256])
    p.add_argument("--slices", type=int, nargs="+", default=[16, 32, 64])
    args = p.parse_args()
    torch.set_num_threads(1)

    from bench_common import machine_info, machine_line, median_ms
    from bench_ops import Csr, matrices

    ops = torch.ops.sparsetir
    print(machine_line(dict(machine_info(), threads="1")))
    print("ms per call; 'cN': the sum of K / N slices of N features")
    for mt in matrices(args.matrices, False):
        A = Csr(mt)
        for K in args.k:
            g = torch.Generator().manual_seed(K)
            X, Y = torch.rand(A.m, K, generator=g) * 2 - 1, torch.rand(A.n, K, generator=g) * 2 - 1
            full = ops.sddmm(A.indptr, A.indices, None, X, Y)
            ours = median_ms(lambda: ops.sddmm(A.indptr, A.indices, None, X, Y))
            peer = median_ms(lambda: torch.sparse.sampled_addmm(A.torch, X, Y.t(), beta=0.0))
            cells = [f"{A.name[:14]:>14} K={K:<4} full {ours:8.3f}", f"sampled_addmm {peer:8.3f}"]
            for c in (c for c in args.slices if c < K and K % c == 0):
                xs = [X[:, k:k + c].contiguous() for k in range(0, K, c)]
                ys = [Y[:, k:k + c].contiguous() for k in range(0, K, c)]

                def sliced(xs=xs, ys=ys):
                    out = ops.sddmm(A.indptr, A.indices, None, xs[0], ys[0])
                    for x, y in zip(xs[1:], ys[1:]):
                        out += ops.sddmm(A.indptr, A.indices, None, x, y)
                    return out

                torch.testing.assert_close(sliced(), full, rtol=1e-4, atol=1e-4)
                cells.append(f"c{c} {median_ms(sliced):8.3f}")
            print("  ".join(cells), flush=True)


if __name__ == "__main__":
    main()
