"""st.emulate_cuda on hand-written kernels that include cuda_fp8.h: the E4M3 and
E5M2 formats, the __nv_cvt_* conversions in both saturation modes, and the
__nv_fp8_* types with their pairs and quads. Every encoding is checked against
the nearest value chosen in Python from the format's list of values (exact
fractions, ties to the even code), every decoding against torch's float8
dtypes; each kernel is also compiled by NVRTC against the toolkit's own
cuda_fp8.h, so none relies on what only the emulator accepts."""
import math
import struct
from bisect import bisect_left
from fractions import Fraction

import pytest
import torch

import sparsetir_torch as st
from conftest import cuda_include_options, needs_nvrtc

# (significand bits after the point, exponent bias, the largest finite code)
FORMATS = {"e4m3": (3, 7, 0x7E), "e5m2": (2, 15, 0x7B)}
TORCH_DTYPES = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def value_of(code: int, fmt: str) -> Fraction:
    """The value of a finite, non-negative code, from the format's definition."""
    m, bias, _ = FORMATS[fmt]
    exponent, fraction = code >> m, code & ((1 << m) - 1)
    if exponent == 0:
        return Fraction(fraction) * Fraction(2) ** (1 - bias - m)
    return Fraction((1 << m) + fraction) * Fraction(2) ** (exponent - bias - m)


VALUES = {fmt: [value_of(c, fmt) for c in range(FORMATS[fmt][2] + 1)] for fmt in FORMATS}


def is_nan_code(code: int, fmt: str) -> bool:
    return (code & 0x7F) == 0x7F if fmt == "e4m3" else (code & 0x7F) > 0x7C


def encode(x: float, fmt: str, satfinite: bool) -> int:
    """x rounded to the nearest code (ties to the even code); one step past the
    largest counts as overflow (to the largest, or to NaN / infinity)."""
    _, _, largest = FORMATS[fmt]
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    overflow = largest if satfinite else (0x7F if fmt == "e4m3" else 0x7C)
    if math.isinf(x):
        return sign | overflow
    values = VALUES[fmt] + [2 * VALUES[fmt][-1] - VALUES[fmt][-2]]  # the step past the largest
    a = Fraction(abs(x))
    if a >= values[-1]:
        return sign | overflow
    above = bisect_left(values, a)
    if values[above] == a:
        code = above
    else:
        below = above - 1
        gap_below, gap_above = a - values[below], values[above] - a
        code = below if gap_below < gap_above or (gap_below == gap_above and below % 2 == 0) else above
    return sign | (overflow if code > largest else code)


def inputs(fmt: str):
    """Every value and midpoint of the format, a hair either side of each
    midpoint, the edges of overflow and underflow, and random doubles."""
    values = [float(v) for v in VALUES[fmt]]
    step = values[-1] - values[-2]
    xs = values + [values[-1] + step / 2, values[-1] + step, 1e300, 2.0 ** -30]
    for lo, hi in zip(values, values[1:] + [values[-1] + step]):
        mid = (lo + hi) / 2
        xs += [mid, math.nextafter(mid, 0), math.nextafter(mid, math.inf)]
    g = torch.Generator().manual_seed(8)
    xs += (torch.randn(400, generator=g, dtype=torch.float64) * 100).tolist()
    xs += [-x for x in xs]
    return xs + [0.0, -0.0, math.inf, -math.inf]


CONVERT = r"""
#include <cuda_fp8.h>
extern "C" __global__ void convert(const double* x, unsigned char* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[4 * i + 0] = __nv_cvt_double_to_fp8(x[i], __NV_NOSAT, __NV_E4M3);
  out[4 * i + 1] = __nv_cvt_double_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3);
  out[4 * i + 2] = __nv_cvt_double_to_fp8(x[i], __NV_NOSAT, __NV_E5M2);
  out[4 * i + 3] = __nv_cvt_double_to_fp8(x[i], __NV_SATFINITE, __NV_E5M2);
}
extern "C" __global__ void convert_float(const float* x, unsigned char* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[4 * i + 0] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E4M3);
  out[4 * i + 1] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E4M3);
  out[4 * i + 2] = __nv_cvt_float_to_fp8(x[i], __NV_NOSAT, __NV_E5M2);
  out[4 * i + 3] = __nv_cvt_float_to_fp8(x[i], __NV_SATFINITE, __NV_E5M2);
}
// Every code: its value as float (through the type), as __half bits, as an int and as a bool.
extern "C" __global__ void decode(float* f4, float* f5, unsigned short* h4, unsigned short* h5, int* i4, int* b4) {
  const int c = threadIdx.x;
  __nv_fp8_e4m3 a;
  a.__x = (__nv_fp8_storage_t)c;
  __nv_fp8_e5m2 b;
  b.__x = (__nv_fp8_storage_t)c;
  f4[c] = static_cast<float>(a);
  f5[c] = static_cast<float>(b);
  h4[c] = __nv_cvt_fp8_to_halfraw(a.__x, __NV_E4M3).x;
  h5[c] = __nv_cvt_fp8_to_halfraw(b.__x, __NV_E5M2).x;
  i4[c] = static_cast<int>(a);
  b4[c] = static_cast<bool>(a);
}
"""


