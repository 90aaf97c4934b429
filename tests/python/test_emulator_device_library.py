"""st.emulate_cuda on hand-written kernels that use CUDA's device library: vector
types and dim3, min / max, the integer and floating-point intrinsics, cached
loads, the atomics, `extern __shared__` arrays, __constant__ data, the warp's
match / reduce / activemask, assert and __trap. Each result is checked against
Python's integers, numpy or torch in float64; every kernel here is also
compiled by NVRTC (where it loads), so none relies on what only the emulator
accepts."""
import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import needs_nvrtc

VECTORS = r'''
extern "C" __global__ void vectors(const float4* __restrict__ x, float2* y, int* layout, long long* dims) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 v = __ldg(&x[t]);
  y[t] = make_float2(v.x + v.w, __ldcs(&x[t]).y * 2.0f);
  if (t == 0) {
    const int sizes[] = {(int)sizeof(char3), (int)alignof(char3), (int)sizeof(short2), (int)alignof(short2),
                         (int)sizeof(int3), (int)alignof(int3), (int)sizeof(float4), (int)alignof(float4),
                         (int)sizeof(double2), (int)alignof(double2), (int)sizeof(longlong2), (int)alignof(longlong2)};
    for (int i = 0; i < 12; ++i) layout[i] = sizes[i];
    const dim3 grid = gridDim, block = blockDim, unit;
    dims[0] = grid.x, dims[1] = block.x, dims[2] = block.y, dims[3] = unit.x * unit.y * unit.z;
  }
}
'''

# CUDA's vector_types.h: sizeof and alignof of char3, short2, int3, float4, double2, longlong2.
CUDA_VECTOR_LAYOUT = [3, 1, 4, 4, 12, 4, 16, 16, 16, 16, 16, 16]


def test_vector_types_dim3_and_cached_loads():
    x = torch.randn(64, 4)
    y = torch.zeros(64, 2)
    layout = torch.zeros(12, dtype=torch.int32)
    dims = torch.zeros(4, dtype=torch.int64)
    st.emulate_cuda(VECTORS, "vectors", 2, 32, x, y, layout, dims)
    torch.testing.assert_close(y, torch.stack([x[:, 0] + x[:, 3], 2 * x[:, 1]], 1))
    assert layout.tolist() == CUDA_VECTOR_LAYOUT
    assert dims.tolist() == [2, 32, 1, 1]


INTEGERS = r'''
extern "C" __global__ void integers(const int* a, const int* b, long long* out) {
  const int t = threadIdx.x;
  const int x = a[t], y = b[t];
  const unsigned ux = (unsigned)x, uy = (unsigned)y;
  const long long lx = (long long)x * 0x10001LL, ly = (long long)y * -0x30003LL;
  long long* o = out + 18 * t;
  o[0] = __popc(ux);
  o[1] = __clz(x);
  o[2] = __ffs(x);
  o[3] = __brev(ux);
  o[4] = __mulhi(x, y);
  o[5] = __umulhi(ux, uy);
  o[6] = __mul24(x, y);
  o[7] = __umul24(ux, uy);
  o[8] = __byte_perm(ux, uy, 0x7351u);
  o[9] = __funnelshift_l(ux, uy, (unsigned)t);
  o[10] = __funnelshift_r(ux, uy, (unsigned)t);
  o[11] = __popcll((unsigned long long)lx);
  o[12] = __clzll(lx);
  o[13] = __ffsll(lx);
  o[14] = (long long)__brevll((unsigned long long)lx);
  o[15] = __mul64hi(lx, ly);
  o[16] = (long long)__umul64hi((unsigned long long)lx, (unsigned long long)ly);
  o[17] = min(x, uy) + (long long)max(x, y) * 3 + min(lx, ly);
}
'''


def _u32(v):
    return v & 0xFFFFFFFF


def _s32(v):
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v >> 31 else v


def _s64(v):
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def _brev(v, bits):
    return int(format(v & ((1 << bits) - 1), f"0{bits}b")[::-1], 2)


