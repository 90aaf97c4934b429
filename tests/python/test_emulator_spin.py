"""Spins under st.emulate_cuda: threads that wait for another thread's write
by looking at a value over and over (a lock taken by compare-and-swap, a
flag read by atomicAdd of 0, cuda::atomic_ref's wait, __nanosleep backoff)
and the libcu++ types built on such waits (cuda/latch, cuda/semaphore,
cuda/std/barrier). Each look is a spin point at which the block's other
threads run, so a spin ends as on the GPU; one that can never end fails the
launch after SPARSETIR_EMULATE_SPIN_SECONDS, naming where each thread is.
Results are checked against Python; every kernel is also compiled by NVRTC
where CUDA's headers are found, and run on a GPU where there is one."""

import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import assert_valid_cuda, needs_nvrtc

# Every thread adds its value into a plain total under a lock that
# atomicCAS takes and atomicExch gives back; the block's threads contend
# for it with each other and with the blocks other host threads run.
LOCKED_SUM = r"""
extern "C" __global__ void locked_sum(const int* v, int n, int* lock, long long* total, int* entries, int backoff) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  while (atomicCAS(lock, 0, 1) != 0) {
    if (backoff) __nanosleep(32);
  }
  __threadfence();
  *total += v[i];  // plain: the lock orders the threads
  *entries += 1;
  __threadfence();
  atomicExch(lock, 0);
}
"""

# Thread t waits until thread t - 1 has written its value: a chain through
# the whole block, which any order of the threads must resolve.
CHAIN = r"""
extern "C" __global__ void chain(int* flags, int* out) {
  const int t = threadIdx.x, base = blockIdx.x * blockDim.x;
  int before = 0;
  if (t > 0) {
    while (atomicAdd(&flags[base + t - 1], 0) == 0) {
    }
    __threadfence();
    before = out[base + t - 1];
  }
  out[base + t] = before + t + 1;
  __threadfence();
  atomicExch(&flags[base + t], 1);
}
"""

# Every thread sums a row through cuda::atomic_ref<const int> loads, which
# are spin points though nothing spins here.
CONST_LOADS = r"""
#include <cuda/atomic>
extern "C" __global__ void const_loads(const int* v, int n, long long* out) {
  long long s = 0;
  for (int i = 0; i < n; ++i) {
    s += cuda::atomic_ref<const int, cuda::thread_scope_device>(v[threadIdx.x * n + i]).load();
  }
  out[threadIdx.x] = s;
}
"""

# The chain's waits as weak spin points: a cuda::atomic_ref load (which
# waits at a look again at its flag), and a volatile read between fences
# (which waits once in so many fences).
CHAIN_LOADS = "#include <cuda/atomic>\n" + CHAIN.replace(
    "while (atomicAdd(&flags[base + t - 1], 0) == 0) {",
    "while (cuda::atomic_ref<int, cuda::thread_scope_block>(flags[base + t - 1]).load() == 0) {")
CHAIN_FENCES = CHAIN.replace("while (atomicAdd(&flags[base + t - 1], 0) == 0) {",
                             "while (*(volatile int*)&flags[base + t - 1] == 0) {\n      __threadfence_block();")

# Threads that look at two flags by turns, which nobody sets.
NEVER_TWO = r"""
#include <cuda/atomic>
extern "C" __global__ void never_two(int* flags) {
  cuda::atomic_ref<int, cuda::thread_scope_device> a(flags[0]), b(flags[1]);
  while (a.load() == 0 && b.load() == 0) {
  }
}
"""

# The block's last warp fills a shared table and publishes it through a
# cuda::atomic_ref flag (store, notify_all); the other warps wait() on the
# flag, then read the table.
PUBLISH = r"""
#include <cuda/atomic>
extern "C" __global__ void publish(const float* x, float* out) {
  __shared__ float table[32];
  __shared__ int ready;
  const int t = threadIdx.x, last = blockDim.x / 32 - 1;
  cuda::atomic_ref<int, cuda::thread_scope_block> flag(ready);
  if (t == 0) flag.store(0, cuda::memory_order_relaxed);
  __syncthreads();
  if (t / 32 == last) {
    table[t % 32] = 2.0f * x[blockIdx.x * 32 + t % 32];
    __syncwarp();
    if (t % 32 == 0) {
      flag.store(1, cuda::memory_order_release);
      flag.notify_all();
    }
  } else {
    flag.wait(0, cuda::memory_order_acquire);
    out[blockIdx.x * blockDim.x + t] = table[(t * 7) % 32] + t;
  }
}
"""