def run_convert(xs, kernel, dtype):
    x = torch.tensor(xs, dtype=dtype)
    out = torch.zeros(4 * len(xs), dtype=torch.uint8)
    st.emulate_cuda(CONVERT, kernel, (len(xs) + 127) // 128, 128, x, out, len(xs))
    return out.view(-1, 4).tolist()


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
@pytest.mark.parametrize("kernel,dtype", [("convert", torch.float64), ("convert_float", torch.float32)])
def test_conversions_round_to_the_nearest_code_in_both_saturation_modes(fmt, kernel, dtype):
    xs = inputs(fmt)
    if dtype == torch.float32:
        xs = [float(torch.tensor(x, dtype=torch.float32)) for x in xs]  # what the kernel sees
    column = {"e4m3": 0, "e5m2": 2}[fmt]
    got = run_convert(xs, kernel, dtype)
    for x, row in zip(xs, got):
        for satfinite in (False, True):
            want = encode(x, fmt, satfinite)
            assert row[column + satfinite] == want, (fmt, x, satfinite, hex(row[column + satfinite]), hex(want))


def test_a_nan_stays_nan_and_a_floats_nan_loses_its_sign():
    nan, negative_nan = float("nan"), struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
    rows = run_convert([nan, negative_nan], "convert", torch.float64)
    assert all(is_nan_code(c, fmt) for row in rows for c, fmt in zip(row, ["e4m3", "e4m3", "e5m2", "e5m2"]))
    assert rows[1][0] & 0x80 and rows[1][2] & 0x80  # a double's sign is kept
    rows = run_convert([nan, -nan], "convert_float", torch.float32)
    assert rows[0] == rows[1] == [0x7F, 0x7F, 0x7F, 0x7F]


def test_every_code_decodes_to_torchs_value():
    outs = [torch.zeros(256, dtype=dtype) for dtype in (torch.float32, torch.float32, torch.int16, torch.int16,
                                                         torch.int32, torch.int32)]
    st.emulate_cuda(CONVERT, "decode", 1, 256, *outs)
    f4, f5, h4, h5, i4, b4 = outs
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    for got, halves, fmt in [(f4, h4, "e4m3"), (f5, h5, "e5m2")]:
        want = codes.view(TORCH_DTYPES[fmt]).float()
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        as_half = halves.view(torch.float16).float()
        torch.testing.assert_close(as_half, want, rtol=0, atol=0, equal_nan=True)
        nan = [is_nan_code(c, fmt) for c in range(256)]
        assert [h & 0xFFFF == 0x7FFF for h in halves.tolist()] == nan  # the canonical NaN
    e4m3 = codes.view(torch.float8_e4m3fn).float()
    want_int = [0 if math.isnan(v) else int(v) for v in e4m3.tolist()]  # toward zero, NaN to 0
    assert i4.tolist() == want_int
    assert b4.tolist() == [int((c & 0x7F) != 0) for c in range(256)]


TYPES = r"""
#include <cuda_fp8.h>
// The constructors saturate; pairs and quads keep the first value in the low byte.
extern "C" __global__ void types(const float* x, unsigned char* one, unsigned short* two, unsigned int* four,
                                 float* back, int n) {
  const int i = threadIdx.x;
  if (4 * i + 3 >= n) return;
  const float4 v = make_float4(x[4 * i], x[4 * i + 1], x[4 * i + 2], x[4 * i + 3]);
  one[i] = __nv_fp8_e4m3(v.x).__x;
  two[i] = __nv_fp8x2_e5m2(make_float2(v.x, v.y)).__x;
  const __nv_fp8x4_e4m3 q(v);
  four[i] = q.__x;
  const float4 r = static_cast<float4>(q);
  back[4 * i] = r.x, back[4 * i + 1] = r.y, back[4 * i + 2] = r.z, back[4 * i + 3] = r.w;
  // Through __half and __nv_bfloat16: the same codes.
  const __nv_fp8_e4m3 h(__float2half(v.y)), b(__float2bfloat16(v.z));
  if (h.__x != __nv_fp8_e4m3(__half2float(__float2half(v.y))).__x) __trap();
  if (b.__x != __nv_fp8_e4m3(__bfloat162float(__float2bfloat16(v.z))).__x) __trap();
  if ((__nv_fp8_e4m3(1000).__x & 0x7F) != 0x7E || __nv_fp8_e5m2(1e9).__x != 0x7B) __trap();
}
"""


def test_the_types_saturate_and_pack_the_first_value_low():
    g = torch.Generator().manual_seed(3)
    x = torch.cat([torch.randn(60, generator=g) * 300, torch.tensor([1000.0, -1e6, 0.001, -0.0])])
    n = x.numel()
    one, two = torch.zeros(n // 4, dtype=torch.uint8), torch.zeros(n // 4, dtype=torch.int16)
    four, back = torch.zeros(n // 4, dtype=torch.int32), torch.zeros(n)
    st.emulate_cuda(TYPES, "types", 1, n // 4, x, one, two, four, back, n)
    xs = x.tolist()
    assert one.tolist() == [encode(xs[4 * i], "e4m3", True) for i in range(n // 4)]
    assert [t & 0xFFFF for t in two.tolist()] == [
        encode(xs[4 * i], "e5m2", True) | encode(xs[4 * i + 1], "e5m2", True) << 8 for i in range(n // 4)]
    packed = [sum(encode(xs[4 * i + k], "e4m3", True) << (8 * k) for k in range(4)) for i in range(n // 4)]
    assert [f & 0xFFFFFFFF for f in four.tolist()] == packed
    # Back from the quads: torch's e4m3 of the saturated inputs.
    torch.testing.assert_close(back, x.clamp(-448, 448).to(torch.float8_e4m3fn).float(), rtol=0, atol=0)


QUANTIZE = r"""
#include <cuda_fp8.h>
// y = fp8(x * scale), four values a thread through the quad type, read back as
// float through the single type: a float8 tensor reaches both.
extern "C" __global__ void quantize(const float4* x, __nv_fp8x4_e4m3* y, const __nv_fp8_e4m3* again, float* back,
                                    float scale, int quads) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= quads) return;
  const float4 v = x[i];
  y[i] = __nv_fp8x4_e4m3(make_float4(v.x * scale, v.y * scale, v.z * scale, v.w * scale));
  __syncthreads();
  for (int k = 0; k < 4; ++k) back[4 * i + k] = static_cast<float>(again[4 * i + k]);
}
"""


def test_a_float8_tensor_reaches_the_single_and_quad_types():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(512, generator=g) * 20
    y = torch.zeros(512, dtype=torch.float8_e4m3fn)
    back = torch.zeros(512)
    st.emulate_cuda(QUANTIZE, "quantize", 2, 64, x, y, y, back, 1.5, 128)
    want = (x * 1.5).clamp(-448, 448).to(torch.float8_e4m3fn)
    assert torch.equal(y.view(torch.uint8), want.view(torch.uint8))
    torch.testing.assert_close(back, want.float(), rtol=0, atol=0)


def test_without_the_header_a_float8_tensor_is_its_bits():
    source = r"""
    extern "C" __global__ void bits(const unsigned char* x, int* out) { out[threadIdx.x] = x[threadIdx.x]; }
    """
    x = torch.tensor([1.0, -2.0, 448.0], dtype=torch.float8_e4m3fn)
    out = torch.zeros(3, dtype=torch.int32)
    st.emulate_cuda(source, "bits", 1, 3, x, out)
    assert out.tolist() == x.view(torch.uint8).int().tolist()


@needs_nvrtc
@pytest.mark.parametrize("name,source", [("convert", CONVERT), ("types", TYPES), ("quantize", QUANTIZE)])
def test_every_kernel_here_is_valid_cuda(name, source):
    from sparsetir_torch import _C

    options = cuda_include_options("cuda_fp8.h", "cuda_fp16.h")
    if options is None:
        pytest.skip("no cuda_fp8.h here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    for arch in (80, 90):
        ptx = _C.nvrtc_compile(source, name + ".cu", arch, False, options)["ptx"].decode()
        assert ".entry " + name in ptx
