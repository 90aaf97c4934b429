"""Error handling of the operator library (torch.ops.sparsetir.* and the st.*
wrappers) and the per-graph validation cache.

Every bad input must raise ValueError (or RuntimeError) whose message names
the operator ("sparsetir.spmm", ...) and the offending argument, and the process
must stay healthy: after each error a good call still gives the right result.
"""
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C

ops = torch.ops.sparsetir
# torch warns that sparse CSR / BSR support is in beta whenever the tests build such tensors.
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")


# --------------------------------------------------------------------------- a known-good problem


def good_inputs(idtype=torch.int64, dtype=torch.float32):
    """A 2 x 3 CSR matrix [[0, 1, 2], [3, 0, 0]] (row 0 has columns 2, 1: unsorted)."""
    indptr = torch.tensor([0, 2, 3], dtype=idtype)
    indices = torch.tensor([2, 1, 0], dtype=idtype)
    values = torch.tensor([2.0, 1.0, 3.0], dtype=dtype)
    dense = torch.arange(12, dtype=dtype).reshape(3, 4)
    return indptr, indices, values, dense


GOOD_SPMM = torch.tensor([[20.0, 23.0, 26.0, 29.0], [0.0, 3.0, 6.0, 9.0]])


def assert_healthy():
    """A good call after an error still works (and gives the exact result)."""
    indptr, indices, values, dense = good_inputs()
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
    x = torch.ones(2, 4)
    assert torch.equal(ops.sddmm(indptr, indices, None, x, dense), torch.tensor([38.0, 22.0, 6.0]))


