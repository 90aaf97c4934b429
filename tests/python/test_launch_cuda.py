"""st.launch_cuda: a hand-written kernel on CUDA tensors. Every machine checks
how a kernel's parameters are read from its source (against the parameter
sizes NVRTC compiles), the bytes each argument becomes, and the errors; a GPU
runs the kernels and compares them with torch and with the emulator."""
import importlib.util
import os
import re
import struct
import sys
from fractions import Fraction

import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C

from conftest import cuda_include_options, needs_nvrtc, ptx_param_sizes

def params_of(source, kernel, options=()):
    """(type, name, bytes, declaration, fields) of each parameter, as a launch reads them."""
    return _C.CudaKernelSignature(source, kernel, list(options)).params


def values_of(source, kernel, args, options=()):
    """The bytes a launch hands the driver for each argument."""
    return _C.CudaKernelSignature(source, kernel, list(options)).values(args)


# One parameter of every kind a launch converts to.
EVERY_KIND = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
typedef long long int64_t;  // NVRTC has no <stdint.h> of its own
typedef unsigned int uint32_t;
extern "C" __global__ void __launch_bounds__(128)
every_kind(const float* __restrict__ x, double* y, int n, unsigned u, long long ll, unsigned long long ull,
           short s, unsigned char uc, bool flag, float f, double d, __half h, __nv_bfloat16 b,
           size_t bytes, int64_t i64, uint32_t u32, signed char sc, unsigned short us, float4* v, void* p) {
  if (threadIdx.x == 0 && flag) y[0] = x[0] + n + u + ll + ull + s + uc + f + d + __half2float(h) +
                                       __bfloat162float(b) + bytes + i64 + u32 + sc + us + v->x + (p != 0);
}
"""
EVERY_KIND_SIZES = [8, 8, 4, 4, 8, 8, 2, 1, 1, 4, 8, 2, 2, 8, 8, 4, 1, 2, 8, 8]


def test_parameters_are_read_from_the_declaration():
    params = params_of(EVERY_KIND, "every_kind")
    assert [p[2] for p in params] == EVERY_KIND_SIZES
    assert params[0][:4] == ("float*", "x", 8, "const float* __restrict__ x")
    assert all(not p[4] for p in params)  # no struct among them: no fields
    assert params[11][:2] == ("__half", "h")
    assert params[18][:2] == ("float4*", "v")


@needs_nvrtc
def test_nvrtc_compiles_the_parameter_sizes_the_reader_reads():
    """The sizes in NVRTC's PTX are what cuLaunchKernel copies: the reader's
    must be the same, parameter by parameter."""
    options = cuda_include_options("cuda_fp16.h", "cuda_bf16.h")
    if options is None:
        pytest.skip("no cuda_fp16.h / cuda_bf16.h for NVRTC")
    ptx = _C.nvrtc_compile(EVERY_KIND, "every_kind.cu", 80, False, options)["ptx"].decode()
    assert ptx_param_sizes(ptx, "every_kind") == EVERY_KIND_SIZES
    assert [p[2] for p in params_of(EVERY_KIND, "every_kind")] == EVERY_KIND_SIZES


def every_kind_args(x, y):
    return [x, y, -7, 2**32 - 1, -(2**63), 2**63 - 1, -(2**15), 255, True, 0.1, 0.1, 0.1, 0.1, 5, -5, 7, -128,
            65535, x, y]


def rounded(d: float, bits: int) -> Fraction:
    """`d` rounded to nearest (ties to even) with `bits` significant bits,
    exactly (a normal result)."""
    exact = abs(Fraction(d))
    exponent = exact.numerator.bit_length() - exact.denominator.bit_length()  # floor(log2) or one more
    scale = Fraction(2) ** (bits - 1 - exponent)
    if exact * scale < 2 ** (bits - 1):
        scale *= 2
    return (1 if d >= 0 else -1) * Fraction(round(exact * scale)) / scale


def test_each_argument_becomes_its_parameters_bytes():
    x = torch.arange(4, dtype=torch.float32)
    y = torch.zeros(4, dtype=torch.float64)
    values = values_of(EVERY_KIND, "every_kind", every_kind_args(x, y))
    half = struct.pack("<e", 0.1)  # Python rounds a double to binary16 once, to nearest even
    bf16 = struct.pack("<f", float(rounded(0.1, 8)))[2:]
    expected = [struct.pack("<Q", x.data_ptr()), struct.pack("<Q", y.data_ptr()), struct.pack("<i", -7),
                struct.pack("<I", 2**32 - 1), struct.pack("<q", -(2**63)), struct.pack("<Q", 2**63 - 1),
                struct.pack("<h", -(2**15)), b"\xff", b"\x01", struct.pack("<f", 0.1), struct.pack("<d", 0.1), half,
                bf16, struct.pack("<Q", 5), struct.pack("<q", -5), struct.pack("<I", 7), struct.pack("<b", -128),
                struct.pack("<H", 65535), struct.pack("<Q", x.data_ptr()), struct.pack("<Q", y.data_ptr())]
    assert values == expected


@pytest.mark.parametrize("fmt,bits,ctype", [("half", 11, "__half"), ("bfloat16", 8, "__nv_bfloat16")])
def test_a_float_is_rounded_once_to_a_16_bit_parameter(fmt, bits, ctype):
    """Doubles a hair above and below a midpoint between two neighbours: through
    float (nearest) they would land on the midpoint and round to even."""
    source = f'extern "C" __global__ void k({ctype} v) {{}}'
    one_ulp = 2.0 ** (1 - bits)
    for d in [1 + one_ulp / 2 + 2.0**-40, 1 + one_ulp / 2 - 2.0**-40, 1 + 3 * one_ulp / 2 + 2.0**-40, -3.3, 65504.0]:
        (got,) = values_of(source, "k", [d])
        if fmt == "half":
            want = struct.pack("<e", d)
        else:
            want = struct.pack("<f", float(rounded(d, bits)))[2:]
        assert got == want, (d, got, want)


def test_an_int_goes_to_a_floating_point_parameter_rounded_once():
    source = 'extern "C" __global__ void k(float a, double b, float c, double d) {}'
    # 2^60 + 2^36 + 1 lies above the midpoint between two floats; a double cannot tell it from the midpoint.
    above_midpoint = 2**60 + 2**36 + 1
    assert values_of(source, "k", [3, -(2**40), above_midpoint, 2**62 + 1]) == [
        struct.pack("<f", 3.0), struct.pack("<d", -(2.0**40)), struct.pack("<f", float(rounded(above_midpoint, 24))),
        struct.pack("<d", 2.0**62)]


@pytest.mark.parametrize("decl,arg,message", [
    ("int n", 2**31, r"parameter 0 \('int n'\) cannot hold the int 2147483648"),
    ("int n", -(2**31) - 1, "cannot hold"),
    ("unsigned n", -1, r"\('unsigned n'\) cannot hold the int -1"),
    ("unsigned char c", 256, "cannot hold"),
    ("bool flag", 2, r"\('bool flag'\) cannot hold the int 2"),
    ("int n", 2.5, r"\('int n'\) takes an integer: got the float 2.5"),
    ("float* x", 3, r"\('float\* x'\) is a pointer: pass a tensor, got the int 3"),
    ("int n", torch.zeros(2, dtype=torch.int32), r"is a value, not a pointer: got a tensor of dtype int32"),
    ("float* x", torch.zeros(2, dtype=torch.int32), r"'float\* x'\) points to float, but got a tensor of dtype int32"),
    ("double* x", torch.zeros(2), "points to double, but got a tensor of dtype float32"),
    ("__half* x", torch.zeros(2, dtype=torch.bfloat16), "points to __half, but got a tensor of dtype bfloat16"),
    ("int64_t* x", torch.zeros(2, dtype=torch.int32), "points to int64_t, but got a tensor of dtype int32"),
])
def test_an_argument_its_parameter_cannot_take_is_named(decl, arg, message):
    source = f'extern "C" __global__ void k({decl}) {{}}'
    with pytest.raises(ValueError, match=r"st.launch_cuda: kernel 'k' .*" + message):
        values_of(source, "k", [arg])


@pytest.mark.parametrize("decl,dtype", [("unsigned short* x", torch.float16), ("unsigned short* x", torch.bfloat16),
                                        ("unsigned* x", torch.int32), ("float4* x", torch.float32),
                                        ("__half2* x", torch.float16), ("void* x", torch.uint8),
                                        ("const bool* x", torch.bool), ("unsigned char* x", torch.bool),
                                        ("long long* x", torch.int64), ("__nv_bfloat16* x", torch.bfloat16)])
def test_a_pointer_takes_the_tensors_its_element_type_can_read(decl, dtype):
    t = torch.zeros(4, dtype=dtype)
    (value,) = values_of(f'extern "C" __global__ void k({decl}) {{}}', "k", [t])
    assert value == struct.pack("<Q", t.data_ptr())


def test_the_argument_count_must_be_the_parameter_count():
    with pytest.raises(ValueError, match="kernel 'k' takes 2 parameters, got 1 arguments"):
        values_of('extern "C" __global__ void k(float* x, int n) {}', "k", [torch.zeros(1)])


def test_a_long_source_is_read_without_overflowing_the_stack():
    """Declarations hundreds of kilobytes long (a typedef, a macro, an
    include, a struct of thousands of fields): read by hand, not by a
    recursive regular-expression matcher."""
    long_source = ("typedef " + "unsigned " * 40000 + "wide_t;\n"
                   "#define REAL " + "float" + " " * 400000 + "\n"
                   "#include <" + "a" * 400000 + "\n"
                   "struct Big { " + " ".join(f"int a{i};" for i in range(5000)) + " };\n"
                   'extern "C" __global__ void k(Big b, REAL* y, unsigned n) {}\n')
    params = params_of(long_source, "k")
    assert [(p[0], p[2]) for p in params] == [("Big", 20000), ("float*", 8), ("unsigned", 4)]


def test_a_parameter_of_a_type_it_cannot_pass_is_named():
    with pytest.raises(ValueError, match=r"parameter 1 \('Mystery v'\) has type 'Mystery'"):
        params_of('extern "C" __global__ void k(float* x, Mystery v) {}', "k")
    with pytest.raises(ValueError, match=r"parameter 0 \('Pair v'\): 'Pair' is a union"):
        params_of('union Pair { int i; float f; };\nextern "C" __global__ void k(Pair v) {}', "k")
    with pytest.raises(ValueError, match="declares no __global__ function"):
        params_of('extern "C" __global__ void k(float* x) {}', "other")


SCALE = r"""
extern "C" __global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""


