"""st.emulate_cuda on hand-written kernels that use cooperative groups: the
thread block, tiles of a warp and of a tile, their shuffles and votes,
cg::reduce and the scans. Results are checked against numpy; each kernel is
also compiled by NVRTC against the toolkit's own headers where they are
installed. What the emulator cannot give (grid groups, coalesced_threads)
fails to compile with a message naming it."""

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


@pytest.mark.parametrize("call, message", [
    ("cg::this_grid().sync()", "no grid group"),
    ("cg::coalesced_threads()", "no coalesced_threads"),
    ("cg::tiled_partition<64>(cg::this_thread_block()).sync()", "thread_block_tile has 1, 2, 4, 8, 16 or 32"),
])
def test_what_the_emulator_cannot_give_fails_to_compile_by_name(call, message):
    source = ('#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n'
              f'extern "C" __global__ void k(float* x) {{ {call}; }}\n')
    with pytest.raises(st.CompileError, match=message):
        st.emulate_cuda(source, "k", 1, 32, torch.zeros(1))


@needs_nvrtc
@pytest.mark.parametrize("name, source", [("groups", GROUPS), ("independent_tiles", INDEPENDENT_TILES)])
def test_every_kernel_here_is_valid_cuda(name, source):
    from sparsetir_torch import _C
    options = cuda_include_options("cooperative_groups.h", "nv/target", "cuda/std/type_traits")
    if options is None:
        pytest.skip("no cooperative_groups.h here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    ptx = _C.nvrtc_compile(source, name + ".cu", 80, False, options)["ptx"].decode()
    assert ".entry" in ptx
