"""CUDA's arithmetic in a named rounding direction under st.emulate_cuda
(__fadd_rz, __fmul_ru, __fsqrt_rd, __fmaf_rz, their double forms, and the
conversions to float and double in each direction), and the round-to-nearest
forms beside them. Every result is checked bit for bit against the exact
value (Python's fractions; integer square roots for sqrt) rounded in the
named direction, on random operands of every magnitude and on the edges:
ties, overflow to the largest finite value or to infinity, results below the
smallest subnormal, exact zeros and their signs, infinities and NaN. The
kernels are also compiled by NVRTC, so the names and signatures are CUDA's."""
import math
import struct
from fractions import Fraction

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import needs_nvrtc

MODES = ["rn", "rz", "rd", "ru"]

FLOAT_OPS = ["add", "sub", "mul", "div", "rcp", "sqrt", "fma", "double2float", "int2float", "uint2float",
             "ll2float", "ull2float"]
DIRECTED32 = r"""
extern "C" __global__ void directed32(const float* a, const float* b, const float* c, const double* d,
                                      const long long* w, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = a[i], y = b[i], z = c[i];
  float* o = out + i * 48;
#define ROW(m)                                                                                               \
  *o++ = __fadd_##m(x, y); *o++ = __fsub_##m(x, y); *o++ = __fmul_##m(x, y); *o++ = __fdiv_##m(x, y);       \
  *o++ = __frcp_##m(x); *o++ = __fsqrt_##m(x); *o++ = __fmaf_##m(x, y, z); *o++ = __double2float_##m(d[i]); \
  *o++ = __int2float_##m((int)w[i]); *o++ = __uint2float_##m((unsigned int)w[i]);                           \
  *o++ = __ll2float_##m(w[i]); *o++ = __ull2float_##m((unsigned long long)w[i]);
  ROW(rn) ROW(rz) ROW(rd) ROW(ru)
}
"""

DOUBLE_OPS = ["add", "sub", "mul", "div", "rcp", "sqrt", "fma", "ll2double", "ull2double"]
DIRECTED64 = r"""
extern "C" __global__ void directed64(const double* a, const double* b, const double* c, const long long* w,
                                      double* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const double x = a[i], y = b[i], z = c[i];
  double* o = out + i * 36;
#define ROW(m)                                                                                          \
  *o++ = __dadd_##m(x, y); *o++ = __dsub_##m(x, y); *o++ = __dmul_##m(x, y); *o++ = __ddiv_##m(x, y); \
  *o++ = __drcp_##m(x); *o++ = __dsqrt_##m(x); *o++ = __fma_##m(x, y, z);                              \
  *o++ = __ll2double_##m(w[i]); *o++ = __ull2double_##m((unsigned long long)w[i]);
  ROW(rn) ROW(rz) ROW(rd) ROW(ru)
}
"""

# (numpy type, precision, smallest and largest exponent).
FORMATS = {"float32": (np.float32, 24, -126, 127), "float64": (np.float64, 53, -1022, 1023)}


class Sqrt:
    """The square root of a non-negative fraction, compared exactly."""

    def __init__(self, a: Fraction):
        self.a = a

    def sign_minus(self, t: Fraction) -> int:
        if t < 0:
            return 1
        d = self.a - t * t
        return (d > 0) - (d < 0)

    def approx(self) -> float:
        return math.sqrt(float(self.a))


def sign_minus(exact, t) -> int:
    """The sign of exact - t (t a float, infinite too, or a Fraction)."""
    if isinstance(t, float) and math.isinf(t):
        return -1 if t > 0 else 1
    if isinstance(exact, Sqrt):
        return exact.sign_minus(Fraction(t))
    d = exact - Fraction(t)
    return (d > 0) - (d < 0)