def test_launch_cuda_refuses_cpu_tensors_and_points_at_the_emulator():
    with pytest.raises(ValueError, match=r"argument 0 is on cpu; every tensor must be a CUDA tensor "
                                         r"\(st.emulate_cuda runs the same kernel on CPU tensors\)"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), 2.0, 8)
    with pytest.raises(ValueError, match="no argument is a CUDA tensor"):
        st.launch_cuda(SCALE, "scale", 1, 32, 1, 2.0, 8)


@pytest.mark.parametrize("grid,block,message", [
    (0, 32, "grid dimension 0 must be from 1 to 2147483647, got 0"),
    ((1, 65536), 32, "grid dimension 1 must be from 1 to 65535"),
    (1, (1, 1, 65), "block dimension 2 must be from 1 to 64"),
    (1, (64, 32), "a block has at most 1024 threads, got 2048"),
    (1, (1, 2, 3, 4), "'block' must be an int or 1 to 3 ints"),
])
def test_launch_cuda_checks_the_launch_shape(grid, block, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        st.launch_cuda(SCALE, "scale", grid, block, torch.ones(8), 2.0, 8)


def test_launch_cuda_checks_its_own_arguments():
    with pytest.raises(TypeError, match="'options' must be a sequence of strings"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), 2.0, 8, options="-DX")
    with pytest.raises(TypeError, match=r"argument 1 must be a tensor, an int, a float, or a tuple, list or dict "
                                        r"of them \(a struct's fields\), got str"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), "2", 8)
    with pytest.raises(ValueError, match="argument 0 requires grad"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8, requires_grad=True), 2.0, 8)
    with pytest.raises(ValueError, match="'shared_bytes' must be from 0"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), 2.0, 8, shared_bytes=-1)
    with pytest.raises(ValueError, match="an NVRTC option holds a newline"):
        st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), 2.0, 8, options=["-DX=1\n-DY"])
    # A malformed macro option is named as the emulator names it, before any device is asked for.
    for option, message in [("-D1X=2", "does not name a macro"), ("--define-macro=", "does not name a macro"),
                            ("-UFOO=1", "gives -U a value")]:
        with pytest.raises(ValueError, match=re.escape(f"st.launch_cuda: the option '{option}' {message}")):
            st.launch_cuda(SCALE, "scale", 1, 32, torch.ones(8), 2.0, 8, options=[option])


