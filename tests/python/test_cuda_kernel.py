"""st.CudaKernel: one object for a hand-written kernel, emulated on CPU
tensors and launched on CUDA tensors. Every machine checks what is read at
construction, the emulated runs against torch, the argument checks both
devices share and the PTX; a GPU runs the same object there."""
import re

import pytest
import torch

import sparsetir_torch as st

from conftest import needs_nvrtc, ptx_param_sizes

SAXPY = r"""
#ifndef SCALE_T
#define SCALE_T float
#endif
extern "C" __global__ void saxpy(const float* __restrict__ x, float* y, SCALE_T a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
"""

# Sums each block's TILE elements through shared memory; TILE comes from an option.
TILE_SUM = r"""
extern "C" __global__ void tile_sum(const float* x, float* out) {
  __shared__ float staged[TILE];
  staged[threadIdx.x] = x[blockIdx.x * TILE + threadIdx.x];
  __syncthreads();
  for (int half = TILE / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) staged[threadIdx.x] += staged[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = staged[0];
}
"""


def test_the_declaration_is_read_when_the_kernel_is_made():
    k = st.CudaKernel(SAXPY, "saxpy")
    assert k.name == "saxpy" and k.source == SAXPY and k.options == ()
    assert [(p.type, p.name, p.bytes) for p in k.params] == [("float*", "x", 8), ("float*", "y", 8),
                                                              ("float", "a", 4), ("int", "n", 4)]
    assert k.params[0].declaration == "const float* __restrict__ x"
    assert repr(k) == "<CudaKernel saxpy(const float* __restrict__ x, float* y, SCALE_T a, int n)>"
    # An option names a parameter's type as NVRTC would compile it.
    doubled = st.CudaKernel(SAXPY, "saxpy", options=["-DSCALE_T=double"])
    assert (doubled.params[2].type, doubled.params[2].bytes) == ("double", 8)
    assert doubled.options == ("-DSCALE_T=double",)


