"""cuda::pipeline (cuda/pipeline) under st.emulate_cuda: a thread's own
pipeline, a block's pipeline over several batches and two stages with every
thread producing and consuming, producers and consumers split by count and
by role; the race check on each, a read that skips consumer_wait reported as
a race, a stage nobody fills reported as a deadlock, a role misused. Results
are checked against torch in float64; every kernel is also compiled by NVRTC
where CUDA's headers are found."""

import pytest
import torch

import sparsetir_torch as st
from conftest import assert_valid_cuda, needs_nvrtc

# The CUDA samples' form: each thread copies its element through its own pipeline.
OWN = r"""
#include <cuda/pipeline>
extern "C" __global__ void own(const float* x, float* out) {
  __shared__ float tile[128];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  pipe.producer_acquire();
  cuda::memcpy_async(&tile[threadIdx.x], &x[blockIdx.x * 128 + threadIdx.x], sizeof(float), pipe);
  pipe.producer_commit();
  cuda::pipeline_consumer_wait_prior<0>(pipe);
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = tile[127 - threadIdx.x] * 2.0f;
  pipe.consumer_release();
}
"""

# A block's pipeline of two stages: batches of 128 floats copied ahead, each
# thread reading another thread's share of the copy.
STAGED = r"""
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void staged(const float* x, float* out, int batches, int plant_race) {
  constexpr int stages = 2;
  __shared__ __align__(16) float buffer[stages][128];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
  cg::thread_block block = cg::this_thread_block();
  auto pipe = cuda::make_pipeline(block, &state);
  float sum = 0.0f;
  int fetched = 0;
  for (int b = 0; b < batches; ++b) {
    for (; fetched < batches && fetched < b + stages; ++fetched) {
      pipe.producer_acquire();
      cuda::memcpy_async(block, buffer[fetched % stages], x + fetched * 128, cuda::aligned_size_t<16>(512), pipe);
      pipe.producer_commit();
    }
    if (!plant_race) pipe.consumer_wait();
    sum += buffer[b % stages][(threadIdx.x + 1) % 128];
    pipe.consumer_release();
  }
  out[threadIdx.x] = sum;
}
"""

# Warp 0 produces, warp 1 consumes: by count (ROLE 0) or by role (ROLE 1).
SPLIT = r"""
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void split(const float* x, float* out, int batches, int by_role) {
  constexpr int stages = 3;
  __shared__ float buffer[stages][32];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
  cg::thread_block block = cg::this_thread_block();
  const bool producer = threadIdx.x < 32;
  const int lane = threadIdx.x % 32;
  auto pipe = by_role ? cuda::make_pipeline(block, &state, producer ? cuda::pipeline_role::producer
                                                                     : cuda::pipeline_role::consumer)
                      : cuda::make_pipeline(block, &state, 32);
  for (int b = 0; b < batches; ++b) {
    if (producer) {
      pipe.producer_acquire();
      buffer[b % stages][lane] = x[b * 32 + lane] * 3.0f;
      pipe.producer_commit();
    } else {
      pipe.consumer_wait();
      out[b * 32 + lane] = buffer[b % stages][31 - lane] - 1.0f;
      pipe.consumer_release();
    }
  }
}
"""

ERRORS = r"""
#include <cuda/pipeline>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void errors(int what) {
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, 2> state;
  cg::thread_block block = cg::this_thread_block();
  auto pipe = cuda::make_pipeline(block, &state, 2);  // threads 0 and 1 produce
  if (what == 0) {
    if (threadIdx.x >= 2) pipe.consumer_wait();  // nobody commits
  } else {
    pipe.producer_acquire();  // a consumer too
  }
}
"""

SOURCES = {"own": OWN, "staged": STAGED, "split": SPLIT, "errors": ERRORS}


def test_a_threads_own_pipeline(emulation_order):
    x = torch.randn(3 * 128, generator=torch.Generator().manual_seed(0))
    out = torch.zeros_like(x)
    st.emulate_cuda(OWN, "own", 3, 128, x, out)
    torch.testing.assert_close(out.view(3, 128), 2 * x.view(3, 128).flip(1), rtol=0, atol=0)


@pytest.mark.parametrize("batches", [1, 2, 5])
def test_a_blocks_pipeline_over_two_stages(emulation_order, batches):
    x = torch.randn(batches * 128, generator=torch.Generator().manual_seed(batches))
    out = torch.zeros(128)
    st.emulate_cuda(STAGED, "staged", 1, 128, x, out, batches, 0)
    expected = x.double().view(batches, 128).roll(-1, 1).sum(0)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)


def test_the_race_check_reports_a_read_without_consumer_wait(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    x, out = torch.randn(3 * 128), torch.zeros(128)
    with pytest.raises(RuntimeError, match="race check: kernel 'staged' wrote different values"):
        st.emulate_cuda(STAGED, "staged", 1, 128, x, out, 3, 1)


@pytest.mark.parametrize("by_role", [0, 1])
@pytest.mark.parametrize("batches", [1, 3, 8])
def test_producers_and_consumers_split(emulation_order, by_role, batches):
    x = torch.randn(batches * 32, generator=torch.Generator().manual_seed(batches))
    out = torch.zeros_like(x)
    st.emulate_cuda(SPLIT, "split", 1, 64, x, out, batches, by_role)
    expected = (3 * x.double().view(batches, 32)).flip(1) - 1
    torch.testing.assert_close(out.double().view(batches, 32), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("what,message", [
    (0, r"deadlock in kernel 'errors'.*threads 2-3 wait at a cuda::barrier or cuda::pipeline"),
    (1, r"cuda::pipeline::producer_acquire by a thread that has another role in the pipeline"),
])
def test_pipeline_errors_are_named(what, message):
    with pytest.raises(RuntimeError, match=message):
        st.emulate_cuda(ERRORS, "errors", 1, 4, what)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_kernel_here_is_valid_cuda(name):
    assert_valid_cuda(SOURCES[name], name, "cuda/pipeline", "cooperative_groups.h")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("by_role", [0, 1])
def test_gpu_the_split_pipeline_runs_as_emulated(by_role):
    kernel = st.CudaKernel(SPLIT, "split")
    x = torch.randn(8 * 32, generator=torch.Generator().manual_seed(8))
    emulated = torch.zeros_like(x)
    kernel(1, 64, x, emulated, 8, by_role)
    on_gpu = torch.zeros_like(x, device="cuda")
    kernel(1, 64, x.cuda(), on_gpu, 8, by_role)
    torch.testing.assert_close(on_gpu.cpu(), emulated, rtol=0, atol=0)
