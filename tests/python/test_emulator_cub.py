"""st.emulate_cuda on hand-written kernels that use CUB's warp and block
collectives: cub::WarpReduce, cub::WarpScan, cub::BlockReduce, cub::BlockScan
with CUB's and libcu++'s operators. Results are checked against torch in
float64 and Python's integers; a TempStorage reused without a barrier is a race
the race check reports; a block of the wrong shape traps naming both; every
kernel is also compiled by NVRTC against the toolkit's own CUB."""
import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import cuda_include_options, needs_nvrtc

BLOCK = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/functional>
// Per block of 128 threads (a kernel may be called `block`: the emulator's entry
// reserves its own names): the sum, the maximum of the first 100, scans of
// one int a thread and of four ints a thread.
extern "C" __global__ void block(const float* x, const int* v, float* sums, float* maxima, int* exclusive,
                                 int* inclusive, int* totals, int* items_out) {
  typedef cub::BlockReduce<float, 128> Reduce;
  typedef cub::BlockScan<int, 128> Scan;
  __shared__ typename Reduce::TempStorage reduce_storage;
  __shared__ typename Scan::TempStorage scan_storage;
  const int t = blockIdx.x * 128 + threadIdx.x;
  const float sum = Reduce(reduce_storage).Sum(x[t]);
  __syncthreads();  // the storage is reused
  const float largest = Reduce(reduce_storage).Reduce(x[t], cuda::maximum<>{}, 100);
  if (threadIdx.x == 0) sums[blockIdx.x] = sum, maxima[blockIdx.x] = largest;
  int total;
  Scan(scan_storage).ExclusiveSum(v[t], exclusive[t], total);
  __syncthreads();
  Scan(scan_storage).InclusiveScan(v[t], inclusive[t], cuda::std::plus<>{});
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
  int items[4], scanned[4];
  for (int i = 0; i < 4; ++i) items[i] = v[t] + i;
  __syncthreads();
  Scan(scan_storage).ExclusiveSum(items, scanned);
  for (int i = 0; i < 4; ++i) items_out[4 * t + i] = scanned[i];
}

