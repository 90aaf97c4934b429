"""st.emulate_cuda on hand-written kernels that include cuda_fp16.h / cuda_bf16.h:
__half, __half2, __nv_bfloat16 and __nv_bfloat162 with their conversions,
operators, arithmetic, comparisons, math functions, shuffles and atomics.
Every result is checked against the exact value rounded in Python (fractions),
so a double rounding in the emulator (through float, or double) shows up; each
kernel is also compiled by NVRTC against the toolkit's own headers where they
are installed, so none relies on what only the emulator accepts."""
import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import cuda_include_options, needs_nvrtc

# (significand bits with the hidden one, smallest normal exponent, largest exponent)
FORMATS = {"half": (11, -14, 15), "bfloat16": (8, -126, 127)}
TORCH_DTYPES = {"half": torch.float16, "bfloat16": torch.bfloat16}
TYPES = {"half": ("__half", "__half2"), "bfloat16": ("__nv_bfloat16", "__nv_bfloat162")}
MODES = ("rn", "rz", "rd", "ru")


def _round(x, fmt, mode="rn"):
    """The exact value x (a Fraction, or nan / inf as floats) rounded to fmt in
    the mode, as a Python float."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    if x == 0:
        return 0.0
    p, emin, emax = FORMATS[fmt]
    sign, a = (-1, -x) if x < 0 else (1, x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    ulp = Fraction(2) ** (max(e, emin) - p + 1)
    q, r = divmod(a, ulp)
    away = {"rn": 2 * r > ulp or (2 * r == ulp and q % 2 == 1), "rz": False,
            "ru": r > 0 and sign > 0, "rd": r > 0 and sign < 0}[mode]
    v = (q + away) * ulp
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if v > largest:
        to_infinity = {"rn": True, "rz": False, "ru": sign > 0, "rd": sign < 0}[mode]
        return sign * math.inf if to_infinity else sign * float(largest)
    return sign * float(v)


def _exact(v):
    return Fraction(v) if math.isfinite(v) else float(v)


def _values(fmt, n, seed):
    """n values of fmt: random magnitudes over its range, and the special ones."""
    g = torch.Generator().manual_seed(seed)
    low, high = (-26, 16) if fmt == "half" else (-135, 127)
    x = torch.randn(n, generator=g, dtype=torch.float64) * torch.exp2(torch.randint(low, high, (n,), generator=g))
    special = torch.tensor([0.0, -0.0, 1.0, -1.0, 65504.0, 2.0 ** -24, -(2.0 ** -24), 2.0 ** -14, math.inf,
                            -math.inf, math.nan, 3.0, 0.5])
    return torch.cat([special, x]).to(TORCH_DTYPES[fmt])


def _fma_midpoint_case(fmt):
    """a b lies exactly halfway between two values of fmt and c is the smallest
    positive one: a b + c rounds up, but to float first, then to fmt, down."""
    if fmt == "half":
        return 1 + 2.0 ** -5, 1 + 2.0 ** -6, 2.0 ** -24
    return 1 + 2.0 ** -4, 1 + 2.0 ** -4, 2.0 ** -133


def _same(got, want):
    """Value for value, NaN where NaN; the sign of zero is not compared."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
    assert not bad.any(), f"{bad.sum()} differ, first at {np.argmax(bad)}: {got[bad][:5]} != {want[bad][:5]}"


def _floats(t):
    return t.double().tolist()


def _header(fmt):
    return "#include <cuda_fp16.h>\n" if fmt == "half" else "#include <cuda_bf16.h>\n"


def _arithmetic_source(fmt):
    t, _ = TYPES[fmt]
    return _header(fmt) + rf'''
extern "C" __global__ void arithmetic(const {t}* a, const {t}* b, const {t}* c, {t}* out, int n) {{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  {t}* o = out + 8 * i;
  o[0] = __hadd(a[i], b[i]);
  o[1] = __hsub(a[i], b[i]);
  o[2] = __hmul(a[i], b[i]);
  o[3] = __hdiv(a[i], b[i]);
  o[4] = __hfma(a[i], b[i], c[i]);
  o[5] = a[i] * b[i] + c[i];  // the operators: two roundings
  o[6] = __hmax(a[i], b[i]);
  o[7] = __hmin_nan(a[i], b[i]);
}}
'''


