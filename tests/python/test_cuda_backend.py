"""The CUDA backend without a GPU, and on one when present.

1. Code generation: a schedule bound to blockIdx / threadIdx becomes a
   __global__ kernel with its launch; CPU-only schedules are refused by name.
2. The SIMT emulator runs the generated CUDA source on CPU tensors: a user's
   scheduled kernel, and the operators under SPARSETIR_EMULATE_CUDA=1 (every
   reduce, dtype, index dtype and edge case, against float64 references), with
   the race check (threads in reverse and shuffled order) giving the same bits.
3. NVRTC compiles every operator kernel for sm_80 and sm_90 and ptxas accepts
   the PTX (python -m sparsetir_torch.cuda_check), in CI.
4. On a GPU (skipped with the reason without one): the operators on CUDA
   tensors against the same references, gradients, mixed-device errors.
"""
import copy
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import (CSR_CASES, REPO_ROOT, TORCH_DTYPES, assert_within_bound, gat_reference, make_csr, needs_nvrtc,
                      read_script, to_tensor)

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = ("float32", "float64", "float16", "bfloat16")
IDTYPES = ("int32", "int64")
CASES = sorted(c for c in CSR_CASES if c not in ("no_rows",))


def gpu_schedule(text, feat=64, rows=4, lanes=32):
    """The csrmm schedule of the cuda recipe, written with the public primitives."""
    sch = st.Schedule(text)
    sch.specialize(feat_size=feat)
    i, j, k = sch.get_loops("csrmm")
    i0, i1 = sch.split(i, factors=[None, rows])
    loops = sch.get_loops("csrmm")
    sch.reorder([loops[3], loops[2]])
    loops = sch.get_loops("csrmm")
    k0, k1 = sch.split(loops[2], factors=[None, lanes])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(k0, "blockIdx.y")
    sch.bind(k1, "threadIdx.x")
    init = sch.get_loops("csrmm_init")
    ki0, ki1 = sch.split(init[2], factors=[None, lanes])
    sch.bind(ki0, "blockIdx.y")
    sch.bind(ki1, "threadIdx.x")
    sch.cache_write(k1, "C", "local")
    return sch


# --------------------------------------------------------------------------- code generation


def test_bound_loops_become_a_global_kernel():
    kernel = st.compile(gpu_schedule(read_script("csrmm")), target="cuda")
    src = kernel.source
    # Named after the script's function, so that profilers tell the ops' kernels apart.
    assert 'extern "C" __global__ void sparsetir_kernel_csrmm(' in src
    for axis in ("blockIdx.x", "blockIdx.y", "threadIdx.x", "threadIdx.y"):
        assert f"(int32_t){axis}" in src
    assert "float C_local[1];" in src
    assert "#include" not in src.split("sparsetir_kernel")[0], "NVRTC has no headers: the prelude includes nothing"


@pytest.mark.parametrize("name, symbol", [("kernel", "sparsetir_kernel_kernel"), ("f" * 300, "sparsetir_kernel"),
                                          ("sparsetir_x", "sparsetir_kernel_sparsetir_x")])
def test_the_kernel_symbol_follows_the_function_name(name, symbol):
    # A name longer than a script name may be falls back to sparsetir_kernel; the "sparsetir" prefix is the
    # generated code's own, so no parameter or buffer can take the symbol. The emulator launches it by that name.
    script = read_script("csrmm").replace("def csrmm(", f"def {name}(", 1)
    kernel = st.compile(gpu_schedule(script, feat=40), target="cuda")
    assert f'extern "C" __global__ void {symbol}(' in kernel.source
    indptr = torch.tensor([0, 2, 2, 3], dtype=torch.int32)
    indices = torch.tensor([0, 2, 1], dtype=torch.int32)
    values = torch.tensor([1.0, 2.0, 3.0])
    b = torch.arange(120, dtype=torch.float32).reshape(3, 40)
    c = torch.full((3, 40), float("nan"))
    kernel(a=values, b=b, c=c, indptr=indptr, indices=indices, m=3, n=3, feat_size=40, nnz=3)
    dense = torch.sparse_csr_tensor(indptr.long(), indices.long(), values.double(), (3, 3)).to_dense()
    torch.testing.assert_close(c.double(), dense @ b.double())


def test_parallel_loops_are_refused_for_cuda():
    sch = st.Schedule(read_script("csrmm"))
    i, j, k = sch.get_loops("csrmm")
    sch.parallel(i)
    with pytest.raises(st.ScheduleError, match="loop 'i' is parallel, a CPU schedule; for the cuda target bind it"):
        st.compile(sch, target="cuda")


def test_thread_bound_loops_are_refused_for_cpu():
    sch = gpu_schedule(read_script("csrmm"))
    with pytest.raises(st.ScheduleError, match="bound to blockIdx.x, which only a GPU target has"):
        st.compile(sch, target="cpu")


def test_bound_loop_over_a_ragged_extent_is_refused():
    sch = st.Schedule(read_script("csrmm"))
    i, j, k = sch.get_loops("csrmm")
    sch.bind(j, "threadIdx.x")
    with pytest.raises(st.ScheduleError, match="has an extent that reads a buffer"):
        st.compile(sch, target="cuda")


@pytest.mark.parametrize("axis", ["threadIdx.x", "threadIdx.y"])
def test_a_serial_init_under_threads_that_divide_the_updates_is_refused(axis):
    """csrmm's k bound to a thread axis with csrmm_init's k_init left serial:
    every thread would zero the whole row while the others accumulate into it
    (the emulator's race check sees it). Refused at compile, naming the
    buffer, the block and the loop; binding k_init as well compiles and is
    right."""
    sch = st.Schedule(read_script("csrmm"))
    sch.specialize(feat_size=4)
    i, j, k = sch.get_loops("csrmm")
    sch.bind(i, "blockIdx.x")
    sch.bind(k, axis)
    with pytest.raises(st.ScheduleError, match=rf"a store into 'C' in block 'csrmm_init' runs on every thread of "
                                                 rf"{axis}, while loop 'k' \(block 'csrmm'\) divides its other stores"):
        st.compile(sch, target="cuda")
    sch.bind(sch.get_loops("csrmm_init")[-1], axis)
    kernel = st.compile(sch, target="cuda")  # CPU tensors: run under the emulator
    c = make_csr(5, 6, density=0.5, seed=3, empty_rows=(2,))
    indptr, indices = (torch.from_numpy(x.astype(np.int32)) for x in (c.indptr, c.indices))
    b = torch.randn(6, 4, dtype=torch.float64).float()
    out = torch.full((5, 4), float("nan"))
    kernel(a=torch.from_numpy(c.values).float(), b=b, c=out, indptr=indptr, indices=indices, m=5, n=6, feat_size=4,
           nnz=c.nnz)
    torch.testing.assert_close(out.double(), torch.from_numpy(c.scipy().toarray()) @ b.double(), rtol=1e-5, atol=1e-5)


def test_unknown_target_is_named():
    with pytest.raises(ValueError, match="unknown target 'rocm'"):
        st.compile(read_script("csrmm"), target="rocm")


# --------------------------------------------------------------------------- the emulator


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", IDTYPES)
def test_emulated_user_kernel_matches_float64(dtype, idtype):
    a = make_csr(37, 29, density=0.2, seed=11, empty_rows=(0, 5, 36), dense_rows=(7,))
    kernel = st.compile(gpu_schedule(read_script("csrmm", dtype, idtype), feat=40), target="cuda")
    rng = np.random.default_rng(0)
    b64 = rng.uniform(-1, 1, size=(a.n, 40))
    values, b = to_tensor(a.values, dtype), to_tensor(b64, dtype)
    c = torch.full((a.m, 40), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    kernel(a=values, b=b, c=c, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=40, nnz=a.nnz)
    assert _C.emulated_runs() == before + 1
    sp = a.scipy(values.double().numpy())
    ref = sp @ b.double().numpy()
    magnitude = abs(sp) @ np.abs(b.double().numpy())
    assert_within_bound(c, ref, magnitude, np.diff(a.indptr)[:, None], dtype, "emulated csrmm")


def test_emulated_kernel_checks_its_arguments_like_any_kernel():
    kernel = st.compile(gpu_schedule(read_script("csrmm")), target="cuda")
    a = make_csr(5, 4, density=0.5, seed=1)
    indptr, indices = a.torch_structure("int32")
    bad = indices.clone()
    if bad.numel():
        bad[0] = 99
    with pytest.raises(ValueError, match="outside the valid range"):
        kernel(a=torch.ones(a.nnz), b=torch.ones(4, 64), c=torch.zeros(5, 64), indptr=indptr, indices=bad,
               m=5, n=4, feat_size=64, nnz=a.nnz)


@pytest.fixture
def emulate(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    yield


def reference_spmm(a, values, b, reduce):
    dense = np.zeros((a.m, a.n))
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    out = np.zeros((a.m, b.shape[1]))
    v = values.double().numpy()
    bd = b.double().numpy()
    if reduce in ("sum", "mean"):
        np.add.at(dense, (rows, a.indices), v)
        out = dense @ bd
        magnitude = np.abs(dense) @ np.abs(bd)
        if reduce == "mean":
            lengths = np.maximum(np.diff(a.indptr), 1)[:, None]
            out, magnitude = out / lengths, magnitude / lengths
        return out, magnitude
    products = v[:, None] * bd[a.indices]
    fill = -np.inf if reduce == "max" else np.inf
    out = np.full((a.m, b.shape[1]), fill)
    (np.maximum if reduce == "max" else np.minimum).at(out, rows, products)
    out[np.diff(a.indptr) == 0] = 0
    return out, np.abs(out)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64"), ("float16", "int64"),
                                           ("bfloat16", "int32")])
