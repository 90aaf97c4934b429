"""Structs and CUDA vector types passed by value to hand-written kernels
(st.CudaKernel, st.emulate_cuda, st.launch_cuda): the layout read from the
source against NVRTC's (the PTX's parameter sizes and alignments) and the
host compiler's (offsetof, under the emulator); every field reaching the
kernel from a tuple, a list or a dict, nested structs, arrays and pointer
fields included; the race check restoring tensors held in a struct; and the
errors, each naming the parameter and the field."""

import re

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from conftest import needs_nvrtc

# Padding everywhere the C rules put it: a char before a pointer-aligned
# field, an array of ints, a nested struct of a char and a double, a __half,
# an over-aligned float, a vector type and the struct's own alignas.
LAYOUT = r"""
#include <cuda_fp16.h>
#define LANES 3
#define OFFSET(f) (long long)((const char*)&p.f - (const char*)&p)
struct Inner { char tag; double value; };
typedef struct { short s; unsigned char b; } Small;
struct __align__(16) Params {
  const float* x;
  float* y;
  char flag;
  int counts[LANES];
  Inner inner;
  Small small[2];
  __half h;
  alignas(8) float aligned;
  float4 v;
  __device__ float twice() const { return 2.0f * aligned; }
  static constexpr int kUnused = 7;
};
extern "C" __global__ void fields(Params p, int n, double* out, long long* offsets) {
  const int i = threadIdx.x;
  if (i < n) p.y[i] = p.x[i] * 2.0f + p.counts[i % LANES];
  if (i != 0) return;
  const double values[] = {(double)p.flag, (double)p.counts[0], (double)p.counts[1], (double)p.counts[2],
                           (double)p.inner.tag, p.inner.value, (double)p.small[0].s, (double)p.small[0].b,
                           (double)p.small[1].s, (double)p.small[1].b, (double)__half2float(p.h),
                           (double)p.twice(), p.v.x, p.v.y, p.v.z, p.v.w};
  for (int k = 0; k < 16; ++k) out[k] = values[k];
  const long long where[] = {OFFSET(x), OFFSET(y),
                             OFFSET(flag), OFFSET(counts),
                             OFFSET(inner), OFFSET(small),
                             OFFSET(h), OFFSET(aligned),
                             OFFSET(v), (long long)sizeof(Params),
                             (long long)alignof(Params), (long long)sizeof(Small)};
  for (int k = 0; k < 12; ++k) offsets[k] = where[k];
}
"""

FIELD_ORDER = ["x", "y", "flag", "counts", "inner", "small", "h", "aligned", "v"]

# Vector types by value, one of each element size, and a struct of one.
VECTORS = r"""
#include <cuda_fp16.h>
struct One { unsigned long long big; };
extern "C" __global__ void vectors(float4 a, int2 b, double2 c, __half2 d, char4 e, float3 f, One g, double* out) {
  const double values[] = {a.x, a.y, a.z, a.w, (double)b.x, (double)b.y, c.x, c.y, (double)__low2float(d),
                           (double)__high2float(d), (double)e.x, (double)e.y, (double)e.z, (double)e.w,
                           f.x, f.y, f.z, (double)g.big};
  for (int k = 0; k < 18; ++k) out[k] = values[k];
}
"""

# Every thread adds into the int a struct's pointer field points at, and
# records its own value through another: the race check runs it thrice,
# restoring both tensors between runs.
ACCUMULATE = r"""
struct Sink { int* total; float* seen; int scale; };
extern "C" __global__ void accumulate(Sink sink, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicAdd(sink.total, i * sink.scale);
  sink.seen[i] = (float)(i * sink.scale);
}
"""


# The same, the struct read in place (CUDA 11.7's __grid_constant__).
GRID_CONSTANT = ACCUMULATE.replace("void accumulate(Sink sink, int n)",
                                   "void accumulate(const __grid_constant__ Sink sink, int n)")

# Fields of the remaining kinds: bool, bfloat16 (rounded once, as a scalar
# parameter is), unsigned short, double and an array of vectors.
MIXED = r"""
#include <cuda_bf16.h>
struct Mixed { bool on; __nv_bfloat16 b; unsigned short u; double d; float2 pairs[2]; };
extern "C" __global__ void mixed(Mixed m, double* out) {
  const double values[] = {(double)m.on, (double)__bfloat162float(m.b), (double)m.u, m.d,
                           m.pairs[0].x, m.pairs[0].y, m.pairs[1].x, m.pairs[1].y, (double)sizeof(Mixed)};
  for (int k = 0; k < 9; ++k) out[k] = values[k];
}
"""


