"""st.emulate_cuda on hand-written kernels that use cooperative groups: the
thread block, tiles of a warp and of a tile, their shuffles and votes,
cg::reduce and the scans. Results are checked against numpy; each kernel is
also compiled by NVRTC against the toolkit's own headers where they are
installed. What the emulator cannot give (grid and cluster groups) fails to
compile with a message naming it."""

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import cuda_include_options, needs_nvrtc

GROUPS = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

extern "C" __global__ void groups(const int* x, int* out) {
  __shared__ int partial[32];
  cg::thread_block block = cg::this_thread_block();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = x[i];
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<8> eight = cg::tiled_partition<8>(warp);
  int* o = out + 12 * i;
  o[0] = cg::reduce(warp, v, cg::plus<int>());
  o[1] = cg::reduce(eight, v, cg::greater<int>());
  o[2] = cg::inclusive_scan(eight, v);
  o[3] = cg::exclusive_scan(warp, v, cg::plus<int>());
  o[4] = eight.shfl_down(v, 1);
  o[5] = eight.shfl(v, 3);
  o[6] = (int)eight.ballot(v > 0);
  o[7] = warp.any(v > 90) + 2 * eight.all(v > -50);
  o[8] = (int)(warp.meta_group_rank() * 100 + eight.meta_group_rank() * 10 + eight.meta_group_size());
  o[9] = (int)(block.thread_rank() + 1000 * block.group_index().x + 10000 * block.num_threads());
  o[11] = (int)eight.match_any(v & 1);
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = o[0];
  cg::sync(block);
  int total = 0;
  for (unsigned w = 0; w < warp.meta_group_size(); ++w) total += partial[w];
  o[10] = total;
}
'''


def _groups_reference(x, threads):
    blocks = x.size // threads
    out = np.zeros((x.size, 12), dtype=np.int64)
    for i in range(x.size):
        b, t = divmod(i, threads)
        w, lane = divmod(t, 32)
        warp = x[b * threads + w * 32:b * threads + w * 32 + 32]
        e0 = lane // 8 * 8
        eight = warp[e0:e0 + 8]
        r = lane % 8
        out[i, 0] = warp.sum()
        out[i, 1] = eight.max()
        out[i, 2] = eight[:r + 1].sum()
        out[i, 3] = warp[:lane].sum()
        out[i, 4] = eight[r + 1] if r + 1 < 8 else eight[r]
        out[i, 5] = eight[3]
        out[i, 6] = sum(1 << k for k in range(8) if eight[k] > 0)
        out[i, 7] = int((warp > 90).any()) + 2 * int((eight > -50).all())
        out[i, 8] = w * 100 + (lane // 8) * 10 + 4
        out[i, 9] = t + 1000 * b + 10000 * threads
        out[i, 10] = x[b * threads:(b + 1) * threads].sum()
        out[i, 11] = sum(1 << k for k in range(8) if (eight[k] & 1) == (eight[r] & 1))
    assert blocks * threads == x.size
    return out


@pytest.mark.parametrize("order", ["forward", "check"])
def test_block_tiles_reduce_and_scans(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    threads = 96
    x = torch.randint(-100, 100, (2 * threads,), dtype=torch.int32, generator=torch.Generator().manual_seed(7))
    out = torch.zeros(x.numel(), 12, dtype=torch.int32)
    st.emulate_cuda(GROUPS, "groups", 2, threads, x, out)
    np.testing.assert_array_equal(out.numpy(), _groups_reference(x.numpy().astype(np.int64), threads))


INDEPENDENT_TILES = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// The two half-warp tiles of a warp shuffle a different number of times:
// each tile's operations meet its own lanes only.
extern "C" __global__ void independent_tiles(const float* x, float* out) {
  cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
  float v = x[threadIdx.x];
  for (unsigned k = 0; k < 1 + 2 * tile.meta_group_rank(); ++k) {
    v = tile.shfl_xor(v, 1) + 1.0f;
    tile.sync();
  }
  out[threadIdx.x] = v;
}
'''


def test_the_tiles_of_a_warp_meet_their_own_lanes_only():
    x = torch.arange(32, dtype=torch.float32)
    out = torch.zeros(32)
    st.emulate_cuda(INDEPENDENT_TILES, "independent_tiles", 1, 32, x, out)
    want = x.clone()
    for tile, rounds in ((slice(0, 16), 1), (slice(16, 32), 3)):
        for _ in range(rounds):
            want[tile] = want[tile].view(8, 2).flip(1).reshape(-1) + 1
    assert out.tolist() == want.tolist()


