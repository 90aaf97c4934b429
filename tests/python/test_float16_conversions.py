"""The CPU prelude's float16 / bfloat16 conversions, at every level: the
hardware ones (F16C on x86-64-v3 and up) and the portable ones (x86-64
baseline) both round to nearest even, exactly like NumPy's, over every
float16 value and a large sample of float32 values (specials, subnormals,
halfway cases)."""
import ctypes
import re
import subprocess

import numpy as np
import pytest

from sparsetir_torch import _C
from sparsetir_torch.recipes import runnable_levels

HARNESS = r"""
extern "C" void h2f(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = sparsetir_half_to_float(in[i]);
}
extern "C" void f2h(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = sparsetir_float_to_half(in[i]);
}
extern "C" void f2bf(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = sparsetir_float_to_bf16(in[i]);
}
extern "C" int hardware_half() {
#ifdef SPARSETIR_HW_HALF
  return 1;
#else
  return 0;
#endif
}
"""


def prelude(isa: str) -> str:
    source = _C.op_kernel_source("csrmm", "csrmm", "float16", "int32", {"feat_size": 8}, f"cpu:{isa}")
    return source[:source.index("template <typename F>")]


def build(isa: str, tmp_path):
    flags = _C.cpu_target(isa)["compiler_flags"]
    src, lib = tmp_path / f"conv_{isa}.cc", tmp_path / f"conv_{isa}.so"
    src.write_text(prelude(isa) + HARNESS)
    subprocess.run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", *flags, str(src), "-o", str(lib)], check=True,
                   capture_output=True, timeout=300)
    return ctypes.CDLL(str(lib))


def floats_to_test() -> np.ndarray:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32)
    # every float16 value and the midpoints between neighbours (the rounding ties), as float32
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    up = np.nextafter(halves.astype(np.float16), np.float16(np.inf)).astype(np.float32)
    ties = ((halves.astype(np.float64) + up.astype(np.float64)) / 2).astype(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 65504.0, 65520.0, 65519.99, 6e-8, 2.98e-8, 1e-40], np.float32)
    out = np.concatenate([bits.view(np.float32), halves, ties, special])
    return out[np.isfinite(out) | np.isinf(out)]  # NaN payloads are not compared


@pytest.mark.parametrize("isa", runnable_levels())
def test_float16_conversions_round_like_numpy(isa, tmp_path):
    lib = build(isa, tmp_path)
    expect_hw = isa in ("avx2", "avx512")
    assert lib.hardware_half() == int(expect_hw)
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    out = np.empty(halves.size, np.float32)
    lib.h2f(halves.ctypes.data_as(ctypes.c_void_p), out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(halves.size))
    ref = halves.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(out), nan)
    assert np.array_equal(out[~nan].view(np.uint32), ref[~nan].view(np.uint32))

    floats = floats_to_test()
    got = np.empty(floats.size, np.uint16)
    lib.f2h(floats.ctypes.data_as(ctypes.c_void_p), got.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(floats.size))
    with np.errstate(over="ignore"):
        want = floats.astype(np.float16).view(np.uint16)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(floats[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]

    nan_in = np.array([np.nan, -np.nan], np.float32)
    nan_out = np.empty(2, np.uint16)
    lib.f2h(nan_in.ctypes.data_as(ctypes.c_void_p), nan_out.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(2))
    assert np.all(np.isnan(nan_out.view(np.float16)))


VECTOR_HARNESS = r"""
typedef float sparsetir_test_f4 __attribute__((vector_size(16)));
typedef float sparsetir_test_f8 __attribute__((vector_size(32)));
typedef float sparsetir_test_f16 __attribute__((vector_size(64)));
extern "C" void bf2f(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = sparsetir_bf16_to_float(in[i]);
}
template <typename V> static void vloads(const uint16_t* in, float* half, float* bf16, int64_t n) {
  for (int64_t i = 0; i < n; i += sizeof(V) / 4) {
    V h = sparsetir_vload_half<V>(in + i), b = sparsetir_vload_bf16<V>(in + i);
    memcpy(half + i, &h, sizeof(V));
    memcpy(bf16 + i, &b, sizeof(V));
  }
}
template <typename V> static void vstores(const float* in, uint16_t* half, uint16_t* bf16, int64_t n) {
  for (int64_t i = 0; i < n; i += sizeof(V) / 4) {
    V f;
    memcpy(&f, in + i, sizeof(V));
    sparsetir_vstore_half<V>(half + i, f);
    sparsetir_vstore_bf16<V>(bf16 + i, f);
  }
}
#define LANES(N)                                                                             \
  extern "C" void vloads##N(const uint16_t* in, float* h, float* b, int64_t n) {             \
    vloads<sparsetir_test_f##N>(in, h, b, n);                                                \
  }                                                                                          \
  extern "C" void vstores##N(const float* in, uint16_t* h, uint16_t* b, int64_t n) {         \
    vstores<sparsetir_test_f##N>(in, h, b, n);                                               \
  }
LANES(4)
LANES(8)
LANES(16)
"""


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.c_void_p)