def to_float(x: Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def rounded(exact, fmt: str, mode: str):
    """`exact` (a non-zero Fraction or a Sqrt) rounded to the format in `mode`."""
    kind = FORMATS[fmt][0]
    with np.errstate(over="ignore"):  # past the format's range: infinity, one of the two neighbours too
        approx = kind(exact.approx() if isinstance(exact, Sqrt) else to_float(exact))  # one of the two neighbours
    side = sign_minus(exact, float(approx))
    if side == 0:
        return approx
    with np.errstate(over="ignore"):
        lo, hi = (approx, np.nextafter(approx, kind(np.inf))) if side > 0 else \
            (np.nextafter(approx, kind(-np.inf)), approx)
    assert sign_minus(exact, float(lo)) > 0 > sign_minus(exact, float(hi)), (exact, lo, hi)
    positive = sign_minus(exact, 0.0) > 0
    if mode == "rz":
        return lo if positive else hi
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if math.isinf(hi) or math.isinf(lo):  # past the largest finite value by half a step or more: infinity
        largest = np.finfo(kind).max
        edge = Fraction(float(largest)) + Fraction(2) ** (FORMATS[fmt][3] - FORMATS[fmt][1])
        beyond = sign_minus(exact, edge) if positive else -sign_minus(exact, -edge)
        finite, infinite = (lo, hi) if positive else (hi, lo)
        return infinite if beyond >= 0 else finite
    mid = sign_minus(exact, (Fraction(float(lo)) + Fraction(float(hi))) / 2)
    if mid != 0:
        return hi if mid > 0 else lo
    bits = lo.view(np.uint32 if kind is np.float32 else np.uint64)
    return lo if int(bits) % 2 == 0 else hi  # a tie: the even one


def zero_sum(x: float, y: float, mode: str) -> float:
    """IEEE 754's sign of an exact zero sum x + y."""
    both_neg = x == 0 and y == 0 and math.copysign(1, x) < 0 and math.copysign(1, y) < 0
    both_pos = x == 0 and y == 0 and math.copysign(1, x) > 0 and math.copysign(1, y) > 0
    if mode == "rd":
        return 0.0 if both_pos else -0.0
    return -0.0 if both_neg else 0.0


def exact_of(op, x, y, z, w):
    """The exact result as a Fraction or Sqrt, or a float where it is exact
    and special (an infinity, NaN, a zero); `w` is the integer converted."""
    if op.endswith("2float") or op.endswith("2double"):
        return Fraction(w)
    if op == "rcp":
        x, y, op = 1.0, x, "div"
    if op == "sub":
        y, op = -y, "add"
    finite = all(math.isfinite(v) for v in ((x, y, z) if op == "fma" else (x, y)))
    if op == "add":
        return x + y if not finite else (Fraction(x) + Fraction(y) if x + y != 0 or Fraction(x) != -Fraction(y)
                                         else None)
    if op == "mul":
        return x * y if not finite or x == 0 or y == 0 else Fraction(x) * Fraction(y)
    if op == "div":
        if not finite or y == 0 or x == 0:
            with np.errstate(all="ignore"):
                return float(np.float64(x) / np.float64(y))
        return Fraction(x) / Fraction(y)
    if op == "sqrt":
        return math.sqrt(x) if x == 0 or x == math.inf else (math.nan if x < 0 or math.isnan(x) else Sqrt(Fraction(x)))
    assert op == "fma"
    if not finite:
        if any(math.isnan(v) for v in (x, y, z)) or (math.isinf(x) and y == 0) or (math.isinf(y) and x == 0):
            return math.nan
        product = x * y if math.isinf(x) or math.isinf(y) else 0.0
        if math.isinf(product) and math.isinf(z) and product != z:
            return math.nan
        return product if math.isinf(product) else z
    return Fraction(x) * Fraction(y) + Fraction(z)


def expected_result(op, mode, fmt, x, y, z, w):
    kind = FORMATS[fmt][0]
    exact = exact_of(op, x, y, z, w)
    if op in ("add", "sub") and exact is None or isinstance(exact, Fraction) and exact == 0:
        if op in ("add", "sub"):
            return kind(zero_sum(x, -y if op == "sub" else y, mode))
        if op == "fma":
            return kind(zero_sum(math.copysign(0.0, x) * math.copysign(1.0, y) if x * y == 0 else x * y, z, mode))
        return kind(0.0)  # an integer 0
    if isinstance(exact, float):
        return kind(exact)  # a special value: the format has it
    return rounded(exact, fmt, mode)


def special_values(kind):
    info = np.finfo(kind)
    tiny = float(info.smallest_subnormal)
    big = float(info.max)
    return [0.0, -0.0, 1.0, -1.0, 3.0, 0.1, -0.1, tiny, -tiny, 2 * tiny, float(info.tiny), big, -big, big / 2,
            math.inf, -math.inf, math.nan, 2.0 ** (info.nmant + 1) + 1, 1.5, 2.5, 1.0 + float(info.eps)]


def operands(kind, n, seed):
    """Random operands of every magnitude, cancelling pairs and the special values."""
    rng = np.random.default_rng(seed)
    info = np.finfo(kind)
    lo, hi = int(info.minexp) - info.nmant, int(info.maxexp)
    def wide(size):
        return (rng.uniform(1, 2, size) * np.exp2(rng.integers(lo, hi, size).astype(np.float64))
                * rng.choice([-1.0, 1.0], size))
    with np.errstate(all="ignore"):
        x = wide(n).astype(kind)
        y = wide(n).astype(kind)
        z = wide(n).astype(kind)
        near = rng.uniform(0.5, 2, n).astype(kind)  # operands of one magnitude: sums that cancel, exact cases
        k = n // 4
        y[:k] = (-x[:k] * (1 + rng.integers(-4, 5, k) * info.eps)).astype(kind)
        y[k:2 * k] = near[k:2 * k]
        x[k:2 * k] = rng.uniform(0.5, 2, k).astype(kind)
        z[2 * k:3 * k] = -(x[2 * k:3 * k].astype(np.float64) * y[2 * k:3 * k]).astype(kind)  # fma cancels
    specials = special_values(kind)
    grid = [(a, b) for a in specials for b in specials]
    sx = np.array([a for a, _ in grid], dtype=kind)
    sy = np.array([b for _, b in grid], dtype=kind)
    sz = np.array(specials * len(specials), dtype=kind)[:len(grid)]
    return np.concatenate([x, sx]), np.concatenate([y, sy]), np.concatenate([z, sz])


def integers(n, seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(1, 64, n)
    w = [int(rng.integers(0, 2**63 - 1)) >> (63 - int(b)) for b in bits]
    w = [v if i % 2 else -v for i, v in enumerate(w)]
    edges = [0, 1, -1, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**31 - 1, -(2**31), 2**53 + 1, 2**53 + 3, 2**63 - 1,
             -(2**63), 2**62 + 2**38 + 1, -(2**62 + 2**38), 0x7FFFFF7FFFFFFFFF]
    return np.array((w + edges * 100)[:n], dtype=np.int64)


def same(got, want) -> bool:
    """Bit for bit, NaN equal to NaN."""
    if math.isnan(float(got)) or math.isnan(float(want)):
        return math.isnan(float(got)) and math.isnan(float(want))
    return got.tobytes() == want.tobytes()


def wrapped(w: int, op: str) -> int:
    if op.startswith("int2"):
        return int(np.int64(w).astype(np.int32))
    if op.startswith("uint2"):
        return int(np.int64(w).astype(np.uint32))
    if op.startswith("ull2"):
        return int(np.int64(w).astype(np.uint64))
    return int(w)


def check(fmt, ops, out, x, y, z, d, w):
    kind = FORMATS[fmt][0]
    failures = []
    for i in range(len(x)):
        for m, mode in enumerate(MODES):
            for k, op in enumerate(ops):
                got = out[i, m * len(ops) + k]
                if op == "double2float":
                    exact = float(d[i])
                    want = kind(exact) if not math.isfinite(exact) or exact == 0 else \
                        rounded(Fraction(exact), fmt, mode)
                else:
                    want = expected_result(op, mode, fmt, float(x[i]), float(y[i]), float(z[i]), wrapped(w[i], op))
                if not same(got, kind(want)):
                    failures.append(f"{op}_{mode}({x[i]!r}, {y[i]!r}, {z[i]!r}, {d[i]!r}, {w[i]}) = {got!r}, "
                                    f"expected {kind(want)!r}")
    assert not failures, f"{len(failures)} wrong, e.g.\n" + "\n".join(failures[:20])


def test_float_arithmetic_and_conversions_round_in_each_direction():
    x, y, z = operands(np.float32, 1200, seed=1)
    n = len(x)
    rng = np.random.default_rng(2)
    d = rng.uniform(1, 2, n) * np.exp2(rng.integers(-160, 140, n).astype(np.float64)) * rng.choice([-1.0, 1.0], n)
    d[:6] = [np.finfo(np.float32).max * (1 + 2.0**-25), -np.finfo(np.float32).max * (1 + 2.0**-24), 2.0**-150,
             -(2.0**-150) * 1.5, math.inf, math.nan]
    w = integers(n, seed=3)
    out = torch.zeros(n, 4 * len(FLOAT_OPS))
    st.emulate_cuda(DIRECTED32, "directed32", (n + 127) // 128, 128, torch.from_numpy(x), torch.from_numpy(y),
                    torch.from_numpy(z), torch.from_numpy(d), torch.from_numpy(w), out, n)
    check("float32", FLOAT_OPS, out.numpy(), x, y, z, d, w)


def test_double_arithmetic_and_conversions_round_in_each_direction():
    x, y, z = operands(np.float64, 1200, seed=4)
    n = len(x)
    w = integers(n, seed=5)
    out = torch.zeros(n, 4 * len(DOUBLE_OPS), dtype=torch.float64)
    st.emulate_cuda(DIRECTED64, "directed64", (n + 127) // 128, 128, torch.from_numpy(x), torch.from_numpy(y),
                    torch.from_numpy(z), torch.from_numpy(w), out, n)
    check("float64", DOUBLE_OPS, out.numpy(), x, y, z, np.zeros(n), w)


@pytest.mark.parametrize("fmt", ["float32", "float64"])
def test_the_reference_rounds_known_cases(fmt):
    """The rounding the tests compare with, on cases worked by hand."""
    kind, p = FORMATS[fmt][0], FORMATS[fmt][1]
    one_and_half_step = Fraction(1) + Fraction(3, 2**p)  # 1 + 1.5 ulp: between 1 + ulp and 1 + 2 ulp
    ulp = 2.0 ** (1 - p)
    assert rounded(one_and_half_step, fmt, "rn") == kind(1 + 2 * ulp)  # the tie goes to the even one
    assert rounded(one_and_half_step, fmt, "rz") == kind(1 + ulp)
    assert rounded(-one_and_half_step, fmt, "rz") == kind(-1 - ulp)
    assert rounded(-one_and_half_step, fmt, "rd") == kind(-1 - 2 * ulp)
    tiny = Fraction(float(np.finfo(kind).smallest_subnormal)) / 3
    assert rounded(tiny, fmt, "ru") == np.finfo(kind).smallest_subnormal
    assert struct.pack("<d", float(rounded(-tiny, fmt, "ru"))) == struct.pack("<d", -0.0)
    huge = Fraction(float(np.finfo(kind).max)) * 2
    assert rounded(huge, fmt, "rz") == np.finfo(kind).max and math.isinf(rounded(huge, fmt, "ru"))
    assert math.isinf(rounded(huge, fmt, "rn"))
    down, up = rounded(Sqrt(Fraction(2)), fmt, "rd"), rounded(Sqrt(Fraction(2)), fmt, "ru")
    assert up == np.nextafter(down, kind(np.inf)) and 2 * Fraction(float(down)) ** 2 < 4 < 2 * Fraction(float(up)) ** 2
    assert zero_sum(1.0, -1.0, "rd") == 0 and math.copysign(1, zero_sum(1.0, -1.0, "rd")) < 0
    assert math.copysign(1, zero_sum(1.0, -1.0, "rn")) > 0


@needs_nvrtc
@pytest.mark.parametrize("name,source", [("directed32", DIRECTED32), ("directed64", DIRECTED64)])
def test_the_kernels_are_valid_cuda(name, source):
    from sparsetir_torch import _C
    ptx = _C.nvrtc_compile(source, name + ".cu", 80, False)["ptx"].decode()
    assert f".entry {name}" in ptx
    for mode in ("rz", "rm", "rp"):  # PTX's names for toward zero, down and up
        assert f"add.{mode}.f" in ptx