def t(*values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


IP, IX, VAL, DENSE = good_inputs()
X, Y = torch.ones(2, 4), torch.ones(3, 4)
EMPTY = torch.zeros(0, dtype=torch.int64)


def _q(*shape):
    return torch.ones(*shape)


# (id, callable, message regex). Each regex names the operator and the argument.
BAD_CALLS = [
    # ---- CSR structure (shared by every operator)
    ("spmm-indptr-non-monotone", lambda: ops.spmm(t(0, 3, 2), IX, VAL, DENSE),
     r"sparsetir\.spmm: indptr must be non-decreasing"),
    ("spmm-indptr-start", lambda: ops.spmm(t(1, 2, 3), IX, VAL, DENSE),
     r"sparsetir\.spmm: indptr must start at 0"),
    ("spmm-indptr-end-large", lambda: ops.spmm(t(0, 2, 4), IX, VAL, DENSE),
     r"sparsetir\.spmm: indptr must end at nnz = 3"),
    ("spmm-indptr-end-small", lambda: ops.spmm(t(0, 1, 2), IX, VAL, DENSE),
     r"sparsetir\.spmm: indptr must end at nnz = 3"),
    ("spmm-indices-negative", lambda: ops.spmm(IP, t(2, -1, 0), VAL, DENSE),
     r"sparsetir\.spmm: indices must be non-negative, got indices\[1\] = -1"),
    ("spmm-indices-too-large", lambda: ops.spmm(IP, t(2, 3, 0), VAL, DENSE),
     r"sparsetir\.spmm: argument 'indices' holds column 3, out of range for 3 columns \(dense\.size\(0\)\)"),
    ("spmm-index-dtype-mismatch", lambda: ops.spmm(IP.int(), IX, VAL, DENSE),
     r"sparsetir\.spmm: arguments 'indptr' and 'indices' must have the same dtype"),
    ("spmm-float-indptr", lambda: ops.spmm(IP.float(), IX.float(), VAL, DENSE),
     r"sparsetir\.spmm: argument 'indptr' must have dtype int32 or int64, got Float"),
    ("spmm-int16-indptr", lambda: ops.spmm(IP.short(), IX.short(), VAL, DENSE),
     r"sparsetir\.spmm: argument 'indptr' must have dtype int32 or int64"),
    ("spmm-indptr-2d", lambda: ops.spmm(IP.view(1, 3), IX, VAL, DENSE),
     r"sparsetir\.spmm: argument 'indptr' must be 1-D with at least one element"),
    ("spmm-indptr-empty", lambda: ops.spmm(EMPTY, EMPTY, VAL[:0], DENSE),
     r"sparsetir\.spmm: argument 'indptr' must be 1-D with at least one element"),
    ("spmm-indices-2d", lambda: ops.spmm(IP, IX.view(3, 1), VAL, DENSE),
     r"sparsetir\.spmm: argument 'indices' must be 1-D"),
    # ---- spmm values / dense / reduce
    ("spmm-int-values", lambda: ops.spmm(IP, IX, t(1, 2, 3), DENSE),
     r"sparsetir\.spmm: argument 'values' must have a floating dtype"),
    ("spmm-values-length", lambda: ops.spmm(IP, IX, torch.ones(4), DENSE),
     r"sparsetir\.spmm: argument 'values' must have one element per non-zero \(3"),
    ("spmm-values-2d", lambda: ops.spmm(IP, IX, torch.ones(3, 1), DENSE),
     r"sparsetir\.spmm: argument 'values' must be 1-D"),
    ("spmm-dense-1d", lambda: ops.spmm(IP, IX, VAL, torch.ones(3)),
     r"sparsetir\.spmm: argument 'dense' must be 2-D \(n, K\) or 3-D \(n, heads, D\), got shape \(3,\)"),
    ("spmm-dense-4d", lambda: ops.spmm(IP, IX, VAL, torch.ones(3, 4, 1, 1)),
     r"sparsetir\.spmm: argument 'dense' must be 2-D \(n, K\) or 3-D"),
    ("spmm-int-dense", lambda: ops.spmm(IP, IX, VAL, torch.ones(3, 4, dtype=torch.int32)),
     r"sparsetir\.spmm: argument 'dense' must have a floating dtype"),
    ("spmm-dtype-mismatch", lambda: ops.spmm(IP, IX, VAL, DENSE.double()),
     r"sparsetir\.spmm: argument 'dense' must have the dtype of 'values' \(Float\), got Double"),
    ("spmm-dtype-mismatch-half", lambda: ops.spmm(IP, IX, VAL.half(), DENSE.bfloat16()),
     r"sparsetir\.spmm: argument 'dense' must have the dtype of 'values'"),
    ("spmm-bad-reduce", lambda: ops.spmm(IP, IX, VAL, DENSE, "prod"),
     r"sparsetir\.spmm: argument 'reduce' must be one of .*got \"prod\""),
    ("spmm-reduce-case", lambda: ops.spmm(IP, IX, VAL, DENSE, "Sum"),
     r"sparsetir\.spmm: argument 'reduce'"),
    # ---- sddmm
    ("sddmm-indptr-non-monotone", lambda: ops.sddmm(t(0, 3, 2), IX, None, X, Y),
     r"sparsetir\.sddmm: indptr must be non-decreasing"),
    ("sddmm-indices-too-large", lambda: ops.sddmm(IP, IX, None, X, Y[:2]),
     r"sparsetir\.sddmm: argument 'indices' holds column 2, out of range for 2 columns \(y\.size\(0\)\)"),
    ("sddmm-columns", lambda: ops.sddmm(IP, IX, None, X, torch.ones(3, 5)),
     r"sparsetir\.sddmm: arguments 'x' \(2, 4\) and 'y' \(3, 5\) must have the same number of columns"),
    ("sddmm-x-rows", lambda: ops.sddmm(IP, IX, None, torch.ones(3, 4), Y),
     r"sparsetir\.sddmm: argument 'x' must have one row per row of the pattern \(2"),
    ("sddmm-x-1d", lambda: ops.sddmm(IP, IX, None, torch.ones(4), Y),
     r"sparsetir\.sddmm: argument 'x' must be 2-D"),
    ("sddmm-values-length", lambda: ops.sddmm(IP, IX, torch.ones(2), X, Y),
     r"sparsetir\.sddmm: argument 'values' must have one element per non-zero \(3\)"),
    ("sddmm-int-values", lambda: ops.sddmm(IP, IX, t(1, 2, 3), X, Y),
     r"sparsetir\.sddmm: argument 'values' must have a floating dtype"),
    ("sddmm-values-dtype", lambda: ops.sddmm(IP, IX, VAL.double(), X, Y),
     r"sparsetir\.sddmm: argument 'values' must have the dtype of 'x'"),
    ("sddmm-y-dtype", lambda: ops.sddmm(IP, IX, None, X, Y.double()),
     r"sparsetir\.sddmm: argument 'y' must have the dtype of 'x' \(Float\), got Double"),
    ("sddmm-index-dtype-mismatch", lambda: ops.sddmm(IP, IX.int(), None, X, Y),
     r"sparsetir\.sddmm: arguments 'indptr' and 'indices' must have the same dtype"),
    # ---- bsrmm (blocks (nnzb, bh, bw), dense (nb * bw, K))
    ("bsrmm-dense-rows-not-multiple", lambda: ops.bsrmm(IP, IX, torch.ones(3, 2, 2), torch.ones(5, 4)),
     r"sparsetir\.bsrmm: argument 'dense' has 5 rows, not a multiple of the block width 2"),
    ("bsrmm-blocks-count", lambda: ops.bsrmm(IP, IX, torch.ones(2, 2, 2), torch.ones(6, 4)),
     r"sparsetir\.bsrmm: argument 'blocks' must hold one block per non-zero block \(3"),
    ("bsrmm-indices-too-large", lambda: ops.bsrmm(IP, IX, torch.ones(3, 2, 2), torch.ones(4, 4)),
     r"sparsetir\.bsrmm: argument 'indices' holds column 2, out of range for 2 columns"),
    ("bsrmm-blocks-2d", lambda: ops.bsrmm(IP, IX, torch.ones(3, 2), torch.ones(6, 4)),
     r"sparsetir\.bsrmm: argument 'blocks' must be 3-D"),
    ("bsrmm-empty-blocks", lambda: ops.bsrmm(IP, IX, torch.ones(3, 0, 2), torch.ones(6, 4)),
     r"sparsetir\.bsrmm: argument 'blocks' must have non-empty blocks"),
    ("bsrmm-dense-1d", lambda: ops.bsrmm(IP, IX, torch.ones(3, 2, 2), torch.ones(6)),
     r"sparsetir\.bsrmm: argument 'dense' must be 2-D"),
    ("bsrmm-dtype-mismatch", lambda: ops.bsrmm(IP, IX, torch.ones(3, 2, 2), torch.ones(6, 4, dtype=torch.float64)),
     r"sparsetir\.bsrmm: argument 'dense' must have the dtype of 'blocks'"),
    ("bsrmm-indptr-start", lambda: ops.bsrmm(t(1, 2, 3), IX, torch.ones(3, 2, 2), torch.ones(6, 4)),
     r"sparsetir\.bsrmm: indptr must start at 0"),
    # ---- sparse_attention (pattern 2 x 3)
    ("attention-leading-dims", lambda: ops.sparse_attention(IP, IX, _q(2, 2, 4), _q(3, 3, 4), _q(2, 3, 4)),
     r"sparsetir\.sparse_attention: arguments 'q', 'k', 'v' must have the same leading \(batch, head\) dimensions"),
    ("attention-leading-dims-v", lambda: ops.sparse_attention(IP, IX, _q(2, 2, 4), _q(2, 3, 4), _q(1, 3, 4)),
     r"sparsetir\.sparse_attention: arguments 'q', 'k', 'v' must have the same leading"),
    ("attention-ndim", lambda: ops.sparse_attention(IP, IX, _q(1, 2, 4), _q(3, 4), _q(3, 4)),
     r"sparsetir\.sparse_attention: arguments 'q', 'k', 'v' must have the same number \(>= 2\) of dimensions"),
    ("attention-1d", lambda: ops.sparse_attention(IP, IX, _q(4), _q(4), _q(4)),
     r"sparsetir\.sparse_attention: arguments 'q', 'k', 'v' must have the same number \(>= 2\) of dimensions"),
    ("attention-head-dim", lambda: ops.sparse_attention(IP, IX, _q(2, 4), _q(3, 5), _q(3, 4)),
     r"sparsetir\.sparse_attention: argument 'k' \(3, 5\) must have the head dimension of 'q' \(2, 4\)"),
    ("attention-S", lambda: ops.sparse_attention(IP, IX, _q(2, 4), _q(3, 4), _q(4, 4)),
     r"sparsetir\.sparse_attention: argument 'v' \(4, 4\) must have as many rows \(S\) as 'k' \(3, 4\)"),
    ("attention-pattern-rows", lambda: ops.sparse_attention(IP, IX, _q(3, 4), _q(3, 4), _q(3, 4)),
     r"sparsetir\.sparse_attention: the pattern has 2 rows \(from 'indptr'\) but 'q' has L = 3"),
    ("attention-pattern-columns", lambda: ops.sparse_attention(IP, IX, _q(2, 4), _q(2, 4), _q(2, 4)),
     r"sparsetir\.sparse_attention: argument 'indices' holds column 2, out of range for 2 columns \(k\.size\(-2\)\)"),
    ("attention-dtype", lambda: ops.sparse_attention(IP, IX, _q(2, 4), _q(3, 4).double(), _q(3, 4)),
     r"sparsetir\.sparse_attention: argument 'k' must have the dtype of 'q'"),
    ("attention-v-dtype", lambda: ops.sparse_attention(IP, IX, _q(2, 4), _q(3, 4), _q(3, 4).half()),
     r"sparsetir\.sparse_attention: argument 'v' must have the dtype of 'q'"),
    ("attention-int-q", lambda: ops.sparse_attention(IP, IX, t(1, 2).view(2, 1), _q(3, 1), _q(3, 1)),
     r"sparsetir\.sparse_attention: argument 'q' must have a floating dtype"),
    ("attention-indices-negative", lambda: ops.sparse_attention(IP, t(0, -2, 1), _q(2, 4), _q(3, 4), _q(3, 4)),
     r"sparsetir\.sparse_attention: indices must be non-negative"),
    # ---- _csr_transpose
    ("transpose-columns", lambda: ops._csr_transpose(IP, IX, 2),
     r"sparsetir\._csr_transpose: argument 'indices' holds column 2, out of range for 2 columns"),
    ("transpose-negative-columns", lambda: ops._csr_transpose(IP, IX, -1),
     r"sparsetir\._csr_transpose: argument 'columns' must be non-negative"),
    ("transpose-indptr-end", lambda: ops._csr_transpose(t(0, 1, 2), IX, 3),
     r"sparsetir\._csr_transpose: indptr must end at nnz"),
]


@pytest.mark.parametrize("call,pattern", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_operator_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
    assert_healthy()


@pytest.mark.parametrize("idtype", (torch.int32, torch.int64))
def test_structure_errors_per_index_dtype(idtype):
    indptr, indices, values, dense = good_inputs(idtype)
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: indptr must be non-decreasing"):
        ops.spmm(torch.tensor([0, 3, 2], dtype=idtype), indices, values, dense)
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: indices must be non-negative"):
        ops.spmm(indptr, torch.tensor([0, -5, 1], dtype=idtype), values, dense)
    top = torch.iinfo(idtype).max
    big = torch.tensor([0, top, 1], dtype=idtype)
    with pytest.raises(ValueError, match=rf"sparsetir\.spmm: argument 'indices' holds column {top}, out of range"):
        ops.spmm(indptr, big, values, dense)
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)


def test_input_checks_precede_structure_checks_for_every_dtype():
    """A values dtype mismatch is reported even for 16-bit inputs and a valid structure."""
    for dtype in (torch.float16, torch.bfloat16, torch.float64):
        with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'dense' must have the dtype of 'values'"):
            ops.spmm(IP, IX, VAL.to(dtype), DENSE)
    assert_healthy()


# --------------------------------------------------------------------------- layouts and devices


SPARSE_DENSE_ARG_BUG = pytest.mark.xfail(
    strict=True,
    reason="the dispatcher rejects sparse tensors (no SparseCPU / SparseCsrCPU kernel) with "
           "\"Could not run 'sparsetir::spmm' with arguments from the 'SparseCsrCPU' backend\" before the "
           "operator's own layout check (CheckCpu in op_checks.cc) can name the argument")


@pytest.mark.parametrize("which", ("dense", "values", "indptr"))
@pytest.mark.parametrize("layout", ("csr", "coo"))
def test_sparse_tensor_as_dense_argument(which, layout):
    """A sparse layout where the operator takes a component tensor is rejected
    (today by the dispatcher: the message names the operator and the backend)."""
    args = dict(indptr=IP, indices=IX, values=VAL, dense=DENSE)
    if layout == "csr" and args[which].dim() != 2:
        args[which] = args[which].view(1, -1)
    args[which] = args[which].to_sparse_csr() if layout == "csr" else args[which].to_sparse()
    with pytest.raises(RuntimeError, match=r"sparsetir::spmm.*Sparse(Csr)?CPU"):
        ops.spmm(args["indptr"], args["indices"], args["values"], args["dense"])
    assert_healthy()


@SPARSE_DENSE_ARG_BUG
def test_sparse_tensor_as_dense_argument_names_the_argument():
    with pytest.raises((ValueError, RuntimeError), match=r"sparsetir\.spmm: argument 'dense' must be a dense"):
        ops.spmm(IP, IX, VAL, DENSE.to_sparse_csr())


def test_all_meta_inputs_give_meta_outputs():
    """Every input on the meta device runs the fake (shape) implementations."""
    m = {k: v.to("meta") for k, v in dict(ip=IP, ix=IX, val=VAL, dense=DENSE).items()}
    out = ops.spmm(m["ip"], m["ix"], m["val"], m["dense"], "max")
    assert out.device.type == "meta" and out.shape == (2, 4) and out.dtype == torch.float32
    out = ops.sddmm(m["ip"], m["ix"], None, X.to("meta"), Y.to("meta"))
    assert out.device.type == "meta" and out.shape == (3,)
    out = ops.bsrmm(m["ip"], m["ix"], torch.ones(3, 2, 4, device="meta"), torch.ones(12, 5, device="meta"))
    assert out.device.type == "meta" and out.shape == (4, 5)
    q, k, v = (torch.ones(2, n, d, device="meta") for n, d in ((2, 4), (3, 4), (3, 6)))
    out = ops.sparse_attention(m["ip"], m["ix"], q, k, v)
    assert out.device.type == "meta" and out.shape == (2, 2, 6)
    with pytest.raises(RuntimeError, match=r"sparsetir\.spmm: argument 'dense' must be 2-D"):
        ops.spmm(m["ip"], m["ix"], m["val"], torch.ones(3, device="meta"))
    assert_healthy()


# A meta tensor mixed with CPU tensors reaches the fake implementations (the
# dispatcher prefers the meta kernel); they check that all inputs share a device.
@pytest.mark.parametrize("which", ("indptr", "indices", "values", "dense"))
def test_spmm_mixed_meta_and_cpu_raises(which):
    args = dict(indptr=IP, indices=IX, values=VAL, dense=DENSE)
    args[which] = args[which].to("meta")
    with pytest.raises((ValueError, RuntimeError), match=rf"sparsetir\.spmm.*'{which}'.*meta"):
        ops.spmm(args["indptr"], args["indices"], args["values"], args["dense"])


@pytest.mark.parametrize("op", ("sddmm", "bsrmm", "sparse_attention"))
def test_other_ops_mixed_meta_and_cpu_raise(op):
    meta = lambda x: x.to("meta")  # noqa: E731
    with pytest.raises((ValueError, RuntimeError), match=rf"sparsetir\.{op}.*meta"):
        if op == "sddmm":
            ops.sddmm(IP, IX, None, meta(X), Y)
        elif op == "bsrmm":
            ops.bsrmm(IP, IX, meta(torch.ones(3, 2, 2)), torch.ones(6, 4))
        else:
            ops.sparse_attention(IP, IX, meta(_q(2, 4)), _q(3, 4), _q(3, 4))


# The ops run on CUDA tensors (the CUDA backend); inputs on two devices are
# refused naming both, the structure conversions too (they run on the host),
# and an op without a CUDA kernel says so, naming itself.
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_mixed_device_inputs_are_rejected():
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'indices' is on cpu but 'indptr' is on cuda"):
        ops.spmm(IP.cuda(), IX, VAL.cuda(), DENSE.cuda())
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'values' is on cpu but 'indptr' is on cuda"):
        ops.spmm(IP.cuda(), IX.cuda(), VAL, DENSE.cuda())
    with pytest.raises(ValueError, match=r"sparsetir\._csr_to_bsr: every tensor argument must be on one device"):
        ops._csr_to_bsr(IP.cuda(), IX, DENSE.size(0), 1, 2)
    with pytest.raises(ValueError,
                       match=r"sparsetir\._scatter_by_slot: argument 'slot' is on cpu but 'values' is on cuda"):
        ops._scatter_by_slot(VAL.cuda(), IX.long(), IP.cuda(), 8, 1)
    with pytest.raises(NotImplementedError, match=r"sparsetir::_spmm_hyb.*CUDA"):
        ops._spmm_hyb(IP.cuda(), IX.cuda(), VAL.cuda(), DENSE.cuda(), 1, 4)
    torch.testing.assert_close(ops.spmm(IP.cuda(), IX.cuda(), VAL.cuda(), DENSE.cuda()).cpu(), ops.spmm(IP, IX, VAL, DENSE))
    assert_healthy()


# --------------------------------------------------------------------------- the Python wrappers


def csr_3x4():
    return torch.sparse_csr_tensor(t(0, 1, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4))


WRAPPER_CALLS = [
    ("spmm-shape", lambda: st.spmm(csr_3x4(), torch.ones(5, 2)),
     r"st\.spmm: A \(3, 4\) and B \(5, 2\) cannot be multiplied \(A has 4 columns, B 5 rows\)"),
    ("spmm-shape-SparseMatrix", lambda: st.spmm(st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4)),
                                                torch.ones(3, 2)),
     r"st\.spmm: A \(3, 4\) and B \(3, 2\) cannot be multiplied"),
    ("spmm-matmul-shape", lambda: st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4)) @ torch.ones(2, 2),
     r"st\.spmm: A \(3, 4\) and B \(2, 2\) cannot be multiplied"),
    ("spmm-B-1d", lambda: st.spmm(csr_3x4(), torch.ones(4)), r"st\.spmm: argument 'B' must be 2-D"),
    ("spmm-B-sparse", lambda: st.spmm(csr_3x4(), torch.ones(4, 2).to_sparse()),
     r"st\.spmm: argument 'B' must be a dense tensor"),
    ("spmm-B-not-tensor", lambda: st.spmm(csr_3x4(), [[1.0]]), r"st\.spmm: argument 'B' must be a tensor"),
    ("spmm-A-dense", lambda: st.spmm(torch.ones(3, 4), torch.ones(4, 2)),
     r"st\.spmm: argument 'A': expected a sparse tensor"),
    ("spmm-A-not-tensor", lambda: st.spmm("A", torch.ones(4, 2)), r"st\.spmm: argument 'A'"),
    ("spmm-bad-reduce", lambda: st.spmm(csr_3x4(), torch.ones(4, 2), "median"),
     r"sparsetir\.spmm: argument 'reduce'"),
    ("spmm-bsr-reduce", lambda: st.spmm(torch.ones(4, 4).to_sparse_bsr((2, 2)), torch.ones(4, 2), "max"),
     r"st\.spmm: a block-sparse A supports reduce='sum' only"),
    ("spmm-dtype", lambda: st.spmm(csr_3x4(), torch.ones(4, 2, dtype=torch.float64)),
     r"sparsetir\.spmm: argument 'dense' must have the dtype of 'values'"),
    ("spmm-coo-3d", lambda: st.spmm(torch.ones(2, 2, 2).to_sparse(), torch.ones(2, 2)), r"2-D"),
    ("sddmm-X-rows", lambda: st.sddmm(csr_3x4(), torch.ones(2, 5), torch.ones(4, 5)),
     r"st\.sddmm: X \(2, 5\) and Y \(4, 5\) must have A's rows \(3\) and columns \(4\)"),
    ("sddmm-Y-rows", lambda: st.sddmm(csr_3x4(), torch.ones(3, 5), torch.ones(5, 5)),
     r"st\.sddmm: X \(3, 5\) and Y \(5, 5\) must have A's rows"),
    ("sddmm-columns", lambda: st.sddmm(csr_3x4(), torch.ones(3, 5), torch.ones(4, 6)),
     r"sparsetir\.sddmm: arguments 'x' \(3, 5\) and 'y' \(4, 6\) must have the same number of columns"),
    ("sddmm-bsr", lambda: st.sddmm(torch.ones(4, 4).to_sparse_bsr((2, 2)), torch.ones(4, 2), torch.ones(4, 2)),
     r"st\.sddmm: A must be CSR or COO, not block-sparse"),
    ("sddmm-X-sparse", lambda: st.sddmm(csr_3x4(), torch.ones(3, 2).to_sparse(), torch.ones(4, 2)),
     r"st\.sddmm: argument 'X' must be a dense tensor"),
    ("bsrmm-csr", lambda: st.bsrmm(csr_3x4(), torch.ones(4, 2)), r"st\.bsrmm: A must be block-sparse"),
    ("bsrmm-shape", lambda: st.bsrmm(torch.ones(4, 6).to_sparse_bsr((2, 3)), torch.ones(4, 2)),
     r"st\.bsrmm: A \(4, 6\) and B \(4, 2\) cannot be multiplied"),
    ("bsrmm-B-1d", lambda: st.bsrmm(torch.ones(4, 6).to_sparse_bsr((2, 3)), torch.ones(6)),
     r"st\.bsrmm: argument 'B' must be 2-D"),
    ("attention-mask-shape", lambda: st.sparse_attention(_q(3, 4), _q(5, 4), _q(5, 4), csr_3x4()),
     r"st\.sparse_attention: mask has shape \(3, 4\), expected \(L, S\) = \(3, 5\)"),
    ("attention-dense-mask-shape", lambda: st.sparse_attention(_q(3, 4), _q(5, 4), _q(5, 4),
                                                               torch.ones(3, 4, dtype=torch.bool)),
     r"st\.sparse_attention: a dense mask must be a bool tensor of shape \(3, 5\)"),
    ("attention-dense-mask-dtype", lambda: st.sparse_attention(_q(3, 4), _q(5, 4), _q(5, 4), torch.ones(3, 5)),
     r"st\.sparse_attention: a dense mask must be a bool tensor"),
    ("attention-q-1d", lambda: st.sparse_attention(_q(4), _q(5, 4), _q(5, 4), csr_3x4()),
     r"st\.sparse_attention: q, k and v must be at least 2-D"),
    ("attention-q-sparse", lambda: st.sparse_attention(_q(3, 4).to_sparse(), _q(4, 4), _q(4, 4), csr_3x4()),
     r"st\.sparse_attention: argument 'q' must be a dense tensor"),
    ("attention-D", lambda: st.sparse_attention(_q(3, 4), _q(4, 5), _q(4, 4), csr_3x4()),
     r"sparsetir\.sparse_attention: argument 'k' \(4, 5\) must have the head dimension of 'q'"),
    ("attention-mask-not-sparse", lambda: st.sparse_attention(_q(3, 4), _q(4, 4), _q(4, 4), "mask"),
     r"st\.sparse_attention: argument 'mask'"),
    ("SparseMatrix-rows", lambda: st.SparseMatrix(t(0, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4)),
     r"SparseMatrix: indptr has 2 rows"),
    ("SparseMatrix-values-4d", lambda: st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 3), torch.ones(3, 1, 1, 1), (3, 4)),
     r"SparseMatrix: values must be 1-D \(CSR\), 2-D \(CSR, one value per head\) or 3-D"),
    ("SparseMatrix-shape", lambda: st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4, 1)),
     r"SparseMatrix: shape must be two non-negative sizes, got \(3, 4, 1\)"),
    ("SparseMatrix-negative-shape", lambda: st.SparseMatrix(t(0, 0, 0), t(), torch.ones(0), (2, -3)),
     r"SparseMatrix: shape must be two non-negative sizes, got \(2, -3\)"),
    ("SparseMatrix-from-dense-1d", lambda: st.SparseMatrix.from_dense(torch.ones(3)),
     r"SparseMatrix\.from_dense: expected a 2-D tensor, got shape \(3,\)"),
    ("SparseMatrix-with-values-list", lambda: st.SparseMatrix.from_dense(torch.eye(3)).with_values([1.0, 2.0, 3.0]),
     r"SparseMatrix\.with_values: values must be a tensor, got list"),
    ("SparseMatrix-ell-columns", lambda: st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 7), torch.ones(3), (3, 4)).ell(2),
     r"SparseMatrix\.ell: argument 'indices' holds column 7, out of range for 4 columns \(the columns of shape"),
    ("edge_softmax-columns", lambda: st.edge_softmax(torch.sparse_csr_tensor(t(0, 1, 2, 3), t(0, 4, 2), torch.ones(3),
                                                                             (3, 4)), torch.zeros(3)),
     r"st\.edge_softmax: argument 'indices' holds column 4, out of range for 4 columns \(the columns of A's shape"),
    ("SparseMatrix-block-width", lambda: st.SparseMatrix(t(0, 1), t(0), torch.ones(1, 2, 3), (2, 4)),
     r"SparseMatrix: shape \(2, 4\) is not a whole number of blocks of width 3"),
]


