"""The SIMT emulator's speed: how fast generated and hand-written CUDA kernels run on the CPU.

Two parts, each timed after a warm-up call (median of --rounds calls, milliseconds):

    kernels    hand-written kernels through st.emulate_cuda, one per kind of meeting: none (threads run one after
               another), __syncthreads (a block sum in shared memory: 9 barriers a thread), warp shuffles (two
               butterfly sums: 10 shuffles a thread), warp votes (8 ballots a thread). Reported as emulated
               threads per second and, where threads meet, nanoseconds per meeting of one thread (time / threads /
               meetings per thread).
    spins      threads that wait for each other's writes through spin points: --blocks blocks of 256 threads summing
               256 elements each by plain loads and by cuda::atomic_ref loads (each a weak spin point); a chain
               through one block of 1024 threads (thread t spins on thread t-1's flag) run forward and reversed;
               a spin lock taken by every thread of --blocks blocks of 128; and the cost of one st.CudaKernel call
               of a 32-thread axpy with its arguments as a struct by value against four scalars (microseconds).
    operators  torch.ops.sparsetir on CPU tensors with SPARSETIR_EMULATE_CUDA=1 (their CUDA kernels under the
               emulator): spmm (sum, max), sddmm, sparse_attention forward and forward + backward, bsrmm, on a
               random graph (--rows, --density, seed 0) with --k features, float32, int32 indices. Reported as
               milliseconds per call and the kernel that ran last.

Every result is checked before it is timed: a hand-written kernel's against torch, an operator's (values and
gradients) against the same operator on its CPU kernels.

This is what a user debugging a kernel on a laptop waits for, and what the test suite's emulated pass spends
its time on. Nothing here is a GPU figure.

    python3 benchmarks/bench_emulator.py [--threads 1] [--rounds 7] [--parts kernels spins operators]
"""
from __future__ import annotations

import argparse
import functools
import os
import warnings

import numpy as np
import torch
from bench_common import machine_info, machine_line, median_ms

NO_BARRIER = r"""
extern "C" __global__ void scale(const float* x, float* y) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  y[t] = 2.0f * x[t];
}
"""

BLOCK_BARRIERS = r"""
extern "C" __global__ void block_sum(const float* x, float* out) {
  __shared__ float partial[256];
  const int t = threadIdx.x;
  partial[t] = x[blockIdx.x * 256 + t];
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (t < half) partial[t] += partial[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}
"""

WARP_SHUFFLES = r"""
extern "C" __global__ void two_sums(const float* x, float* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  float a = x[t], b = 2.0f * x[t];
  for (int d = 16; d > 0; d /= 2) {
    a += __shfl_xor_sync(0xffffffffu, a, d);
    b += __shfl_xor_sync(0xffffffffu, b, d);
  }
  out[t] = a + b;
}
"""

WARP_VOTES = r"""
extern "C" __global__ void ballots(const int* x, int* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned acc = 0;
  for (int bit = 0; bit < 8; ++bit) acc ^= __ballot_sync(0xffffffffu, (x[t] >> bit) & 1);
  out[t] = (int)acc;
}
"""


def kernels(rounds: int, blocks: int) -> None:
    import sparsetir_torch as st

    threads = blocks * 256
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(-8, 8, (threads,), generator=gen).float()  # small integers: every order sums them exactly
    bits = torch.randint(0, 256, (threads,), dtype=torch.int32, generator=gen)
    warp_sums = x.view(-1, 32).sum(1).repeat_interleave(32)
    # Each warp's 8 ballots (lane l's bit b set in ballot b), xor-ed, as the kernel's int.
    lane_bits = ((bits.view(-1, 32, 1) >> torch.arange(8)) & 1).to(torch.int64)
    per_bit = (lane_bits << torch.arange(32).view(1, 32, 1)).sum(1)
    ballots = functools.reduce(torch.bitwise_xor, per_bit.unbind(1))
    ballots = torch.where(ballots >= 2**31, ballots - 2**32, ballots).to(torch.int32)
    cases = [  # name, meetings a thread, source, kernel, input, output, expected output
        ("no meeting", 0, NO_BARRIER, "scale", x, torch.empty(threads), 2 * x),
        ("__syncthreads", 9, BLOCK_BARRIERS, "block_sum", x, torch.empty(blocks), x.view(blocks, 256).sum(1)),
        ("warp shuffles", 10, WARP_SHUFFLES, "two_sums", x, torch.empty(threads), 3 * warp_sums),
        ("warp votes", 8, WARP_VOTES, "ballots", bits, torch.empty(threads, dtype=torch.int32),
         ballots.repeat_interleave(32)),
    ]
    print(f"\n{'kernel':<16} {'threads':>8} {'meetings':>9} {'ms':>9} {'M threads/s':>12} {'ns / meeting':>13}")
    for name, meetings, source, kernel, data, out, expected in cases:

        def run():
            st.emulate_cuda(source, kernel, blocks, 256, data, out)

        run()
        if not torch.equal(out, expected):
            raise SystemExit(f"{name}: the emulated kernel's output differs from torch's; not timed")
        ms = median_ms(run, rounds)
        per_meeting = f"{ms * 1e6 / threads / meetings:13.1f}" if meetings else f"{'':>13}"
        print(f"{name:<16} {threads:>8} {meetings:>9} {ms:9.2f} {threads / ms / 1e3:12.2f} {per_meeting}")