def _arithmetic_reference(fmt, a, b, c):
    out = []
    for x, y, z in zip(_floats(a), _floats(b), _floats(c)):
        X, Y, Z = _exact(x), _exact(y), _exact(z)
        finite = all(math.isfinite(v) for v in (x, y, z))
        with np.errstate(all="ignore"):
            def approx(v):  # the non-finite cases: IEEE arithmetic in float64 is exact enough
                return float(np.float64(v))
            add = _round(X + Y, fmt) if finite else approx(np.float64(x) + y)
            sub = _round(X - Y, fmt) if finite else approx(np.float64(x) - y)
            mul = _round(X * Y, fmt) if finite else approx(np.float64(x) * y)
            if finite and y != 0:
                div = _round(X / Y, fmt)
            else:
                div = approx(np.float64(x) / y)
            fma = _round(X * Y + Z, fmt) if finite else approx(np.float64(x) * y + z)
            product = _round(X * Y, fmt) if finite else approx(np.float64(x) * y)
            if math.isfinite(product) and finite:
                two_roundings = _round(Fraction(product) + Z, fmt)
            else:
                two_roundings = approx(np.float64(product) + z)
        hmax = y if math.isnan(x) else x if math.isnan(y) else max(x, y)
        hmin_nan = math.nan if math.isnan(x) or math.isnan(y) else min(x, y)
        out.append([add, sub, mul, div, fma, two_roundings, hmax, hmin_nan])
    return out


