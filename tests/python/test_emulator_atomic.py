"""cuda::atomic_ref, cuda::atomic and their cuda::std forms (cuda/atomic,
cuda/std/atomic) under st.emulate_cuda: a histogram over a grid whose
blocks run on several host threads at once, a block's counter in shared
memory, compare-and-swap claims, minima and maxima of integers and floats,
float additions, the bit operations and the operators. Results are checked
against torch and Python; every kernel is also compiled by NVRTC where
CUDA's headers are found."""

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import assert_valid_cuda, needs_nvrtc

# Every block counts its elements into a global histogram; thread 0 of each
# block also takes a ticket from a shared counter of the block.
HISTOGRAM = r"""
#include <cuda/atomic>
extern "C" __global__ void histogram(const int* values, int n, unsigned int* bins, int* tickets) {
  __shared__ cuda::atomic<int, cuda::thread_scope_block> taken;
  if (threadIdx.x == 0) taken.store(0, cuda::memory_order_relaxed);
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    cuda::atomic_ref<unsigned int, cuda::thread_scope_device> bin(bins[values[i]]);
    bin.fetch_add(1u, cuda::memory_order_relaxed);
    taken++;
  }
  __syncthreads();
  if (threadIdx.x == 0) tickets[blockIdx.x] = taken.load();
}
"""

# Per-thread values folded into one slot of each kind: integer and float
# minima and maxima (cuda::atomic_ref's), float sums (of quarters, exact in
# any order), bit operations, a first-come claim by compare-and-swap and the
# operators (cuda::std::atomic_ref's).
FOLDS = r"""
#include <cuda/atomic>
extern "C" __global__ void folds(const int* v, const float* f, int n, int* ints, float* floats,
                                 unsigned long long* bits, int* claims) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cuda::atomic_ref<int, cuda::thread_scope_device> lo(ints[0]), hi(ints[1]);
  cuda::std::atomic_ref<int> total(ints[2]), ops(ints[3]);
  lo.fetch_min(v[i]);
  hi.fetch_max(v[i], cuda::memory_order_relaxed);
  total += v[i];
  ++ops;
  ops -= 1;
  ops.fetch_sub(-2);
  cuda::atomic_ref<float, cuda::thread_scope_device>(floats[0]).fetch_min(f[i]);
  cuda::atomic_ref<float>(floats[1]).fetch_max(f[i]);
  cuda::std::atomic_ref<float>(floats[2]).fetch_add(f[i], cuda::std::memory_order_relaxed);
  cuda::std::atomic_ref<unsigned long long> any(bits[0]), all(bits[1]), odd(bits[2]);
  any.fetch_or(1ull << (v[i] & 63));
  all.fetch_and(~(1ull << (v[i] & 63)));
  odd ^= 1ull << (i & 63);
  int expected = -1;
  cuda::atomic_ref<int, cuda::thread_scope_device> slot(claims[v[i] & 15]);
  if (slot.compare_exchange_strong(expected, i, cuda::std::memory_order_acq_rel)) {
    cuda::atomic_ref<int, cuda::thread_scope_device>(claims[16]).fetch_add(1);  // claims made
  }
  if (i == 0) {
    int seen = claims[20];
    while (!cuda::std::atomic_ref<int>(claims[20]).compare_exchange_weak(seen, seen + 5)) {
    }
    cuda::std::atomic_ref<int>(claims[21]).store(cuda::std::atomic_ref<int>(claims[20]).exchange(7));
  }
}
"""

# cuda/std/atomic alone: a block's cuda::std::atomic in shared memory.
STD_ONLY = r"""
#include <cuda/std/atomic>
extern "C" __global__ void std_only(int* out) {
  __shared__ cuda::std::atomic<int> count;
  if (threadIdx.x == 0) count.store(0);
  __syncthreads();
  count.fetch_add(threadIdx.x % 3 == 0 ? 2 : 1);
  count -= 1;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count.load(cuda::std::memory_order_acquire);
}
"""

SOURCES = {"histogram": HISTOGRAM, "folds": FOLDS, "std_only": STD_ONLY}