# A cuda::latch in the block's shared storage (placement new), counted down
# by every thread after it wrote its slot; cuda::std::barrier (also placed)
# between two rounds; a __device__ binary semaphore guards a counter every
# block adds to.
LATCH_BARRIER_SEMAPHORE = r"""
#include <cuda/latch>
#include <cuda/semaphore>
#include <cuda/std/barrier>
__device__ cuda::binary_semaphore<cuda::thread_scope_device> guard(1);
extern "C" __global__ void latch_barrier_semaphore(const int* v, int* out, int* counter) {
  __shared__ int slots[256];
  __shared__ alignas(cuda::latch<cuda::thread_scope_block>) unsigned char latch_storage[
      sizeof(cuda::latch<cuda::thread_scope_block>)];
  __shared__ alignas(cuda::std::barrier<>) unsigned char barrier_storage[sizeof(cuda::std::barrier<>)];
  auto* written = reinterpret_cast<cuda::latch<cuda::thread_scope_block>*>(latch_storage);
  auto* round = reinterpret_cast<cuda::std::barrier<>*>(barrier_storage);
  const int t = threadIdx.x, n = blockDim.x;
  if (t == 0) {
    new (written) cuda::latch<cuda::thread_scope_block>(n);
    new (round) cuda::std::barrier<>(n);
  }
  __syncthreads();
  slots[t] = v[blockIdx.x * n + t];
  written->arrive_and_wait();
  const int mine = slots[(t + 1) % n];
  round->arrive_and_wait();
  slots[t] = mine * 2;
  round->arrive_and_wait();
  out[blockIdx.x * n + t] = slots[(t + n - 1) % n];
  if (t % 8 == 0) {
    guard.acquire();
    *counter += 1;  // plain: the semaphore orders the threads
    guard.release();
  }
}
"""

# Threads that wait for a flag nobody sets, beside threads at __syncthreads.
NEVER = r"""
extern "C" __global__ void never(int* flag) {
  if (threadIdx.x < 40) {
    while (atomicAdd(flag, 0) == 0) __nanosleep(100);
  }
  __syncthreads();
}
"""

SOURCES = {"locked_sum": LOCKED_SUM, "chain": CHAIN, "chain_loads": CHAIN_LOADS, "chain_fences": CHAIN_FENCES,
           "never_two": NEVER_TWO, "publish": PUBLISH, "const_loads": CONST_LOADS,
           "latch_barrier_semaphore": LATCH_BARRIER_SEMAPHORE, "never": NEVER}


def locked_sum(blocks, threads, n, backoff, device="cpu"):
    v = torch.from_numpy(np.random.default_rng(n).integers(-1000, 1000, n).astype(np.int32)).to(device)
    lock = torch.zeros(1, dtype=torch.int32, device=device)
    total = torch.zeros(1, dtype=torch.int64, device=device)
    entries = torch.zeros(1, dtype=torch.int32, device=device)
    run = st.emulate_cuda if device == "cpu" else st.CudaKernel(LOCKED_SUM, "locked_sum")
    args = (v, n, lock, total, entries, backoff)
    if device == "cpu":
        run(LOCKED_SUM, "locked_sum", blocks, threads, *args)
    else:
        run(blocks, threads, *args)
    return v, lock, total, entries


@pytest.mark.parametrize("blocks,threads,n", [(1, 1, 1), (1, 64, 50), (8, 128, 1000), (40, 96, 3000)])
@pytest.mark.parametrize("backoff", [0, 1])
def test_a_spin_lock_orders_plain_updates(emulation_order, blocks, threads, n, backoff):
    v, lock, total, entries = locked_sum(blocks, threads, n, backoff)
    assert total.item() == int(v.long().sum()) and entries.item() == n and lock.item() == 0


@pytest.mark.parametrize("blocks,threads", [(1, 1), (1, 33), (3, 256), (2, 1024)])
@pytest.mark.parametrize("look", ["atomicAdd", "load", "fence"])
def test_a_chain_of_waits_through_the_block(emulation_order, blocks, threads, look):
    source = {"atomicAdd": CHAIN, "load": CHAIN_LOADS, "fence": CHAIN_FENCES}[look]
    flags = torch.zeros(blocks * threads, dtype=torch.int32)
    out = torch.zeros(blocks * threads, dtype=torch.int32)
    st.emulate_cuda(source, "chain", blocks, threads, flags, out)
    expected = [sum(range(1, t + 2)) for t in range(threads)] * blocks
    assert out.tolist() == expected and flags.tolist() == [1] * (blocks * threads)