@pytest.mark.parametrize("n", [1, 127, 128, 1000])
def test_cpu_tensors_run_under_the_emulator(n):
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    expected = y.double() + 0.75 * x.double()
    st.CudaKernel(SAXPY, "saxpy")((n + 127) // 128, 128, x, y, 0.75, n)
    torch.testing.assert_close(y.double(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("tile", [4, 32, 256])
def test_options_shape_the_emulated_kernel(tile):
    x = torch.randn(3 * tile, generator=torch.Generator().manual_seed(tile), dtype=torch.float32)
    out = torch.zeros(3)
    st.CudaKernel(TILE_SUM, "tile_sum", options=[f"-DTILE={tile}", "-lineinfo"])(3, tile, x, out)
    torch.testing.assert_close(out.double(), x.double().view(3, tile).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("source,name,options,message", [
    (SAXPY, "missing", [], "the source declares no __global__ function"),
    ('extern "C" __global__ void k(Mystery v) {}', "k", [], "parameter 0 ('Mystery v') has type 'Mystery'"),
    ('extern "C" __global__ void k(const int& n) {}', "k", [], "is a reference"),
    (SAXPY, "saxpy", ["-D1X"], "the option '-D1X' does not name a macro"),
    (SAXPY, "saxpy", ["-USCALE_T=1"], "the option '-USCALE_T=1' gives -U a value"),
])
def test_a_kernel_that_cannot_be_called_fails_when_made(source, name, options, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        st.CudaKernel(source, name, options=options)


def test_the_constructor_checks_its_own_arguments():
    with pytest.raises(TypeError, match="'source' and 'name' must be strings"):
        st.CudaKernel(SAXPY, b"saxpy")
    with pytest.raises(TypeError, match="'options' must be a sequence of strings"):
        st.CudaKernel(SAXPY, "saxpy", options="-DX")


@pytest.mark.parametrize("args,message", [
    ((torch.zeros(4), torch.zeros(4), 1.0), "kernel 'saxpy' takes 4 parameters, got 3 arguments"),
    ((torch.zeros(4), torch.zeros(4), 1.0, 2**31), "parameter 3 ('int n')"),
    ((torch.zeros(4), torch.zeros(4), 1.0, 4.0), "parameter 3 ('int n')"),
    ((torch.zeros(4, dtype=torch.int32), torch.zeros(4), 1.0, 4), "parameter 0 ('const float* __restrict__ x')"),
])
def test_cpu_calls_are_checked_as_a_launch_checks_them(args, message):
    """st.emulate_cuda alone converts an int to `int` as C++ does (2^31
    wraps); the object refuses it as the GPU launch would, naming itself."""
    with pytest.raises(ValueError, match=re.escape("st.CudaKernel: ") + ".*" + re.escape(message)):
        st.CudaKernel(SAXPY, "saxpy")(1, 4, *args)


def test_cpu_calls_take_the_emulators_errors():
    k = st.CudaKernel(SAXPY, "saxpy", options=["--use_fast_math"])  # fine for NVRTC
    with pytest.raises(ValueError, match="the option '--use_fast_math' has no meaning under the emulator"):
        k(1, 4, torch.zeros(4), torch.zeros(4), 1.0, 4)
    with pytest.raises(ValueError, match="'block' must be an int or 1 to 3 ints"):
        st.CudaKernel(SAXPY, "saxpy")(1, (1, 2, 3, 4), torch.zeros(4), torch.zeros(4), 1.0, 4)


def test_the_race_check_reports_a_missing_barrier(monkeypatch):
    racy = TILE_SUM.replace("  __syncthreads();\n  for", "  for", 1)
    x, out = torch.arange(64, dtype=torch.float32), torch.zeros(2)
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    st.CudaKernel(TILE_SUM, "tile_sum", options=["-DTILE=32"])(2, 32, x, out)
    with pytest.raises(RuntimeError, match="race check: kernel .tile_sum. wrote different values"):
        st.CudaKernel(racy, "tile_sum", options=["-DTILE=32"])(2, 32, x, out)


@needs_nvrtc
def test_ptx_is_nvrtcs_for_the_architecture():
    k = st.CudaKernel(SAXPY, "saxpy", options=["-DSCALE_T=double"])
    for arch, target in [("sm_80", "sm_80"), (90, "sm_90")]:
        ptx = k.ptx(arch)
        assert re.search(rf"^\.target {target}\b", ptx, re.M), ptx[:400]
        assert ptx_param_sizes(ptx, "saxpy") == [p.bytes for p in k.params] == [8, 8, 8, 4]
    with pytest.raises(ValueError, match=re.escape("st.CudaKernel saxpy.ptx(): arch is an sm_XY value")):
        k.ptx("hopper")
    broken = st.CudaKernel('extern "C" __global__ void k(float* x) { x[0] = missing; }', "k")
    with pytest.raises(st.CompileError, match='identifier "missing" is undefined'):
        broken.ptx("sm_90")


TWO_KERNELS = r"""
extern "C" __global__ void plain(float* x) { x[threadIdx.x] += 1.0f; }
extern "C" __global__ void staged(float* x) {
  __shared__ float tile[300];
  tile[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = tile[299 - threadIdx.x];
}
"""


@needs_nvrtc
def test_resources_are_ptxas_report_of_the_kernel_itself():
    from sparsetir_torch.cuda_runtime import find_ptxas
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.skip("no ptxas here")
    staged = st.CudaKernel(TWO_KERNELS, "staged").resources("sm_80")
    plain = st.CudaKernel(TWO_KERNELS, "plain").resources(90)
    assert staged["shared"] == 300 * 4 and plain["shared"] == 0  # each entry's own, though both are in the PTX
    assert staged["registers"] > 0 and plain["registers"] > 0
    assert staged["spills"] == plain["spills"] == 0
    from sparsetir_torch.cuda_check import ptxas_report
    with pytest.raises(RuntimeError, match="no entry function 'absent'"):
        ptxas_report(ptxas, st.CudaKernel(TWO_KERNELS, "plain").ptx(80).encode(), 80, entry="absent")


# --------------------------------------------------------------------------- on a GPU

GPU_REASON = st.cuda_unavailable_reason()
gpu = pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")


@gpu
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_gpu_the_same_object_launches_on_cuda_tensors(n):
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, generator=g), torch.randn(n, generator=g)
    k = st.CudaKernel(SAXPY, "saxpy")
    emulated, on_gpu = y.clone(), y.cuda()
    k((n + 127) // 128, 128, x, emulated, 0.75, n)
    k((n + 127) // 128, 128, x.cuda(), on_gpu, 0.75, n)
    torch.testing.assert_close(on_gpu.cpu(), emulated, rtol=0, atol=1e-6)


@gpu
def test_gpu_mixed_devices_are_refused_by_the_launch():
    k = st.CudaKernel(SAXPY, "saxpy")
    with pytest.raises(ValueError, match="argument 0 is on cpu; every tensor must be a CUDA tensor"):
        k(1, 4, torch.zeros(4), torch.zeros(4, device="cuda"), 1.0, 4)