@pytest.mark.parametrize("blocks,threads", [(1, 32), (13, 64), (40, 128)])
def test_a_histogram_over_blocks_run_at_once(blocks, threads):
    rng = np.random.default_rng(blocks)
    values = torch.from_numpy(rng.integers(0, 17, 5000).astype(np.int32))
    bins = torch.zeros(17, dtype=torch.int32)
    tickets = torch.zeros(blocks, dtype=torch.int32)
    st.emulate_cuda(HISTOGRAM, "histogram", blocks, threads, values, values.numel(), bins, tickets)
    assert bins.tolist() == torch.bincount(values.long(), minlength=17).tolist()
    stride = blocks * threads
    per_block = [sum(len(range(b * threads + t, 5000, stride)) for t in range(threads)) for b in range(blocks)]
    assert tickets.tolist() == per_block


def test_folds_of_every_kind():
    n = 1000
    rng = np.random.default_rng(3)
    v = rng.integers(-500, 500, n).astype(np.int32)
    f = rng.integers(-1000, 1000, n).astype(np.float32) / 4  # quarters: every sum is exact
    ints = torch.tensor([2**31 - 1, -(2**31), 0, 0], dtype=torch.int32)
    floats = torch.tensor([np.inf, -np.inf, 0.0], dtype=torch.float32)
    bits = torch.tensor([0, -1, 0], dtype=torch.int64)
    claims = torch.full((22,), -1, dtype=torch.int32)
    claims[16], claims[20], claims[21] = 0, 10, 0
    st.emulate_cuda(FOLDS, "folds", (n + 127) // 128, 128, torch.from_numpy(v), torch.from_numpy(f), n, ints,
                    floats, bits, claims)
    assert ints.tolist() == [v.min(), v.max(), v.sum(), 2 * n]
    assert floats.tolist() == [f.min(), f.max(), float(np.sum(f.astype(np.float64)))]
    used = 0
    for x in v:
        used |= 1 << (int(x) & 63)
    odd = 0
    for i in range(n):
        odd ^= 1 << (i & 63)
    as_unsigned = [int(b) & (2**64 - 1) for b in bits.tolist()]
    assert as_unsigned == [used, (2**64 - 1) & ~used, odd]
    slots = {int(x) & 15 for x in v}
    for s in range(16):  # a claimed slot holds one of the threads whose value maps to it
        owners = {i for i in range(n) if int(v[i]) & 15 == s}
        assert (claims[s].item() in owners) if s in slots else claims[s].item() == -1
    assert claims[16].item() == len(slots)
    assert claims[20].item() == 7 and claims[21].item() == 15


@pytest.mark.parametrize("threads", [1, 33, 256])
def test_a_std_atomic_in_shared_memory(threads):
    out = torch.zeros(4, dtype=torch.int32)
    st.emulate_cuda(STD_ONLY, "std_only", 4, threads, out)
    assert out.tolist() == [len(range(0, threads, 3))] * 4


def test_the_std_forms_have_no_fetch_min_as_in_libcudacxx():
    source = STD_ONLY.replace("count -= 1;", "count.fetch_min(1);")
    with pytest.raises(st.CompileError, match="fetch_min"):
        st.emulate_cuda(source, "std_only", 1, 1, torch.zeros(1, dtype=torch.int32))


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_kernel_here_is_valid_cuda(name):
    assert_valid_cuda(SOURCES[name], name, "cuda/atomic", "cuda/std/atomic")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
def test_gpu_the_histogram_matches_the_emulator():
    kernel = st.CudaKernel(HISTOGRAM, "histogram")
    values = torch.from_numpy(np.random.default_rng(0).integers(0, 17, 5000).astype(np.int32))
    bins, tickets = torch.zeros(17, dtype=torch.int32), torch.zeros(13, dtype=torch.int32)
    kernel(13, 64, values, values.numel(), bins, tickets)
    gpu_bins, gpu_tickets = torch.zeros_like(bins, device="cuda"), torch.zeros_like(tickets, device="cuda")
    kernel(13, 64, values.cuda(), values.numel(), gpu_bins, gpu_tickets)
    assert gpu_bins.tolist() == bins.tolist() and gpu_tickets.tolist() == tickets.tolist()
