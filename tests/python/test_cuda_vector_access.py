"""Vector loads and stores on the cuda target (sch.vectorize, codegen/vector_access.h).

A vectorized loop's lanes run as an unrolled loop over registers; its loads
and its store that move one element per lane, from an offset that is
provably a multiple of the vector, move as one vector access each (up to 16
bytes an instruction: ld.global.v2 / v4). The kernel's arguments they touch
must start aligned: st.compile kernels refuse a misaligned argument by name,
the operators read a misaligned input from an aligned copy. The kernels run
under the SIMT emulator against float64 references; NVRTC and ptxas show the
vector instructions.
"""
import re
import shutil

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from sparsetir_torch.cuda_check import ptxas_report
from conftest import TORCH_DTYPES, assert_within_bound, make_csr, needs_nvrtc, to_tensor
from test_cuda_backend import emulate, reference_spmm  # noqa: F401 - the fixture

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = ("float32", "float64", "float16", "bfloat16")

# Each thread scales LANES consecutive elements of a row: a vectorized loop
# whose load and store are one vector each where OFFSET keeps them aligned.
SCALE = '''
@T.prim_func
def scale(a: T.handle, b: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, WIDTH), "DTYPE")
    B = T.match_buffer(b, (n, WIDTH), "DTYPE")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for t in T.thread_binding(THREADS, thread="threadIdx.x"):
            for v in T.vectorized(LANES):
                B[i, t * LANES + v] = A[i, t * LANES + v + OFFSET] * T.Cast("DTYPE", 2.0)
'''


def body(kernel) -> str:
    """The kernel's code, without the prelude that defines the vector helpers."""
    return kernel.source[kernel.source.index('extern "C"'):]


def scale_kernel(dtype="float32", lanes=4, threads=8, offset=0):
    width = lanes * threads + offset
    text = (SCALE.replace("DTYPE", dtype).replace("WIDTH", str(width)).replace("THREADS", str(threads))
            .replace("LANES", str(lanes)).replace("OFFSET", str(offset)))
    return st.compile(text, target="cuda"), width


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lanes", [2, 4, 8, 16])
def test_vector_accesses_move_the_same_elements(dtype, lanes):
    kernel, width = scale_kernel(dtype, lanes)
    storage = {"float32": "float", "float64": "double", "float16": "uint16_t", "bfloat16": "uint16_t"}[dtype]
    assert f"sparsetir_vload<{storage}, {lanes}>" in kernel.source, kernel.source
    assert "sparsetir_vstore(" in kernel.source
    a = torch.from_numpy(np.random.default_rng(lanes).uniform(-4, 4, (3, width))).to(TORCH_DTYPES[dtype])
    b = torch.full_like(a, float("nan"))
    kernel(a=a, b=b, n=3)
    assert torch.equal(b, (a.double() * 2).to(a.dtype))


def test_an_offset_that_breaks_the_alignment_keeps_scalar_accesses():
    # A[i, 4t + v + 1] is no multiple of 4, nor B[i, 4t + v] with rows of 33.
    kernel, width = scale_kernel("float32", lanes=4, offset=1)
    assert "sparsetir_vload" not in body(kernel) and "sparsetir_vstore" not in body(kernel)
    a = torch.arange(3 * width, dtype=torch.float32).reshape(3, width)
    b = torch.zeros(3, width)
    kernel(a=a, b=b, n=3)
    assert torch.equal(b[:, :32], a[:, 1:33] * 2) and not b[:, 32].any()
    even, _ = scale_kernel("float32", lanes=4, offset=8)  # rows of 40, two vectors further: aligned again
    assert "sparsetir_vload<float, 4>" in even.source and "sparsetir_vstore(" in even.source