def _clz(v, bits):
    v &= (1 << bits) - 1
    return bits - v.bit_length()


def _ffs(v, bits):
    v &= (1 << bits) - 1
    return (v & -v).bit_length()


def _integer_reference(x, y, t):
    ux, uy = _u32(x), _u32(y)
    lx, ly = x * 0x10001, y * -0x30003
    ulx, uly = lx & ((1 << 64) - 1), ly & ((1 << 64) - 1)
    s24 = lambda v: _s32(v << 8) >> 8  # noqa: E731 (the low 24 bits, sign-extended)
    both = (uy << 32) | ux
    perm = 0
    for i, sel in enumerate([0x1, 0x5, 0x3, 0x7]):
        perm |= ((both >> (8 * sel)) & 0xFF) << (8 * i)
    return [
        bin(ux).count("1"), _clz(x, 32), _ffs(x, 32), _brev(ux, 32), (x * y) >> 32, (ux * uy) >> 32,
        _s32(s24(x) * s24(y)), _u32((ux & 0xFFFFFF) * (uy & 0xFFFFFF)), perm,
        _u32((both << (t & 31)) >> 32), _u32(both >> (t & 31)),
        bin(ulx).count("1"), _clz(lx, 64), _ffs(lx, 64), _s64(_brev(ulx, 64)), (lx * ly) >> 64,
        _s64((ulx * uly) >> 64),
        min(ux, uy) + max(x, y) * 3 + min(lx, ly),
    ]


def test_integer_intrinsics_match_python_integers():
    edge = [0, 1, -1, 2**31 - 1, -2**31, 0x00FF00FF, -12345, 7]
    rng = np.random.default_rng(0)
    a = edge + rng.integers(-2**31, 2**31, 24).tolist()
    b = list(reversed(edge)) + rng.integers(-2**31, 2**31, 24).tolist()
    out = torch.zeros(32 * 18, dtype=torch.int64)
    st.emulate_cuda(INTEGERS, "integers", 1, 32, torch.tensor(a, dtype=torch.int32),
                    torch.tensor(b, dtype=torch.int32), out)
    got = out.view(32, 18).tolist()
    for t in range(32):
        assert got[t] == _integer_reference(a[t], b[t], t), (t, a[t], b[t])


FLOATS = r'''
extern "C" __global__ void floats(const float* x, const double* d, float* f, long long* i) {
  const int t = threadIdx.x;
  const float v = x[t];
  f[6 * t + 0] = __saturatef(v);
  f[6 * t + 1] = rsqrtf(fabsf(v) + 1.0f);
  f[6 * t + 2] = __fdividef(v, 3.0f);
  f[6 * t + 3] = __expf(v) + __logf(fabsf(v) + 1.0f) + __sinf(v) + __powf(2.0f, v);
  f[6 * t + 4] = min(v, 0.25f) + max(v, -0.25f);
  f[6 * t + 5] = __uint_as_float(__float_as_uint(v)) + __int2float_rn(t);
  i[8 * t + 0] = __float2int_rn(v);
  i[8 * t + 1] = __float2int_rz(v);
  i[8 * t + 2] = __float2int_ru(v);
  i[8 * t + 3] = __float2int_rd(v);
  i[8 * t + 4] = __float2uint_rn(v);
  i[8 * t + 5] = __double2ll_rn(d[t]);
  i[8 * t + 6] = (long long)__double2ull_rz(d[t]);
  i[8 * t + 7] = __double_as_longlong(__longlong_as_double(t * 3));
}
'''


