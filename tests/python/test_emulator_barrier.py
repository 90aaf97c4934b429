"""cuda::barrier (cuda/barrier) under st.emulate_cuda: a block-wide barrier in
place of __syncthreads, split arrive / wait, producer and consumer warps
over several phases, a completion function, arrive_and_drop, copies bound to
a barrier; the race check on each; and the errors: a wait that can never
complete (a deadlock naming the barrier), an arrival past the count, a
barrier nobody initialized, a misaligned copy. Results are checked against
torch in float64; every kernel is also compiled by NVRTC where CUDA's
headers are found, and run on a GPU where there is one."""

import pytest
import torch

import sparsetir_torch as st
from conftest import assert_valid_cuda, needs_nvrtc

# Each block sums its 128 elements through shared memory, a barrier between steps.
TREE_SUM = r"""
#include <cuda/barrier>
extern "C" __global__ void tree_sum(const float* x, float* out) {
  __shared__ float staged[128];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  staged[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
  bar.arrive_and_wait();
  for (int half = 64; half > 0; half /= 2) {
    if (threadIdx.x < half) staged[threadIdx.x] += staged[threadIdx.x + half];
    bar.arrive_and_wait();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = staged[0];
}
"""

# Split arrive / wait: a thread publishes, works on its own, then reads its
# neighbour's value; PLANT_RACE reads before the wait.
NEIGHBOURS = r"""
#include <cuda/barrier>
extern "C" __global__ void neighbours(const float* x, float* out, int plant_race) {
  __shared__ float published[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  const int t = threadIdx.x, n = blockDim.x;
  if (t == 0) init(&bar, n);
  __syncthreads();
  published[t] = x[blockIdx.x * n + t];
  float early = plant_race ? published[(t + 1) % n] : 0.0f;
  cuda::barrier<cuda::thread_scope_block>::arrival_token token = bar.arrive();
  float own = 0.0f;
  for (int k = 1; k <= 8; ++k) own += x[blockIdx.x * n + t] / k;  // work that needs nobody else
  bar.wait(cuda::std::move(token));
  out[blockIdx.x * n + t] = own + (plant_race ? early : published[(t + 1) % n]);
}
"""

# Warp 0 produces STAGES rounds into a double buffer, warp 1 consumes them:
# `full` and `empty` barriers of 64 arrivals each, several phases each; the
# completion function counts the phases of `full`.
PIPELINE = r"""
#include <cuda/barrier>
struct CountPhases {
  int* phases;
  __device__ void operator()() const { ++*phases; }
};
extern "C" __global__ void pipeline(const float* x, float* out, int* phases, int rounds) {
  __shared__ float buffer[2][32];
  __shared__ int completed;
  __shared__ cuda::barrier<cuda::thread_scope_block, CountPhases> full[2];
  __shared__ cuda::barrier<cuda::thread_scope_block> empty[2];
  const int lane = threadIdx.x % 32;
  const bool producer = threadIdx.x < 32;
  if (threadIdx.x == 0) {
    completed = 0;
    for (int s = 0; s < 2; ++s) {
      init(&full[s], 64, CountPhases{&completed});
      init(&empty[s], 64);
    }
  }
  __syncthreads();
  for (int r = 0; r < rounds; ++r) {
    const int s = r % 2;
    if (producer) {
      if (r >= 2) empty[s].arrive_and_wait();  // the consumers are done with round r - 2
      buffer[s][lane] = x[r * 32 + lane] * 2.0f;
      full[s].arrive_and_wait();
    } else {
      full[s].arrive_and_wait();
      out[r * 32 + lane] = buffer[s][lane] + 1.0f;
      if (r + 2 < rounds) (void)empty[s].arrive();  // no need to wait: the producer does
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) *phases = completed;
}
"""

# Threads leave early with arrive_and_drop; the rest go on meeting.
DROPS = r"""
#include <cuda/barrier>
extern "C" __global__ void drops(int* rounds_seen) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  const int stay = threadIdx.x + 1;  // thread t meets t + 1 times, then leaves
  for (int r = 0; r < stay; ++r) bar.arrive_and_wait();
  bar.arrive_and_drop();
  rounds_seen[threadIdx.x] = stay;
}
"""

# A block's tile copied into shared memory with cuda::memcpy_async, then scaled.
COPY = r"""
#include <cuda/barrier>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void copy_scale(const float* x, float* out, int offset) {
  __shared__ __align__(16) float tile[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const float* from = x + blockIdx.x * 256 + offset;
  if (offset == 0) {
    cuda::memcpy_async(block, tile, from, cuda::aligned_size_t<16>(sizeof(tile)), bar);
  } else {
    cuda::memcpy_async(block, tile, from, sizeof(tile), bar);
  }
  bar.arrive_and_wait();
  out[blockIdx.x * 256 + threadIdx.x] = 3.0f * tile[(threadIdx.x + 1) % 256];
}
"""

SOURCES = {"tree_sum": TREE_SUM, "neighbours": NEIGHBOURS, "pipeline": PIPELINE, "drops": DROPS,
           "copy_scale": COPY}