def ptx_params(ptx: str, kernel: str):
    """(bytes, alignment) of each parameter of `kernel` in `ptx`."""
    entry = re.search(r"\.entry\s+" + kernel + r"\s*\((.*?)\)", ptx, re.S).group(1)
    out = []
    for decl in entry.split(","):
        array = re.search(r"\.align\s+(\d+)\s+\.b8\s+\w+\[(\d+)\]", decl)
        if array:
            out.append((int(array.group(2)), int(array.group(1))))
        else:
            size = int(re.search(r"\.[usbf](8|16|32|64)\b", decl).group(1)) // 8
            out.append((size, size))
    return out


def layout_args(x, y, as_dict):
    values = dict(x=x, y=y, flag=-7, counts=[1, 2, 3], inner=(65, -2.5), small=[(-3, 250), {"s": 4, "b": 5}],
                  h=0.5, aligned=1.25, v=(1.0, -2.0, 3.5, 4.0))
    return values if as_dict else tuple(values[name] for name in FIELD_ORDER)


@pytest.mark.parametrize("as_dict", [False, True])
def test_every_field_reaches_the_kernel_where_the_host_compiler_puts_it(as_dict):
    kernel = st.CudaKernel(LAYOUT, "fields")
    x, y = torch.arange(8, dtype=torch.float32), torch.zeros(8)
    out, offsets = torch.zeros(16, dtype=torch.float64), torch.zeros(12, dtype=torch.int64)
    kernel(1, 8, layout_args(x, y, as_dict), 8, out, offsets)
    assert out.tolist() == [-7, 1, 2, 3, 65, -2.5, -3, 250, 4, 5, 0.5, 2.5, 1.0, -2.0, 3.5, 4.0]
    assert y.tolist() == [2 * i + [1, 2, 3][i % 3] for i in range(8)]
    params = kernel.params[0]
    assert [f.name for f in params.fields] == FIELD_ORDER
    assert [f.offset for f in params.fields] + [params.bytes] == offsets.tolist()[:10]
    assert offsets.tolist()[10:] == [16, 4]  # alignof(Params), sizeof(Small)
    assert [(f.type, f.count) for f in params.fields][2:6] == [("char", 0), ("int", 3), ("Inner", 0), ("Small", 2)]


@needs_nvrtc
@pytest.mark.parametrize("source,name,aligns", [
    (LAYOUT, "fields", [16, 4, 8, 8]),
    (VECTORS, "vectors", [16, 8, 16, 4, 4, 4, 8, 8]),
    (ACCUMULATE, "accumulate", [8, 4]),
    (MIXED, "mixed", [8, 8]),
    (GRID_CONSTANT, "accumulate", [8, 4]),
], ids=["layout", "vectors", "accumulate", "mixed", "grid_constant"])
def test_the_layout_read_is_nvrtcs(source, name, aligns):
    kernel = st.CudaKernel(source, name)
    compiled = ptx_params(kernel.ptx("sm_80"), name)
    assert [p.bytes for p in kernel.params] == [size for size, _ in compiled]
    assert [align for _, align in compiled] == aligns


def test_vector_types_by_value():
    out = torch.zeros(18, dtype=torch.float64)
    st.emulate_cuda(VECTORS, "vectors", 1, 1, (1.5, 2, 3, 4), (-5, 6), {"x": 0.25, "y": 1e300}, (0.5, -1.5),
                    (1, -2, 3, 127), (7, 8, 9), [2**64 - 1], out)
    assert out.tolist() == [1.5, 2, 3, 4, -5, 6, 0.25, 1e300, 0.5, -1.5, 1, -2, 3, 127, 7, 8, 9, float(2**64 - 1)]
    kernel = st.CudaKernel(VECTORS, "vectors")
    assert [(p.type, p.bytes) for p in kernel.params[:7]] == [
        ("float4", 16), ("int2", 8), ("double2", 16), ("__half2", 4), ("char4", 4), ("float3", 12), ("One", 8)]
    assert [f.name for f in kernel.params[0].fields] == ["x", "y", "z", "w"]