@pytest.mark.parametrize("fmt", ["half", "bfloat16"])
def test_arithmetic_rounds_once_like_the_gpu(fmt):
    a, b, c = _values(fmt, 500, 1), _values(fmt, 500, 2), _values(fmt, 500, 3)
    fa, fb, fc = _fma_midpoint_case(fmt)
    a[-1], b[-1], c[-1] = fa, fb, fc
    n = a.numel()
    out = torch.zeros(n, 8, dtype=a.dtype)
    st.emulate_cuda(_arithmetic_source(fmt), "arithmetic", (n + 127) // 128, 128, a, b, c, out, n)
    _same(out.double().numpy(), _arithmetic_reference(fmt, a, b, c))
    # The midpoint case rounds up (through float it would round down).
    assert out[-1, 4].item() > _round(Fraction(fa) * Fraction(fb), fmt)


def _conversion_source(fmt):
    t, _ = TYPES[fmt]
    n = fmt
    return _header(fmt) + rf'''
extern "C" __global__ void conversions(const float* f, const double* d, const long long* q, {t}* out,
                                       int* integers, int n) {{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  {t}* o = out + 11 * i;
  o[0] = __float2{n}_rn(f[i]);
  o[1] = __float2{n}_rz(f[i]);
  o[2] = __float2{n}_rd(f[i]);
  o[3] = __float2{n}_ru(f[i]);
  o[4] = __double2{n}(d[i]);
  o[5] = {t}(d[i]);
  o[6] = __ll2{n}_rn(q[i]);
  o[7] = __ll2{n}_rz(q[i]);
  o[8] = __ll2{n}_rd(q[i]);
  o[9] = __ll2{n}_ru(q[i]);
  o[10] = __int2{n}_rn((int)q[i]);
  const {t} h = o[0];
  int* k = integers + 6 * i;
  k[0] = __{n}2int_rn(h);
  k[1] = __{n}2int_rz(h);
  k[2] = __{n}2int_rd(h);
  k[3] = __{n}2int_ru(h);
  k[4] = __{n}2short_rn(h);
  k[5] = (int)h;  // toward zero
}}
'''


def _to_integer(v, rounding, lo, hi):
    if math.isnan(v):
        return 0
    if math.isinf(v):
        return lo if v < 0 else hi
    r = {"rn": round, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}[rounding](v)
    return min(max(r, lo), hi)


@pytest.mark.parametrize("fmt", ["half", "bfloat16"])
def test_conversions_round_in_every_mode_and_saturate(fmt):
    g = torch.Generator().manual_seed(4)
    low, high = (-30, 18) if fmt == "half" else (-140, 127)
    f = (torch.randn(400, generator=g, dtype=torch.float64) *
         torch.exp2(torch.randint(low, high, (400,), generator=g))).float()
    f[:6] = torch.tensor([math.nan, math.inf, -math.inf, 65520.0, -65519.0, 1e-30])
    # Doubles just beside a midpoint of the format: through float they land on it.
    p = FORMATS[fmt][0]
    mid = 1 + 2.0 ** -p
    d = f.double() * (1 + torch.randn(400, generator=g, dtype=torch.float64) * 2 ** -40)
    d[:4] = torch.tensor([mid + 2.0 ** -40, -(mid + 2.0 ** -40), mid - 2.0 ** -40, 3 * 2.0 ** -200])
    # 64-bit integers beside a midpoint where a double cannot tell (above 2^53).
    q = torch.randint(-2 ** 62, 2 ** 62, (400,), generator=g, dtype=torch.int64)
    q[:3] = torch.tensor([2 ** 62 + 2 ** (62 - p) + 1, -(2 ** 62 + 2 ** (62 - p) + 1), 70000])
    q[3:8] = torch.tensor([2 ** 31 - 1, -2 ** 31, 65519, 65520, -3])
    n = f.numel()
    out = torch.zeros(n, 11, dtype=TORCH_DTYPES[fmt])
    integers = torch.zeros(n, 6, dtype=torch.int32)
    st.emulate_cuda(_conversion_source(fmt), "conversions", (n + 127) // 128, 128, f, d, q, out, integers, n)
    want = []
    for x, y, z in zip(f.double().tolist(), d.tolist(), q.tolist()):
        row = [_round(_exact(x), fmt, mode) for mode in MODES]
        row += [_round(_exact(y), fmt)] * 2
        row += [_round(Fraction(z), fmt, mode) for mode in MODES]
        z32 = (z + 2 ** 31) % 2 ** 32 - 2 ** 31
        row.append(_round(Fraction(z32), fmt))
        want.append(row)
    _same(out.double().numpy(), want)
    int_max, int_min = 2 ** 31 - 1, -2 ** 31
    want_integers = []
    for v in out[:, 0].double().tolist():
        row = [_to_integer(v, r, int_min, int_max) for r in MODES]
        row += [_to_integer(v, "rn", -2 ** 15, 2 ** 15 - 1), _to_integer(v, "rz", int_min, int_max)]
        want_integers.append(row)
    assert integers.tolist() == want_integers


def _pairs_source(fmt):
    t, t2 = TYPES[fmt]
    n, n2 = fmt, fmt + "2"
    return _header(fmt) + rf'''
extern "C" __global__ void pairs(const {t2}* a, const {t2}* b, {t2}* out, float* floats, unsigned* flags) {{
  const int i = threadIdx.x;
  const {t2} x = a[i], y = b[i];
  {t2}* o = out + 9 * i;
  o[0] = x + y;
  o[1] = __hmul2(x, y);
  o[2] = __hfma2(x, y, __{n}2{n2}(__float2{n}(0.25f)));
  o[3] = __lowhigh2highlow(x);
  o[4] = __halves2{n2}(__high2{n}(x), __low2{n}(y));
  o[5] = __hlt2(x, y);
  o[6] = __hmax2(x, -y);
  o[7] = make_{n2}({t}(2.0f), {t}(-3)) * __floats2{n2}_rn(0.5f, 1.0f / 3.0f);
  {t2} counted = x;
  o[8] = counted++;
  o[8] -= ++counted;  // x - (x + 2), rounded at each step
  const float2 f = __{n2}2float2(x);
  floats[2 * i] = f.x;
  floats[2 * i + 1] = __high2float(y);
  flags[i] = (x == y) | (x < y) << 1 | __hbgt2(x, y) << 2 | (__hisnan(__low2{n}(x)) ? 8 : 0) |
             (__hisinf(__high2{n}(y)) + 1) << 4;
}}
'''


@pytest.mark.parametrize("fmt", ["half", "bfloat16"])
def test_pairs_operate_on_each_half(fmt):
    dtype = TORCH_DTYPES[fmt]
    a, b = _values(fmt, 51, 5)[:64].view(32, 2), _values(fmt, 51, 6)[:64].view(32, 2)
    a[3], b[3] = torch.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0])  # equal pairs
    b[4, 1] = -math.inf
    out = torch.zeros(32, 9, 2, dtype=dtype)
    floats = torch.zeros(32, 2)
    flags = torch.zeros(32, dtype=torch.int32)
    st.emulate_cuda(_pairs_source(fmt), "pairs", 1, 32, a, b, out, floats, flags)
    want = []
    for (x0, x1), (y0, y1) in zip(a.double().tolist(), b.double().tolist()):
        def fma(x, y):
            return _round(_exact(x) * _exact(y) + Fraction(1, 4), fmt) if math.isfinite(x * y) else x * y + 0.25

        def add(x, y):
            return _round(_exact(x) + _exact(y), fmt) if math.isfinite(x) and math.isfinite(y) else x + y

        def mul(x, y):
            return _round(_exact(x) * _exact(y), fmt) if math.isfinite(x) and math.isfinite(y) else x * y

        def sub(x, y):
            return _round(_exact(x) - _exact(y), fmt) if math.isfinite(x) and math.isfinite(y) else x - y

        def hmax(x, y):
            return y if math.isnan(x) else x if math.isnan(y) else max(x, y)
        with np.errstate(all="ignore"):
            want.append([[add(x0, y0), add(x1, y1)], [mul(x0, y0), mul(x1, y1)],
                         [fma(x0, y0), fma(x1, y1)], [x1, x0], [x1, y0],
                         [float(x0 < y0), float(x1 < y1)], [hmax(x0, -y0), hmax(x1, -y1)],
                         [1.0, _round(-3 * Fraction(_round(Fraction(float(np.float32(1 / 3))), fmt)), fmt)],
                         [sub(x0, add(add(x0, 1.0), 1.0)), sub(x1, add(add(x1, 1.0), 1.0))]])
    _same(out.double().numpy(), want)
    _same(floats.double().numpy(), [[x0, y1] for (x0, _), (_, y1) in zip(a.double().tolist(), b.double().tolist())])
    for i, ((x0, x1), (y0, y1)) in enumerate(zip(a.double().tolist(), b.double().tolist())):
        want_flags = (int(x0 == y0 and x1 == y1) | int(x0 < y0 and x1 < y1) << 1 | int(x0 > y0 and x1 > y1) << 2 |
                      (8 if math.isnan(x0) else 0) | ((0 if not math.isinf(y1) else (1 if y1 > 0 else -1)) + 1) << 4)
        assert flags[i].item() == want_flags, (i, x0, x1, y0, y1)