def test_a_misaligned_argument_is_named():
    kernel, width = scale_kernel("float32", lanes=4)
    storage = torch.arange(3 * width + 1, dtype=torch.float32)
    a = storage[1:].view(3, width)  # contiguous, 4 bytes past a 16-byte boundary
    with pytest.raises(ValueError, match="kernel scale: argument 'a' must start at a multiple of 16 bytes, as the "
                                         "kernel moves its elements in vectors of that many \\(sch.vectorize\\), "
                                         "but it starts 4 bytes past one"):
        kernel(a=a, b=torch.zeros(3, width), n=3)
    b = torch.zeros(3 * width + 2)[2:].view(3, width)
    with pytest.raises(ValueError, match="argument 'b' must start at a multiple of 16 bytes"):
        kernel(a=a.clone(), b=b, n=3)
    unvectorized = st.compile(SCALE.replace("DTYPE", "float32").replace("WIDTH", str(width))
                              .replace("THREADS", "8").replace("LANES", "4").replace("OFFSET", "0")
                              .replace("T.vectorized", "T.unroll"), target="cuda")
    out = torch.zeros(3, width)
    unvectorized(a=a, b=out, n=3)  # an unrolled loop assumes nothing
    assert torch.equal(out, a * 2)


GUARDED = '''
@T.prim_func
def guarded(a: T.handle, b: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, 32), "float32")
    B = T.match_buffer(b, (n, 32), "float32")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for t in T.thread_binding(8, thread="threadIdx.x"):
            for v in T.vectorized(4):
                if t < 7:
                    B[i, t * 4 + v] = A[i, t * 4 + v] + B[i, t * 4 + v]
'''


def test_loads_under_a_branch_and_a_written_buffer_stay_scalar():
    """A load under a condition may be one the loop never makes; B is read
    and written by the loop."""
    kernel = st.compile(GUARDED, target="cuda")
    assert "sparsetir_vload" not in body(kernel) and "sparsetir_vstore" not in body(kernel)
    a = torch.arange(64, dtype=torch.float32).reshape(2, 32)
    b = torch.ones(2, 32)
    kernel(a=a, b=b, n=2)
    expected = torch.ones(2, 32)
    expected[:, :28] += a[:, :28]
    assert torch.equal(b, expected)


@needs_nvrtc
@pytest.mark.parametrize("dtype,vector", [("float32", "ld.global.nc.v4.f32"), ("float64", "ld.global.nc.v2.f64"),
                                          ("float16", "ld.global.nc.v4.u16"), ("bfloat16", "ld.global.nc.v4.u16")])
def test_nvrtc_emits_vector_instructions(dtype, vector):
    st.cuda_runtime.prepare_nvrtc()
    kernel, _ = scale_kernel(dtype, lanes=4 if dtype != "float64" else 2)
    for arch in (80, 90):
        ptx = kernel.ptx(f"sm_{arch}")
        assert vector in ptx and re.search(r"st\.global\.v[24]\.", ptx), ptx[-1500:]
        ptxas = shutil.which("ptxas")
        if ptxas:
            assert ptxas_report(ptxas, ptx.encode(), arch)["spills"] == 0


# --------------------------------------------------------------------------- the operators


@needs_nvrtc
@pytest.mark.parametrize("dtype,feat,per_thread,load", [
    ("float32", 128, 2, "ld.global.nc.v2.f32"), ("float64", 64, 2, "ld.global.nc.v2.f64"),
    ("float16", 256, 4, "ld.global.nc.v4.u16"), ("bfloat16", 128, 4, "ld.global.nc.v4.u16")])
def test_spmm_threads_load_their_features_as_one_vector(dtype, feat, per_thread, load):
    """The csrmm recipe's lane owns `per_thread` consecutive features (8
    bytes of 32-bit and 16-bit values): one vector load of the dense row per
    non-zero, one vector store of the output."""
    st.cuda_runtime.prepare_nvrtc()
    # csrmm's accumulators are its output's local cache; the segments kernel (a stage-III script) names them ACC.
    for script, accumulators in (("csrmm", "C_local"), ("csrmm_segments", "ACC")):
        kernel = _C.op_kernel(script, script, dtype, "int32", {"feat_size": feat}, "cuda")
        assert f"{accumulators}[{per_thread}]" in kernel.source
        assert f"_v = sparsetir_vload<" in kernel.source and f", {per_thread}>(&B[" in kernel.source
        ptx = _C.nvrtc_compile(kernel.source, script + ".cu", 90, False)["ptx"].decode()
        assert load in ptx, script
    like = torch.empty(0, dtype=TORCH_DTYPES[dtype])
    assert _C.cuda_features_per_thread(feat, like) == per_thread
    assert st.explain(None, op="spmm", k=feat, device="cuda", dtype=TORCH_DTYPES[dtype])["features_per_thread"] \
        == per_thread