def test_emulated_spmm_matches_float64(emulate, case, reduce, dtype, idtype):
    check_emulated_spmm(case, reduce, dtype, idtype, seed=3)


def check_emulated_spmm(case, reduce, dtype, idtype, seed, segmented=False):
    """One emulated spmm call on a CSR edge case against the float64 reference."""
    a = make_csr(seed=seed, **CSR_CASES[case])
    rng = np.random.default_rng(seed)
    values = to_tensor(a.values, dtype)
    b = to_tensor(rng.uniform(-1, 1, size=(a.n, 37)), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.spmm(indptr, indices, values, b, reduce)
    if a.nnz if segmented else a.m:  # segments: none without non-zeros (the output is only zeroed)
        assert _C.emulated_runs() > before, "the CUDA path did not run"
    ref, magnitude = reference_spmm(a, values, b, reduce)
    terms = np.maximum(np.diff(a.indptr), 1)[:, None] + (reduce == "mean")
    assert_within_bound(out, ref, magnitude, terms, dtype, f"emulated {'segmented ' * segmented}spmm {reduce}")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype, idtype", [("float32", "int64"), ("float64", "int32"), ("bfloat16", "int64")])
@pytest.mark.parametrize("feat", [19, 72])  # a thread per non-zero; a warp per row segment (lane reduction)
def test_emulated_sddmm_matches_float64(emulate, case, dtype, idtype, feat):
    a = make_csr(seed=4, **CSR_CASES[case])
    rng = np.random.default_rng(2)
    x = to_tensor(rng.uniform(-1, 1, size=(a.m, feat)), dtype)
    y = to_tensor(rng.uniform(-1, 1, size=(a.n, feat)), dtype)
    indptr, indices = a.torch_structure(idtype)
    out = ops.sddmm(indptr, indices, None, x, y)
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    xd, yd = x.double().numpy(), y.double().numpy()
    ref = np.einsum("ek,ek->e", xd[rows], yd[a.indices]) if a.nnz else np.zeros(0)
    magnitude = np.einsum("ek,ek->e", np.abs(xd[rows]), np.abs(yd[a.indices])) if a.nnz else np.zeros(0)
    assert_within_bound(out, ref, magnitude, feat, dtype, "emulated sddmm")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_emulated_16bit_mean_rounds_once(emulate, dtype):
    before = _C.emulated_runs()
    check_16bit_mean_rounds_once(dtype, "cpu")
    assert _C.emulated_runs() > before


def check_16bit_mean_rounds_once(dtype, device):
    """csrmm_mean divides a row's float32 sum before rounding it to 16 bits:
    rows of three ones over features whose sum is exact in float32, chosen
    where rounding the sum first and then the quotient gives another value."""
    torch_dtype = TORCH_DTYPES[dtype]
    rng = np.random.default_rng(9)
    rows, feat, per_row = 8, 32, 3
    b = torch.from_numpy(rng.uniform(1, 2, size=(rows * per_row, feat))).to(torch_dtype)
    sums = b.float().view(rows, per_row, feat).sum(1)  # exact: a few 16-bit values in [1, 2)
    once = (sums / 3).to(torch_dtype)
    twice = (sums.to(torch_dtype).float() / 3).to(torch_dtype)
    assert (once != twice).any(), "no entry tells single from double rounding"
    indptr = torch.arange(0, rows * per_row + 1, per_row)
    indices = torch.arange(rows * per_row)
    values = torch.ones(rows * per_row, dtype=torch_dtype)
    out = ops.spmm(indptr.to(device), indices.to(device), values.to(device), b.to(device), "mean")
    assert out.device.type == device
    assert torch.equal(out.cpu(), once)


def test_emulated_spmm_gradients_match_the_cpu_kernels(emulate, monkeypatch):
    a = make_csr(30, 20, density=0.2, seed=5, empty_rows=(2,), dense_rows=(4,))
    indptr, indices = a.torch_structure("int32")
    values = torch.tensor(a.values, dtype=torch.float64, requires_grad=True)
    b = torch.randn(20, 8, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(lambda v, x: ops.spmm(indptr, indices, v, x, "sum"), (values, b))
    emulated = torch.autograd.grad(ops.spmm(indptr, indices, values, b, "mean").sum(), (values, b))
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    cpu = torch.autograd.grad(ops.spmm(indptr, indices, values, b, "mean").sum(), (values, b))
    for e, c in zip(emulated, cpu):
        torch.testing.assert_close(e, c)


# Multi-head kernels: (heads, features per head), one feature a head, a
# width no lane count divides, and a width beyond a warp.
HEAD_SHAPES = [(1, 1), (3, 5), (2, 40)]
HEAD_DTYPES = [("float32", "int32"), ("float64", "int64"), ("float16", "int64"), ("bfloat16", "int32")]


def check_emulated_runs(before, expected: bool):
    if expected:
        assert _C.emulated_runs() > before, "the CUDA path did not run"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("heads, feat", HEAD_SHAPES)
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_spmm_heads_matches_float64(emulate, case, reduce, heads, feat, dtype, idtype):
    a = make_csr(seed=8, **CSR_CASES[case])
    rng = np.random.default_rng(8)
    values = to_tensor(rng.uniform(-1, 1, (a.nnz, heads)), dtype)
    b = to_tensor(rng.uniform(-1, 1, (a.n, heads, feat)), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.spmm(indptr, indices, values, b, reduce)
    check_emulated_runs(before, a.m > 0)
    rows = a.rows()
    terms_v = values.double().numpy()[:, :, None] * b.double().numpy()[a.indices]
    ref, magnitude = np.zeros((a.m, heads, feat)), np.zeros((a.m, heads, feat))
    np.add.at(ref, rows, terms_v)
    np.add.at(magnitude, rows, np.abs(terms_v))
    terms = np.maximum(a.row_lengths(), 1)[:, None, None]
    if reduce == "mean":
        ref, magnitude, terms = ref / terms, magnitude / terms, terms + 1
    assert_within_bound(out, ref, magnitude, terms, dtype, f"emulated spmm heads {reduce}")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("heads", [None, 3])  # 2-D operands; 3 heads (sddmm_heads_segments)
def test_emulated_sddmm_row_segments_match_the_fused_loop_bit_for_bit(emulate, monkeypatch, dtype, idtype, heads):
    # From 32 features (a head's) the cuda sddmm walks rows in segments of 16
    # non-zeros (sddmm_segments, sddmm_heads_segments: the row given) instead
    # of searching each non-zero's row in indptr (the fused loop): the same
    # lanes sum the same products in the same order, so every bit agrees.
    # Rows of 0, 1, 15, 16, 17 and 70 non-zeros meet the segment boundary on
    # either side.
    lengths = [0, 1, 15, 16, 17, 70, 0]
    feat = 64 if heads is None else 40
    shape = (feat,) if heads is None else (heads, feat)
    rng = np.random.default_rng(6)
    indices = np.concatenate([rng.choice(80, size=n, replace=False) for n in lengths])
    indptr = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), dtype=getattr(torch, idtype))
    indices = torch.tensor(indices, dtype=getattr(torch, idtype))
    x = to_tensor(rng.uniform(-1, 1, size=(len(lengths), *shape)), dtype)
    y = to_tensor(rng.uniform(-1, 1, size=(80, *shape)), dtype)
    before = _C.emulated_runs()
    segmented = ops.sddmm(indptr, indices, None, x, y)
    assert _C.emulated_runs() == before + 1
    monkeypatch.setenv("SPARSETIR_CUDA_SDDMM_SEGMENT", "0")
    assert st.explain(None, op="sddmm", k=feat, device="cuda")["script"] == "sddmm_dot"
    fused = ops.sddmm(indptr, indices, None, x, y)
    assert torch.equal(segmented, fused)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    xd, yd = x.double().numpy(), y.double().numpy()
    ref = np.einsum("e...k,e...k->e...", xd[rows], yd[indices.numpy()])
    magnitude = np.einsum("e...k,e...k->e...", np.abs(xd[rows]), np.abs(yd[indices.numpy()]))
    assert_within_bound(segmented, ref, magnitude, feat, dtype, "emulated sddmm over row segments")


def test_a_bad_sddmm_segment_setting_is_named(emulate, monkeypatch):
    monkeypatch.setenv("SPARSETIR_CUDA_SDDMM_SEGMENT", "-3")
    a = make_csr(6, 5, density=0.9, seed=1)
    indptr, indices = a.torch_structure("int32")
    with pytest.raises(ValueError, match="SPARSETIR_CUDA_SDDMM_SEGMENT must be a non-negative number of non-zeros"):
        ops.sddmm(indptr, indices, None, torch.ones(6, 32), torch.ones(5, 32))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("heads, feat", HEAD_SHAPES)
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_sddmm_heads_matches_float64(emulate, case, heads, feat, dtype, idtype):
    a = make_csr(seed=9, **CSR_CASES[case])
    rng = np.random.default_rng(9)
    x = to_tensor(rng.uniform(-1, 1, (a.m, heads, feat)), dtype)
    y = to_tensor(rng.uniform(-1, 1, (a.n, heads, feat)), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.sddmm(indptr, indices, None, x, y, "dot")
    check_emulated_runs(before, a.nnz > 0)
    assert out.shape == (a.nnz, heads)
    xr, yr = x.double().numpy()[a.rows()], y.double().numpy()[a.indices]
    ref, magnitude = (xr * yr).sum(-1), np.abs(xr * yr).sum(-1)
    assert_within_bound(out, ref, magnitude, feat, dtype, "emulated sddmm heads")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("op", ["add", "mul"])
@pytest.mark.parametrize("trailing", [(1,), (4,), (2, 3)])
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_sddmm_elementwise_matches_float64(emulate, case, op, trailing, dtype, idtype):
    a = make_csr(seed=10, **CSR_CASES[case])
    rng = np.random.default_rng(10)
    x = to_tensor(rng.uniform(-1, 1, (a.m, *trailing)), dtype)
    y = to_tensor(rng.uniform(-1, 1, (a.n, *trailing)), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.sddmm(indptr, indices, None, x, y, op)
    check_emulated_runs(before, a.nnz > 0)
    xr, yr = x.double().numpy()[a.rows()], y.double().numpy()[a.indices]
    ref = xr + yr if op == "add" else xr * yr
    # One rounding of an exact sum or product of two rounded inputs.
    magnitude = np.abs(xr) + np.abs(yr) if op == "add" else np.abs(ref)
    assert_within_bound(out, ref, magnitude, 1, dtype, f"emulated sddmm {op}")


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("heads", [None, 1, 3])
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_edge_softmax_matches_float64(emulate, case, heads, dtype, idtype):
    a = make_csr(seed=13, **CSR_CASES[case])
    rng = np.random.default_rng(13)
    shape = (a.nnz,) if heads is None else (a.nnz, heads)
    scores = to_tensor(rng.uniform(-4, 4, shape), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.edge_softmax(indptr, indices, scores)
    check_emulated_runs(before, a.nnz > 0)
    assert out.shape == scores.shape and out.dtype == scores.dtype
    s = scores.double().numpy().reshape(a.nnz, heads or 1)
    ref = np.zeros_like(s)
    for i in range(a.m):
        lo, hi = a.indptr[i], a.indptr[i + 1]
        if hi > lo:
            e = np.exp(s[lo:hi] - s[lo:hi].max(0))
            ref[lo:hi] = e / e.sum(0)
    # exp, the sum and the division in float32 (float64), rounded once to the dtype.
    got = out.double().numpy().reshape(a.nnz, heads or 1)
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("heads", [None, 4])
def test_emulated_edge_softmax_gradients_match_the_cpu_kernels(emulate, monkeypatch, heads):
    a = make_csr(30, 20, density=0.2, seed=14, empty_rows=(2, 9), dense_rows=(4,))
    indptr, indices = a.torch_structure("int64")
    gen = torch.Generator().manual_seed(14)
    shape = (a.nnz,) if heads is None else (a.nnz, heads)
    scores = torch.randn(shape, dtype=torch.float64, generator=gen, requires_grad=True)
    weight = torch.randn(shape, dtype=torch.float64, generator=gen)
    torch.autograd.gradcheck(lambda s: ops.edge_softmax(indptr, indices, s), (scores,))
    before = _C.emulated_runs()
    emulated = torch.autograd.grad((ops.edge_softmax(indptr, indices, scores) * weight).sum(), scores)
    assert _C.emulated_runs() >= before + 2, "the forward and the backward kernels ran emulated"
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    cpu = torch.autograd.grad((ops.edge_softmax(indptr, indices, scores) * weight).sum(), scores)
    torch.testing.assert_close(emulated[0], cpu[0], rtol=1e-12, atol=1e-12)


def reference_attention(a, q, k, v, scale):
    """float64, per non-zero (a duplicated column is two terms): the softmax of
    scale * q_i . k_j over row i's non-zeros, times v_j; (heads, L, Dv)."""
    qd, kd, vd = (t.double().numpy() for t in (q, k, v))
    out = np.zeros(qd.shape[:-1] + vd.shape[-1:])
    for i in range(a.m):
        cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
        if len(cols):
            s = np.einsum("hd,hjd->hj", qd[:, i], kd[:, cols]) * scale
            p = np.exp(s - s.max(-1, keepdims=True))
            out[:, i] = np.einsum("hj,hjd->hd", p / p.sum(-1, keepdims=True), vd[:, cols])
    return out


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_sparse_attention_matches_float64(emulate, case, dtype, idtype):
    a = make_csr(seed=16, **CSR_CASES[case])
    rng = np.random.default_rng(16)
    lead, D, Dv = (2, 3), 8, 5  # batch 2 x 3 heads
    q = to_tensor(rng.standard_normal(lead + (a.m, D)), dtype)
    k = to_tensor(rng.standard_normal(lead + (a.n, D)), dtype)
    v = to_tensor(rng.standard_normal(lead + (a.n, Dv)), dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.sparse_attention(indptr, indices, q, k, v)
    check_emulated_runs(before, a.nnz > 0)
    assert out.shape == lead + (a.m, Dv) and out.dtype == q.dtype
    ref = reference_attention(a, q.reshape(6, a.m, D), k.reshape(6, a.n, D), v.reshape(6, a.n, Dv), D**-0.5)
    # Computed in float32 (float64) and rounded once to the dtype: a weighted
    # mean of values of magnitude < 5.
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 4e-2}[dtype]
    np.testing.assert_allclose(out.double().numpy().reshape(6, a.m, Dv), ref, rtol=0, atol=tol)


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_emulated_sparse_attention_gradients_match_the_cpu_kernels(emulate, monkeypatch, idtype):
    # On cuda every head runs at once: the forward is one launch of the
    # online-softmax kernel (kernels/sparse_attention_online.py); the backward
    # one of kernels/sparse_attention_backward_online.py (P, dS and dq), then
    # two multi-head spmm over the transposed pattern (dk, dv).
    a = make_csr(30, 20, density=0.2, seed=17, empty_rows=(2, 9), dense_rows=(4,))
    indptr, indices = a.torch_structure(idtype)
    gen = torch.Generator().manual_seed(17)
    q = torch.randn(2, 30, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    k = torch.randn(2, 20, 6, dtype=torch.float64, generator=gen, requires_grad=True)
    v = torch.randn(2, 20, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    weight = torch.randn(2, 30, 4, dtype=torch.float64, generator=gen)

    def attention(q, k, v):
        return ops.sparse_attention(indptr, indices, q, k, v, 0.7)

    torch.autograd.gradcheck(attention, (q, k, v))
    before = _C.emulated_runs()
    out = attention(q, k, v)
    assert _C.emulated_runs() == before + 1, "the forward is one emulated launch"
    emulated = torch.autograd.grad((out * weight).sum(), (q, k, v))
    assert _C.emulated_runs() == before + 1 + 3, "every backward kernel ran emulated"
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    cpu = torch.autograd.grad((attention(q, k, v) * weight).sum(), (q, k, v))
    for e, c in zip(emulated, cpu):
        torch.testing.assert_close(e, c, rtol=1e-12, atol=1e-12)


GAT_SLOPE = 0.2


def gat_inputs(case, dtype):
    """(csr, a_dst, a_src, x) of a gat_attention test: 3 heads of 4 features."""
    a = make_csr(seed=18, **CSR_CASES[case])
    rng = np.random.default_rng(18)
    heads, feat = 3, 4
    a_dst = to_tensor(rng.uniform(-3, 3, (a.m, heads)), dtype)
    a_src = to_tensor(rng.uniform(-3, 3, (a.n, heads)), dtype)
    x = to_tensor(rng.standard_normal((a.n, heads, feat)), dtype)
    return a, a_dst, a_src, x


def check_gat(out, a, a_dst, a_src, x, dtype):
    """out against the float64 reference, within one rounding to dtype."""
    assert out.shape == (a.m,) + tuple(x.shape[1:]) and out.dtype == x.dtype
    ref, _ = gat_reference(a, a_dst.double().numpy(), a_src.double().numpy(), x.double().numpy(), GAT_SLOPE)
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 4e-2}[dtype]
    np.testing.assert_allclose(out.double().cpu().numpy(), ref, rtol=0, atol=tol)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_emulated_gat_attention_matches_float64(emulate, case, dtype, idtype):
    a, a_dst, a_src, x = gat_inputs(case, dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = ops.gat_attention(indptr, indices, a_dst, a_src, x, GAT_SLOPE)
    check_emulated_runs(before, a.nnz > 0)
    check_gat(out, a, a_dst, a_src, x, dtype)


def gat_edgewise_reference(a, a_dst, a_src, x):
    """gat_attention in float64, row by row over the stored non-zeros (a duplicate is an edge of its own), for
    torch.autograd: (out, leaves)."""
    leaves = [t.detach().double().requires_grad_() for t in (a_dst, a_src, x)]
    d, s_, xs = leaves
    rows = []
    for i in range(a.m):
        cols = torch.as_tensor(a.indices[a.indptr[i]:a.indptr[i + 1]], dtype=torch.long)
        if cols.numel() == 0:
            rows.append(torch.zeros(xs.shape[1:], dtype=torch.float64))
            continue
        probs = torch.softmax(torch.nn.functional.leaky_relu(d[i] + s_[cols], GAT_SLOPE), 0)  # (edges, heads)
        rows.append((probs[:, :, None] * xs[cols]).sum(0))
    # (+ 0 x every leaf: without a non-zero, the output still has a gradient, zero)
    return torch.stack(rows) + 0 * sum(t.sum() for t in leaves), leaves


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64")])
def test_emulated_gat_attention_gradients_match_float64(emulate, case, dtype, idtype):
    # The backward's spmm over the transpose reads the probabilities of 3 heads per non-zero in the transpose's
    # order: rows of 12 or 24 bytes, which the cuda path gathers element by element (gather_rows.h).
    a, a_dst, a_src, x = gat_inputs(case, dtype)
    indptr, indices = a.torch_structure(idtype)
    inputs = [t.clone().requires_grad_() for t in (a_dst, a_src, x)]
    out = ops.gat_attention(indptr, indices, *inputs, GAT_SLOPE)
    upstream = torch.randn(out.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    grads = torch.autograd.grad(out, inputs, upstream.to(out.dtype))
    ref_out, leaves = gat_edgewise_reference(a, a_dst, a_src, x)
    refs = torch.autograd.grad(ref_out, leaves, upstream)
    tol = {"float64": 1e-10, "float32": 1e-4}[dtype]
    for name, got, want in zip(("a_dst", "a_src", "x"), grads, refs):
        torch.testing.assert_close(got.double(), want, rtol=0, atol=tol, msg=lambda m: f"{name}: {m}")


def random_bsr(mb, nb, block_h, block_w, density, seed, idtype, empty_rows=()):
    """A BSR structure of mb x nb blocks (the rows in empty_rows empty, every
    other one with at least one block) and its blocks."""
    rng = np.random.default_rng(seed)
    mask = rng.random((mb, nb)) < density
    mask[np.arange(mb), rng.integers(0, nb, mb)] = True  # every row holds a block
    for r in empty_rows:
        mask[r] = False
    indptr = np.concatenate([[0], np.cumsum(mask.sum(1))])
    indices = np.nonzero(mask)[1]
    t = {"int32": torch.int32, "int64": torch.int64}[idtype]
    blocks = rng.uniform(-1, 1, (len(indices), block_h, block_w))
    return torch.tensor(indptr, dtype=t), torch.tensor(indices, dtype=t), blocks


def bsr_dense(indptr, indices, blocks, mb, nb):
    bh, bw = blocks.shape[1:]
    dense = np.zeros((mb * bh, nb * bw))
    for r in range(mb):
        for e in range(int(indptr[r]), int(indptr[r + 1])):
            c = int(indices[e])
            dense[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw] = blocks[e]
    return dense


# (block_h, block_w): 1 x 1, non-square, a full warp square, more rows than
# a block of threads holds (block_h > 128: bsr_linear's rows over two grid
# slices).
BLOCK_SHAPES = [(1, 1), (2, 3), (16, 8), (32, 32), (130, 2)]


@pytest.mark.parametrize("block", BLOCK_SHAPES)
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64"), ("bfloat16", "int64")])
def test_emulated_bsrmm_and_bsr_linear_match_float64(emulate, block, dtype, idtype):
    bh, bw = block
    mb, nb = (3, 4) if bh * bw > 256 else (6, 7)
    indptr, indices, blocks = random_bsr(mb, nb, bh, bw, 0.4, seed=bh * 7 + bw, idtype=idtype, empty_rows=(1,))
    w = bsr_dense(indptr, indices, blocks, mb, nb)
    blocks_t = to_tensor(blocks, dtype)
    rng = np.random.default_rng(16)
    b = to_tensor(rng.uniform(-1, 1, (nb * bw, 37)), dtype)
    x = to_tensor(rng.uniform(-1, 1, (2, 3, nb * bw)), dtype)
    before = _C.emulated_runs()
    out = ops.bsrmm(indptr, indices, blocks_t, b)
    y = ops.bsr_linear(x, indptr, indices, blocks_t)
    assert _C.emulated_runs() >= before + 2, "the CUDA path did not run"
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), mb, nb)
    ref = wd @ b.double().numpy()
    assert_within_bound(out, ref, np.abs(wd) @ np.abs(b.double().numpy()), nb * bw, dtype, "emulated bsrmm")
    xd = x.double().numpy()
    assert_within_bound(y, xd @ wd.T, np.abs(xd) @ np.abs(wd.T), nb * bw, dtype, "emulated bsr_linear")
    assert w.shape == wd.shape


@pytest.mark.parametrize("block", [(2, 3), (32, 32)])
def test_emulated_block_sparse_gradients_match_the_cpu_kernels(emulate, monkeypatch, block):
    # bsrmm's backward runs bsrmm on the transpose; bsr_linear's, bsr_linear
    # on the transpose and the grad_blocks kernel (a thread per block element).
    bh, bw = block
    indptr, indices, blocks = random_bsr(4, 3, bh, bw, 0.5, seed=17, idtype="int64", empty_rows=(2,))
    gen = torch.Generator().manual_seed(17)
    blocks = torch.tensor(blocks, requires_grad=True)
    b = torch.randn(3 * bw, 5, dtype=torch.float64, generator=gen, requires_grad=True)
    x = torch.randn(6, 3 * bw, dtype=torch.float64, generator=gen, requires_grad=True)

    def both(w, d, v):
        return ops.bsrmm(indptr, indices, w, d).square().sum() + ops.bsr_linear(v, indptr, indices, w).square().sum()

    if bh * bw <= 6:
        torch.autograd.gradcheck(lambda w, d, v: ops.bsrmm(indptr, indices, w, d), (blocks, b, x[:0]))
        torch.autograd.gradcheck(lambda w, v: ops.bsr_linear(v, indptr, indices, w), (blocks, x))
    before = _C.emulated_runs()
    emulated = torch.autograd.grad(both(blocks, b, x), (blocks, b, x))
    assert _C.emulated_runs() >= before + 5
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    cpu = torch.autograd.grad(both(blocks, b, x), (blocks, b, x))
    for e, c in zip(emulated, cpu):
        torch.testing.assert_close(e, c, rtol=1e-12, atol=1e-12)


# The SIMT bsrmm's register tiles: rows x features outputs a thread (as
# many rows as divide the block's, up to 4), a 16-byte vector of features
# and of a block row's columns where the widths allow, the block's rows over
# up to 128 / lanes threads and the rest over blockIdx.z.
@pytest.mark.parametrize("dtype, block, feat, tile", [
    ("float32", (32, 32), 256, dict(rows=4, features=4, columns=4, lanes=32, row_threads=4, row_slices=2)),
    ("float32", (32, 32), 64, dict(rows=4, features=4, columns=4, lanes=16, row_threads=8, row_slices=1)),
    ("float64", (32, 32), 256, dict(rows=4, features=2, columns=2, lanes=32, row_threads=4, row_slices=2)),
    ("float16", (4, 8), 20, dict(rows=4, features=4, columns=4, lanes=8, row_threads=1, row_slices=1)),
    ("float32", (130, 2), 37, dict(rows=2, features=1, columns=2, lanes=32, row_threads=1, row_slices=65)),
    ("float32", (1, 1), 6, dict(rows=1, features=2, columns=1, lanes=4, row_threads=1, row_slices=1)),
])
def test_bsrmm_register_tile_choice(monkeypatch, dtype, block, feat, tile):
    monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    like = torch.empty(0, dtype=TORCH_DTYPES[dtype])
    assert _C.cuda_bsrmm_tile(*block, feat, like) == tile
    monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", "8")
    assert _C.cuda_bsrmm_tile(*block, feat, like)["rows"] == max(r for r in range(1, 9) if block[0] % r == 0)
    monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", "0")
    assert _C.cuda_bsrmm_tile(*block, feat, like)["rows"] == 0


@pytest.mark.parametrize("script,sizes,serial", [
    # 8,388,736 features: 65,537 windows of 32 lanes x 4.
    ("bsrmm", {"block_h": 32, "block_w": 32, "feat_size": 65536 * 128 + 128}, "f_init_0"),
    # 2^25 rows of a block: 65,536 slices of 128 threads x 4 rows.
    ("bsrmm", {"block_h": 65536 * 512, "block_w": 4, "feat_size": 4}, "bi_init_0"),
    ("bsr_linear", {"block_h": 65536 * 128 + 128, "block_w": 4}, "bi_init_0"),
])
def test_register_tiles_past_the_grid_stay_serial(monkeypatch, script, sizes, serial):
    """A grid has at most 65,535 blocks along y and z: windows or slices past
    that stay a loop in every thread instead of a launch CUDA refuses."""
    monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    trace = _C.recipe_trace(script, script, "float32", "int32", sizes, "cuda")
    assert f'sch.bind("{serial}"' not in trace and f'sch.merge(["{serial}"' in trace, trace
    smaller = dict(sizes)
    smaller["block_h" if serial == "bi_init_0" else "feat_size"] = 4096
    assert f'sch.bind("{serial}"' in _C.recipe_trace(script, script, "float32", "int32", smaller, "cuda")


@pytest.mark.parametrize("value", ["17", "-1", "four"])
def test_bsrmm_rows_setting_is_checked(monkeypatch, value):
    monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", value)
    with pytest.raises(ValueError, match=f"SPARSETIR_CUDA_BSRMM_ROWS must be a number of rows per thread from 1 "
                                         f"to 16, or 0 \\(one output per thread\\), got '{value}'"):
        _C.cuda_bsrmm_tile(32, 32, 64, torch.empty(0))


@pytest.mark.parametrize("block_rows, feat, rows", [(1024, 256, 4), (128, 256, 2), (128, 64, 1), (1, 64, 1)])
def test_bsrmm_takes_fewer_rows_where_four_would_leave_warps_idle(monkeypatch, block_rows, feat, rows):
    # The emulator stands for an H100 (132 x 64 resident warps): 4 rows a
    # thread while the launch has a quarter of them (2,112 warps). 128 block
    # rows of 32 x 32 at K = 256 have 2,048 warps of 4-row tiles, 4,096 of
    # 2-row ones; at K = 64 (16 lanes, one window) 512 and 1,024: 1 row.
    monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    like = torch.empty(0)
    assert _C.cuda_bsrmm_tile(32, 32, feat, like, block_rows)["rows"] == rows
    assert _C.cuda_bsrmm_tile(32, 32, feat, like)["rows"] == 4  # no structure: the recipe's 4
    monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", "8")
    assert _C.cuda_bsrmm_tile(32, 32, feat, like, block_rows)["rows"] == 8  # the setting wins


def test_explain_shows_the_bsrmm_register_tile(monkeypatch):
    monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    a = torch.randn(64, 64).to_sparse_bsr((32, 32))
    plan = st.explain(a, op="bsrmm", k=256, device="cuda")
    tile = _C.cuda_bsrmm_tile(32, 32, 256, torch.empty(0), 2)  # a's 2 block rows, on the emulated device
    assert plan["tile"] == tile and tile["rows"] == 1
    assert f'sch.split("bi", factors=[None, {tile["row_threads"]}, 1])' in plan["schedule"]
    assert 'sch.cache_read("bj_0", "A", "local")' in plan["schedule"]
    assert "tile" not in st.explain(a, op="bsrmm", k=256, device="cuda", dtype=torch.float16)  # tensor cores
    monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", "0")  # one output per thread, as the operator would run
    plan = st.explain(a, op="bsrmm", k=256, device="cuda")
    assert plan["tile"]["rows"] == 0 and "cache_read" not in plan["schedule"]
    assert 'sch.bind("bi", "blockIdx.z")' in plan["schedule"]


# Rows a thread (unset: 1 for these few block rows, where the occupancy rule
# takes fewer rows), blocks whose sides the tiles divide or not, widths whose
# vectors fill the lanes or leave some idle (20: 5 of 8 lanes; 37: 37 of
# 64), every value dtype on its SIMT path.
@pytest.mark.parametrize("rows", [None, "0", "2", "3", "4", "8"])
@pytest.mark.parametrize("block, feat", [((32, 32), 64), ((4, 8), 20), ((6, 3), 37), ((16, 16), 40)])
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64"), ("float16", "int32")])
def test_emulated_bsrmm_register_tiles_match_float64(emulate, monkeypatch, rows, block, feat, dtype, idtype):
    if rows is None:
        monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    else:
        monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", rows)
    bh, bw = block
    indptr, indices, blocks = random_bsr(5, 4, bh, bw, 0.5, seed=bh + bw + feat, idtype=idtype, empty_rows=(2,))
    blocks_t = to_tensor(blocks, dtype)
    b = to_tensor(np.random.default_rng(feat).uniform(-1, 1, (4 * bw, feat)), dtype)
    before = _C.emulated_runs()
    out = ops.bsrmm(indptr, indices, blocks_t, b)
    assert _C.emulated_runs() == before + 1, "the CUDA path did not run"
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), 5, 4)
    ref = wd @ b.double().numpy()
    assert_within_bound(out, ref, np.abs(wd) @ np.abs(b.double().numpy()), 4 * bw, dtype, "emulated bsrmm tiles")
    assert torch.all(out[2 * bh:3 * bh] == 0), "an empty block row gives zeros"


def test_bsr_linear_threads_own_a_vector_of_outputs(monkeypatch):
    # A thread's 4 outputs of a block row (float32) sum in registers: per 4
    # columns of a block one vector of the batch row and 4 of WT's rows.
    monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    source = _C.op_kernel("bsr_linear", "bsr_linear", "float32", "int32", {"block_h": 32, "block_w": 32},
                          "cuda").source
    assert "float Y_local[4];" in source and "float WT_local[16];" in source and "float X_local[4];" in source
    assert "sparsetir_vload<float, 4>(&WT[" in source and "sparsetir_vload<float, 4>(&X[" in source
    earlier = _C.op_kernel("bsr_linear", "bsr_linear", "float32", "int32",
                           {"block_h": 32, "block_w": 32, "rows_per_thread": 0}, "cuda").source
    assert "float Y_local[1];" in earlier and "WT_local" not in earlier


# Blocks whose rows the vectors divide or not (20: a window of 32 outputs,
# 5 of 8 lanes busy), odd blocks, rows over several windows (130), batches
# that do not fill a block of threads; the earlier kernel (rows "0") alike.
@pytest.mark.parametrize("rows", [None, "0"])
@pytest.mark.parametrize("block", [(32, 32), (20, 8), (6, 3), (130, 2)])
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64"), ("float16", "int32")])
def test_emulated_bsr_linear_register_tiles_match_float64(emulate, monkeypatch, rows, block, dtype, idtype):
    if rows is None:
        monkeypatch.delenv("SPARSETIR_CUDA_BSRMM_ROWS", raising=False)
    else:
        monkeypatch.setenv("SPARSETIR_CUDA_BSRMM_ROWS", rows)
    bh, bw = block
    indptr, indices, blocks = random_bsr(4, 5, bh, bw, 0.5, seed=bh * 3 + bw, idtype=idtype, empty_rows=(1,))
    blocks_t = to_tensor(blocks, dtype)
    x = to_tensor(np.random.default_rng(bh).uniform(-1, 1, (3, 7, 5 * bw)), dtype)  # 21 batch rows
    before = _C.emulated_runs()
    y = ops.bsr_linear(x, indptr, indices, blocks_t)
    assert _C.emulated_runs() == before + 1, "the CUDA path did not run"
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), 4, 5)
    xd = x.double().numpy()
    assert_within_bound(y, xd @ wd.T, np.abs(xd) @ np.abs(wd.T), 5 * bw, dtype, "emulated bsr_linear tiles")
    assert torch.all(y[..., bh:2 * bh] == 0), "an empty block row gives zeros"


def test_emulated_multi_head_gradients_match_the_cpu_kernels(emulate, monkeypatch):
    # The backward of a multi-head spmm runs sddmm heads and a per-head spmm
    # on the transpose; of sddmm add, sums by row and column.
    a = make_csr(30, 20, density=0.2, seed=11, empty_rows=(2,), dense_rows=(4,))
    indptr, indices = a.torch_structure("int32")
    gen = torch.Generator().manual_seed(11)
    values = torch.randn(a.nnz, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    b = torch.randn(20, 3, 4, dtype=torch.float64, generator=gen, requires_grad=True)
    x = torch.randn(30, 3, dtype=torch.float64, generator=gen, requires_grad=True)
    y = torch.randn(20, 3, dtype=torch.float64, generator=gen, requires_grad=True)

    def layer(v, d, s, t):
        scores = ops.sddmm(indptr, indices, None, s, t, "add") * ops.sddmm(indptr, indices, None, s, t, "mul")
        return ops.spmm(indptr, indices, v * scores, d, "sum")

    torch.autograd.gradcheck(layer, (values, b, x, y))
    before = _C.emulated_runs()
    emulated = torch.autograd.grad(layer(values, b, x, y).square().sum(), (values, b, x, y))
    assert _C.emulated_runs() > before
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    cpu = torch.autograd.grad(layer(values, b, x, y).square().sum(), (values, b, x, y))
    for e, c in zip(emulated, cpu):
        torch.testing.assert_close(e, c, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reduce", ["sum", "mean"])
@pytest.mark.parametrize("dtype, idtype", [("float32", "int32"), ("float64", "int64"), ("float32", "int64"),
                                           ("float16", "int32"), ("bfloat16", "int64")])
def test_emulated_spmm_over_row_segments_matches_float64(emulate, monkeypatch, case, reduce, dtype, idtype):
    # Segments of 3 non-zeros: every row longer than that is the work of
    # several thread groups adding into one output row.
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "3")
    check_emulated_spmm(case, reduce, dtype, idtype, seed=6, segmented=True)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_only_the_segments_of_split_rows_add_atomically(dtype):
    # A row of one segment is stored (one vector a lane, rounded once); the
    # segments of a row cut in several add into the workspace W, never into C.
    source = _C.op_kernel("csrmm_segments", "csrmm_segments", dtype, "int32", {"feat_size": 128, "divide": 0},
                          "cuda").source
    assert "sparsetir_atomic_add(&W[" in source and "sparsetir_atomic_add(&C[" not in source
    assert "sparsetir_vstore(&C[" in source


def test_emulated_segments_of_a_long_row_and_their_gradients(emulate, monkeypatch):
    a = make_csr(40, 300, density=0.02, seed=7, empty_rows=(0, 39), dense_rows=(5, 6))
    indptr, indices = a.torch_structure("int64")
    values = torch.tensor(a.values, dtype=torch.float64, requires_grad=True)
    b = torch.randn(300, 5, dtype=torch.float64, requires_grad=True)
    whole = ops.spmm(indptr, indices, values, b, "sum")
    for length in ("1", "7", "64", "299", "300"):
        monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", length)
        torch.testing.assert_close(ops.spmm(indptr, indices, values, b, "sum"), whole, rtol=1e-12, atol=1e-12)
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "16")
    torch.autograd.gradcheck(lambda v, x: ops.spmm(indptr, indices, v, x, "sum"), (values, b))


@pytest.mark.parametrize("per_thread", ["1", "2", "4", "8"])
@pytest.mark.parametrize("feat", [32, 64, 96, 256])
@pytest.mark.parametrize("segments", ["0", "5"])
def test_emulated_spmm_with_features_per_thread_matches_float64(emulate, monkeypatch, per_thread, feat, segments):
    # A thread owns `per_thread` consecutive features where 32 x that many
    # divide the width (96: one), its window of the output row in registers.
    monkeypatch.setenv("SPARSETIR_CUDA_FEATURES_PER_THREAD", per_thread)
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", segments)
    a = make_csr(50, 40, density=0.15, seed=11, empty_rows=(0, 3), dense_rows=(7,))
    rng = np.random.default_rng(6)
    values = to_tensor(a.values, "float32")
    b = to_tensor(rng.uniform(-1, 1, size=(a.n, feat)), "float32")
    indptr, indices = a.torch_structure("int32")
    for reduce in ("sum", "max"):
        out = ops.spmm(indptr, indices, values, b, reduce)
        ref, magnitude = reference_spmm(a, values, b, reduce)
        terms = np.maximum(np.diff(a.indptr), 1)[:, None]
        assert_within_bound(out, ref, magnitude, terms, "float32", f"emulated spmm {reduce}, {per_thread} per thread")


def test_a_thread_of_the_wide_recipe_caches_only_its_own_features():
    source = _C.op_kernel_source("csrmm", "csrmm", "float32", "int32", {"feat_size": 128, "features_per_thread": 4},
                                 "cuda")
    assert "C_local[4]" in source and "C_local[128]" not in source
    # 96 features: 32 x 4 does not divide them, nor 32 x 2: one feature a thread
    narrow = _C.op_kernel_source("csrmm", "csrmm", "float32", "int32", {"feat_size": 96, "features_per_thread": 4},
                                 "cuda")
    assert "C_local[1]" in narrow


def test_explain_shows_the_cuda_recipes_of_mean_and_sddmm():
    mean = st.explain(None, op="spmm_mean", k=64, device="cuda")
    assert mean["script"] == "csrmm_mean" and mean["features_per_thread"] == 1
    assert 'sch.merge(["i", "i_1"])' in mean["schedule"]  # the division's row loop joins the sum's
    assert "C_local = sch.cache_write(" in mean["schedule"]
    sddmm = st.explain(None, op="sddmm", k=64, device="cuda")
    # From 32 features a warp per row segment of 16 non-zeros, a lane per feature pair.
    assert sddmm["script"] == "sddmm_segments" and sddmm["row_segment"] == 16
    assert 'sch.bind("k_1", "threadIdx.x")' in sddmm["schedule"]
    assert 'sch.bind("s_1", "threadIdx.y")' in sddmm["schedule"]
    narrow = st.explain(None, op="sddmm", k=16, device="cuda")
    assert narrow["script"] == "sddmm_dot" and narrow["row_segment"] == 0
    assert 'sch.bind("ij_1", "threadIdx.x")' in narrow["schedule"]  # a thread per non-zero below 32 features
    with pytest.raises(ValueError, match="ops with a cuda recipe are \\['attention', 'bsrmm', 'sddmm', 'spmm', "
                                         "'spmm_mean'\\]"):
        st.explain(None, op="edge_softmax", k=64, device="cuda")


def test_a_bad_features_per_thread_setting_is_named(emulate, monkeypatch):
    monkeypatch.setenv("SPARSETIR_CUDA_FEATURES_PER_THREAD", "9")
    a = make_csr(6, 5, density=0.9, seed=1)
    indptr, indices = a.torch_structure("int32")
    with pytest.raises(ValueError, match="SPARSETIR_CUDA_FEATURES_PER_THREAD must be a number of features from 1 to 8"):
        ops.spmm(indptr, indices, torch.ones(a.nnz), torch.ones(5, 4))


def test_rows_are_cut_only_where_the_longest_would_outlast_the_others(emulate, monkeypatch):
    # The emulator stands for an H100 (132 x 64 resident warps): rows are cut
    # into segments of 64 when the longest is longer than 128 and than 2 x
    # the average work of a warp (non-zeros x feature tiles / warps).
    monkeypatch.delenv("SPARSETIR_CUDA_ROW_SEGMENT", raising=False)
    monkeypatch.delenv("SPARSETIR_CUDA_FEATURES_PER_THREAD", raising=False)
    def sparse(c):
        return torch.sparse_csr_tensor(*c.torch_structure("int64"), torch.from_numpy(c.values), c.shape)

    hub = sparse(make_csr(400, 3000, density=0.002, seed=12, dense_rows=(9,)))  # one row of 3,000
    flat = sparse(make_csr(400, 60, density=0.5, seed=12))                      # rows of about 30
    assert st.explain(hub, op="spmm", k=128, device="cuda")["row_segment"] == 64
    assert st.explain(flat, op="spmm", k=128, device="cuda")["row_segment"] == 0
    two_segments = sparse(make_csr(400, 128, density=0.01, seed=12, dense_rows=(9,)))  # longest row 128
    assert st.explain(two_segments, op="spmm", k=32, device="cuda")["row_segment"] == 0
    # 1.5M non-zeros and one row of 1,000 at K = 128: float32 (2 features a
    # thread, 2 tiles of 64) average 355, 2 x 355 < 1,000; float16 (4 a
    # thread, one tile of 128) average 177. 16-bit segments read the 16-bit
    # operands, so the rule is the same.
    middle = sparse(make_csr(20000, 1000, density=0.075, seed=14, dense_rows=(9,)))
    assert st.explain(middle, op="spmm", k=128, device="cuda")["row_segment"] == 64
    half = st.explain(middle.to(torch.float16), op="spmm", k=128, device="cuda")
    assert half["row_segment"] == 64 and half["features_per_thread"] == 4
    # Enough non-zeros that every warp has more work than the hub row: whole.
    wide = sparse(make_csr(20000, 1000, density=0.2, seed=13, dense_rows=(9,)))  # 4M non-zeros, one row of 1,000
    assert st.explain(wide, op="spmm", k=128, device="cuda")["row_segment"] == 0
    explained = st.explain(hub, op="spmm", k=128, device="cuda")
    assert explained["script"] == "csrmm_segments" and explained["features_per_thread"] == 2
    # The segments kernel binds its own threads; the recipe sizes them: 32 lanes of 2 features, 4 segments a block.
    assert "sch.specialize(group=4, lanes=32, per_thread=2)" in explained["schedule"]
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "0")
    assert st.explain(hub, op="spmm", k=128, device="cuda")["row_segment"] == 0
    torch.use_deterministic_algorithms(True)
    try:
        monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "8")
        assert st.explain(hub, op="spmm", k=128, device="cuda")["row_segment"] == 0  # atomics add in any order
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("value", ["-1", "12x", "4096000000"])
def test_a_bad_row_segment_setting_is_named(emulate, monkeypatch, value):
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", value)
    a = make_csr(6, 5, density=0.9, seed=1)
    indptr, indices = a.torch_structure("int32")
    with pytest.raises(ValueError, match="SPARSETIR_CUDA_ROW_SEGMENT must be a non-negative number"):
        ops.spmm(indptr, indices, torch.ones(a.nnz), torch.ones(5, 4))