def test_a_grid_constant_struct():
    total, seen = torch.zeros(1, dtype=torch.int32), torch.zeros(5)
    kernel = st.CudaKernel(GRID_CONSTANT, "accumulate")
    kernel(1, 32, (total, seen, 2), 5)
    assert total.item() == 20 and seen.tolist() == [0, 2, 4, 6, 8]
    assert kernel.params[0].declaration == "const __grid_constant__ Sink sink" and kernel.params[0].bytes == 24


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_tensors_in_a_struct_are_restored_between_the_race_checks_runs(emulation_order, n):
    total, seen = torch.zeros(1, dtype=torch.int32), torch.zeros(n)
    st.emulate_cuda(ACCUMULATE, "accumulate", (n + 127) // 128, 128, {"total": total, "seen": seen, "scale": 3}, n)
    assert total.item() == 3 * n * (n - 1) // 2
    assert seen.tolist() == [3.0 * i for i in range(n)]


def test_a_struct_argument_gets_the_same_checks_as_a_launch():
    kernel = st.CudaKernel(LAYOUT, "fields")
    x, y = torch.arange(8, dtype=torch.float32), torch.zeros(8)
    out, offsets = torch.zeros(16, dtype=torch.float64), torch.zeros(12, dtype=torch.int64)

    def call(**changes):
        args = layout_args(x, y, True)
        args.update(changes)
        for key in [k for k, v in args.items() if v is None]:
            del args[key]
        kernel(1, 8, args, 8, out, offsets)

    prefix = r"kernel 'fields' parameter 0 \('Params p'\)"
    with pytest.raises(ValueError, match=prefix + r" field 'flag' cannot hold the int 300"):
        call(flag=300)
    with pytest.raises(ValueError, match=prefix + r" field 'counts'\[1\] takes an integer: got the float 2.5"):
        call(counts=[1, 2.5, 3])
    with pytest.raises(ValueError, match=prefix + r" field 'counts' is an array of 3: pass a tuple or list of as "
                                                  r"many, got a tuple or list of 2"):
        call(counts=[1, 2])
    with pytest.raises(ValueError, match=prefix + r" field 'inner' is a Inner by value: pass a tuple, a list or a "
                                                  r"dict of its fields, got the int 5"):
        call(inner=5)
    with pytest.raises(ValueError, match=prefix + r" field 'inner' is a Inner of 2 fields, got a tuple or list of 3"):
        call(inner=(1, 2.0, 3))
    with pytest.raises(ValueError, match=prefix + r" is a Params, which has no field 'z'"):
        call(z=1)
    with pytest.raises(ValueError, match=prefix + r" is a Params: the dict has no 'flag'"):
        call(flag=None)
    with pytest.raises(ValueError, match=prefix + r" field 'x' points to float, but got a tensor of dtype float64"):
        call(x=x.double())
    with pytest.raises(ValueError, match=prefix + r" field 'h' is a value, not a pointer: got a tensor of dtype "
                                                  r"float32"):
        call(h=x)
    with pytest.raises(ValueError, match=prefix + r" field 'x' is a pointer: pass a tensor, got the int 3"):
        call(x=3)
    with pytest.raises(ValueError, match=r"argument 0 \['y'\] must be contiguous"):
        call(y=torch.zeros(8, 2).t()[0])
    with pytest.raises(ValueError, match=r"argument 0 \['y'\] is on meta; the emulator runs on CPU tensors"):
        call(y=torch.zeros(8, device="meta"))
    with pytest.raises(ValueError, match=r"argument 0 \['y'\] requires grad; pass it detached"):
        call(y=torch.zeros(8, requires_grad=True))
    with pytest.raises(TypeError, match=r"argument 0 is a dict whose keys must be field names \(str\), got int"):
        kernel(1, 8, {0: x}, 8, out, offsets)
    with pytest.raises(TypeError, match=r"argument 0 \['inner'\] \[1\] must be a tensor, an int, a float, or a "
                                        r"tuple, list or dict"):
        call(inner=(1, "2"))
    with pytest.raises(ValueError, match=r"parameter 1 \('int n'\) is a value: pass a Python int or float, got a "
                                         r"tuple or list of 1"):
        kernel(1, 8, layout_args(x, y, False), (8,), out, offsets)
    assert y.tolist() == [0.0] * 8  # nothing ran


@pytest.mark.parametrize("third", [1 / 3, -1e-40, 3e38])
def test_fields_of_every_kind_are_converted_as_parameters_are(third):
    out = torch.zeros(9, dtype=torch.float64)
    kernel = st.CudaKernel(MIXED, "mixed")
    kernel(1, 1, (True, third, 65535, 0.1, [(1.5, 2), {"x": 3, "y": -4.25}]), out)
    bfloat16 = torch.tensor(third, dtype=torch.float64).to(torch.bfloat16).item()  # rounded once, to nearest even
    assert out.tolist() == [1, bfloat16, 65535, 0.1, 1.5, 2, 3, -4.25, 32]
    with pytest.raises(ValueError, match=r"field 'on' cannot hold the int 2"):
        kernel(1, 1, (2, third, 1, 0.1, [(1, 2), (3, 4)]), out)
    with pytest.raises(ValueError, match=r"field 'u' cannot hold the int -1"):
        kernel(1, 1, (True, third, -1, 0.1, [(1, 2), (3, 4)]), out)
    with pytest.raises(ValueError, match=r"field 'pairs'\[1\] is a float2 of 2 fields, got a tuple or list of 3"):
        kernel(1, 1, (True, third, 1, 0.1, [(1, 2), (3, 4, 5)]), out)


BIG = r"""
struct Wide { unsigned long long u; long long s; };
extern "C" __global__ void big(Wide w, unsigned long long u, unsigned long long* out) {
  out[0] = w.u;
  out[1] = (unsigned long long)w.s;
  out[2] = u;
}
"""


def test_ints_past_int64_reach_unsigned_64_bit_parameters_only():
    kernel = st.CudaKernel(BIG, "big")
    out = torch.zeros(3, dtype=torch.uint64)
    kernel(1, 1, (2**64 - 1, -(2**63)), 2**63, out)
    assert [int(v) for v in out.tolist()] == [2**64 - 1, 2**63, 2**63]
    with pytest.raises(ValueError, match=r"parameter 0 \('Wide w'\) field 's' cannot hold the int 9223372036854775808"):
        kernel(1, 1, (1, 2**63), 1, out)
    with pytest.raises(ValueError, match=r"argument 1 is the int 18446744073709551616, which no C integer type holds"):
        kernel(1, 1, (1, 2), 2**64, out)
    with pytest.raises(ValueError, match=r"argument 0 \[1\] is the int -9223372036854775809, which no C integer"):
        kernel(1, 1, (1, -(2**63) - 1), 1, out)


def test_emulate_cuda_reads_the_declaration_only_for_a_struct():
    with pytest.raises(ValueError, match=r"st.emulate_cuda: kernel 'fields' parameter 0 \('Params p'\) field 'flag' "
                                         r"cannot hold the int 300"):
        args = layout_args(torch.zeros(8), torch.zeros(8), True)
        args["flag"] = 300
        st.emulate_cuda(LAYOUT, "fields", 1, 8, args, 8, torch.zeros(16, dtype=torch.float64),
                        torch.zeros(12, dtype=torch.int64))
    templated = "template <typename T> struct Box { T v; };\n" \
                'extern "C" __global__ void k(Box<int> b, int* out) { out[0] = b.v; }\n'
    with pytest.raises(ValueError, match=r"argument 0 is a tuple, list or dict \(a struct's fields\), but CUDA "
                                         r"kernel 'k': parameter 0 \('Box<int> b'\) is not a declaration"):
        st.emulate_cuda(templated, "k", 1, 1, (1,), torch.zeros(1, dtype=torch.int32))


@pytest.mark.parametrize("definition,message", [
    ("union S { int a; float b; };", r"'S' is a union"),
    ("struct B { int b; }; struct S : B { int a; };", r"struct S derives from another"),
    ("struct S { int a : 3; };", r"struct S has a bit-field"),
    ("struct S { T a; };", r"struct S's field 'a' has type 'T'"),
])
def test_a_struct_it_cannot_lay_out_is_named_when_the_kernel_is_made(definition, message):
    with pytest.raises(ValueError, match=r"parameter 0 \('S s'\): " + message):
        st.CudaKernel(definition + '\nextern "C" __global__ void k(S s) {}', "k")


def test_launch_cuda_names_a_cpu_tensor_inside_a_struct():
    with pytest.raises(ValueError, match=r"st.launch_cuda: argument 0 \[0\] is on cpu; every tensor must be a CUDA "
                                         r"tensor"):
        st.launch_cuda(ACCUMULATE, "accumulate", 1, 1, (torch.zeros(1, dtype=torch.int32), torch.zeros(1), 1), 1)


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("as_dict", [False, True])
def test_gpu_a_struct_reaches_the_kernel_as_under_the_emulator(as_dict):
    kernel = st.CudaKernel(LAYOUT, "fields")
    results = []
    for device in ("cpu", "cuda"):
        x, y = torch.arange(8, dtype=torch.float32, device=device), torch.zeros(8, device=device)
        out = torch.zeros(16, dtype=torch.float64, device=device)
        offsets = torch.zeros(12, dtype=torch.int64, device=device)
        kernel(1, 8, layout_args(x, y, as_dict), 8, out, offsets)
        results.append((y.tolist(), out.tolist(), offsets.tolist()))
    assert results[0] == results[1]
    v = np.zeros(18)
    for device in ("cpu", "cuda"):
        out = torch.zeros(18, dtype=torch.float64, device=device)
        st.CudaKernel(VECTORS, "vectors")(1, 1, (1.5, 2, 3, 4), (-5, 6), (0.25, 1e300), (0.5, -1.5), (1, -2, 3, 127),
                                          (7, 8, 9), [2**64 - 1], out)
        v = v - out.cpu().numpy() if device == "cuda" else out.cpu().numpy()
    assert not v.any()