def test_float_intrinsics_and_conversions_round_and_saturate_like_the_gpu():
    x = [2.5, 3.5, -2.5, -2.7, 2.1, -2.1, 0.0, -0.0, 0.5, 1.5, 3e9, -3e9, float("nan"), float("inf"),
         -float("inf"), 0.75]
    d = [2.5, -3.5, 1e19, -1e19, 9.3e18, float("nan"), 4e18, -1.0, 0.5, 1.5, 2**53 + 2.0, -7.5, 12.5, 0.0,
         2e19, 3.49]
    xt, dt = torch.tensor(x, dtype=torch.float32), torch.tensor(d, dtype=torch.float64)
    f = torch.zeros(16 * 6)
    i = torch.zeros(16 * 8, dtype=torch.int64)
    st.emulate_cuda(FLOATS, "floats", 1, 16, xt, dt, f, i)
    f, i = f.view(16, 6).double(), i.view(16, 8).tolist()
    x64 = xt.double()
    sat = torch.nan_to_num(x64, nan=0.0).clamp(0, 1)
    torch.testing.assert_close(f[:, 0], sat)
    torch.testing.assert_close(f[:, 1], 1 / (x64.abs() + 1).sqrt(), rtol=1e-6, atol=0, equal_nan=True)
    torch.testing.assert_close(f[:, 2], x64 / 3, rtol=1e-6, atol=0, equal_nan=True)
    finite = x64.abs() < 30
    expected = x64.exp() + (x64.abs() + 1).log() + x64.sin() + 2 ** x64
    torch.testing.assert_close(f[finite, 3], expected[finite], rtol=1e-5, atol=1e-5)
    # min / max of floats return the operand that is not NaN
    torch.testing.assert_close(f[:, 4], torch.fmin(x64, torch.tensor(0.25)) + torch.fmax(x64, torch.tensor(-0.25)))
    torch.testing.assert_close(f[:, 5], x64 + torch.arange(16), equal_nan=True)

    def to_int(v, rounding, lo, hi):
        if v != v:
            return 0
        r = rounding(v) if abs(v) != float("inf") else v
        return int(max(lo, min(hi, r)))

    nearest = lambda v: float(np.rint(v))  # noqa: E731 (ties to even)
    i32, u32, i64, u64 = (-2**31, 2**31 - 1), (0, 2**32 - 1), (-2**63, 2**63 - 1), (0, 2**64 - 1)
    for t in range(16):
        v, w = float(xt[t]), d[t]
        assert i[t][:5] == [to_int(v, nearest, *i32), to_int(v, np.trunc, *i32), to_int(v, np.ceil, *i32),
                            to_int(v, np.floor, *i32), to_int(v, nearest, *u32)], (t, v)
        assert i[t][5] == to_int(w, nearest, *i64), (t, w)
        assert i[t][6] == _s64(to_int(w, np.trunc, *u64)), (t, w)
        assert i[t][7] == 3 * t


ATOMICS = r'''
extern "C" __global__ void atomics(const int* x, int* bits, unsigned int* counters, long long* wide, float* swapped) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = x[t];
  atomicOr(&bits[0], v);
  atomicAnd(&bits[1], ~(1 << (t % 31)));
  atomicXor(&bits[2], v);
  atomicOr((unsigned long long*)&wide[0], (unsigned long long)v << 32);
  atomicInc(&counters[0], 9u);
  atomicDec(&counters[1], 6u);
  atomicSub(&counters[2], 2u);
  atomicMax(&wide[1], (long long)v * -1000000007LL);
  atomicMin(&wide[2], (long long)v * -1000000007LL);
  atomicMax((unsigned long long*)&wide[3], (unsigned long long)v);
  atomicMin((unsigned long long*)&wide[4], (unsigned long long)v + 5);
  while (atomicCAS(&bits[3], 0, t + 1) != 0 && atomicCAS(&bits[3], bits[3], bits[3]) == -1) {
  }
  atomicExch(&swapped[t], (float)v * 0.5f);
}
'''