RACE_CHILD = r"""
import os, sys, torch
import sparsetir_torch as st
torch.manual_seed(0)
draw = (lambda *s: torch.randint(-3, 4, s).float()) if os.environ["RACE_INTEGERS"] == "1" else torch.randn
A = (torch.rand(300, 200) < 0.05).float() * draw(300, 200)
A[7] = draw(200)
csr = A.to_sparse_csr()
B = draw(200, 70)
outs = [torch.ops.sparsetir.spmm(csr.crow_indices(), csr.col_indices(), csr.values(), B, r) for r in
        ("sum", "mean", "max", "min")]
outs.append(torch.ops.sparsetir.sddmm(csr.crow_indices(), csr.col_indices(), None, torch.randn(300, 70), B))
torch.save(outs, sys.argv[1])
"""


@pytest.mark.parametrize("segments", ["0", "16"])
def test_race_check_thread_orders_give_the_same_bits(tmp_path, segments):
    # With rows cut into segments, a row's partial sums are added atomically
    # in any order: the child's data are then small integers, whose sums are
    # exact in any order, so the bits must still agree. The sddmm (K = 70)
    # is a warp per non-zero: its lanes meet at shuffles, as fibers.
    results = []
    for order in ("forward", "reverse", "shuffle"):
        path = tmp_path / f"{order}.pt"
        env = dict(os.environ, SPARSETIR_EMULATE_CUDA="1", SPARSETIR_EMULATE_ORDER=order,
                   SPARSETIR_CUDA_ROW_SEGMENT=segments, RACE_INTEGERS="1" if segments != "0" else "0")
        # Run from tmp_path: from the checkout, Python would import the source
        # tree's package even where the tests run on another build of it.
        proc = subprocess.run([sys.executable, "-c", RACE_CHILD, str(path)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        results.append(torch.load(path))
    for forward, *others in zip(*results):
        for other in others:
            assert torch.equal(forward, other)


def test_race_check_mode_runs_each_launch_in_three_orders(emulate, monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    a = make_csr(seed=3, **CSR_CASES["dense_row"])
    indptr, indices = a.torch_structure("int32")
    values, b = torch.from_numpy(a.values).float(), torch.randn(a.n, 40)
    before = _C.emulated_runs()
    out = ops.spmm(indptr, indices, values, b)
    assert _C.emulated_runs() == before + 3  # forward, reversed, shuffled: the same bits, or an error
    torch.testing.assert_close(out, torch.from_numpy(a.scipy(a.values) @ b.double().numpy()).float())
    before = _C.emulated_runs()
    ops.sddmm(indptr, indices, None, torch.randn(a.m, 64), torch.randn(a.n, 64))  # a warp per non-zero
    assert _C.emulated_runs() == before + 3


def test_race_check_mode_leaves_order_dependent_atomics_alone(emulate, monkeypatch):
    # One row cut into three segments (16 non-zeros each) whose sums are 1,
    # 1e8 and -1e8 in float32, added atomically: 0 in order, 1 in reverse.
    # Floating-point atomics depend on the order by design (as on a GPU):
    # the check runs such a kernel once, in order, instead of reporting it.
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", "16")
    indptr, indices = torch.tensor([0, 48]), torch.arange(48)
    values = torch.tensor([1 / 16] * 16 + [6.25e6] * 16 + [-6.25e6] * 16)
    before = _C.emulated_runs()
    assert torch.equal(ops.spmm(indptr, indices, values, torch.ones(48, 32)), torch.zeros(1, 32))
    assert _C.emulated_runs() == before + 1
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "reverse")
    assert torch.equal(ops.spmm(indptr, indices, values, torch.ones(48, 32)), torch.ones(1, 32))


# --------------------------------------------------------------------------- NVRTC and ptxas, without a GPU


def _cuda_check(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sparsetir_torch.cuda_check", *args],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


def _kernel_rows(stdout):
    """(kernel, arch, registers, spills, shared) per row, without the times."""
    return [tuple(line.split()[:5]) for line in stdout.splitlines() if line.endswith("  ok")]


@needs_nvrtc
def test_every_operator_kernel_compiles_for_sm80_and_sm90():
    proc = _cuda_check("--arch", "sm_80,sm_90", timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert " 0 failed" in proc.stdout
    rows = [line for line in proc.stdout.splitlines() if line.startswith(("csrmm", "sddmm"))]
    assert len(rows) >= 2 * 100, f"too few kernels checked:\n{proc.stdout[-2000:]}"
    if "ptxas: not found" not in proc.stdout:
        # ptxas reported registers for every kernel, and none spills
        assert all(row.split()[2].isdigit() for row in rows), proc.stdout[-2000:]
        assert all(row.split()[3] == "0" for row in rows), "a kernel spills registers"


@needs_nvrtc
def test_cuda_check_rows_and_dumps_do_not_depend_on_the_jobs(tmp_path):
    one, two = _cuda_check("--quick", "--arch", "sm_90", "--jobs", "1", "--dump", str(tmp_path / "one")), \
        _cuda_check("--quick", "--arch", "sm_90", "--jobs", "3", "--dump", str(tmp_path / "three"))
    assert one.returncode == 0 and two.returncode == 0, one.stdout[-2000:] + two.stdout[-2000:]
    assert len(_kernel_rows(one.stdout)) >= 40
    assert _kernel_rows(one.stdout) == _kernel_rows(two.stdout)
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "three").iterdir())
    assert not [n for n in names if n.endswith(".partial")]
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "three" / name).read_bytes(), name
    ptx = (tmp_path / "one" / names[1]).read_text()
    assert names[1].endswith(".sm_90.ptx") and ".target sm_90" in ptx


def test_cuda_check_refuses_no_jobs():
    proc = _cuda_check("--quick", "--jobs", "0")
    assert proc.returncode != 0 and "--jobs takes a whole number from 1, got 0" in proc.stderr


@needs_nvrtc
def test_an_nvrtc_error_carries_the_log():
    st.cuda_runtime.prepare_nvrtc()
    with pytest.raises(st.CompileError, match="error"):
        _C.nvrtc_compile('extern "C" __global__ void broken() { this is not cuda; }', "broken.cu", 90, True)


# --------------------------------------------------------------------------- on a GPU

GPU_REASON = st.cuda_unavailable_reason()
gpu = pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")


@gpu
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_spmm_matches_float64(case, reduce, dtype, idtype):
    a = make_csr(seed=3, **CSR_CASES[case])
    rng = np.random.default_rng(1)
    values = to_tensor(a.values, dtype)
    b = to_tensor(rng.uniform(-1, 1, size=(a.n, 37)), dtype)
    indptr, indices = a.torch_structure(idtype)
    out = ops.spmm(indptr.cuda(), indices.cuda(), values.cuda(), b.cuda(), reduce)
    assert out.is_cuda
    ref, magnitude = reference_spmm(a, values, b, reduce)
    terms = np.maximum(np.diff(a.indptr), 1)[:, None] + (reduce == "mean")
    assert_within_bound(out.cpu(), ref, magnitude, terms, dtype, f"cuda spmm {reduce}")


@gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_gpu_16bit_mean_rounds_once(dtype):
    check_16bit_mean_rounds_once(dtype, "cuda")


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("feat", [1, 32, 100, 256])
def test_gpu_sddmm_matches_float64(dtype, idtype, feat):
    a = make_csr(60, 50, density=0.1, seed=8, empty_rows=(0, 59), dense_rows=(3,))
    rng = np.random.default_rng(3)
    x = to_tensor(rng.uniform(-1, 1, size=(a.m, feat)), dtype)
    y = to_tensor(rng.uniform(-1, 1, size=(a.n, feat)), dtype)
    indptr, indices = a.torch_structure(idtype)
    out = ops.sddmm(indptr.cuda(), indices.cuda(), None, x.cuda(), y.cuda())
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    xd, yd = x.double().numpy(), y.double().numpy()
    ref = np.einsum("ek,ek->e", xd[rows], yd[a.indices])
    magnitude = np.einsum("ek,ek->e", np.abs(xd[rows]), np.abs(yd[a.indices]))
    assert_within_bound(out.cpu(), ref, magnitude, feat, dtype, "cuda sddmm")


@gpu
@pytest.mark.parametrize("length", ["1", "5", "128", ""])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_spmm_over_row_segments(monkeypatch, length, dtype, idtype):
    monkeypatch.setenv("SPARSETIR_CUDA_ROW_SEGMENT", length)
    a = make_csr(300, 2000, density=0.01, seed=9, empty_rows=(0, 7), dense_rows=(3, 299))
    rng = np.random.default_rng(5)
    values = to_tensor(a.values, dtype)
    b = to_tensor(rng.uniform(-1, 1, size=(a.n, 70)), dtype)
    indptr, indices = a.torch_structure(idtype)
    for reduce in ("sum", "mean"):
        out = ops.spmm(indptr.cuda(), indices.cuda(), values.cuda(), b.cuda(), reduce)
        ref, magnitude = reference_spmm(a, values, b, reduce)
        terms = np.maximum(np.diff(a.indptr), 1)[:, None] + (reduce == "mean")
        assert_within_bound(out.cpu(), ref, magnitude, terms, dtype, f"cuda segmented spmm {reduce}")


@gpu
def test_gpu_spmm_gradients():
    a = make_csr(30, 20, density=0.2, seed=5, empty_rows=(2,), dense_rows=(4,))
    indptr, indices = (t.cuda() for t in a.torch_structure("int64"))
    values = torch.tensor(a.values, dtype=torch.float64, device="cuda", requires_grad=True)
    b = torch.randn(20, 8, dtype=torch.float64, device="cuda", requires_grad=True)
    torch.autograd.gradcheck(lambda v, x: ops.spmm(indptr, indices, v, x, "sum"), (values, b))


@gpu
@pytest.mark.parametrize("reduce", ["max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_spmm_extremum_gradients_match_the_cpu(reduce, dtype, idtype):
    # Small integers make ties: the gradient goes to the first attaining
    # non-zero of a row on both devices (the CPU kernel; torch ops on CUDA).
    a = make_csr(40, 30, density=0.2, seed=19, empty_rows=(1, 6), dense_rows=(5,))
    rng = np.random.default_rng(19)
    values = to_tensor(rng.integers(-2, 3, a.nnz).astype(np.float64), dtype)
    b = to_tensor(rng.integers(-2, 3, (a.n, 12)).astype(np.float64), dtype)
    weight = to_tensor(rng.uniform(-1, 1, (a.m, 12)), dtype)
    cpu = a.torch_structure(idtype)

    def grads(device):
        v, d = values.to(device).requires_grad_(), b.to(device).requires_grad_()
        out = ops.spmm(*(t.to(device) for t in cpu), v, d, reduce)
        return [out.detach().cpu()] + [g.cpu() for g in torch.autograd.grad((out * weight.to(device)).sum(), (v, d))]

    for got, want in zip(grads("cuda"), grads("cpu")):
        torch.testing.assert_close(got, want, **(dict(rtol=1e-2, atol=1e-2) if dtype == "float16" else {}))


@gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_multi_head_ops_edge_softmax_and_gradients_match_the_cpu(dtype, idtype):
    a = make_csr(60, 50, density=0.1, seed=12, empty_rows=(0, 7), dense_rows=(3,))
    rng = np.random.default_rng(12)
    values = to_tensor(rng.uniform(-1, 1, (a.nnz, 4)), dtype)
    b = to_tensor(rng.uniform(-1, 1, (a.n, 4, 40)), dtype)
    x, y = to_tensor(rng.uniform(-1, 1, (a.m, 4, 40)), dtype), to_tensor(rng.uniform(-1, 1, (a.n, 4, 40)), dtype)
    s, t = to_tensor(rng.uniform(-1, 1, (a.m, 4)), dtype), to_tensor(rng.uniform(-1, 1, (a.n, 4)), dtype)
    cpu = a.torch_structure(idtype)
    gpu_ = tuple(z.cuda() for z in cpu)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == "float16" else dict(rtol=1e-5, atol=1e-5)
    for reduce in ("sum", "mean"):
        torch.testing.assert_close(ops.spmm(*gpu_, values.cuda(), b.cuda(), reduce).cpu(),
                                   ops.spmm(*cpu, values, b, reduce), **tol)
    torch.testing.assert_close(ops.sddmm(*gpu_, None, x.cuda(), y.cuda(), "dot").cpu(),
                               ops.sddmm(*cpu, None, x, y, "dot"), **tol)
    for op in ("add", "mul"):
        torch.testing.assert_close(ops.sddmm(*gpu_, None, s.cuda(), t.cuda(), op).cpu(),
                                   ops.sddmm(*cpu, None, s, t, op), **tol)
    scores = ops.sddmm(*cpu, None, s, t, "add")
    torch.testing.assert_close(ops.edge_softmax(*gpu_, scores.cuda()).cpu(), ops.edge_softmax(*cpu, scores), **tol)
    if dtype == "float64":
        v, d = values.cuda().requires_grad_(), b.cuda().requires_grad_()
        torch.autograd.gradcheck(lambda v, d: ops.spmm(*gpu_, v, d, "sum"), (v, d))
        p, q = s.cuda().requires_grad_(), t.cuda().requires_grad_()
        torch.autograd.gradcheck(lambda p, q: ops.sddmm(*gpu_, None, p, q, "add"), (p, q))
        torch.autograd.gradcheck(lambda e: ops.edge_softmax(*gpu_, e), (scores.cuda().requires_grad_(),))


@gpu
def test_gpu_gat_layer_matches_the_cpu_layer():
    # On a GPU the layer runs the element-wise SDDMM, edge_softmax and the
    # multi-head SpMM (their recipes spread a row over lanes; gat_attention's
    # runs a row per thread).
    torch.manual_seed(15)
    n = 50
    edge_index = torch.randint(0, n, (2, 300))
    layer = st.nn.GATConv(8, 6, heads=3).double()
    x = torch.randn(n, 8, dtype=torch.float64, requires_grad=True)
    out = layer(x, edge_index)
    (gx,) = torch.autograd.grad(out.square().sum(), x)
    xc = x.detach().cuda().requires_grad_()
    out_c = layer.cuda()(xc, edge_index.cuda())
    (gxc,) = torch.autograd.grad(out_c.square().sum(), xc)
    torch.testing.assert_close(out_c.cpu(), out)
    torch.testing.assert_close(gxc.cpu(), gx)


@gpu
@pytest.mark.parametrize("block", [(2, 3), (32, 32)])
def test_gpu_block_sparse_ops_and_gradients_match_the_cpu(block):
    bh, bw = block
    indptr, indices, blocks = random_bsr(5, 4, bh, bw, 0.5, seed=18, idtype="int32", empty_rows=(3,))
    gen = torch.Generator().manual_seed(18)
    blocks = torch.tensor(blocks)
    b = torch.randn(4 * bw, 40, dtype=torch.float64, generator=gen)
    x = torch.randn(7, 4 * bw, dtype=torch.float64, generator=gen)

    def run(device):
        w, d, v = (t.to(device).requires_grad_() for t in (blocks, b, x))
        ip, ix = indptr.to(device), indices.to(device)
        loss = ops.bsrmm(ip, ix, w, d).square().sum() + ops.bsr_linear(v, ip, ix, w).square().sum()
        return [loss.detach().cpu()] + [g.cpu() for g in torch.autograd.grad(loss, (w, d, v))]

    for got, want in zip(run("cuda"), run("cpu")):
        torch.testing.assert_close(got, want)


@gpu
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_sparse_attention_matches_float64(case, dtype, idtype):
    a = make_csr(seed=16, **CSR_CASES[case])
    rng = np.random.default_rng(16)
    lead, D, Dv = (2, 3), 8, 5  # batch 2 x 3 heads
    q = to_tensor(rng.standard_normal(lead + (a.m, D)), dtype).cuda()
    k = to_tensor(rng.standard_normal(lead + (a.n, D)), dtype).cuda()
    v = to_tensor(rng.standard_normal(lead + (a.n, Dv)), dtype).cuda()
    indptr, indices = (t.cuda() for t in a.torch_structure(idtype))
    out = ops.sparse_attention(indptr, indices, q, k, v)
    assert out.is_cuda and out.shape == lead + (a.m, Dv) and out.dtype == q.dtype
    ref = reference_attention(a, q.cpu().reshape(6, a.m, D), k.cpu().reshape(6, a.n, D),
                              v.cpu().reshape(6, a.n, Dv), D**-0.5)
    tol = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 4e-2}[dtype]
    np.testing.assert_allclose(out.double().cpu().numpy().reshape(6, a.m, Dv), ref, rtol=0, atol=tol)


@gpu
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_sparse_attention_gradients(idtype):
    a = make_csr(30, 20, density=0.2, seed=17, empty_rows=(2, 9), dense_rows=(4,))
    indptr, indices = (t.cuda() for t in a.torch_structure(idtype))
    gen = torch.Generator().manual_seed(17)
    q, k, v = (torch.randn(2, n, d, dtype=torch.float64, generator=gen).cuda().requires_grad_()
               for n, d in ((30, 6), (20, 6), (20, 4)))
    torch.autograd.gradcheck(lambda q, k, v: ops.sparse_attention(indptr, indices, q, k, v, 0.7), (q, k, v))


@gpu
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype, idtype", HEAD_DTYPES)
def test_gpu_gat_attention_matches_float64(case, dtype, idtype):
    a, a_dst, a_src, x = gat_inputs(case, dtype)
    indptr, indices = (t.cuda() for t in a.torch_structure(idtype))
    out = ops.gat_attention(indptr, indices, a_dst.cuda(), a_src.cuda(), x.cuda(), GAT_SLOPE)
    assert out.is_cuda
    check_gat(out, a, a_dst, a_src, x, dtype)


def forward_backward(module, inputs, device):
    """(output, input gradients, parameter gradients) of module on `device`,
    float64, brought back to the CPU: the module's loss is the sum of squares."""
    module = module.to(device)
    module.zero_grad(set_to_none=True)
    xs = [t.detach().to(device).requires_grad_() if t.is_floating_point() else t.to(device) for t in inputs]
    out = module(*xs)
    out = out[0] if isinstance(out, tuple) else out  # SparseMultiheadAttention: (output, None)
    out.square().sum().backward()
    grads = [x.grad.cpu() for x in xs if x.requires_grad] + [p.grad.cpu() for p in module.parameters()]
    return [out.detach().cpu()] + grads


@gpu
@pytest.mark.parametrize("layer", ["gcn", "sage-mean", "sage-max", "gin", "gat", "block-sparse", "attention"])
def test_gpu_nn_layers_match_the_cpu(layer):
    """st.nn layers on CUDA tensors (edge_index on the GPU: the COO to CSR
    conversion runs on the host) against the same layers on the CPU."""
    torch.manual_seed(20)
    n = 60
    edge_index = torch.randint(0, n, (2, 400))
    x = torch.randn(n, 8, dtype=torch.float64)
    module, inputs = {
        "gcn": lambda: (st.nn.GCNConv(8, 6), (x, edge_index)),
        "sage-mean": lambda: (st.nn.SAGEConv(8, 6, aggr="mean"), (x, edge_index)),
        "sage-max": lambda: (st.nn.SAGEConv(8, 6, aggr="max"), (x, edge_index)),
        "gin": lambda: (st.nn.GINConv(torch.nn.Linear(8, 6)), (x, edge_index)),
        "gat": lambda: (st.nn.GATConv(8, 3, heads=2), (x, edge_index)),
        "block-sparse": lambda: (st.nn.BlockSparseLinear.from_dense(torch.nn.Linear(64, 32), (16, 16), 0.5),
                                 (torch.randn(5, 64, dtype=torch.float64),)),
        "attention": lambda: (st.nn.SparseMultiheadAttention(16, 2, pattern=st.nn.attention_patterns.sliding_window(20, 4)),
                              (torch.randn(3, 20, 16, dtype=torch.float64),)),
    }[layer]()
    module = module.double()
    cpu = forward_backward(copy.deepcopy(module), inputs, "cpu")
    gpu_ = forward_backward(module, inputs, "cuda")
    assert len(cpu) == len(gpu_)
    for got, want in zip(gpu_, cpu):
        torch.testing.assert_close(got, want)


@gpu
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gpu_sparse_matrix_formats_match_the_cpu(idtype):
    """A SparseMatrix moved to the GPU converts to ELL, hyb and BSR (the
    structure on the host, the values scattered on the device) and computes
    what it does on the CPU."""
    a = make_csr(48, 40, density=0.15, seed=21, empty_rows=(3,), dense_rows=(7,))
    indptr, indices = a.torch_structure(idtype)
    cpu = st.SparseMatrix(indptr, indices, torch.tensor(a.values), (a.m, a.n))
    gpu_ = cpu.to("cuda")
    assert gpu_.indptr.is_cuda and gpu_.values.is_cuda and cpu.to("cuda").indptr is gpu_.indptr  # moved once
    b = torch.randn(a.n, 16, dtype=torch.float64)
    torch.testing.assert_close(st.spmm(gpu_, b.cuda()).cpu(), st.spmm(cpu, b))
    width = int(np.diff(a.indptr).max())
    for got, want in ((gpu_.ell(width), cpu.ell(width)), (gpu_.hyb(1, 64), cpu.hyb(1, 64))):
        torch.testing.assert_close(got.to_dense().cpu(), want.to_dense())
    torch.testing.assert_close(gpu_.t().to_dense().cpu(), cpu.t().to_dense())
    blocks = ops._csr_to_bsr(indptr.cuda(), indices.cuda(), a.n, 4, 4)
    assert all(t.is_cuda for t in blocks)
    for got, want in zip(blocks, ops._csr_to_bsr(indptr, indices, a.n, 4, 4)):
        torch.testing.assert_close(got.cpu(), want)


@gpu
def test_gpu_mixed_devices_are_refused():
    a = make_csr(5, 4, density=0.5, seed=1)
    indptr, indices = a.torch_structure("int32")
    with pytest.raises((ValueError, RuntimeError), match="device|cuda|cpu"):
        ops.spmm(indptr.cuda(), indices.cuda(), torch.ones(a.nnz), torch.ones(4, 8, device="cuda"))


@gpu
def test_gpu_honours_the_current_stream():
    a = make_csr(500, 400, density=0.05, seed=2)
    indptr, indices = (t.cuda() for t in a.torch_structure("int32"))
    values = torch.tensor(a.values, dtype=torch.float32).cuda()
    b = torch.randn(400, 64, device="cuda")
    expected = ops.spmm(indptr, indices, values, b)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        out = ops.spmm(indptr, indices, values, b)
    stream.synchronize()
    torch.testing.assert_close(out, expected)