@pytest.mark.parametrize("warps", [2, 5])
def test_waiters_on_an_atomic_see_what_was_published(emulation_order, warps):
    x = torch.randn(3 * 32, dtype=torch.float32)
    out = torch.full((3 * warps * 32,), -1.0)
    st.emulate_cuda(PUBLISH, "publish", 3, warps * 32, x, out)
    expected = torch.full_like(out, -1.0)
    for b in range(3):
        for t in range((warps - 1) * 32):
            expected[b * warps * 32 + t] = 2.0 * x[b * 32 + (t * 7) % 32] + t
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def test_loads_through_a_const_atomic_ref(emulation_order):
    v = torch.arange(64 * 50, dtype=torch.int32)
    out = torch.zeros(64, dtype=torch.int64)
    st.emulate_cuda(CONST_LOADS, "const_loads", 1, 64, v, 50, out)
    assert out.tolist() == v.view(64, 50).long().sum(1).tolist()


@pytest.mark.parametrize("blocks,threads", [(1, 8), (6, 64), (3, 256)])
def test_a_latch_a_std_barrier_and_a_device_semaphore(emulation_order, blocks, threads):
    v = torch.from_numpy(np.random.default_rng(threads).integers(-99, 99, blocks * threads).astype(np.int32))
    out = torch.zeros_like(v)
    counter = torch.zeros(1, dtype=torch.int32)
    st.emulate_cuda(LATCH_BARRIER_SEMAPHORE, "latch_barrier_semaphore", blocks, threads, v, out, counter)
    got = out.view(blocks, threads)
    for b in range(blocks):
        row = v[b * threads:(b + 1) * threads].tolist()
        # Thread t reads slot t - 1, which thread t - 1 filled with 2 * row[t].
        assert got[b].tolist() == [2 * row[t] for t in range(threads)]
    assert counter.item() == blocks * len(range(0, threads, 8))


def test_a_spin_that_never_ends_names_the_kernel_block_and_threads(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_SPIN_SECONDS", "0.3")
    with pytest.raises(RuntimeError, match=r"endless spin in kernel 'never', block \([01], 0, 0\) of 64 threads: its "
                                           r"threads spun for 0\.3 s \(SPARSETIR_EMULATE_SPIN_SECONDS\) with no thread "
                                           r"arriving anywhere or returning: threads 0-3[19] spin at (atomicAdd of 0|"
                                           r"__nanosleep).*threads 40-63 wait at __syncthreads\. A spin waits for "
                                           r"another thread's write"):
        st.emulate_cuda(NEVER, "never", 2, 64, torch.zeros(1, dtype=torch.int32))
    # The launch after runs from a clean start: here the flag is set.
    st.emulate_cuda(NEVER, "never", 2, 64, torch.ones(1, dtype=torch.int32))
    flags, out = torch.zeros(64, dtype=torch.int32), torch.zeros(64, dtype=torch.int32)
    st.emulate_cuda(CHAIN, "chain", 1, 64, flags, out)
    assert out[-1].item() == 64 * 65 // 2


def test_a_spin_over_two_flags_by_atomic_loads_is_found_endless(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_SPIN_SECONDS", "0.3")
    with pytest.raises(RuntimeError, match=r"endless spin in kernel 'never_two', block \(0, 0, 0\) of 8 threads: .* "
                                           r"threads 0-7 spin at a cuda::atomic load\."):
        st.emulate_cuda(NEVER_TWO, "never_two", 1, 8, torch.zeros(2, dtype=torch.int32))
    st.emulate_cuda(NEVER_TWO, "never_two", 1, 8, torch.tensor([0, 1], dtype=torch.int32))


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "1e9"])
def test_a_bad_spin_limit_is_named(monkeypatch, value):
    monkeypatch.setenv("SPARSETIR_EMULATE_SPIN_SECONDS", value)
    with pytest.raises(RuntimeError, match=rf"SPARSETIR_EMULATE_SPIN_SECONDS must be a number of seconds above 0 "
                                           rf"\(at most 1e6\), got '{value}'"):
        st.emulate_cuda(NEVER, "never", 1, 32, torch.ones(1, dtype=torch.int32))