LOADS = r"""
#include <cuda/atomic>
extern "C" __global__ void row_sums(const int* v, long long* out, int atomic_loads) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  long long s = 0;
  for (int i = 0; i < 256; ++i) {
    const int& x = v[row * 256 + i];
    s += atomic_loads ? cuda::atomic_ref<const int, cuda::thread_scope_device>(x).load(cuda::memory_order_relaxed) : x;
  }
  out[row] = s;
}
"""

CHAIN = r"""
extern "C" __global__ void chain(int* flags, int* out) {
  const int t = threadIdx.x;
  if (t > 0) {
    while (atomicAdd(&flags[t - 1], 0) == 0) {
    }
  }
  out[t] = t == 0 ? 1 : out[t - 1] + 1;
  __threadfence();
  atomicExch(&flags[t], 1);
}
"""

SPIN_LOCK = r"""
extern "C" __global__ void locked_sum(int* lock, long long* total) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (atomicCAS(lock, 0, 1) != 0) {
  }
  __threadfence();
  *total += i;  // plain: the lock orders the threads
  __threadfence();
  atomicExch(lock, 0);
}
"""

AXPY_STRUCT = r"""
struct Axpy { const float* x; float* y; float alpha; int n; };
extern "C" __global__ void axpy(Axpy a) {
  const int i = threadIdx.x;
  if (i < a.n) a.y[i] += a.alpha * a.x[i];
}
"""

AXPY_SCALARS = r"""
extern "C" __global__ void axpy(const float* x, float* y, float alpha, int n) {
  const int i = threadIdx.x;
  if (i < n) y[i] += alpha * x[i];
}
"""