# A kernel shaped by macros, as NVRTC options give them.
TILED = r"""
#ifndef TILE
#error "TILE is not defined"
#endif
extern "C" __global__ void tiled(float* x) {
  __shared__ float tile[TILE];
  tile[threadIdx.x] = x[blockIdx.x * TILE + threadIdx.x] * SCALE;
  __syncthreads();
#ifdef REVERSE
  x[blockIdx.x * TILE + threadIdx.x] = tile[TILE - 1 - threadIdx.x];
#else
  x[blockIdx.x * TILE + threadIdx.x] = tile[threadIdx.x];
#endif
}
"""


@pytest.mark.parametrize("tile", [4, 8])
def test_the_emulator_takes_launch_cudas_macro_options(tile):
    x = torch.arange(2.0 * tile)
    st.emulate_cuda(TILED, "tiled", 2, tile, x, options=[f"-DTILE={tile}", "--define-macro=SCALE=3", "-lineinfo"])
    assert torch.equal(x, torch.arange(2.0 * tile) * 3)
    x = torch.arange(2.0 * tile)
    st.emulate_cuda(TILED, "tiled", 2, tile, x, options=[f"-DTILE={tile}", "-DSCALE=2", "-DREVERSE", "-UREVERSE",
                                                         "-DREVERSE"])
    assert torch.equal(x, (torch.arange(2.0 * tile) * 2).view(2, tile).flip(1).flatten())