COALESCED = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>
namespace cg = cooperative_groups;

// Each branch's lanes form a group; its ranks count them from the lowest lane.
extern "C" __global__ void branches(const int* x, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = x[i];
  int* o = out + 4 * i;
  if (v % 3 == 0) {
    cg::coalesced_group g = cg::coalesced_threads();
    o[0] = cg::reduce(g, v, cg::plus<int>());
    o[1] = (int)(g.thread_rank() | g.num_threads() << 8);
    o[2] = g.shfl_down(v, 1);
    o[3] = (int)g.ballot(v > 0);
  } else {
    o[3] = v * 7;
    cg::coalesced_group g = cg::coalesced_threads();
    o[0] = cg::reduce(g, v, cg::greater<int>());
    o[1] = (int)(g.thread_rank() | g.num_threads() << 8);
    o[2] = cg::exclusive_scan(g, v);
    o[3] = (int)((unsigned)o[3] + (g.match_any(v & 1) << 12));
  }
}

// The odd lanes' group opens once the even lanes, released from a meeting
// of their own, wait at __syncthreads (no other lane of the warp can run).
extern "C" __global__ void converge_late(int* out) {
  const unsigned lane = threadIdx.x % 32;
  if (lane % 2) {
    cg::coalesced_group g = cg::coalesced_threads();
    out[threadIdx.x] = (int)g.num_threads();
  } else {
    __syncwarp(0x55555555u);
    out[threadIdx.x] = -1;
  }
  __syncthreads();
}

// Warp-aggregated atomics: one atomicAdd per group, each lane its own slot.
extern "C" __global__ void aggregate(const int* flags, int* counter, int* slots) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  slots[i] = -1;
  if (flags[i]) {
    cg::coalesced_group g = cg::coalesced_threads();
    int base = 0;
    if (g.thread_rank() == 0) base = atomicAdd(counter, (int)g.num_threads());
    slots[i] = g.shfl(base, 0) + (int)g.thread_rank();
  }
}
'''


def _branches_reference(x):
    out = np.zeros((x.size, 4), dtype=np.int64)
    for w in range(0, x.size, 32):
        warp = x[w:w + 32]
        for taken in (True, False):
            lanes = [lane for lane in range(32) if (warp[lane] % 3 == 0) == taken]
            values = warp[lanes]
            for rank, lane in enumerate(lanes):
                o = out[w + lane]
                o[1] = rank | len(lanes) << 8
                if taken:
                    o[0] = values.sum()
                    o[2] = values[rank + 1] if rank + 1 < len(lanes) else values[rank]
                    o[3] = sum(1 << r for r in range(len(lanes)) if values[r] > 0)
                else:
                    o[0] = values.max()
                    o[2] = values[:rank].sum()
                    o[3] = warp[lane] * 7 + (sum(1 << r for r in range(len(lanes))
                                                 if (values[r] & 1) == (warp[lane] & 1)) << 12)
    return (out + 2 ** 31) % 2 ** 32 - 2 ** 31  # as the kernel's int32


@pytest.mark.parametrize("order", ["forward", "check"])
def test_coalesced_groups_are_the_lanes_of_a_branch(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    x = torch.randint(-50, 50, (128,), dtype=torch.int32, generator=torch.Generator().manual_seed(3))
    x[:32] = torch.arange(32) * 3  # a warp that takes one branch only
    out = torch.zeros(128, 4, dtype=torch.int32)
    st.emulate_cuda(COALESCED, "branches", 2, 64, x, out)
    np.testing.assert_array_equal(out.numpy(), _branches_reference(x.numpy().astype(np.int64)))


def test_a_group_opens_when_the_other_lanes_wait_at_the_block_barrier():
    out = torch.zeros(64, dtype=torch.int32)
    st.emulate_cuda(COALESCED, "converge_late", 1, 64, out)
    assert out.tolist() == [16 if t % 2 else -1 for t in range(64)]


def test_warp_aggregated_atomics_hand_out_every_slot_once():
    flags = (torch.rand(200, generator=torch.Generator().manual_seed(5)) < 0.4).to(torch.int32)
    counter = torch.zeros(1, dtype=torch.int32)
    slots = torch.zeros(200, dtype=torch.int32)
    st.emulate_cuda(COALESCED, "aggregate", 4, 50, flags, counter, slots)
    taken = slots[flags.bool()]
    assert counter.item() == flags.sum().item()
    assert sorted(taken.tolist()) == list(range(counter.item()))
    assert (slots[~flags.bool()] == -1).all()
    # Blocks of 50 threads: warps of 32 and 18 lanes; a warp's flagged lanes
    # take consecutive slots in lane order (one group, one atomicAdd).
    for block in range(4):
        for first, last in ((0, 32), (32, 50)):
            warp = slots[block * 50 + first:block * 50 + last]
            mine = warp[warp >= 0]
            if mine.numel():
                assert mine.tolist() == list(range(mine[0].item(), mine[0].item() + mine.numel()))


@pytest.mark.parametrize("call, message", [
    ("cg::this_grid().sync()", "no grid group"),
    ("cg::tiled_partition<64>(cg::this_thread_block()).sync()", "thread_block_tile has 1, 2, 4, 8, 16 or 32"),
])
def test_what_the_emulator_cannot_give_fails_to_compile_by_name(call, message):
    source = ('#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n'
              f'extern "C" __global__ void k(float* x) {{ {call}; }}\n')
    with pytest.raises(st.CompileError, match=message):
        st.emulate_cuda(source, "k", 1, 32, torch.zeros(1))


def test_a_float16_tensor_is_its_bits_where_no_float16_header_is_included():
    source = ('#include <cooperative_groups.h>\n'
              'extern "C" __global__ void negate(unsigned short* x) { x[threadIdx.x] ^= 0x8000u; }\n')
    x = torch.ones(4, dtype=torch.float16)
    st.emulate_cuda(source, "negate", 1, 4, x)
    assert x.tolist() == [-1.0] * 4


ASYNC_COPIES = r'''
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline.h>
namespace cg = cooperative_groups;

