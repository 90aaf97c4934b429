"""Defects a careless or hostile caller could reach, each with the behaviour that
replaced it: outputs written by kernels bump their autograd version and may not
overlap inputs; local caches have a size limit; the private conversion ops check
their sizes; max / min propagate NaN and mean does not underflow; non-ASCII
script text is a ScriptError; a path that does not exist is named as such.
"""
import math
import os

import pytest
import torch

import sparsetir_torch as st
from conftest import make_csr, read_script

ops = torch.ops.sparsetir
MATRIX = make_csr(9, 7, density=0.4, seed=5, empty_rows=(3,), dense_rows=(0,))


def csr_tensors(a=MATRIX, dtype=torch.float32):
    return (torch.tensor(a.indptr, dtype=torch.int32), torch.tensor(a.indices, dtype=torch.int32),
            torch.tensor(a.values, dtype=dtype))


def csrmm_kernel():
    return st.compile(read_script("csrmm"))


def call(kernel, values, b, c, a=MATRIX):
    indptr, indices, _ = csr_tensors(a)
    kernel(a=values, b=b, c=c, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=b.shape[1], nnz=a.nnz)


# --------------------------------------------------------------------------- outputs


def test_a_kernel_bumps_the_version_of_what_it_writes():
    kernel = csrmm_kernel()
    _, _, values = csr_tensors()
    b = torch.randn(MATRIX.n, 4)
    c = torch.zeros(MATRIX.m, 4)
    before_c, before_b, before_v = c._version, b._version, values._version
    call(kernel, values, b, c)
    assert c._version > before_c
    assert b._version == before_b and values._version == before_v


def test_autograd_sees_an_output_that_overwrote_a_saved_tensor():
    kernel = csrmm_kernel()
    _, _, values = csr_tensors()
    x = torch.randn(MATRIX.m, 4, requires_grad=True)
    c = torch.zeros(MATRIX.m, 4)
    y = x * c  # saves c for backward
    call(kernel, values, torch.randn(MATRIX.n, 4), c)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("alias", ["same", "view"])
def test_an_output_that_overlaps_an_input_is_refused(alias):
    kernel = csrmm_kernel()
    a = make_csr(7, 7, density=0.4, seed=6)
    _, _, values = csr_tensors(a)
    b = torch.randn(a.n, 4)
    c = b if alias == "same" else b.view(-1)[: a.m * 4].view(a.m, 4)
    before = b.clone()
    with pytest.raises(ValueError, match="argument 'c' is written by the kernel and overlaps argument 'b'"):
        call(kernel, values, b, c, a)
    assert torch.equal(b, before)


def test_local_cache_past_the_limit_is_a_schedule_error():
    sch = st.Schedule(read_script("csrmm"))
    sch.specialize(feat_size=100_000)  # a 400 kB row
    i, j, k = sch.get_loops("csrmm")
    sch.cache_write(i, "C", "local")
    with pytest.raises(st.ScheduleError, match=r"buffer 'C_local' in local scope takes 400000 bytes, more than the 262144"):
        st.compile(sch)


# --------------------------------------------------------------------------- conversions


@pytest.mark.parametrize("block", [2**62, 2**40, 2**31])
def test_csr_to_bsr_refuses_block_sizes_it_cannot_hold(block):
    indptr, indices, _ = csr_tensors()
    with pytest.raises(ValueError, match="sparsetir._csr_to_bsr"):
        ops._csr_to_bsr(indptr, indices, MATRIX.n, block, block)


@pytest.mark.parametrize("width", [2**40, 2**62])
def test_csr_to_ell_refuses_widths_it_cannot_hold(width):
    indptr, indices, _ = csr_tensors()
    with pytest.raises(ValueError, match=r"sparsetir._csr_to_ell: argument 'width' = \d+ would make"):
        ops._csr_to_ell(indptr, indices, width)


def test_csr_to_hyb_refuses_a_negative_or_huge_width():
    indptr, indices, _ = csr_tensors()
    with pytest.raises(ValueError, match="argument 'max_width' must be non-negative"):
        ops._csr_to_hyb(indptr, indices, MATRIX.n, 1, -1)
    with pytest.raises(ValueError, match="argument 'max_width' = .* would make"):
        ops._csr_to_hyb(indptr, indices, MATRIX.n, 1, 2**60)