@pytest.mark.parametrize("option,message", [
    ("--use_fast_math", "the option '--use_fast_math' has no meaning under the emulator"),
    ("-I/tmp", "the option '-I/tmp' has no meaning under the emulator"),
    ("-D1X=2", "the option '-D1X=2' does not name a macro"),
    ("-D", "the option '-D' does not name a macro"),
    ("-UFOO=1", "the option '-UFOO=1' gives -U a value"),
])
def test_the_emulator_refuses_an_option_it_cannot_honour(option, message):
    with pytest.raises(ValueError, match=re.escape("st.emulate_cuda: " + message)):
        st.emulate_cuda(TILED, "tiled", 1, 4, torch.zeros(4), options=["-DTILE=4", "-DSCALE=1", option])
    with pytest.raises(TypeError, match="'options' must be a sequence of strings"):
        st.emulate_cuda(TILED, "tiled", 1, 4, torch.zeros(4), options="-DTILE=4")


# Parameter types through a macro of the source, a typedef and an option.
ALIASED = r"""
#define real float
typedef unsigned int index_t;
extern "C" __global__ void aliased(real* x, real a, index_t n, acc_t b) {
  if (threadIdx.x < n) x[threadIdx.x] = a * x[threadIdx.x] + (real)b;
}
"""


@needs_nvrtc
def test_nvrtc_compiles_the_sizes_read_through_macros_typedefs_and_options():
    options = ["-Dacc_t=double"]
    ptx = _C.nvrtc_compile(ALIASED, "aliased.cu", 80, False, options)["ptx"].decode()
    params = params_of(ALIASED, "aliased", options)
    assert [p[2] for p in params] == ptx_param_sizes(ptx, "aliased") == [8, 4, 4, 8]
    assert [p[0] for p in params] == ["float*", "float", "unsigned int", "double"]
    assert values_of(ALIASED, "aliased", [torch.zeros(1), 2, 3, 0.5], options)[1:] == [
        struct.pack("<f", 2.0), struct.pack("<I", 3), struct.pack("<d", 0.5)]
    with pytest.raises(ValueError, match=r"parameter 3 \('acc_t b'\) has type 'acc_t'"):
        params_of(ALIASED, "aliased")


@needs_nvrtc
def test_nvrtc_compiles_the_macro_kernel_with_the_same_options():
    ptx = _C.nvrtc_compile(TILED, "tiled.cu", 80, False, ["-DTILE=8", "--define-macro=SCALE=3", "-lineinfo"])["ptx"]
    assert b".entry tiled" in ptx


# --------------------------------------------------------------------------- on a GPU

GPU_REASON = st.cuda_unavailable_reason()
gpu = pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")

