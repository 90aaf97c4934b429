"""Template kernels in hand-written CUDA (st.CudaKernel, st.emulate_cuda,
st.launch_cuda), named by an instance: "scale<float, 3>", its omitted
trailing arguments their defaults. The parameters as the instance has them,
every dtype the template is instantiated for checked against torch in
float64 under the emulator, the instance's mangled name in NVRTC's PTX, and
the errors for a name that does not match the declaration."""

import re

import pytest
import torch

import sparsetir_torch as st
from conftest import needs_nvrtc

# y = alpha^kTimes * x in float, stored as T; an index type of its own.
SCALE = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
template <typename T, int kTimes = 2, typename Index = int>
__global__ void scale(const T* __restrict__ x, T* y, float alpha, Index n) {
  const Index i = (Index)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = (float)x[i];
  for (int r = 0; r < kTimes; ++r) v *= alpha;
  y[i] = (T)v;
}
"""

# A warp sum of a template type through shuffles, the warp's width a
# template argument too.
WARP_SUM = r"""
template <typename T, int kWidth>
__global__ void warp_sum(const T* x, T* out) {
  T v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int d = kWidth / 2; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d, kWidth);
  if (threadIdx.x % kWidth == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / kWidth] = v;
}
"""

CASES = [  # instance, dtype, times
    ("scale<float, 3>", torch.float32, 3),
    ("scale<double>", torch.float64, 2),
    ("scale<__half, 1>", torch.float16, 1),
    ("scale<__nv_bfloat16, 2, long long>", torch.bfloat16, 2),
]


@pytest.mark.parametrize("instance,dtype,times", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("n", [1, 33, 1000])
def test_each_instance_runs_under_the_emulator(instance, dtype, times, n):
    kernel = st.CudaKernel(SCALE, instance)
    x = torch.linspace(-4, 4, n, dtype=torch.float64).to(dtype)
    y = torch.zeros(n, dtype=dtype)
    kernel((n + 127) // 128, 128, x, y, 1.5, n)
    # In float (x rounded to it, one rounding a multiplication), then to T:
    # within a few roundings of float or of T, whichever is coarser.
    expected = (x.double() * 1.5 ** times).to(dtype)
    rtol = 4 * max(torch.finfo(dtype).eps, torch.finfo(torch.float32).eps)
    torch.testing.assert_close(y, expected, rtol=rtol, atol=0)


def test_the_parameters_are_the_instances():
    params = st.CudaKernel(SCALE, "scale<__half, 1, long long>").params
    assert [(p.type, p.bytes) for p in params] == [("__half*", 8), ("__half*", 8), ("float", 4), ("long long", 8)]
    assert params[0].declaration == "const T* __restrict__ x"
    with pytest.raises(ValueError, match=r"parameter 0 \('const T\* __restrict__ x'\) points to __half, but got a "
                                         r"tensor of dtype float32"):
        st.CudaKernel(SCALE, "scale<__half>")(1, 32, torch.zeros(4), torch.zeros(4), 1.0, 4)
    with pytest.raises(ValueError, match=r"parameter 3 \('Index n'\) cannot hold the int 2147483648"):
        st.CudaKernel(SCALE, "scale<float>")(1, 32, torch.zeros(4), torch.zeros(4), 1.0, 2**31)


@pytest.mark.parametrize("width", [2, 8, 32])
def test_a_template_argument_sets_a_warp_width(emulation_order, width):
    x = torch.arange(128, dtype=torch.float64)
    out = torch.zeros(128 // width, dtype=torch.float64)
    st.emulate_cuda(WARP_SUM, f"warp_sum<double, {width}>", 2, 64, x, out)
    assert out.tolist() == x.view(-1, width).sum(1).tolist()


@needs_nvrtc
@pytest.mark.parametrize("instance", [c[0] for c in CASES] + ["warp_sum<float, 16>"])
def test_nvrtc_names_the_instance_in_its_ptx(instance):
    kernel = st.CudaKernel(SCALE + WARP_SUM, instance)
    entry = kernel.entry("sm_80")
    assert entry.startswith("_Z") and entry != instance
    ptx = kernel.ptx("sm_80")
    params = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S).group(1)
    sizes = [int(b) // 8 for b in re.findall(r"\.param\s+\.[usbf](\d+)", params)]
    assert sizes == [p.bytes for p in kernel.params]
    assert st.CudaKernel(SCALE, "scale<float>").entry() != st.CudaKernel(SCALE, "scale<double>").entry()


@pytest.mark.parametrize("name,message", [
    ("scale", r"CUDA kernel 'scale': it is a template kernel: name an instance of it, such as 'scale<float>'"),
    ("scale<float, 2, int, 1>", r"it has 3 template parameters, got 4 arguments"),
    ("warp_sum<float>", r"its template parameter 'kWidth' has no default"),
    ("scale<float", r"'scale<float' names no kernel"),
    ("scale<float>x", r"'scale<float>x' names no kernel"),
])
def test_a_name_that_does_not_match_the_declaration_is_named(name, message):
    with pytest.raises(ValueError, match=message):
        st.CudaKernel(SCALE + WARP_SUM, name)


def test_an_instance_of_a_kernel_that_is_no_template_is_refused():
    source = 'extern "C" __global__ void plain(float* x) { x[0] = 1; }'
    with pytest.raises(ValueError, match=r"CUDA kernel 'plain': it is no template, so it is named without <...>"):
        st.CudaKernel(source, "plain<float>")
    with pytest.raises(ValueError, match=r"st.emulate_cuda: 'plain<' names no kernel"):
        st.emulate_cuda(source, "plain<", 1, 1, torch.zeros(1))


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("instance,dtype,times", CASES, ids=[c[0] for c in CASES])
def test_gpu_each_instance_matches_the_emulator(instance, dtype, times):
    kernel = st.CudaKernel(SCALE, instance)
    x = torch.linspace(-4, 4, 1000, dtype=torch.float64).to(dtype)
    outputs = []
    for device in ("cpu", "cuda"):
        y = torch.zeros(1000, dtype=dtype, device=device)
        kernel(8, 128, x.to(device), y, 1.5, 1000)
        outputs.append(y.cpu())
    torch.testing.assert_close(outputs[1], outputs[0], rtol=0, atol=0)