def test_reasonable_sizes_still_convert():
    indptr, indices, _ = csr_tensors()
    bsr_indptr, _, _ = ops._csr_to_bsr(indptr, indices, MATRIX.n, 2, 2)
    assert bsr_indptr.numel() == (MATRIX.m + 1) // 2 + 1
    ell_indices, _ = ops._csr_to_ell(indptr, indices, MATRIX.n)
    assert ell_indices.numel() == MATRIX.m * MATRIX.n


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("reduce, peer", [("max", "amax"), ("min", "amin")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("k", [1, 16, 64])
def test_max_and_min_propagate_nan_like_torch(reduce, peer, dtype, k):
    indptr, indices, values = csr_tensors(dtype=dtype)
    b = torch.randn(MATRIX.n, k, dtype=dtype)
    b[2, : max(1, k // 2)] = float("nan")  # NaN in some features of one gathered row
    values[1] = float("nan")  # and one NaN value
    out = ops.spmm(indptr, indices, values, b, reduce)
    csr = torch.sparse_csr_tensor(indptr.long(), indices.long(), values, (MATRIX.m, MATRIX.n))
    expected = torch.sparse.mm(csr, b, reduce=peer)
    assert torch.equal(out.isnan(), expected.isnan()), (out, expected)
    torch.testing.assert_close(out.nan_to_num(0.0), expected.nan_to_num(0.0))
    assert out.isnan().any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mean_of_tiny_values_does_not_underflow(dtype):
    tiny = torch.finfo(dtype).tiny * 4  # the smallest normal numbers: / row length underflows to 0
    indptr = torch.tensor([0, 3], dtype=torch.int32)
    indices = torch.tensor([0, 1, 2], dtype=torch.int32)
    values = torch.ones(3, dtype=dtype)
    b = torch.full((3, 2), tiny, dtype=dtype)
    out = ops.spmm(indptr, indices, values, b, "mean")
    expected = (b.double().sum(0) / 3).to(dtype)
    assert (out > 0).all(), out
    torch.testing.assert_close(out[0], expected)


# --------------------------------------------------------------------------- front end


def test_non_ascii_outside_a_string_is_a_script_error():
    text = read_script("csrmm").replace("    I = T.sp.dense_fixed(m)", "    I = T.sp.dense_fixed(m\u00e9)")
    with pytest.raises(st.ScriptError, match="non-ASCII character '\u00e9' outside a string or comment") as info:
        st.parse(text)
    assert "^" in str(info.value)


def test_non_ascii_in_a_comment_is_fine():
    st.parse(read_script("csrmm").replace("    I = T.sp.dense_fixed(m)", "    I = T.sp.dense_fixed(m)  # \u00e9t\u00e9"))


def test_a_path_that_does_not_exist_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="looks like a path to a script, but there is no such file"):
        st.parse(str(tmp_path / "kernels" / "csrmm.py"))


# A copy over a varied level written directly at stage II (sparse_tir_level 1),
# with its indptr buffer declared or left for the compiler to make. Every row
# of the structure used holds n = 2 positions, so the loop runs over n.
VARIED_STAGE_II = '''
@T.prim_func
def ragged(a: T.handle, b: T.handle, {handles}, m: T.int32, n: T.int32) -> None:
    T.func_attr({{"sparse_tir_level": 1}})
    I = T.sp.dense_fixed(m, "int32")
    J = T.sp.{iterator}
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (I, J), "float32")
{declaration}    for i in T.serial(m):
        for j in T.serial(n):
            with T.block("copy"):
                B[i, j] = A[i, j] * T.float32(2.0)
'''
VARIED_ITERATORS = {
    "dense_varied": ("indptr: T.handle", 'dense_varied(I, n, indptr, "int32")'),
    "dense_varied_nnz": ("indptr: T.handle", 'dense_varied(I, (n, 6), indptr, "int32")'),
    "compressed_varied": ("indptr: T.handle, indices: T.handle", 'compressed_varied(I, (n, 6), (indptr, indices), "int32")'),
}


@pytest.mark.parametrize("stage", ["II", "III"])
@pytest.mark.parametrize("declared", [True, False], ids=["indptr-declared", "indptr-left-out"])
@pytest.mark.parametrize("kind", sorted(VARIED_ITERATORS))
def test_a_stage_two_varied_level_flattens_with_or_without_its_indptr_buffer(kind, declared, stage):
    """A stage-II script that left out a varied iterator's indptr buffer
    reached an internal compiler error in lower_sparse_buffer; the buffer is
    now made as stage-I lowering makes it. Compiled from its stage-III form
    (no iterators, no domain facts), the buffer sized by J_indptr[m] made the
    call's shape check read an array it had not bound: an internal error too;
    an array that a shape reads is now bound first, like a structure array."""
    handles, iterator = VARIED_ITERATORS[kind]
    declaration = '    J_indptr = T.sp.match_buffer(indptr, (I,), "int32", extra_storage=1)\n' if declared else ""
    f = st.parse(VARIED_STAGE_II.format(handles=handles, iterator=iterator, declaration=declaration))
    kernel = st.compile(f if stage == "II" else st.lower_sparse_buffer(f))
    a, b = torch.arange(1.0, 7.0), torch.zeros(6)
    args = dict(a=a, b=b, indptr=torch.tensor([0, 2, 4, 6], dtype=torch.int32), m=3, n=2)
    if kind == "compressed_varied":
        args["indices"] = torch.tensor([0, 1, 0, 1, 0, 1], dtype=torch.int32)
    kernel(**args)
    torch.testing.assert_close(b, a * 2)


SIZED_BY_A_BUFFER = '''
@T.prim_func
def scale(a: T.handle, indptr: T.handle, m: T.int32, n: T.int32) -> None:
    T.func_attr({"sparse_tir_level": 0})
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    A = T.match_buffer(a, (n,), "float32")
    W = T.alloc_buffer((J_indptr[m],), "float32")
    for i in T.serial(m):
        W[i] = T.float32(3.0)
        A[i] = W[i] * A[i]
'''


def test_specializing_a_size_that_an_allocation_reads_keeps_the_buffer_it_reads():
    """Specializing m rebuilt J_indptr but left W's size reading the old
    buffer, so the generated C++ named an undeclared 'J_indptr_1'."""
    f = st.specialize(st.parse(SIZED_BY_A_BUFFER), m=4)
    assert "J_indptr[4]" in str(f)
    kernel = st.compile(f)
    assert "J_indptr_1" not in kernel.source
    a = torch.arange(1.0, 7.0)
    kernel(a=a, indptr=torch.tensor([0, 1, 2, 3, 4], dtype=torch.int32), m=4, n=6)
    torch.testing.assert_close(a, torch.tensor([3.0, 6.0, 9.0, 12.0, 5.0, 6.0]))