def test_atomics_of_every_kind_add_up_over_a_grid():
    n = 96
    x = torch.randint(1, 2**20, (n,), dtype=torch.int32, generator=torch.Generator().manual_seed(3))
    bits = torch.tensor([0, -1, 0, 0], dtype=torch.int32)
    counters = torch.tensor([0, 0, 1000], dtype=torch.int32)  # read as unsigned int
    wide = torch.tensor([0, -2**62, 2**62, 0, 2**62], dtype=torch.int64)
    swapped = torch.zeros(n)
    st.emulate_cuda(ATOMICS, "atomics", 3, 32, x, bits, counters, wide, swapped)
    xs = x.tolist()
    o, a, xo = 0, -1, 0
    for t, v in enumerate(xs):
        o |= v
        a &= ~(1 << (t % 31))
        xo ^= v
    assert bits[:3].tolist() == [o, a, xo]
    assert 1 <= bits[3].item() <= n  # one thread's CAS won
    inc, dec = 0, 0
    for _ in range(n):
        inc = 0 if inc >= 9 else inc + 1
        dec = 6 if dec == 0 or dec > 6 else dec - 1
    assert counters.tolist() == [inc, dec, 1000 - 2 * n]
    assert wide.tolist() == [o << 32, max(-2**62, *(v * -1000000007 for v in xs)),
                             min(2**62, *(v * -1000000007 for v in xs)), max(xs), min(v + 5 for v in xs)]
    torch.testing.assert_close(swapped, x.double().mul(0.5).float())


SHARED = r'''
extern __shared__ float tile[];

extern "C" __global__ void reverse_tile(const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = x[i];
  __syncthreads();
  y[i] = tile[blockDim.x - 1 - threadIdx.x];
}

extern "C" __global__ void vector_halves(const float* x, float* y) {
  extern __shared__ __align__(16) unsigned char raw[];
  float4* quads = reinterpret_cast<float4*>(raw);
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  raw[0] = 0;
  __syncthreads();
  if (threadIdx.x < blockDim.x / 4) {
    const float* q = x + blockIdx.x * blockDim.x + 4 * threadIdx.x;
    quads[threadIdx.x] = make_float4(q[0], q[1], q[2], q[3]);
  }
  __syncthreads();
  y[i] = reinterpret_cast<float*>(raw)[threadIdx.x] * 2.0f;
}
'''