def test_a_block_wide_barrier_orders_a_tree_sum(emulation_order):
    x = torch.randn(5 * 128, generator=torch.Generator().manual_seed(0))
    out = torch.zeros(5)
    st.emulate_cuda(TREE_SUM, "tree_sum", 5, 128, x, out)
    torch.testing.assert_close(out.double(), x.double().view(5, 128).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("threads", [32, 96, 256])
def test_split_arrive_and_wait(emulation_order, threads):
    x = torch.randn(3 * threads, generator=torch.Generator().manual_seed(threads))
    out = torch.zeros_like(x)
    st.emulate_cuda(NEIGHBOURS, "neighbours", 3, threads, x, out, 0)
    rows = x.double().view(3, threads)
    own = rows * sum(1.0 / k for k in range(1, 9))
    torch.testing.assert_close(out.double().view(3, threads), own + rows.roll(-1, 1), rtol=1e-5, atol=1e-5)


def test_the_race_check_reports_a_read_before_the_wait(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    x, out = torch.randn(64), torch.zeros(64)
    with pytest.raises(RuntimeError, match="race check: kernel 'neighbours' wrote different values"):
        st.emulate_cuda(NEIGHBOURS, "neighbours", 1, 64, x, out, 1)


@pytest.mark.parametrize("rounds", [1, 2, 7])
def test_producer_and_consumer_warps_over_several_phases(emulation_order, rounds):
    x = torch.randn(rounds * 32, generator=torch.Generator().manual_seed(rounds))
    out, phases = torch.zeros_like(x), torch.zeros(1, dtype=torch.int32)
    st.emulate_cuda(PIPELINE, "pipeline", 1, 64, x, out, phases, rounds)
    torch.testing.assert_close(out.double(), x.double() * 2 + 1, rtol=1e-6, atol=1e-6)
    assert phases.item() == rounds  # the completion function ran once a phase of `full`


def test_arrive_and_drop_lowers_the_count_for_the_next_phases(emulation_order):
    seen = torch.zeros(40, dtype=torch.int32)
    st.emulate_cuda(DROPS, "drops", 1, 40, seen)
    assert seen.tolist() == list(range(1, 41))


@pytest.mark.parametrize("offset", [0, 1])
def test_a_copy_bound_to_a_barrier(emulation_order, offset):
    x = torch.randn(2 * 256 + 1, generator=torch.Generator().manual_seed(offset))
    out = torch.zeros(2 * 256)
    st.emulate_cuda(COPY, "copy_scale", 2, 256, x, out, offset)
    tiles = x[offset:offset + 512].double().view(2, 256)
    torch.testing.assert_close(out.double().view(2, 256), 3 * tiles.roll(-1, 1), rtol=1e-6, atol=1e-6)


# A lane released from a barrier's wait while another lane of its warp waits
# at a __syncwarp of its own: the warp barrier must still open.
MIXED = r"""
#include <cuda/barrier>
extern "C" __global__ void mixed(int* out) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, 2);
  __syncthreads();
  if (threadIdx.x < 2) bar.arrive_and_wait();
  if (threadIdx.x == 1) __syncwarp(0x2);
  __syncthreads();
  out[threadIdx.x] = threadIdx.x + 1;
}
"""


@pytest.mark.parametrize("threads", [2, 40])
def test_a_warp_barrier_opens_beside_a_released_barrier_wait(emulation_order, threads):
    out = torch.zeros(threads, dtype=torch.int32)
    st.emulate_cuda(MIXED, "mixed", 1, threads, out)
    assert out.tolist() == list(range(1, threads + 1))


ERRORS = r"""
#include <cuda/barrier>
extern "C" __global__ void errors(int what) {
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  __shared__ __align__(16) float tile[8];
  __shared__ float from[9];
  if (what == 0) {  // one arrival more than the block has: no phase ever completes
    if (threadIdx.x == 0) init(&bar, blockDim.x + 1);
    __syncthreads();
    bar.arrive_and_wait();
  } else if (what == 1) {
    if (threadIdx.x == 0) init(&bar, 2);
    __syncthreads();
    if (threadIdx.x == 0) (void)bar.arrive(3);
  } else if (what == 2) {
    bar.arrive_and_wait();  // nobody called init
  } else {
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(tile, from + ((size_t)from % 16 == 0 ? 1 : 0), cuda::aligned_size_t<16>(16), bar);
    bar.arrive_and_wait();
  }
}
"""


@pytest.mark.parametrize("what,message", [
    (0, r"deadlock in kernel 'errors', block \(0, 0, 0\) of 4 threads: "
        r".*threads 0-3 wait at a cuda::barrier or cuda::pipeline"),
    (1, r"cuda::barrier::arrive\(3\) with 2 arrivals left in its phase"),
    (2, r"cuda::barrier::arrive on a barrier no thread init\(\)ed"),
    (3, r"cuda::memcpy_async: .* is not aligned to 16 bytes"),
])
def test_barrier_errors_are_named(what, message):
    with pytest.raises(RuntimeError, match=message):
        st.emulate_cuda(ERRORS, "errors", 1, 4, what)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted({**SOURCES, "errors": ERRORS, "mixed": MIXED}))
def test_every_kernel_here_is_valid_cuda(name):
    source = {**SOURCES, "errors": ERRORS, "mixed": MIXED}[name]
    assert_valid_cuda(source, name, "cuda/barrier", "cooperative_groups.h")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
def test_gpu_the_pipeline_runs_as_emulated():
    kernel = st.CudaKernel(PIPELINE, "pipeline")
    x = torch.randn(7 * 32, generator=torch.Generator().manual_seed(7))
    emulated, phases = torch.zeros_like(x), torch.zeros(1, dtype=torch.int32)
    kernel(1, 64, x, emulated, phases, 7)
    on_gpu, gpu_phases = torch.zeros_like(x, device="cuda"), torch.zeros(1, dtype=torch.int32, device="cuda")
    kernel(1, 64, x.cuda(), on_gpu, gpu_phases, 7)
    torch.testing.assert_close(on_gpu.cpu(), emulated, rtol=0, atol=0)
    assert gpu_phases.item() == phases.item() == 7