@pytest.mark.parametrize("lanes", (4, 8, 16))
@pytest.mark.parametrize("isa", runnable_levels())
def test_vector_conversions_give_the_scalar_bits(isa, lanes, tmp_path):
    """Kernels load float16 / bfloat16 operands and store 16-bit outputs a
    vector at a time (the prelude's sparsetir_vload_* / sparsetir_vstore_*):
    every lane must hold the bits the scalar conversion gives, NaNs
    included, for every 16-bit pattern and the float32 sample above."""
    flags = _C.cpu_target(isa)["compiler_flags"]
    src, so = tmp_path / f"vconv_{isa}.cc", tmp_path / f"vconv_{isa}.so"
    src.write_text(prelude(isa) + HARNESS + VECTOR_HARNESS)
    subprocess.run(["g++", "-std=c++17", "-O2", "-shared", "-fPIC", "-w", *flags, str(src), "-o", str(so)],
                   check=True, capture_output=True, timeout=300)
    lib = ctypes.CDLL(str(so))
    n64 = ctypes.c_int64

    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    half, bf16 = np.empty(patterns.size, np.float32), np.empty(patterns.size, np.float32)
    getattr(lib, f"vloads{lanes}")(_ptr(patterns), _ptr(half), _ptr(bf16), n64(patterns.size))
    want_half, want_bf16 = np.empty_like(half), np.empty_like(bf16)
    lib.h2f(_ptr(patterns), _ptr(want_half), n64(patterns.size))
    lib.bf2f(_ptr(patterns), _ptr(want_bf16), n64(patterns.size))
    assert np.array_equal(half.view(np.uint32), want_half.view(np.uint32))
    assert np.array_equal(bf16.view(np.uint32), want_bf16.view(np.uint32))

    payloads = np.array([0x7fc00000, 0xffc00001, 0x7f800001, 0x7fbfffff], np.uint32).view(np.float32)
    floats = np.concatenate([floats_to_test(), payloads])
    floats = np.concatenate([floats, np.zeros(-floats.size % lanes, np.float32)])
    got_half, got_bf16 = np.empty(floats.size, np.uint16), np.empty(floats.size, np.uint16)
    getattr(lib, f"vstores{lanes}")(_ptr(floats), _ptr(got_half), _ptr(got_bf16), n64(floats.size))
    want_half, want_bf16 = np.empty_like(got_half), np.empty_like(got_bf16)
    lib.f2h(_ptr(floats), _ptr(want_half), n64(floats.size))
    lib.f2bf(_ptr(floats), _ptr(want_bf16), n64(floats.size))
    assert np.array_equal(got_half, want_half)
    assert np.array_equal(got_bf16, want_bf16)