def misaligned_copy(t: torch.Tensor) -> torch.Tensor:
    """t's values in a view that starts one element past an allocation."""
    s = torch.empty(t.numel() + 1, dtype=t.dtype)[1:].view(t.shape)
    s.copy_(t)
    return s


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("segments", ["0", "4"])
@pytest.mark.parametrize("feat", [64, 128])
def test_emulated_spmm_reads_a_misaligned_dense_operand_from_an_aligned_copy(emulate, monkeypatch, dtype,
                                                                              segments, feat):
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", segments)
    a = make_csr(40, 30, density=0.2, seed=3, empty_rows=(0, 5), dense_rows=(7,))
    rng = np.random.default_rng(4)
    values = to_tensor(a.values, dtype)
    b = to_tensor(rng.uniform(-1, 1, size=(a.n, feat)), dtype)
    misaligned = misaligned_copy(b)
    assert misaligned.data_ptr() % 16 != 0 and misaligned.is_contiguous()  # one element past the allocation
    indptr, indices = a.torch_structure("int64")
    for reduce in ("sum", "mean", "max"):
        out = ops.spmm(indptr, indices, values, misaligned, reduce)
        assert torch.equal(out, ops.spmm(indptr, indices, values, b, reduce))
        ref, magnitude = reference_spmm(a, values, b, reduce)
        terms = np.maximum(np.diff(a.indptr), 1)[:, None]
        assert_within_bound(out, ref, magnitude, terms, dtype, f"emulated spmm {reduce} of a misaligned operand")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_emulated_16_bit_segments_read_the_16_bit_operands(emulate, monkeypatch, dtype, reduce):
    """A cut row's segments add 16-bit products into a float32 row, rounded
    once: with small integers (exact float32 sums in any order) the same bits
    as the whole-row kernel, which sums in float32 too."""
    a = make_csr(30, 500, density=0.02, seed=9, dense_rows=(4,))  # one row of 500
    rng = np.random.default_rng(10)
    values = to_tensor(rng.integers(-3, 4, a.nnz).astype(np.float64), dtype)  # small integers: exact sums
    b = to_tensor(rng.integers(-3, 4, (a.n, 64)).astype(np.float64), dtype)
    indptr, indices = a.torch_structure("int32")
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "0")
    whole = ops.spmm(indptr, indices, values, b, reduce)
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "16")
    cut = ops.spmm(indptr, indices, values, b, reduce)
    assert torch.equal(cut, whole)
    ref, magnitude = reference_spmm(a, values, b, reduce)
    terms = np.maximum(np.diff(a.indptr), 1)[:, None]
    assert_within_bound(cut, ref, magnitude, terms, dtype, f"emulated 16-bit spmm {reduce} in segments")


@needs_nvrtc
@pytest.mark.parametrize("dtype,feat,per_lane,load", [
    ("float32", 256, 4, "ld.global.nc.v4.f32"), ("float32", 64, 2, "ld.global.nc.v2.f32"),
    ("float64", 128, 2, "ld.global.nc.v2.f64"), ("float16", 256, 8, "ld.global.nc.v4.u32"),
    ("bfloat16", 64, 2, "ld.global.nc.v2.u16")])
def test_sddmm_lanes_load_their_features_as_one_vector(dtype, feat, per_lane, load):
    """A warp per non-zero: each lane reads a round's `per_lane` consecutive
    features of X[i] and Y[j] (16 bytes where the width allows) into
    registers with one vector load each, then the lanes' parts meet in
    shuffles."""
    st.cuda_runtime.prepare_nvrtc()
    kernel = _C.op_kernel("sddmm_dot", "sddmm", dtype, "int32", {"feat_size": feat}, "cuda")
    code = body(kernel)
    assert f"X_local[{per_lane}]" in code and f"Y_local[{per_lane}]" in code, code
    assert code.count("sparsetir_vload<") == 2 and "sparsetir_lane_reduce<SparsetirSum>" in code
    ptx = _C.nvrtc_compile(kernel.source, "sddmm.cu", 90, False)["ptx"].decode()
    assert ptx.count(load) >= 2, [line for line in ptx.splitlines() if "ld.global" in line]
    narrow = body(_C.op_kernel("sddmm_dot", "sddmm", dtype, "int32", {"feat_size": 40}, "cuda"))
    assert "sparsetir_vload" not in narrow  # 40 features: no vector divides them over 32 lanes