def _warp_source(fmt):
    t, t2 = TYPES[fmt]
    return _header(fmt) + rf'''
extern "C" __global__ void warp(const {t2}* x, {t2}* sums, {t}* counts, {t2}* pair_counts, {t}* shifted) {{
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  {t2} v = x[i];
  for (int d = 16; d > 0; d /= 2) v = __hadd2(v, __shfl_xor_sync(0xffffffffu, v, d));
  if (threadIdx.x % 32 == 0) sums[i / 32] = v;
  shifted[i] = __shfl_down_sync(0xffffffffu, __low2{fmt}(x[i]), 1);
  atomicAdd(&counts[blockIdx.x % 2], {t}(1.0f));
  atomicAdd(&pair_counts[0], {t2}({t}(1.0f), {t}(0.5f)));
}}
'''


@pytest.mark.parametrize("order", ["forward", "check"])
@pytest.mark.parametrize("fmt", ["half", "bfloat16"])
def test_shuffles_and_atomics_move_16_bit_values(fmt, order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    dtype = TORCH_DTYPES[fmt]
    # Small integers: every partial sum is exact, so any order of the sums gives the same bits.
    x = torch.randint(-4, 5, (128, 2)).to(dtype)
    sums = torch.zeros(4, 2, dtype=dtype)
    counts = torch.zeros(2, dtype=dtype)
    pair_counts = torch.zeros(1, 2, dtype=dtype)
    shifted = torch.zeros(128, dtype=dtype)
    st.emulate_cuda(_warp_source(fmt), "warp", 2, 64, x, sums, counts, pair_counts, shifted)
    torch.testing.assert_close(sums, x.view(4, 32, 2).double().sum(1).to(dtype), rtol=0, atol=0)
    assert counts.tolist() == [64.0, 64.0] and pair_counts.tolist() == [[128.0, 64.0]]
    lanes = x[:, 0].view(4, 32)
    torch.testing.assert_close(shifted.view(4, 32), torch.cat([lanes[:, 1:], lanes[:, 31:]], 1), rtol=0, atol=0)


def _math_source(fmt):
    t, _ = TYPES[fmt]
    names = ["hexp", "hexp2", "hlog", "hlog2", "hsqrt", "hrsqrt", "hrcp", "hsin", "hcos", "htanh", "hfloor",
             "hceil", "htrunc", "hrint"]
    body = "\n".join(f"  out[{len(names)} * i + {k}] = {name}(x[i]);" for k, name in enumerate(names))
    return names, _header(fmt) + rf'''
extern "C" __global__ void functions(const {t}* x, {t}* out) {{
  const int i = threadIdx.x;
{body}
}}
'''


@pytest.mark.parametrize("fmt", ["half", "bfloat16"])
def test_math_functions_are_within_one_unit_in_the_last_place(fmt):
    names, source = _math_source(fmt)
    dtype = TORCH_DTYPES[fmt]
    x = torch.cat([torch.arange(-60, 61) / 10, torch.tensor([0.0, 1.0, 2.5, -2.5, 3.5])]).to(dtype)
    out = torch.zeros(x.numel(), len(names), dtype=dtype)
    st.emulate_cuda(source, "functions", 1, x.numel(), x, out)
    v = x.double()
    with np.errstate(all="ignore"):
        want = torch.stack([torch.exp(v), torch.exp2(v), torch.log(v), torch.log2(v), torch.sqrt(v), torch.rsqrt(v),
                            1 / v, torch.sin(v), torch.cos(v), torch.tanh(v), torch.floor(v), torch.ceil(v),
                            torch.trunc(v), torch.round(v)], 1)
    got = out.double()
    # One unit in the last place of the format at each reference value (NaN where both are; the
    # reference's own rounding where it is out of the format's range).
    p, emin, _ = FORMATS[fmt]
    ulp = torch.exp2(torch.floor(torch.log2(want.abs().clamp_min(2.0 ** emin))) - (p - 1))
    close = ((got - want).abs() <= ulp) | (got == want.to(dtype).double()) | (got.isnan() & want.isnan())
    assert close.all(), [(names[j], x[i].item(), got[i, j].item(), want[i, j].item())
                         for i, j in close.logical_not().nonzero().tolist()[:5]]
    exact = [names.index(n) for n in ("hfloor", "hceil", "htrunc", "hrint")]
    torch.testing.assert_close(got[:, exact], want[:, exact].to(dtype).double(), rtol=0, atol=0)


COMPARISONS = r'''
#include <cuda_fp16.h>
extern "C" __global__ void comparisons(const __half* a, const __half* b, int* out) {
  const int i = threadIdx.x;
  const __half x = a[i], y = b[i];
  out[i] = __heq(x, y) | __hne(x, y) << 1 | __hlt(x, y) << 2 | __hle(x, y) << 3 | __hgt(x, y) << 4 |
           __hge(x, y) << 5 | __hequ(x, y) << 6 | __hneu(x, y) << 7 | __hltu(x, y) << 8 | __hgeu(x, y) << 9 |
           (x != y) << 10 | (x <= y) << 11 | (bool)x << 12 | __hisnan(x) << 13;
}
'''


def test_comparisons_ordered_and_unordered():
    values = [0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, 2.0 ** -24]
    a = torch.tensor([x for x in values for _ in values], dtype=torch.float16)
    b = torch.tensor([y for _ in values for y in values], dtype=torch.float16)
    out = torch.zeros(a.numel(), dtype=torch.int32)
    st.emulate_cuda(COMPARISONS, "comparisons", 1, a.numel(), a, b, out)
    for i, (x, y) in enumerate(zip(a.double().tolist(), b.double().tolist())):
        unordered = math.isnan(x) or math.isnan(y)
        bits = [x == y, x < y or x > y, x < y, x <= y, x > y, x >= y, x == y or unordered, x != y,
                x < y or unordered, x >= y or unordered, x != y, x <= y, x != 0, math.isnan(x)]
        assert out[i].item() == sum(int(bit) << k for k, bit in enumerate(bits)), (x, y)


RAW_BITS = r'''
#include <cuda_fp16.h>
extern "C" __global__ void raw_bits(const __half2* pairs, const unsigned short* bits, __half* out,
                                    unsigned short* out_bits) {
  const int i = threadIdx.x;
  out[i] = __hadd(__ushort_as_half(bits[i]), __low2half(pairs[i]));
  out_bits[i] = __half_as_ushort(__float2half(1.0f)) ^ __half_as_ushort(__hneg(__habs(out[i])));
}
'''


def test_a_float16_tensor_reaches_its_type_its_pairs_or_its_bits():
    x = torch.randn(64).half()
    bits = torch.randn(32).half()
    out = torch.zeros(32, dtype=torch.float16)
    out_bits = torch.zeros(32, dtype=torch.float16)
    st.emulate_cuda(RAW_BITS, "raw_bits", 1, 32, x, bits, out, out_bits)
    want = (x.view(32, 2)[:, 0].double() + bits.double()).half()
    torch.testing.assert_close(out, want, rtol=0, atol=0)
    want_bits = want.abs().neg().view(torch.int16).numpy().view(np.uint16) ^ 0x3C00
    assert out_bits.view(torch.int16).numpy().view(np.uint16).tolist() == want_bits.tolist()


def test_a_16_bit_tensor_does_not_reach_the_other_16_bit_type():
    to_bf16 = '#include <cuda_bf16.h>\nextern "C" __global__ void k(__nv_bfloat16* x) { x[0] = 1.0f; }\n'
    with pytest.raises(st.CompileError, match=r"sparsetir_tensor_pointer<__half>.*__nv_bfloat16\*"):
        st.emulate_cuda(to_bf16, "k", 1, 1, torch.zeros(2, dtype=torch.float16))
    to_half = '#include <cuda_fp16.h>\nextern "C" __global__ void k(__half* x) { x[0] = 1.0f; }\n'
    with pytest.raises(st.CompileError, match=r"sparsetir_tensor_pointer<__nv_bfloat16>.*__half\*"):
        st.emulate_cuda(to_half, "k", 1, 1, torch.zeros(2, dtype=torch.bfloat16))


def test_a_mixed_float16_expression_is_ambiguous_as_on_the_gpu():
    source = '#include <cuda_fp16.h>\nextern "C" __global__ void k(__half* x) { x[0] = x[0] + 1.0f; }\n'
    with pytest.raises(st.CompileError, match=r"kernel.cu:2.*ambiguous"):
        st.emulate_cuda(source, "k", 1, 1, torch.zeros(2, dtype=torch.float16))


NVRTC_SOURCES = {f"{name}_{fmt}": make(fmt) for fmt in FORMATS
                 for name, make in [("arithmetic", _arithmetic_source), ("conversions", _conversion_source),
                                    ("pairs", _pairs_source), ("warp", _warp_source),
                                    ("math", lambda f: _math_source(f)[1])]}
NVRTC_SOURCES.update(comparisons=COMPARISONS, raw_bits=RAW_BITS)


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(NVRTC_SOURCES))
def test_every_kernel_here_is_valid_cuda(name):
    from sparsetir_torch import _C
    options = cuda_include_options("cuda_fp16.h", "cuda_bf16.h")
    if options is None:
        pytest.skip("no cuda_fp16.h here (neither the nvidia-cuda-runtime wheel nor a CUDA toolkit)")
    ptx = _C.nvrtc_compile(NVRTC_SOURCES[name], name + ".cu", 80, False, options)["ptx"].decode()
    assert ".entry" in ptx