LATCH_PAST_ZERO = r"""
#include <cuda/std/latch>
extern "C" __global__ void past_zero(int* out) {
  __shared__ alignas(cuda::std::latch) unsigned char storage[sizeof(cuda::std::latch)];
  auto* done = reinterpret_cast<cuda::std::latch*>(storage);
  if (threadIdx.x == 0) new (done) cuda::std::latch(2);
  __syncthreads();
  done->count_down(threadIdx.x == 0 ? 2 : 1);
  out[threadIdx.x] = 1;
}
"""

SEMAPHORE_PAST_MAX = r"""
#include <cuda/std/semaphore>
__device__ cuda::std::binary_semaphore free_slot(1);
extern "C" __global__ void past_max(int* out) {
  free_slot.release();
  out[0] = 1;
}
"""


def test_a_latch_counted_down_past_zero_traps():
    with pytest.raises(RuntimeError, match=r"kernel 'past_zero', block \(0, 0, 0\), thread \([01], 0, 0\): "
                                           r"cuda::latch::count_down\([12]\) with [01] left to count"):
        st.emulate_cuda(LATCH_PAST_ZERO, "past_zero", 1, 2, torch.zeros(2, dtype=torch.int32))


def test_a_semaphore_released_past_its_max_traps():
    with pytest.raises(RuntimeError, match=r"kernel 'past_max', block \(0, 0, 0\), thread \(0, 0, 0\): "
                                           r"cuda::counting_semaphore::release\(1\) with a count of "
                                           r"1, past its max\(\) 1"):
        st.emulate_cuda(SEMAPHORE_PAST_MAX, "past_max", 1, 1, torch.zeros(1, dtype=torch.int32))


def test_the_timed_acquires_are_not_emulated():
    source = SEMAPHORE_PAST_MAX.replace("free_slot.release();", "(void)free_slot.try_acquire_for(1);")
    with pytest.raises(st.CompileError, match="try_acquire_for"):
        st.emulate_cuda(source, "past_max", 1, 1, torch.zeros(1, dtype=torch.int32))


# The spin hidden from the emulator's look at the source (the name pasted
# by the preprocessor): its threads run one after another, without fibers.
HIDDEN_SPIN = r"""
#define LOOK(p) atom##icAdd(p, 0)
extern "C" __global__ void hidden_spin(int* flag, int* out) {
  if (threadIdx.x == 0) {
    while (LOOK(flag) == 0) {
    }
  } else {
    flag[0] = 1;
  }
  out[threadIdx.x] = 1;
}
"""


def test_a_spin_in_threads_run_one_after_another_ends_the_launch(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_SPIN_SECONDS", "0.3")
    out = torch.zeros(2, dtype=torch.int32)
    with pytest.raises(RuntimeError, match=r"endless spin in kernel 'hidden_spin', block \(0, 0, 0\) of 2 threads: "
                                           r"thread 0 spun for 0\.3 s \(SPARSETIR_EMULATE_SPIN_SECONDS\) at atomicAdd "
                                           r"of 0\. Its source names no barrier, warp operation, atomic or fence"):
        st.emulate_cuda(HIDDEN_SPIN, "hidden_spin", 1, 2, torch.zeros(1, dtype=torch.int32), out)
    assert out.tolist() == [0, 1]  # the spinning thread stopped; the other ran


ALL = dict(SOURCES, past_zero=LATCH_PAST_ZERO, past_max=SEMAPHORE_PAST_MAX, hidden_spin=HIDDEN_SPIN)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(ALL))
def test_every_kernel_here_is_valid_cuda(name):
    entry = re.search(r"__global__ void (\w+)", ALL[name]).group(1)
    assert_valid_cuda(ALL[name], entry, "cuda/atomic", "cuda/latch", "cuda/semaphore", "cuda/std/barrier")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("backoff", [0, 1])
def test_gpu_the_spin_lock_matches_the_emulator(backoff):
    v, lock, total, entries = locked_sum(40, 96, 3000, backoff, device="cuda")
    assert total.item() == int(v.long().sum()) and entries.item() == 3000 and lock.item() == 0


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
def test_gpu_the_latch_barrier_and_semaphore_match_the_emulator():
    v = torch.from_numpy(np.random.default_rng(0).integers(-99, 99, 6 * 64).astype(np.int32))
    outputs = []
    for device in ("cpu", "cuda"):
        out, counter = torch.zeros_like(v, device=device), torch.zeros(1, dtype=torch.int32, device=device)
        st.CudaKernel(LATCH_BARRIER_SEMAPHORE, "latch_barrier_semaphore")(6, 64, v.to(device), out, counter)
        outputs.append((out.tolist(), counter.item()))
    assert outputs[0] == outputs[1]

