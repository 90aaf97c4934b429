"""st.emulate_cuda: hand-written CUDA kernels run on CPU tensors under the SIMT
emulator, checked against torch in float64: block barriers over shared
memory, warp shuffles, dynamic shared memory, scalar arguments, the race
check; and the errors a user meets (a deadlock, a compile error, bad
arguments), each naming what is wrong."""
import os
import subprocess
import sys

import pytest
import torch

import sparsetir_torch as st

BLOCK_SUM = r'''
extern "C" __global__ void block_sum(const float* x, double* out, long long n, float scale) {
  __shared__ double partial[256];
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? (double)x[i] * scale : 0.0;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}
'''

WARP_MAX = r'''
extern "C" __global__ void warp_max(const float* x, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? x[i] : -INFINITY;
  for (int d = 16; d > 0; d /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (threadIdx.x % 32 == 0) out[i / 32] = v;
}
'''


@pytest.mark.parametrize("n", [1, 255, 256, 1000])
def test_block_sum_through_shared_memory_matches_float64(n):
    x = torch.randn(n)
    blocks = (n + 255) // 256
    out = torch.full((blocks,), float("nan"), dtype=torch.float64)
    st.emulate_cuda(BLOCK_SUM, "block_sum", blocks, 256, x, out, n, 0.5)
    expected = torch.stack([(x.double()[b * 256:(b + 1) * 256] * 0.5).sum() for b in range(blocks)])
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)


def test_warp_max_with_shuffles():
    x = torch.randn(96)
    out = torch.empty(3)
    st.emulate_cuda(WARP_MAX, "warp_max", 1, 96, x, out, 96)
    assert torch.equal(out, x.view(3, 32).amax(1))


def test_dynamic_shared_memory_and_two_dimensional_blocks():
    source = r'''
extern "C" __global__ void transpose(const int* in, int* out, int n) {
  SPARSETIR_DYNAMIC_SHARED(int, tile);
  const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.y * blockDim.x + threadIdx.x] = in[r * n + c];
  __syncthreads();
  const int tr = blockIdx.x * blockDim.x + threadIdx.y, tc = blockIdx.y * blockDim.y + threadIdx.x;
  out[tr * n + tc] = tile[threadIdx.x * blockDim.x + threadIdx.y];
}
'''
    x = torch.arange(64 * 64, dtype=torch.int32).view(64, 64)
    out = torch.empty_like(x)
    st.emulate_cuda(source, "transpose", (4, 4), (16, 16), x, out, 64, shared_bytes=16 * 16 * 4)
    assert torch.equal(out, x.t())


def test_a_barrier_waits_for_the_live_threads_only():
    source = r'''
extern "C" __global__ void half_return(int* out) {
  if (threadIdx.x >= 32) return;
  out[threadIdx.x] = threadIdx.x;
  __syncthreads();
  const int other = out[31 - threadIdx.x];
  __syncthreads();  // every read before any write
  out[threadIdx.x] += other;
}
'''
    out = torch.zeros(64, dtype=torch.int32)
    st.emulate_cuda(source, "half_return", 1, 64, out)
    assert torch.equal(out[:32], torch.full((32,), 31, dtype=torch.int32)) and not out[32:].any()


def test_a_deadlock_names_the_kernel_block_and_barriers():
    # Even lanes wait at a warp barrier for the odd ones, which wait at the
    # block barrier for the even ones.
    source = r'''
extern "C" __global__ void stuck(int* out) {
  if (threadIdx.x % 2) __syncthreads(); else __syncwarp();
  out[threadIdx.x] = 1;
}
'''
    with pytest.raises(RuntimeError, match=r"deadlock in kernel 'stuck', block \([01], 0, 0\) of 4 threads: no thread can "
                                           r"run and no barrier can open: thread 0 wait at __syncwarp\(0xffffffff\); "
                                           r"thread 1 wait at __syncthreads"):
        st.emulate_cuda(source, "stuck", 2, 4, torch.zeros(4, dtype=torch.int32))


def test_the_race_check_reports_a_race(monkeypatch):
    source = r'''
extern "C" __global__ void racy(int* out) {
  __shared__ int cell;
  if (threadIdx.x == 0) cell = 0;
  __syncthreads();
  if (threadIdx.x == 7) cell = 42;
  if (threadIdx.x == 0) out[0] = cell;
}
'''
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    with pytest.raises(RuntimeError, match="race check: kernel 'racy' wrote different values to 'argument 0'"):
        st.emulate_cuda(source, "racy", 1, 8, torch.zeros(1, dtype=torch.int32))
    x = torch.randn(300)
    out = torch.empty(2, dtype=torch.float64)
    st.emulate_cuda(BLOCK_SUM, "block_sum", 2, 256, x, out, 300, 1.0)  # barriers where threads share: no report
    torch.testing.assert_close(out, torch.stack([x[:256].double().sum(), x[256:].double().sum()]))