@pytest.mark.parametrize("call,pattern", [c[1:] for c in WRAPPER_CALLS], ids=[c[0] for c in WRAPPER_CALLS])
def test_bad_wrapper_input(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
    assert_healthy()


def test_wrapper_structure_errors_come_from_the_operator():
    """A SparseMatrix is not validated on construction; the first check names the call (st.spmm's format
    chooser checks the structure before it counts blocks) or the operator, and the argument."""
    A = st.SparseMatrix(t(0, 2, 1, 3), t(0, 1, 3), torch.ones(3), (3, 4))
    with pytest.raises(ValueError, match=r"^st\.spmm: indptr must be non-decreasing"):
        st.spmm(A, torch.ones(4, 2))
    A = st.SparseMatrix(t(0, 1, 1, 3), t(0, 1, 4), torch.ones(3), (3, 4))
    with pytest.raises(ValueError, match=r"sparsetir\.sddmm: argument 'indices' holds column 4, out of range for 4"):
        st.sddmm(A, torch.ones(3, 2), torch.ones(4, 2))
    assert_healthy()


# --------------------------------------------------------------------------- the per-graph validation cache


@pytest.fixture
def clean_graph_cache():
    st.clear_graph_cache()
    yield
    st.clear_graph_cache()


def info():
    i = st.graph_cache_info()
    assert set(i) == {"hits", "misses", "entries"}
    return i


def test_graph_cache_hit_on_second_call(clean_graph_cache):
    assert info() == {"hits": 0, "misses": 0, "entries": 0}
    indptr, indices, values, dense = good_inputs()
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
    assert info() == {"hits": 0, "misses": 1, "entries": 1}
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
    assert info() == {"hits": 1, "misses": 1, "entries": 1}
    # the cache is per graph, not per operator; new values or dense inputs do not matter
    ops.sddmm(indptr, indices, values * 2, torch.ones(2, 4), dense)
    ops.spmm(indptr, indices, values.double(), dense.double(), "max")
    assert info() == {"hits": 3, "misses": 1, "entries": 1}
    # equal contents in other tensors are another graph
    ops.spmm(indptr.clone(), indices.clone(), values, dense)
    assert info() == {"hits": 3, "misses": 2, "entries": 2}


def test_graph_cache_revalidates_after_in_place_change(clean_graph_cache):
    indptr, indices, values, dense = good_inputs()
    ops.spmm(indptr, indices, values, dense)
    ops.spmm(indptr, indices, values, dense)
    assert info()["hits"] == 1
    old = int(indices[0])
    indices[0] = 1_000_000  # out of range: the next call must validate again and fail
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'indices' holds column 1000000, out of range"):
        ops.spmm(indptr, indices, values, dense)
    assert info()["misses"] == 2
    with pytest.raises(ValueError, match=r"sparsetir\.sddmm: argument 'indices' holds column 1000000"):
        ops.sddmm(indptr, indices, None, torch.ones(2, 4), dense)
    indices[0] = old
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
    # a change through a view bumps the shared version counter too
    indptr[1:2].fill_(5)
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: indptr must be non-decreasing"):
        ops.spmm(indptr, indices, values, dense)
    indptr[1] = 2
    indices.neg_()  # in-place op
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: indices must be non-negative"):
        ops.spmm(indptr, indices, values, dense)
    indices.neg_()
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
    assert_healthy()


def test_graph_cache_hit_still_checks_columns(clean_graph_cache):
    """The cached summary is reused, but the column bound depends on the call's dense input."""
    indptr, indices, values, dense = good_inputs()
    ops.spmm(indptr, indices, values, dense)
    with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'indices' holds column 2, out of range for 2"):
        ops.spmm(indptr, indices, values, dense[:2])
    assert info()["hits"] == 1
    assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)