@needs_nvrtc
@pytest.mark.parametrize("dtype,heads,feat,per_thread,load", [
    ("float32", 4, 128, 2, "ld.global.nc.v2.f32"), ("float16", 2, 128, 4, "ld.global.nc.v4.u16"),
    ("float64", 3, 16, 1, "ld.global.nc.f64")])
def test_multi_head_spmm_lanes_load_their_features_as_one_vector(dtype, heads, feat, per_thread, load):
    """csrmm_heads (GAT's aggregation, attention's dk and dv): a lane owns
    consecutive features of one head, as csrmm's lanes do."""
    st.cuda_runtime.prepare_nvrtc()
    kernel = _C.op_kernel("csrmm_heads", "csrmm_heads", dtype, "int64", {"heads": heads, "feat_size": feat}, "cuda")
    code = body(kernel)
    assert f"C_local[{per_thread}]" in code
    assert (f", {per_thread}>(&B[" in code) == (per_thread > 1), code
    ptx = _C.nvrtc_compile(kernel.source, "heads.cu", 90, False)["ptx"].decode()
    assert load in ptx


@needs_nvrtc
@pytest.mark.parametrize("dtype,heads,feat,per_lane,load", [
    ("float32", 4, 128, 4, "ld.global.nc.v4.f32"), ("float16", 2, 64, 2, "ld.global.nc.v2.u16"),
    ("bfloat16", 3, 256, 8, "ld.global.nc.v4.u32")])
def test_multi_head_sddmm_lanes_load_their_features_as_one_vector(dtype, heads, feat, per_lane, load):
    """sddmm_heads (attention scores, GAT's dot-product variants): a warp per
    (non-zero, head), each lane a round's consecutive features of the head
    in registers by one vector load of X[i, h] and of Y[j, h], as sddmm's."""
    st.cuda_runtime.prepare_nvrtc()
    kernel = _C.op_kernel("sddmm_heads", "sddmm_heads", dtype, "int32", {"heads": heads, "feat_size": feat}, "cuda")
    code = body(kernel)
    assert f"X_local[{per_lane}]" in code and f"Y_local[{per_lane}]" in code, code
    assert code.count("sparsetir_vload<") == 2 and "sparsetir_lane_reduce<SparsetirSum>" in code
    ptx = _C.nvrtc_compile(kernel.source, "heads.cu", 90, False)["ptx"].decode()
    assert ptx.count(load) >= 2, [line for line in ptx.splitlines() if "ld.global" in line]
    narrow = body(_C.op_kernel("sddmm_heads", "sddmm_heads", dtype, "int32", {"heads": heads, "feat_size": 48},
                               "cuda"))
    assert "sparsetir_vload" not in narrow and "sparsetir_lane_reduce<SparsetirSum>" in narrow


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("heads,feat", [(None, 64), (None, 256), (2, 64), (3, 128)])
def test_emulated_sddmm_reads_misaligned_operands_from_aligned_copies(emulate, dtype, heads, feat):
    """sddmm and sddmm_heads, whose lanes load vectors: operands that start
    one element past an aligned address give the bits of aligned ones."""
    a = make_csr(30, 25, density=0.2, seed=5, empty_rows=(2,), dense_rows=(4,))
    rng = np.random.default_rng(6)
    shape = (feat,) if heads is None else (heads, feat)
    x = to_tensor(rng.uniform(-1, 1, size=(a.m, *shape)), dtype)
    y = to_tensor(rng.uniform(-1, 1, size=(a.n, *shape)), dtype)
    indptr, indices = a.torch_structure("int32")
    out = ops.sddmm(indptr, indices, None, misaligned_copy(x), misaligned_copy(y))
    assert out.shape == (a.nnz, *shape[:-1])
    assert torch.equal(out, ops.sddmm(indptr, indices, None, x, y))
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    xd, yd = x.double().numpy(), y.double().numpy()
    ref = np.einsum("e...k,e...k->e...", xd[rows], yd[a.indices])
    magnitude = np.einsum("e...k,e...k->e...", np.abs(xd[rows]), np.abs(yd[a.indices]))
    assert_within_bound(out, ref, magnitude, feat, dtype, "emulated sddmm of misaligned operands")