def test_a_compile_error_carries_the_compiler_log():
    with pytest.raises(st.CompileError, match="kernel.cu:2"):
        st.emulate_cuda('extern "C" __global__ void broken(float* x) {\n  x[0] = undefined_name;\n}\n', "broken", 1, 1,
                        torch.zeros(1))


def test_bad_arguments_are_named():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match="'block' must be an int or 1 to 3 ints"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, (1, 2, 3, 4), x, x, 4)
    # CUDA's own limits, as st.launch_cuda checks them: what a GPU refuses, the emulator refuses.
    with pytest.raises(ValueError, match="grid dimension 0 must be from 1 to 2147483647, got 0"):
        st.emulate_cuda(WARP_MAX, "warp_max", 0, 32, x, x, 4)
    with pytest.raises(ValueError, match="grid dimension 2 must be from 1 to 65535, got 65536"):
        st.emulate_cuda(WARP_MAX, "warp_max", (1, 1, 65536), 32, x, x, 4)
    with pytest.raises(ValueError, match="block dimension 0 must be from 1 to 1024, got 2048"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, 2048, x, x, 4)
    with pytest.raises(ValueError, match="block dimension 2 must be from 1 to 64, got 65"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, (1, 1, 65), x, x, 4)
    with pytest.raises(ValueError, match="a block has at most 1024 threads, got 2048"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, (64, 32), x, x, 4)
    with pytest.raises(ValueError, match="argument 0 must be contiguous"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, 32, torch.zeros(4, 2).t(), x, 4)
    with pytest.raises(TypeError, match=r"argument 2 must be a tensor, an int, a float, or a tuple, list or dict "
                                        r"of them \(a struct's fields\), got str"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, 32, x, x, "4")
    with pytest.raises(ValueError, match="the source defines no 'warp_min'"):
        st.emulate_cuda(WARP_MAX, "warp_min", 1, 32, x, x, 4)
    with pytest.raises(ValueError, match="argument 0 has dtype ComplexFloat, which has no C type here"):
        st.emulate_cuda(WARP_MAX, "warp_max", 1, 32, torch.zeros(4, dtype=torch.complex64), x, 4)


def test_the_emulator_benchmark_checks_and_times_every_case():
    # benchmarks/bench_emulator.py on tiny inputs: every hand-written kernel
    # and every operator is checked, then timed, and gets its row.
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, os.path.join(repo, "benchmarks", "bench_emulator.py"), "--blocks", "2",
                           "--rows", "48", "--density", "0.1", "--k", "8", "--rounds", "1"],
                          capture_output=True, text=True, env=env, cwd=repo, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    kernels = ("no meeting", "__syncthreads", "warp shuffles", "warp votes")
    spins = ("plain loads", "atomic loads", "chain forward", "chain reversed", "spin lock")
    for name in kernels + spins + ("struct call", "scalar call", "spmm sum", "spmm max", "sddmm", "attention",
                                   "attention train", "bsrmm"):
        row = [line for line in lines if line.startswith(name + " ")]
        assert row, f"no row for {name!r} in:\n{done.stdout}"
        fields = row[0][len(name):].split()
        column = 2 if name in kernels else 1 if name in spins else 0
        assert float(fields[column]) > 0, row[0]  # the milliseconds (microseconds a call)


@pytest.mark.parametrize("decl,arg,message", [
    ("int n", 2**31 + 5, r"parameter 1 \('int n'\) cannot hold the int 2147483653"),
    ("unsigned char u", 300, r"\('unsigned char u'\) cannot hold the int 300"),
    ("int n", 3.9, r"\('int n'\) takes an integer: got the float 3.9"),
])
def test_a_scalar_its_parameter_cannot_take_is_named_as_on_the_gpu(decl, arg, message):
    """The emulator converts ints and floats as st.CudaKernel and st.launch_cuda
    do: a value the parameter would wrap or truncate (C++'s conversion) is an
    error naming it; values it holds reach the kernel exactly."""
    source = f'extern "C" __global__ void k(long long* out, {decl}) {{ out[0] = (long long)({decl.split()[-1]}); }}'
    out = torch.zeros(1, dtype=torch.int64)
    with pytest.raises(ValueError, match=r"st.emulate_cuda: kernel 'k' .*" + message):
        st.emulate_cuda(source, "k", 1, 1, out, arg)
    st.emulate_cuda(source, "k", 1, 1, out, 7)
    assert out.item() == 7


def test_an_argument_count_other_than_the_parameters_is_named():
    source = 'extern "C" __global__ void k(float* out, int n) { out[0] = n; }'
    out = torch.zeros(1)
    for args in ((out,), (out, 1, 2)):
        with pytest.raises(ValueError,
                           match=rf"st.emulate_cuda: kernel 'k' takes 2 parameters, got {len(args)} arguments"):
            st.emulate_cuda(source, "k", 1, 1, *args)