// A two-dimensional block of 16 x 8 threads, numbered x fastest.
extern "C" __global__ void block2d(const int* v, int* out) {
  typedef cub::BlockScan<int, 16, cub::BLOCK_SCAN_WARP_SCANS, 8> Scan;
  __shared__ typename Scan::TempStorage storage;
  const int rank = threadIdx.y * 16 + threadIdx.x;
  Scan(storage).InclusiveSum(v[rank], out[rank]);
}
"""

WARP = r"""
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
#include <cuda/functional>
// A block of 64 threads: two warps of 32, eight logical warps of 8, four of 16.
extern "C" __global__ void warp(const float* x, const int* v, float* sums, int* minima, int* partial, int* inclusive,
                                int* exclusive, int* aggregates, int* broadcast) {
  typedef cub::WarpReduce<float> Reduce32;
  typedef cub::WarpReduce<int, 8> Reduce8;
  typedef cub::WarpScan<int, 16> Scan16;
  __shared__ typename Reduce32::TempStorage r32[2];
  __shared__ typename Reduce8::TempStorage r8[8];
  __shared__ typename Scan16::TempStorage s16[4];
  const int t = threadIdx.x;
  sums[t] = Reduce32(r32[t / 32]).Sum(x[t]);
  minima[t] = Reduce8(r8[t / 8]).Reduce(v[t], cuda::minimum<>{});
  partial[t] = Reduce8(r8[t / 8]).Sum(v[t], 5);  // the first 5 lanes of each 8
  int aggregate;
  Scan16(s16[t / 16]).InclusiveSum(v[t], inclusive[t]);
  Scan16(s16[t / 16]).ExclusiveScan(v[t], exclusive[t], 100, cuda::std::plus<>{}, aggregate);
  aggregates[t] = aggregate;
  broadcast[t] = Scan16(s16[t / 16]).Broadcast(v[t], 3);
}
"""


def test_block_reduce_and_scan_match_float64_and_python():
    g = torch.Generator().manual_seed(1)
    blocks = 3
    x = torch.randn(blocks * 128, generator=g)
    v = torch.randint(-50, 50, (blocks * 128,), generator=g, dtype=torch.int32)
    sums, maxima = torch.zeros(blocks), torch.zeros(blocks)
    exclusive, inclusive = torch.zeros_like(v), torch.zeros_like(v)
    totals, items = torch.zeros(blocks, dtype=torch.int32), torch.zeros(blocks * 128 * 4, dtype=torch.int32)
    st.emulate_cuda(BLOCK, "block", blocks, 128, x, v, sums, maxima, exclusive, inclusive, totals, items)
    xs, vs = x.view(blocks, 128), v.view(blocks, 128).long()
    torch.testing.assert_close(sums.double(), xs.double().sum(1), rtol=0, atol=1e-5)
    assert torch.equal(maxima, xs[:, :100].max(1).values)
    assert torch.equal(inclusive.view(blocks, 128).long(), vs.cumsum(1))
    assert torch.equal(exclusive.view(blocks, 128).long(), vs.cumsum(1) - vs)
    assert torch.equal(totals.long(), vs.sum(1))
    flat = (vs.unsqueeze(2) + torch.arange(4)).view(blocks, 512)
    assert torch.equal(items.view(blocks, 512).long(), flat.cumsum(1) - flat)


def test_a_two_dimensional_block_scans_x_fastest():
    v = torch.arange(128, dtype=torch.int32) % 7
    out = torch.zeros(128, dtype=torch.int32)
    st.emulate_cuda(BLOCK, "block2d", 1, (16, 8), v, out)
    assert torch.equal(out.long(), v.long().cumsum(0))


def test_warp_reduce_and_scan_over_logical_warps():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(64, generator=g)
    v = torch.randint(-20, 20, (64,), generator=g, dtype=torch.int32)
    outs = [torch.zeros(64)] + [torch.zeros(64, dtype=torch.int32) for _ in range(6)]
    st.emulate_cuda(WARP, "warp", 1, 64, x, v, *outs)
    sums, minima, partial, inclusive, exclusive, aggregates, broadcast = outs
    torch.testing.assert_close(sums.double(), x.double().view(2, 32).sum(1).repeat_interleave(32), rtol=0, atol=1e-5)
    vs = v.long()
    assert torch.equal(minima.long(), vs.view(8, 8).min(1).values.repeat_interleave(8))
    assert torch.equal(partial.long(), vs.view(8, 8)[:, :5].sum(1).repeat_interleave(8))
    by16 = vs.view(4, 16)
    assert torch.equal(inclusive.long(), by16.cumsum(1).flatten())
    assert torch.equal(exclusive.long(), (100 + by16.cumsum(1) - by16).flatten())
    assert torch.equal(aggregates.long(), by16.sum(1).repeat_interleave(16))
    assert torch.equal(broadcast.long(), by16[:, 3].repeat_interleave(16))


# CUB's own operators of CCCL 2 (CUDA 12); CCCL 3 (CUDA 13) replaced them with
# cuda::maximum & co., so NVRTC 13 does not compile this one.
CCCL2_OPERATORS = r"""
#include <cub/cub.cuh>
extern "C" __global__ void cccl2(const int* v, int* out) {
  typedef cub::WarpReduce<int> Reduce;
  __shared__ typename Reduce::TempStorage storage;
  out[0 + threadIdx.x * 3] = Reduce(storage).Reduce(v[threadIdx.x], cub::Max());
  out[1 + threadIdx.x * 3] = Reduce(storage).Reduce(v[threadIdx.x], cub::Min());
  out[2 + threadIdx.x * 3] = Reduce(storage).Reduce(v[threadIdx.x], cub::Sum());
}
"""


def test_cubs_own_operators():
    v = torch.randint(-9, 9, (32,), generator=torch.Generator().manual_seed(3), dtype=torch.int32)
    out = torch.zeros(96, dtype=torch.int32)
    st.emulate_cuda(CCCL2_OPERATORS, "cccl2", 1, 32, v, out)
    assert out.view(32, 3).tolist() == [[v.max().item(), v.min().item(), v.sum().item()]] * 32


RACE = r"""
#include <cub/block/block_reduce.cuh>
// The storage reused without the __syncthreads CUB asks for between the two.
extern "C" __global__ void reuse(const int* a, const int* b, int* out) {
  typedef cub::BlockReduce<int, 64> Reduce;
  __shared__ typename Reduce::TempStorage storage;
  const int first = Reduce(storage).Sum(a[threadIdx.x]);
  const int second = Reduce(storage).Sum(b[threadIdx.x]);
  out[threadIdx.x] = first * 1000 + second;
}
"""


def test_a_temp_storage_reused_without_a_barrier_is_a_race(monkeypatch):
    a, b = torch.arange(64, dtype=torch.int32), torch.arange(64, dtype=torch.int32) * 3
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    with pytest.raises(RuntimeError, match="race check: kernel 'reuse' wrote different values to 'argument 2'"):
        st.emulate_cuda(RACE, "reuse", 1, 64, a, b, torch.zeros(64, dtype=torch.int32))


def test_a_block_of_another_shape_traps_naming_both():
    with pytest.raises(RuntimeError, match=re.escape("cub::BlockReduce<T, 64, ..., 1, 1> in a block of (32, 1, 1)")):
        st.emulate_cuda(RACE, "reuse", 1, 32, torch.zeros(32, dtype=torch.int32), torch.zeros(32, dtype=torch.int32),
                        torch.zeros(32, dtype=torch.int32))


def test_the_rest_of_cub_is_named_with_what_there_is():
    source = '#include <cub/block/block_load.cuh>\nextern "C" __global__ void k(int* x) {}\n'
    with pytest.raises(st.CompileError, match=r"no cub/block/block_load.cuh \(of CUB it has WarpReduce, WarpScan, "
                                              r"BlockReduce and BlockScan"):
        st.emulate_cuda(source, "k", 1, 1, torch.zeros(1, dtype=torch.int32))


@needs_nvrtc
@pytest.mark.parametrize("name,source", [("block", BLOCK), ("warp", WARP), ("reuse", RACE)])
def test_every_kernel_here_is_valid_cuda(name, source):
    from sparsetir_torch import _C

    options = cuda_include_options("cub/cub.cuh", "cuda/functional", "cuda_runtime.h")
    if options is None:
        pytest.skip("no CUB here (a CUDA toolkit's cccl headers)")
    ptx = _C.nvrtc_compile(source, name + ".cu", 80, False, options)["ptx"].decode()
    assert ".entry " + name in ptx