// Each block stages its 256 values in shared memory, half by the group's
// memcpy_async, half by each thread's own async copies of 16 bytes (the
// last 4 of them zero-filled), and writes them back reversed.
extern "C" __global__ void stage(const float* x, float* y, int early) {
  __shared__ __align__(16) float tile[256];
  cg::thread_block block = cg::this_thread_block();
  const float* src = x + blockIdx.x * 256;
  tile[threadIdx.x] = tile[128 + threadIdx.x] = -1.0f;  // what a read before the copy sees
  block.sync();
  cg::memcpy_async(block, tile, src, sizeof(float) * 128);
  if (threadIdx.x < 32) __pipeline_memcpy_async(tile + 128 + 4 * threadIdx.x, src + 128 + 4 * threadIdx.x, 16, 4);
  __pipeline_commit();
  if (early) {  // a race: other threads' slices may not be there yet
    y[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x];
    return;
  }
  __pipeline_wait_prior(0);
  cg::wait(block);
  y[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x];
  y[blockIdx.x * 256 + 128 + threadIdx.x] = tile[127 - threadIdx.x];
}
'''


@pytest.mark.parametrize("order", ["forward", "check"])
def test_async_copies_are_there_after_the_wait(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    x = torch.randn(2, 256)
    y = torch.zeros(2, 256)
    st.emulate_cuda(ASYNC_COPIES, "stage", 2, 128, x, y, 0)
    staged = x.clone()
    staged[:, 128:].view(2, 32, 4)[:, :, 3] = 0  # the zero-filled bytes
    torch.testing.assert_close(y, staged.flip(1), rtol=0, atol=0)


def test_reading_before_the_wait_is_a_race_the_check_reports(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    with pytest.raises(RuntimeError, match="race check: kernel 'stage' wrote different values"):
        st.emulate_cuda(ASYNC_COPIES, "stage", 2, 128, torch.randn(2, 256), torch.zeros(2, 256), 1)


@needs_nvrtc
@pytest.mark.parametrize("name, source", [("groups", GROUPS), ("independent_tiles", INDEPENDENT_TILES),
                                          ("coalesced", COALESCED), ("async_copies", ASYNC_COPIES)])
def test_every_kernel_here_is_valid_cuda(name, source):
    from sparsetir_torch import _C
    options = cuda_include_options("cooperative_groups.h", "nv/target", "cuda/std/type_traits")
    if options is None:
        pytest.skip("no cooperative_groups.h here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    ptx = _C.nvrtc_compile(source, name + ".cu", 80, False, options)["ptx"].decode()
    assert ".entry" in ptx