@pytest.mark.parametrize("order", ["forward", "check"])
def test_extern_shared_arrays_at_file_and_function_scope(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    for threads in (32, 128):  # a second launch with more shared memory reuses the block's buffer
        x = torch.randn(4 * threads)
        y = torch.zeros_like(x)
        st.emulate_cuda(SHARED, "reverse_tile", 4, threads, x, y, shared_bytes=4 * threads)
        torch.testing.assert_close(y, x.view(4, threads).flip(1).reshape(-1))
        st.emulate_cuda(SHARED, "vector_halves", 4, threads, x, y, shared_bytes=4 * threads)
        torch.testing.assert_close(y, 2 * x)


LATE_RETURN = r'''
extern "C" __global__ void late_return(float* out) {
  const int lane = threadIdx.x;
  if (lane < 16) {
    __syncwarp();  // its live lanes: 0-15 once 16-31 have returned
    out[lane] = 1.0f;
  } else {
    __syncwarp(0xffff0000u);
    out[lane] = 2.0f;
  }
}
'''


def test_a_warp_barrier_opens_when_the_other_lanes_of_its_mask_return():
    # Lanes 16-31 meet, run on and return without reaching another warp
    # barrier; lanes 0-15, waiting at a full-warp barrier, are then all of it.
    out = torch.zeros(32)
    st.emulate_cuda(LATE_RETURN, "late_return", 1, 32, out)
    assert out.tolist() == [1.0] * 16 + [2.0] * 16


BLOCK_VOTES = r'''
extern "C" __global__ void block_votes(const int* x, int* out) {
  const int t = threadIdx.x;
  if (x[t] < 0) return;  // a returned thread takes no part
  int* o = out + 4 * t;
  o[0] = __syncthreads_count(x[t] > 10);
  o[1] = __syncthreads_and(x[t] > 0);
  o[2] = __syncthreads_or(x[t] > 90);
  o[3] = __syncthreads_count(1);
}
'''


@pytest.mark.parametrize("order", ["forward", "check"])
def test_block_votes_count_the_threads_that_have_not_returned(order, monkeypatch):
    if order == "check":
        monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    for x in (torch.arange(-5, 91, dtype=torch.int32), torch.arange(1, 97, dtype=torch.int32)):
        out = torch.full((96, 4), -7, dtype=torch.int32)
        st.emulate_cuda(BLOCK_VOTES, "block_votes", 1, 96, x, out)
        alive = x >= 0
        want = [int((x[alive] > 10).sum()), int(bool((x[alive] > 0).all())), int(bool((x[alive] > 90).any())),
                int(alive.sum())]
        assert out[alive].tolist() == [want] * int(alive.sum())
        assert (out[~alive] == -7).all()


def test_a_kernel_runs_as_its_latest_source_and_arguments_say():
    # Modules are kept per source, kernel and argument kinds: an edited
    # source, or a scalar passed as an int then a float, runs as written.
    x = torch.arange(4.0)
    for body, scale, want in [("x[threadIdx.x] * s", 2, [0, 2, 4, 6]), ("x[threadIdx.x] * s", 2.5, [0, 2.5, 5, 7.5]),
                              ("x[threadIdx.x] + s", 2.5, [2.5, 3.5, 4.5, 5.5])]:
        source = f'extern "C" __global__ void scale(const float* x, float* y, float s) {{ y[threadIdx.x] = {body}; }}'
        y = torch.zeros(4)
        st.emulate_cuda(source, "scale", 1, 4, x, y, scale)
        assert y.tolist() == want


WARP_EXTRAS = r'''
extern "C" __global__ void warp_extras(const int* x, unsigned* out) {
  const int t = threadIdx.x;
  const unsigned lane = t % 32;
  unsigned* o = out + 12 * t;
  const int v = x[t];
  o[0] = __match_any_sync(0xffffffffu, v);
  int all = -1;
  o[1] = __match_all_sync(0xffffffffu, v, &all);
  o[2] = (unsigned)all;
  o[3] = (unsigned)__reduce_add_sync(0xffffffffu, v);
  o[4] = (unsigned)__reduce_min_sync(0xffffffffu, v);
  o[5] = __reduce_max_sync(0xffffffffu, (unsigned)v);
  o[6] = __reduce_and_sync(0xffffffffu, (unsigned)v | 0x100u);
  o[7] = __reduce_or_sync(0xffffffffu, (unsigned)v);
  o[8] = __reduce_xor_sync(0xffffffffu, (unsigned)v);
  const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  o[9] = (unsigned)__reduce_add_sync(half, v);
  o[10] = __match_any_sync(half, 7);
  if (lane >= 8) return;
  __syncwarp(0xffu);
  const unsigned active = __activemask();
  __syncwarp(0xffu);
  o[11] = active;
}

extern "C" __global__ void active_lanes(unsigned* out) {
  out[threadIdx.x] = __activemask();
}
'''


def test_warp_match_reduce_and_active_lanes():
    x = torch.tensor([t % 4 if t < 32 else 5 for t in range(64)], dtype=torch.int32)
    x[37] = -3
    out = torch.zeros(64 * 12, dtype=torch.int32)
    st.emulate_cuda(WARP_EXTRAS, "warp_extras", 1, 64, x, out)
    got = (out.view(64, 12).to(torch.int64) & 0xFFFFFFFF).tolist()
    for t in range(64):
        warp = x[t // 32 * 32: t // 32 * 32 + 32].tolist()
        v, lane = warp[t % 32], t % 32
        same = sum(1 << i for i, w in enumerate(warp) if w == v)
        everyone = all(w == warp[0] for w in warp)
        u = [w & 0xFFFFFFFF for w in warp]
        halves = warp[:16] if lane < 16 else warp[16:]
        assert got[t][:9] == [same, 0xFFFFFFFF if everyone else 0, int(everyone), sum(warp) & 0xFFFFFFFF,
                              min(warp) & 0xFFFFFFFF, max(u), np.bitwise_and.reduce(np.array(u) | 0x100),
                              np.bitwise_or.reduce(u), np.bitwise_xor.reduce(u)], t
        assert got[t][9:11] == [sum(halves) & 0xFFFFFFFF, 0x0000FFFF if lane < 16 else 0xFFFF0000], t
        # lanes 8-31 returned before lanes 0-7 asked
        assert got[t][11] == (0xFF if lane < 8 else 0), t
    # threads that never meet run one after another: every lane of the warp that exists
    out = torch.zeros(40, dtype=torch.int32)
    st.emulate_cuda(WARP_EXTRAS, "active_lanes", 1, 40, out)
    assert (out.to(torch.int64) & 0xFFFFFFFF).tolist() == [0xFFFFFFFF] * 32 + [0xFF] * 8


CHECKED = r'''
#include <cassert>
#include <cuda_runtime.h>

__constant__ float weights[3] = {0.5f, 2.0f, -1.0f};

extern "C" __global__ void checked(const float* x, float* y, long long* ticks) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const long long start = clock64();
  assert(x[i] >= 0.0f);
  __syncthreads();
  y[i] = x[i] * weights[i % 3];
  ticks[i] = clock64() - start;
}

extern "C" __global__ void trapping(float* y) {
  if (threadIdx.x == 5) __trap();
  y[threadIdx.x] = 1.0f;
}
'''


def test_constant_data_includes_and_clock():
    x = torch.rand(64)
    y = torch.zeros(64)
    ticks = torch.full((64,), -1, dtype=torch.int64)
    st.emulate_cuda(CHECKED, "checked", 2, 32, x, y, ticks)
    torch.testing.assert_close(y, x * torch.tensor([0.5, 2.0, -1.0]).repeat(22)[:64])
    assert (ticks >= 0).all()


def test_a_failed_assert_raises_naming_the_block_thread_and_expression():
    x = torch.rand(64)
    x[37] = -1.0  # block 1, thread 5
    y = torch.zeros(64)
    ticks = torch.zeros(64, dtype=torch.int64)
    with pytest.raises(RuntimeError, match=re.escape("kernel 'checked', block (1, 0, 0), thread (5, 0, 0): "
                                                     "assertion 'x[i] >= 0.0f' failed (kernel.cu:10)")):
        st.emulate_cuda(CHECKED, "checked", 2, 32, x, y, ticks)
    # the other threads of the block went past the barrier without it
    assert (y[32:37] != 0).all() and (y[38:64] != 0).all()
    with pytest.raises(RuntimeError, match=re.escape("kernel 'trapping', block (0, 0, 0), thread (5, 0, 0): __trap()")):
        st.emulate_cuda(CHECKED, "trapping", 1, 8, torch.zeros(8))
    x[37] = 1.0  # the library goes on: the next launch runs
    st.emulate_cuda(CHECKED, "checked", 2, 32, x, y, ticks)
    torch.testing.assert_close(y, x * torch.tensor([0.5, 2.0, -1.0]).repeat(22)[:64])


def test_a_tensor_converts_to_its_own_element_type_only():
    widen = r'extern "C" __global__ void widen(const int64_t* x, long* y) { y[threadIdx.x] = x[threadIdx.x] + 1; }'
    x = torch.arange(4)
    y = torch.zeros(4, dtype=torch.int64)
    st.emulate_cuda(widen, "widen", 1, 4, x, y)  # int64_t and long hold a tensor's int64
    assert y.tolist() == [1, 2, 3, 4]
    with pytest.raises(st.CompileError, match=r"sparsetir_tensor_pointer<float>.*double\*|double\*.*sparsetir_"):
        st.emulate_cuda('extern "C" __global__ void k(double* x) { x[0] = 1; }', "k", 1, 1, torch.zeros(2))


def test_an_unemulated_cuda_header_is_named():
    source = '#include <cuda/std/chrono>\nextern "C" __global__ void k(float* x) {}\n'
    with pytest.raises(st.CompileError, match=r"kernel.cu:1.*the SIMT emulator has no cuda/std/chrono"):
        st.emulate_cuda(source, "k", 1, 1, torch.zeros(2))


def test_more_dynamic_shared_memory_than_cuda_allows_is_refused():
    with pytest.raises(RuntimeError, match=r"300000 bytes of dynamic shared memory; CUDA allows at most 232448"):
        st.emulate_cuda(SHARED, "reverse_tile", 1, 32, torch.zeros(32), torch.zeros(32), shared_bytes=300000)


MATH = r'''
// CUDA's math API beyond C's: each function of x[i] (float, then double) in a row of out.
extern "C" __global__ void math(const float* x, float* out, double* out64, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = x[i];
  float* o = out + 10 * i;
  o[0] = erfinvf(v), o[1] = erfcinvf(v), o[2] = normcdff(v), o[3] = normcdfinvf(v), o[4] = erfcxf(v);
  o[5] = sinpif(v), o[6] = cospif(v), o[7] = rhypotf(v, 3.0f), o[8] = norm3df(v, 2.0f, -2.0f);
  float s, c;
  sincospif(v, &s, &c);
  o[9] = s - o[5] + c - o[6];  // 0
  double* d = out64 + 6 * i;
  const double w = v;
  d[0] = erfinv(w), d[1] = erfcinv(w), d[2] = normcdf(w), d[3] = normcdfinv(w), d[4] = sinpi(w), d[5] = cospi(w);
}
// __dp4a / __dp2a on packed bytes and halves.
extern "C" __global__ void dots(const int* a, const int* b, const int* c, int* out, unsigned int* out_u, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[3 * i] = __dp4a(a[i], b[i], c[i]);
  out[3 * i + 1] = __dp2a_lo(a[i], b[i], c[i]);
  out[3 * i + 2] = __dp2a_hi(a[i], b[i], c[i]);
  const unsigned int ua = a[i], ub = b[i], uc = c[i];
  out_u[3 * i] = __dp4a(ua, ub, uc);
  out_u[3 * i + 1] = __dp2a_lo(ua, ub, uc);
  out_u[3 * i + 2] = __dp2a_hi(ua, ub, uc);
}
'''


def test_cudas_math_functions_beyond_c():
    from scipy import special

    special_points = [-1.0, 1.0, 0.0, -0.0, 0.5, -0.5, 2.0, 1e-30, 1 - 2.0**-24, 1e-20, 1.9999999, 7.0, -7.0, 12.5,
                      1e6 + 1, np.inf, np.nan]
    x = np.concatenate([np.linspace(-3, 3, 61), special_points]).astype(np.float32)
    n = x.size
    out, out64 = torch.zeros(n, 10), torch.zeros(n, 6, dtype=torch.float64)
    st.emulate_cuda(MATH, "math", (n + 63) // 64, 64, torch.from_numpy(x), out, out64, n)
    got, got64, v = out.numpy().astype(np.float64), out64.numpy(), x.astype(np.float64)
    with np.errstate(all="ignore"):
        # sin and cos of pi x, with the exact zeros at integers and half-integers.
        r = v - 2 * np.round(v / 2)
        sinpi = np.where(np.isin(r, [0.0, 1.0, -1.0]), np.copysign(0.0, v), np.sin(np.pi * r))
        cospi = np.where(np.abs(r) == 0.5, 0.0, np.cos(np.pi * r))
        want = np.stack([special.erfinv(v), special.erfcinv(v), special.ndtr(v), special.ndtri(v), special.erfcx(v),
                         sinpi, cospi, 1 / np.hypot(v, 3), np.hypot(np.hypot(v, 2), 2),
                         np.where(np.isfinite(v), 0.0, np.nan)], axis=1)
        finite = np.isfinite(want)
        # CUDA's bounds are a few ulp of float (erfcinvf 4, normcdfinvf 5): 8 ulp here.
        tolerance = 8 * np.spacing(np.abs(want[finite]).astype(np.float32)).astype(np.float64)
        assert np.all(np.abs(got[finite] - want[finite]) <= tolerance), np.argwhere(
            np.abs(got - want) > 8 * np.spacing(np.abs(want).astype(np.float32)))
        assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
        want64 = np.stack([special.erfinv(v), special.erfcinv(v), special.ndtr(v), special.ndtri(v), sinpi, cospi],
                          axis=1)
        np.testing.assert_allclose(got64, want64, rtol=1e-13, atol=1e-300, equal_nan=True)
    # Exact where CUDA says: sinpi of an integer is a zero of its sign, cospi of a half-integer +0.
    index = {float(value): k for k, value in enumerate(x)}
    for value in (2.0, 7.0, -7.0):
        assert got[index[value], 5] == 0 and np.signbit(got[index[value], 5]) == (value < 0)
    for value in (0.5, -0.5, 12.5):
        assert got[index[value], 6] == 0 and not np.signbit(got[index[value], 6])
    assert got[index[1.0], 0] == np.inf and got[index[-1.0], 0] == -np.inf and got[index[0.0], 1] == np.inf


def _dot_reference(a, b, c, signed):
    """__dp4a, __dp2a_lo, __dp2a_hi of 32-bit words, in Python's integers."""
    def piece(word, bits, k):
        v = (word >> (bits * k)) & ((1 << bits) - 1)
        return v - (1 << bits) if signed and v >> (bits - 1) else v
    wrap = (lambda v: (v + 2**31) % 2**32 - 2**31) if signed else (lambda v: v % 2**32)
    dp4a = c + sum(piece(a, 8, k) * piece(b, 8, k) for k in range(4))
    lo = c + sum(piece(a, 16, k) * piece(b, 8, k) for k in range(2))
    hi = c + sum(piece(a, 16, k) * piece(b, 8, 2 + k) for k in range(2))
    return [wrap(dp4a), wrap(lo), wrap(hi)]


def test_packed_byte_dot_products_match_python_integers():
    g = torch.Generator().manual_seed(6)
    a, b, c = (torch.randint(-2**31, 2**31, (200,), generator=g, dtype=torch.int64).int() for _ in range(3))
    c[:4] = torch.tensor([2**31 - 1, -2**31, 0, -1], dtype=torch.int32)  # the sum wraps
    out, out_u = torch.zeros(200, 3, dtype=torch.int32), torch.zeros(200, 3, dtype=torch.int32)
    st.emulate_cuda(MATH, "dots", 4, 64, a, b, c, out, out_u, 200)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        ux, uy, uz = x % 2**32, y % 2**32, z % 2**32
        assert out[i].tolist() == _dot_reference(ux, uy, z, True), i
        assert [v % 2**32 for v in out_u[i].tolist()] == _dot_reference(ux, uy, uz, False), i


# The NVRTC check drops the includes NVRTC has no search path for (the
# emulator's own test of them is above).
NVRTC_SOURCES = {"vectors": VECTORS, "integers": INTEGERS, "floats": FLOATS, "atomics": ATOMICS, "shared": SHARED,
                 "warp_extras": WARP_EXTRAS, "checked": re.sub(r"#include <[^>]+>\n", "", CHECKED),
                 "late_return": LATE_RETURN, "block_votes": BLOCK_VOTES, "math": MATH}


@needs_nvrtc
@pytest.mark.parametrize("name", sorted(NVRTC_SOURCES))
def test_every_kernel_here_is_valid_cuda(name):
    from sparsetir_torch import _C
    ptx = _C.nvrtc_compile(NVRTC_SOURCES[name], name + ".cu", 80, False)["ptx"].decode()
    assert ".entry" in ptx