# Every kind of parameter used: a wrong byte anywhere changes the sum.
SUM_OF_KINDS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void sum_of_kinds(double* out, int n, unsigned u, long long ll, short s, unsigned char uc,
                                        bool flag, float f, double d, __half h, __nv_bfloat16 b, size_t z) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    out[0] = flag ? (double)n + u + (double)ll + s + uc + f + d + (double)__half2float(h) +
                        (double)__bfloat162float(b) + (double)z
                  : -1.0;
  }
}
"""
SUM_ARGS = [-7, 3000000000, -(2**40), -300, 200, True, 0.5, 0.25, 1.5, -2.0, 2**33]


@gpu
def test_gpu_every_kind_of_argument_arrives_as_written():
    out = torch.zeros(1, dtype=torch.float64, device="cuda")
    st.launch_cuda(SUM_OF_KINDS, "sum_of_kinds", 1, 32, out, *SUM_ARGS)
    torch.cuda.synchronize()
    assert out.item() == -7 + 3000000000 - 2**40 - 300 + 200 + 0.5 + 0.25 + 1.5 - 2.0 + 2**33
    emulated = torch.zeros(1, dtype=torch.float64)
    st.emulate_cuda(SUM_OF_KINDS, "sum_of_kinds", 1, 32, emulated, *SUM_ARGS)
    assert emulated.item() == out.item()


@gpu
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_gpu_scale_matches_torch_and_the_emulator(n):
    x = torch.randn(n, generator=torch.Generator().manual_seed(n))
    on_gpu = x.cuda()
    st.launch_cuda(SCALE, "scale", (n + 127) // 128, 128, on_gpu, 1.5, n)
    emulated = x.clone()
    st.emulate_cuda(SCALE, "scale", (n + 127) // 128, 128, emulated, 1.5, n)
    torch.testing.assert_close(on_gpu.cpu(), x * 1.5, rtol=0, atol=0)
    torch.testing.assert_close(emulated, x * 1.5, rtol=0, atol=0)


@gpu
def test_gpu_launch_runs_on_torchs_current_stream():
    x = torch.ones(1 << 20, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        st.launch_cuda(SCALE, "scale", (1 << 20) // 256, 256, x, 3.0, 1 << 20)
    stream.synchronize()
    assert torch.all(x == 3.0).item()


# Dynamic shared memory past the 48 KiB a launch gets without asking.
SHARED_REVERSE = r"""
extern "C" __global__ void shared_reverse(float* x, int n) {
  extern __shared__ float tile[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = x[i];
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = tile[n - 1 - i];
}
"""


@gpu
def test_gpu_dynamic_shared_memory_past_48_kib():
    n = 20000  # 80,000 bytes
    x = torch.arange(n, dtype=torch.float32, device="cuda")
    st.launch_cuda(SHARED_REVERSE, "shared_reverse", 1, 256, x, n, shared_bytes=n * 4)
    assert torch.equal(x.cpu(), torch.arange(n, dtype=torch.float32).flip(0))


@gpu
def test_gpu_nvrtc_errors_and_unmangled_names():
    with pytest.raises(st.CompileError, match="error"):
        st.launch_cuda('extern "C" __global__ void broken(float* x) { not cuda; }', "broken", 1, 1,
                       torch.zeros(1, device="cuda"))
    with pytest.raises(ValueError, match=r"declare it extern \"C\""):
        st.launch_cuda("__global__ void mangled(float* x) { x[0] = 1; }", "mangled", 1, 1,
                       torch.zeros(1, device="cuda"))
    with pytest.raises(ValueError, match="argument 1 is on meta; every tensor must be a CUDA tensor"):
        st.launch_cuda('extern "C" __global__ void two(float* a, float* b) {}', "two", 1, 1,
                       torch.zeros(1, device="cuda"), torch.zeros(1, device="meta"))


@gpu
def test_gpu_the_examples_float16_spmm_matches_torch_sparse():
    """examples/custom_cuda_kernel.py's kernel (__half2, cooperative groups,
    shared memory) on the GPU, on a random graph with empty rows."""
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    spec = importlib.util.spec_from_file_location("custom_cuda_kernel", os.path.join(examples, "custom_cuda_kernel.py"))
    example = importlib.util.module_from_spec(spec)
    sys.path.insert(0, examples)  # for its _data helper
    try:
        spec.loader.exec_module(example)
    finally:
        sys.path.remove(examples)
    g = torch.Generator().manual_seed(5)
    n, features = 700, 48
    dense = torch.rand(n, n, generator=g) * (torch.rand(n, n, generator=g) < 0.02)
    dense[::7] = 0  # empty rows
    a = dense.to_sparse_csr()
    x = torch.randn(n, features, generator=g).half()
    matrix = [a.crow_indices().int().cuda(), a.col_indices().int().cuda(), a.values().float().cuda()]
    y = example.run(matrix, x.cuda(), plant_race=False).cpu()
    reference = dense.double() @ x.double()
    assert (y.double() - reference).abs().max().item() <= 2.0**-9 * max(reference.abs().max().item(), 1.0)


@gpu
def test_gpu_the_macro_kernel_matches_the_emulator():
    options = ["-DTILE=32", "-DSCALE=3", "-DREVERSE"]
    x = torch.randn(64, generator=torch.Generator().manual_seed(2))
    on_gpu, emulated = x.cuda(), x.clone()
    st.launch_cuda(TILED, "tiled", 2, 32, on_gpu, options=options)
    st.emulate_cuda(TILED, "tiled", 2, 32, emulated, options=options)
    assert torch.equal(on_gpu.cpu(), emulated)