CONSTANTS = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void constants(unsigned short* out) {
  const __half h[] = {CUDART_INF_FP16, CUDART_NAN_FP16, CUDART_MIN_DENORM_FP16, CUDART_MAX_NORMAL_FP16,
                      CUDART_NEG_ZERO_FP16, CUDART_ZERO_FP16, CUDART_ONE_FP16};
  const __nv_bfloat16 b[] = {CUDART_INF_BF16, CUDART_NAN_BF16, CUDART_MIN_DENORM_BF16, CUDART_MAX_NORMAL_BF16,
                             CUDART_NEG_ZERO_BF16, CUDART_ZERO_BF16, CUDART_ONE_BF16};
  for (int i = 0; i < 7; ++i) out[i] = __half_as_ushort(h[i]), out[7 + i] = __bfloat16_as_ushort(b[i]);
}
'''


def test_the_constants_of_the_headers():
    # nvcc's headers define them; NVRTC's do not (not in the NVRTC check).
    out = torch.zeros(14, dtype=torch.int32).to(torch.uint16)
    st.emulate_cuda(CONSTANTS, "constants", 1, 1, out)
    values = out.to(torch.int32).tolist()
    half = torch.tensor(values[:7], dtype=torch.int32).to(torch.int16).view(torch.float16).double().tolist()
    bf16 = torch.tensor(values[7:], dtype=torch.int32).to(torch.int16).view(torch.bfloat16).double().tolist()
    for got in (half, bf16):
        assert got[0] == math.inf and math.isnan(got[1]) and got[4:] == [0.0, 0.0, 1.0]
        assert math.copysign(1, got[4]) == -1
    assert half[2:4] == [2.0 ** -24, 65504.0] and bf16[2:4] == [2.0 ** -133, float(torch.finfo(torch.bfloat16).max)]