def spins(rounds: int, blocks: int) -> None:
    import time

    import sparsetir_torch as st

    gen = torch.Generator().manual_seed(0)
    v = torch.randint(-100, 100, (blocks * 256 * 256,), dtype=torch.int32, generator=gen)
    sums = v.view(-1, 256).long().sum(1)
    print(f"\n{'spins':<16} {'threads':>8} {'ms':>9}")

    def row(name, threads, run, check):
        run()
        if not check():
            raise SystemExit(f"{name}: the emulated kernel's output is wrong; not timed")
        print(f"{name:<16} {threads:>8} {median_ms(run, rounds):9.2f}")

    for name, atomic in (("plain loads", 0), ("atomic loads", 1)):
        out = torch.zeros(blocks * 256, dtype=torch.int64)
        row(name, blocks * 256, lambda: st.emulate_cuda(LOADS, "row_sums", blocks, 256, v, out, atomic),
            lambda: torch.equal(out, sums))
    flags, chained = torch.zeros(1024, dtype=torch.int32), torch.zeros(1024, dtype=torch.int32)
    for name, order in (("chain forward", "forward"), ("chain reversed", "reverse")):
        def chain():
            flags.zero_()
            os.environ["SPARSETIR_EMULATE_ORDER"] = order
            try:
                st.emulate_cuda(CHAIN, "chain", 1, 1024, flags, chained)
            finally:
                del os.environ["SPARSETIR_EMULATE_ORDER"]

        row(name, 1024, chain, lambda: torch.equal(chained, torch.arange(1, 1025, dtype=torch.int32)))
    lock, total = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int64)

    def locked():
        total.zero_()
        st.emulate_cuda(SPIN_LOCK, "locked_sum", blocks, 128, lock, total)

    n = blocks * 128
    row("spin lock", n, locked, lambda: total.item() == n * (n - 1) // 2 and lock.item() == 0)

    # One call's cost: the argument conversion, the emulated module's lookup and a 32-thread launch.
    x, y = torch.ones(32), torch.zeros(32)
    by_struct, by_scalars = st.CudaKernel(AXPY_STRUCT, "axpy"), st.CudaKernel(AXPY_SCALARS, "axpy")
    calls = {"struct call": lambda: by_struct(1, 32, {"x": x, "y": y, "alpha": 2.0, "n": 32}),
             "scalar call": lambda: by_scalars(1, 32, x, y, 2.0, 32)}
    print(f"\n{'call':<16} {'us':>9}")
    for name, call in calls.items():
        y.zero_()
        call()
        if not torch.equal(y, torch.full((32,), 2.0)):
            raise SystemExit(f"{name}: the emulated kernel's output is wrong; not timed")
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(200):
                call()
            times.append((time.perf_counter() - start) / 200 * 1e6)
        print(f"{name:<16} {float(np.median(times)):9.1f}")


def operators(rounds: int, rows: int, density: float, k: int) -> None:
    from sparsetir_torch import _C

    ops = torch.ops.sparsetir
    rng = np.random.default_rng(0)
    mask = rng.random((rows, rows)) < density
    mask[rows // 2] = True  # a dense row
    indptr = torch.tensor(np.concatenate([[0], np.cumsum(mask.sum(1))]), dtype=torch.int32)
    indices = torch.tensor(np.nonzero(mask)[1], dtype=torch.int32)
    nnz = int(indptr[-1])
    gen = torch.Generator().manual_seed(0)
    values = torch.rand(nnz, generator=gen)
    dense = torch.randn(rows, k, generator=gen)
    y = torch.randn(rows, k, generator=gen)
    heads, d = 2, 32
    q = torch.randn(heads, rows, d, generator=gen, requires_grad=True)
    kk = torch.randn(heads, rows, d, generator=gen, requires_grad=True)
    v = torch.randn(heads, rows, d, generator=gen, requires_grad=True)
    weight = torch.randn(heads, rows, d, generator=gen)
    bsr = torch.rand(rows, rows, generator=gen).masked_fill(torch.rand(rows, rows, generator=gen) < 0.8, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "BSR support is in beta"
        bsr = bsr.to_sparse_bsr((16, 16))

    def attention_train():
        out = ops.sparse_attention(indptr, indices, q, kk, v, None)
        return torch.autograd.grad((out * weight).sum(), (q, kk, v))

    cases = [
        ("spmm sum", lambda: ops.spmm(indptr, indices, values, dense, "sum")),
        ("spmm max", lambda: ops.spmm(indptr, indices, values, dense, "max")),
        ("sddmm", lambda: ops.sddmm(indptr, indices, None, dense, y)),
        ("attention", lambda: ops.sparse_attention(indptr, indices, q, kk, v, None)),
        ("attention train", attention_train),
        ("bsrmm", lambda: ops.bsrmm(bsr.crow_indices().int(), bsr.col_indices().int(), bsr.values(), dense)),
    ]
    print(f"\noperators under SPARSETIR_EMULATE_CUDA=1: {rows} x {rows}, {nnz} non-zeros (one dense row), K = {k}, "
          f"attention {heads} heads of {d}, bsrmm 16 x 16 blocks")
    print(f"{'operator':<16} {'ms':>9}  kernel (the last launch)")
    for name, run in cases:
        emulated = run()
        kernel = _C.last_emulated_kernel()
        os.environ["SPARSETIR_EMULATE_CUDA"] = "0"
        try:
            torch.testing.assert_close(emulated, run(), rtol=1e-4, atol=1e-4)
        except AssertionError as e:
            raise SystemExit(f"{name}: the emulated CUDA kernels differ from the CPU kernels; not timed\n{e}")
        finally:
            os.environ["SPARSETIR_EMULATE_CUDA"] = "1"
        ms = median_ms(run, rounds)
        print(f"{name:<16} {ms:9.2f}  {kernel}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1, help="host threads the launches spread blocks over")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--parts", nargs="+", default=["kernels", "spins", "operators"],
                   choices=["kernels", "spins", "operators"])
    p.add_argument("--blocks", type=int, default=256, help="blocks of 256 threads each hand-written kernel runs")
    p.add_argument("--rows", type=int, default=256)
    p.add_argument("--density", type=float, default=0.05)
    p.add_argument("--k", type=int, default=32)
    args = p.parse_args()
    if args.rows % 16:
        p.error(f"--rows must be a multiple of 16 (bsrmm's blocks are 16 x 16), got {args.rows}")
    os.environ["SPARSETIR_EMULATE_CUDA"] = "1"
    torch.set_num_threads(args.threads)

    print(machine_line(machine_info()))
    if "kernels" in args.parts:
        kernels(args.rounds, args.blocks)
    if "spins" in args.parts:
        spins(args.rounds, args.blocks)
    if "operators" in args.parts:
        operators(args.rounds, args.rows, args.density, args.k)


if __name__ == "__main__":
    main()