def test_graph_cache_does_not_keep_invalid_graphs(clean_graph_cache):
    indptr, indices, values, dense = good_inputs()
    bad = torch.tensor([0, 3, 2])
    for _ in range(2):
        with pytest.raises(ValueError, match="non-decreasing"):
            ops.spmm(bad, indices, values, dense)
    assert info() == {"hits": 0, "misses": 2, "entries": 0}


def test_graph_cache_skips_inference_tensors(clean_graph_cache):
    """Inference tensors have no version counter: they are validated on every call."""
    with torch.inference_mode():
        indptr, indices, values, dense = good_inputs()
        for _ in range(2):
            assert torch.equal(ops.spmm(indptr, indices, values, dense), GOOD_SPMM)
        assert info() == {"hits": 0, "misses": 0, "entries": 0}  # never looked up, never stored
        indices[0] = 7
        with pytest.raises(ValueError, match=r"sparsetir\.spmm: argument 'indices' holds column 7"):
            ops.spmm(indptr, indices, values, dense)


def test_graph_cache_drops_freed_graphs_and_clear_resets(clean_graph_cache):
    indptr, indices, values, dense = good_inputs()
    ops.spmm(indptr, indices, values, dense)
    del indptr, indices
    for _ in range(3):  # each insertion drops the entries whose tensors are gone
        ip, ix, values, dense = good_inputs()
        ops.spmm(ip, ix, values, dense)
        del ip, ix
    assert info()["entries"] == 1
    st.clear_graph_cache()
    assert info() == {"hits": 0, "misses": 0, "entries": 0}
    assert_healthy()


def test_graph_cache_capacity_bounds_the_entries(clean_graph_cache):
    graphs = [good_inputs() for _ in range(5)]
    try:
        _C.set_graph_cache_capacity(3)
        for g in graphs:
            ops.spmm(*g)
        assert info()["entries"] == 3
        ops.spmm(*graphs[-1])  # the most recent is still there
        assert info()["hits"] == 1
        ops.spmm(*graphs[0])  # the oldest was evicted
        assert info()["misses"] == 6
    finally:
        _C.set_graph_cache_capacity(128)


UNTRACKED_WRITE_BUG = pytest.mark.xfail(
    strict=True,
    reason="BUG (memory safety): the validation cache trusts the version counter, so a write that bypasses it "
           "(through a numpy array sharing memory via torch.from_numpy, or through tensor.data) is never "
           "re-validated: an out-of-range column index then reaches the kernel, which reads out of bounds "
           "(segmentation fault) instead of raising")


@UNTRACKED_WRITE_BUG
@pytest.mark.parametrize("how", ("numpy", "data"))
def test_untracked_write_to_cached_indices(how):
    """Run in a subprocess: today the process dies with SIGSEGV."""
    script = textwrap.dedent(f"""
        import numpy as np, torch
        import sparsetir_torch  # noqa: F401
        ops = torch.ops.sparsetir
        arr = np.array([0, 1, 2, 0], dtype=np.int64)
        indptr, indices = torch.tensor([0, 2, 4]), torch.from_numpy(arr)
        values, dense = torch.ones(4), torch.ones(3, 4)
        ops.spmm(indptr, indices, values, dense)
        if {how!r} == "numpy":
            arr[1] = 50_000_000
        else:
            indices.data[1] = 50_000_000
        try:
            ops.spmm(indptr, indices, values, dense)
        except ValueError as e:
            assert "out of range" in str(e), e
            print("RAISED")
        else:
            print("NO ERROR")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 0 and "RAISED" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr[-2000:])


def test_a_matrix_narrower_than_its_indices_is_named_for_the_call():
    # The format chooser and the transpose check the structure first, so the
    # error names the user's call and A's shape, not an internal counter.
    A = st.SparseMatrix(torch.tensor([0, 2, 3, 5, 6]), torch.tensor([0, 5, 1, 7, 2, 3]), torch.randn(6), (4, 4))
    pattern = r"holds column 7, out of range for 4 columns \(the columns of (argument 'A' of )?shape \(4, 4\)\)"
    for call, name in ((lambda: st.spmm(A, torch.randn(4, 3)), "st.spmm"), (lambda: A @ torch.randn(4, 3), "st.spmm"),
                       (lambda: st.explain(A, k=3), "st.explain"), (lambda: A.t(), "SparseMatrix.t")):
        with pytest.raises(ValueError, match=rf"^{name}: .*{pattern}"):
            call()


@pytest.mark.parametrize("op", ["spmm", "sddmm", "edge_softmax"])
def test_a_batched_sparse_tensor_is_named_for_the_call(op):
    batched = torch.eye(3).expand(2, 3, 3).to_sparse_csr()
    calls = {"spmm": lambda: st.spmm(batched, torch.randn(3, 5)),
             "sddmm": lambda: st.sddmm(batched, torch.randn(3, 5), torch.randn(3, 5)),
             "edge_softmax": lambda: st.edge_softmax(batched, torch.randn(3))}
    with pytest.raises(ValueError, match=rf"^st\.{op}: argument 'A': .*must be 2-D.*\(2, 3, 3\)"):
        calls[op]()


def test_to_dense_of_indices_out_of_range_is_refused_not_misplaced():
    # torch builds a CSR tensor without checking it: row 1's value would land
    # in row 0 of to_dense().
    A = st.SparseMatrix(torch.tensor([0, 1, 2]), torch.tensor([0, -3]), torch.tensor([1.0, 2.0]), (2, 4))
    for call in (A.to_dense, A.to_torch):
        with pytest.raises(ValueError, match=r"^SparseMatrix\.to_torch: .*-3"):
            call()


@pytest.mark.parametrize("slope", [float("nan"), float("inf")])
def test_gat_attention_refuses_a_slope_that_is_not_finite(slope):
    ip, ix = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match=r"^sparsetir\.gat_attention: argument 'negative_slope' must be finite"):
        torch.ops.sparsetir.gat_attention(ip, ix, torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2, 3), slope)
