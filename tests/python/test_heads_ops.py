"""Multi-head operators and the fused GAT attention: spmm with per-head values
(nnz, H) and dense (n, H, D), sddmm per head (op="dot" with 3-D operands) and
element-wise (op="add" / "mul"), and gat_attention. Values against float64
NumPy references on every CSR edge case, dtype and index dtype; gradients
(gradcheck), opcheck, torch.compile, autocast and the argument errors."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.library import opcheck

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import CSR_CASES, UNIT_ROUNDOFF, assert_within_bound, gat_reference, make_csr

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
IDTYPES = ("int32", "int64")
# (heads, features per head): one feature (the heads are the vector), a width
# no vector divides, and vector widths.
HEAD_SHAPES = ((1, 1), (3, 5), (4, 16), (2, 32))


def tensor(rng, shape, dtype):
    return torch.from_numpy(rng.uniform(-1, 1, shape)).to(DTYPES[dtype])


def spmm_heads_reference(csr, values, dense):
    """out[i, h, :] = sum over row i's non-zeros of values[e, h] * dense[j, h, :], and the sum of |terms|."""
    out = np.zeros((csr.m,) + dense.shape[1:])
    magnitude = np.zeros_like(out)
    rows = csr.rows()
    np.add.at(out, rows, values[:, :, None] * dense[csr.indices])
    np.add.at(magnitude, rows, np.abs(values[:, :, None] * dense[csr.indices]))
    return out, magnitude


@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("heads,feat", HEAD_SHAPES)
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_spmm_per_head_values_match_float64(case, dtype, idtype, heads, feat, reduce):
    csr = make_csr(seed=11, **CSR_CASES[case])
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(5)
    values, dense = tensor(rng, (csr.nnz, heads), dtype), tensor(rng, (csr.n, heads, feat), dtype)
    out = ops.spmm(indptr, indices, values, dense, reduce)
    assert out.shape == (csr.m, heads, feat) and out.dtype == dense.dtype
    ref, magnitude = spmm_heads_reference(csr, values.double().numpy(), dense.double().numpy())
    terms = np.maximum(csr.row_lengths(), 1)[:, None, None]
    if reduce == "mean":
        ref, magnitude = ref / terms, magnitude / terms
        terms = terms + 1  # one more rounding: the division
    assert_within_bound(out, ref, magnitude, terms, dtype, f"spmm heads {case}")


@pytest.mark.parametrize("reduce", ("sum", "mean", "max", "min"))
def test_spmm_values_shared_by_heads_is_the_2d_spmm_of_the_flattened_dense(reduce):
    csr = make_csr(40, 30, density=0.2, seed=3, empty_rows=(2, 7), dense_rows=(5,))
    indptr, indices = csr.torch_structure("int64")
    rng = np.random.default_rng(1)
    values, dense = tensor(rng, (csr.nnz,), "float32"), tensor(rng, (csr.n, 3, 8), "float32")
    out = ops.spmm(indptr, indices, values, dense, reduce)
    flat = ops.spmm(indptr, indices, values, dense.reshape(csr.n, 24), reduce)
    torch.testing.assert_close(out, flat.view(csr.m, 3, 8), rtol=0, atol=0)
    A = st.SparseMatrix(indptr, indices, values, csr.shape)
    torch.testing.assert_close(st.spmm(A, dense, reduce), out, rtol=0, atol=0)


@pytest.mark.parametrize("heads,feat", HEAD_SHAPES)
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_sddmm_per_head_dot_matches_float64(case, dtype, idtype, heads, feat):
    csr = make_csr(seed=13, **CSR_CASES[case])
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(6)
    x, y = tensor(rng, (csr.m, heads, feat), dtype), tensor(rng, (csr.n, heads, feat), dtype)
    out = ops.sddmm(indptr, indices, None, x, y, "dot")
    assert out.shape == (csr.nnz, heads) and out.dtype == x.dtype
    products = x.double().numpy()[csr.rows()] * y.double().numpy()[csr.indices]
    assert_within_bound(out, products.sum(-1), np.abs(products).sum(-1), feat, dtype, f"sddmm heads {case}")


@pytest.mark.parametrize("trailing", ((), (1,), (4,), (3, 16), (2, 3)))
@pytest.mark.parametrize("op", ("add", "mul"))
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ("1x1", "zero_nnz", "empty_rows", "dense_row", "unsorted_with_duplicates", "no_rows",
                                  "no_columns"))
def test_sddmm_elementwise_matches_float64(case, dtype, idtype, op, trailing):
    csr = make_csr(seed=17, **CSR_CASES[case])
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(8)
    x, y = tensor(rng, (csr.m,) + trailing, dtype), tensor(rng, (csr.n,) + trailing, dtype)
    out = ops.sddmm(indptr, indices, None, x, y, op)
    assert out.shape == (csr.nnz,) + trailing and out.dtype == x.dtype
    xs, ys = x.double().numpy()[csr.rows()], y.double().numpy()[csr.indices]
    ref = xs + ys if op == "add" else xs * ys
    # One rounding of an exact float64 result (to a subnormal's spacing, for
    # float16 products below its smallest normal number).
    atol = 2.0**-24 if dtype == "float16" else 0
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=UNIT_ROUNDOFF[dtype], atol=atol)


@pytest.mark.parametrize("op", ("dot", "add", "mul"))
def test_sddmm_values_scale_every_head_or_feature(op):
    csr = make_csr(20, 15, density=0.3, seed=2, empty_rows=(4,))
    indptr, indices = csr.torch_structure("int32")
    rng = np.random.default_rng(9)
    x, y = (tensor(rng, (k, 3, 4), "float64") for k in (csr.m, csr.n))
    plain = ops.sddmm(indptr, indices, None, x, y, op)
    per_nonzero = tensor(rng, (csr.nnz,), "float64")
    shape = (csr.nnz,) + (1,) * (plain.dim() - 1)
    torch.testing.assert_close(ops.sddmm(indptr, indices, per_nonzero, x, y, op), plain * per_nonzero.view(shape))
    full = tensor(rng, tuple(plain.shape), "float64")
    torch.testing.assert_close(ops.sddmm(indptr, indices, full, x, y, op), plain * full)


def test_st_sddmm_returns_a_hybrid_csr_tensor_that_st_spmm_takes_back():
    csr = make_csr(25, 20, density=0.2, seed=4, empty_rows=(1,))
    indptr, indices = csr.torch_structure("int64")
    A = st.SparseMatrix(indptr, indices, torch.ones(csr.nnz), csr.shape)
    rng = np.random.default_rng(10)
    a_dst, a_src, x = tensor(rng, (csr.m, 2), "float32"), tensor(rng, (csr.n, 2), "float32"), tensor(
        rng, (csr.n, 2, 8), "float32")
    scores = st.sddmm(A, a_dst, a_src, op="add")
    assert scores.layout == torch.sparse_csr and scores.shape == (csr.m, csr.n, 2)
    weights = st.SparseMatrix.from_torch(scores)
    assert weights.heads == 2 and weights.shape == csr.shape
    out = st.spmm(weights, x)
    ref, _ = spmm_heads_reference(csr, scores.values().double().numpy(), x.double().numpy())
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=1e-5, atol=1e-5)
    dots = st.sddmm(A, tensor(rng, (csr.m, 2, 8), "float32"), x)
    assert dots.layout == torch.sparse_csr and dots.shape == (csr.m, csr.n, 2)


# --------------------------------------------------------------------------- gat_attention


@pytest.mark.parametrize("slope", (0.2, 1.5))
@pytest.mark.parametrize("heads,feat", HEAD_SHAPES)
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_gat_attention_matches_float64(case, dtype, idtype, heads, feat, slope):
    csr = make_csr(seed=19, **CSR_CASES[case])
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(12)
    a_dst, a_src = tensor(rng, (csr.m, heads), dtype) * 3, tensor(rng, (csr.n, heads), dtype) * 3
    x = tensor(rng, (csr.n, heads, feat), dtype)
    out = ops.gat_attention(indptr, indices, a_dst, a_src, x, slope)
    assert out.shape == (csr.m, heads, feat) and out.dtype == x.dtype
    ref, _ = gat_reference(csr, a_dst.double().numpy(), a_src.double().numpy(), x.double().numpy(), slope)
    # Computed in float32 (float64 for float64) and rounded once: the softmax
    # weights are within a few units of the compute type, the sum of |terms|
    # is at most max|x| = 1.
    longest = int(np.diff(csr.indptr).max(initial=1))
    compute_u = 2.0**-53 if dtype == "float64" else 2.0**-24
    tol = 2 * UNIT_ROUNDOFF[dtype] + 4 * (longest + 8) * compute_u
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=0, atol=tol)


def test_gat_attention_equals_the_three_kernel_composition():
    csr = make_csr(60, 60, density=0.1, seed=21, empty_rows=(3, 4), dense_rows=(10,))
    indptr, indices = csr.torch_structure("int32")
    rng = np.random.default_rng(14)
    a_dst, a_src, x = tensor(rng, (60, 4), "float32"), tensor(rng, (60, 4), "float32"), tensor(rng, (60, 4, 16),
                                                                                                  "float32")
    fused = ops.gat_attention(indptr, indices, a_dst, a_src, x, 0.2)
    scores = F.leaky_relu(ops.sddmm(indptr, indices, None, a_dst, a_src, "add"), 0.2)
    alpha = ops.edge_softmax(indptr, indices, scores)
    torch.testing.assert_close(fused, ops.spmm(indptr, indices, alpha, x, "sum"))
    A = st.SparseMatrix(indptr, indices, torch.ones(csr.nnz), csr.shape)
    torch.testing.assert_close(st.gat_attention(A, a_dst, a_src, x), fused, rtol=0, atol=0)


# --------------------------------------------------------------------------- gradients


def small_graph(idtype="int64"):
    csr = make_csr(9, 7, density=0.35, seed=23, empty_rows=(2,), dense_rows=(5,))
    return csr, *csr.torch_structure(idtype)


def leaf(rng, shape):
    return torch.from_numpy(rng.uniform(-1, 1, shape)).requires_grad_()


@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("idtype", IDTYPES)
def test_spmm_heads_gradcheck(reduce, idtype):
    csr, indptr, indices = small_graph(idtype)
    rng = np.random.default_rng(1)
    values, dense = leaf(rng, (csr.nnz, 3)), leaf(rng, (csr.n, 3, 4))
    assert torch.autograd.gradcheck(lambda v, d: ops.spmm(indptr, indices, v, d, reduce), (values, dense))
    shared = leaf(rng, (csr.nnz,))
    assert torch.autograd.gradcheck(lambda v, d: ops.spmm(indptr, indices, v, d, reduce), (shared, dense))


@pytest.mark.parametrize("reduce", ("max", "min"))
def test_spmm_shared_values_extremum_gradients_match_the_flattened_2d_op(reduce):
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(2)
    values, dense = leaf(rng, (csr.nnz,)), leaf(rng, (csr.n, 2, 3))
    out = ops.spmm(indptr, indices, values, dense, reduce)
    grad = torch.from_numpy(rng.uniform(-1, 1, out.shape))
    gv, gd = torch.autograd.grad(out, (values, dense), grad)
    v2, d2 = values.detach().clone().requires_grad_(), dense.detach().reshape(csr.n, 6).clone().requires_grad_()
    rv, rd = torch.autograd.grad(ops.spmm(indptr, indices, v2, d2, reduce), (v2, d2), grad.reshape(csr.m, 6))
    torch.testing.assert_close(gv, rv)
    torch.testing.assert_close(gd, rd.view(dense.shape))


@pytest.mark.parametrize("with_values", (False, True))
@pytest.mark.parametrize("op,trailing", (("dot", (3, 4)), ("dot", (5,)), ("add", ()), ("add", (3,)), ("mul", (3,)),
                                         ("mul", (2, 3)), ("mul", ())))
def test_sddmm_gradcheck(op, trailing, with_values):
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(3)
    x, y = leaf(rng, (csr.m,) + trailing), leaf(rng, (csr.n,) + trailing)
    if with_values:
        values = leaf(rng, (csr.nnz,))
        assert torch.autograd.gradcheck(lambda v, a, b: ops.sddmm(indptr, indices, v, a, b, op), (values, x, y))
    else:
        assert torch.autograd.gradcheck(lambda a, b: ops.sddmm(indptr, indices, None, a, b, op), (x, y))


@pytest.mark.parametrize("slope", (0.2, 2.0))
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gat_attention_gradcheck(idtype, slope):
    csr, indptr, indices = small_graph(idtype)
    rng = np.random.default_rng(4)
    a_dst, a_src, x = leaf(rng, (csr.m, 3)), leaf(rng, (csr.n, 3)), leaf(rng, (csr.n, 3, 4))
    assert torch.autograd.gradcheck(lambda d, s, v: ops.gat_attention(indptr, indices, d, s, v, slope),
                                    (a_dst, a_src, x))


def test_gat_attention_gradients_of_16_bit_inputs_match_float64():
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(5)
    inputs64 = [leaf(rng, shape) for shape in ((csr.m, 2), (csr.n, 2), (csr.n, 2, 8))]
    inputs16 = [t.detach().to(torch.bfloat16).requires_grad_() for t in inputs64]
    grad = torch.from_numpy(rng.uniform(-1, 1, (csr.m, 2, 8)))
    g64 = torch.autograd.grad(ops.gat_attention(indptr, indices, *inputs64), inputs64, grad)
    g16 = torch.autograd.grad(ops.gat_attention(indptr, indices, *inputs16), inputs16, grad.to(torch.bfloat16))
    for a, b in zip(g16, g64):
        assert a.dtype == torch.bfloat16
        torch.testing.assert_close(a.double(), b, rtol=0.05, atol=0.05)


def test_gat_attention_second_derivative_is_refused():
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(6)
    a_dst, a_src, x = leaf(rng, (csr.m, 2)), leaf(rng, (csr.n, 2)), leaf(rng, (csr.n, 2, 3))
    out = ops.gat_attention(indptr, indices, a_dst, a_src, x)
    (gx,) = torch.autograd.grad(out.sum(), (x,), create_graph=True)
    with pytest.raises(RuntimeError, match="gat_attention: second derivatives are not supported"):
        gx.sum().backward()


# --------------------------------------------------------------------------- torch.library, compile, autocast


def test_opcheck_every_new_form():
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(7)

    def t(*shape, grad=True):
        return torch.from_numpy(rng.uniform(-1, 1, shape)).float().requires_grad_(grad)

    opcheck(ops.spmm.default, (indptr, indices, t(csr.nnz, 2), t(csr.n, 2, 8), "sum"))
    opcheck(ops.spmm.default, (indptr, indices, t(csr.nnz, 2), t(csr.n, 2, 8), "mean"))
    opcheck(ops.spmm.default, (indptr, indices, t(csr.nnz), t(csr.n, 2, 8), "max"))
    opcheck(ops.sddmm.default, (indptr, indices, None, t(csr.m, 2, 8), t(csr.n, 2, 8), "dot"))
    opcheck(ops.sddmm.default, (indptr, indices, t(csr.nnz), t(csr.m, 4), t(csr.n, 4), "add"))
    opcheck(ops.sddmm.default, (indptr, indices, None, t(csr.m, 4), t(csr.n, 4), "mul"))
    opcheck(ops.gat_attention.default, (indptr, indices, t(csr.m, 2), t(csr.n, 2), t(csr.n, 2, 8), 0.2))


def test_gat_layer_pieces_compile_with_fullgraph():
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(8)
    a_dst, a_src, x = (torch.from_numpy(rng.uniform(-1, 1, s)).float() for s in
                       ((csr.m, 2), (csr.n, 2), (csr.n, 2, 8)))

    def layer(a_dst, a_src, x):
        fused = ops.gat_attention(indptr, indices, a_dst, a_src, x, 0.2)
        alpha = ops.edge_softmax(indptr, indices, F.leaky_relu(ops.sddmm(indptr, indices, None, a_dst, a_src, "add")))
        return fused + ops.spmm(indptr, indices, alpha, x, "sum")

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(a_dst, a_src, x), layer(a_dst, a_src, x))


def test_gat_attention_runs_under_bfloat16_autocast():
    csr, indptr, indices = small_graph()
    rng = np.random.default_rng(9)
    a_dst, a_src, x = (torch.from_numpy(rng.uniform(-1, 1, s)).float() for s in
                       ((csr.m, 2), (csr.n, 2), (csr.n, 2, 8)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = ops.gat_attention(indptr, indices, a_dst, a_src, x.to(torch.bfloat16))
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ops.gat_attention(indptr, indices, a_dst, a_src, x), rtol=0.03, atol=0.03)


# --------------------------------------------------------------------------- errors

IP, IX = torch.tensor([0, 2, 3]), torch.tensor([0, 2, 1])  # 2 x 3, nnz 3


@pytest.mark.parametrize("call,message", [
    (lambda: ops.spmm(IP, IX, torch.ones(3, 2), torch.ones(3, 4)),
     r"sparsetir\.spmm: argument 'values' must be 1-D"),
    (lambda: ops.spmm(IP, IX, torch.ones(3, 3), torch.ones(3, 2, 4)),
     r"sparsetir\.spmm: argument 'values' must be \(nnz, heads\) = \(3, 2\) for 'dense' \(3, 2, 4\), got shape \(3, 3\)"),
    (lambda: ops.spmm(IP, IX, torch.ones(3, 2, 1), torch.ones(3, 2, 4)),
     r"sparsetir\.spmm: argument 'values' must be \(nnz,\) or \(nnz, heads\)"),
    (lambda: ops.spmm(IP, IX, torch.ones(3, 2), torch.ones(3, 2, 4), "max"),
     r"sparsetir\.spmm: per-head values \(nnz, heads\) take reduce=\"sum\" or \"mean\", got \"max\""),
    (lambda: ops.spmm(IP, IX, torch.ones(3), torch.ones(3, 2, 2, 2)),
     r"sparsetir\.spmm: argument 'dense' must be 2-D \(n, K\) or 3-D \(n, heads, D\), got shape \(3, 2, 2, 2\)"),
    (lambda: ops.spmm(IP, IX, torch.ones(3, 2), torch.ones(3, 2, 4, dtype=torch.float64)),
     r"sparsetir\.spmm: argument 'dense' must have the dtype of 'values'"),
    (lambda: ops.spmm(IP, IX, torch.ones(3, 2), torch.ones(2, 2, 4)),
     r"sparsetir\.spmm: argument 'indices' holds column 2, out of range for 2 columns \(dense\.size\(0\)\)"),
    (lambda: ops.sddmm(IP, IX, None, torch.ones(2, 4), torch.ones(3, 4), "sub"),
     r"sparsetir\.sddmm: argument 'op' must be one of \"dot\", \"add\", \"mul\", got \"sub\""),
    (lambda: ops.sddmm(IP, IX, None, torch.ones(2, 2, 4), torch.ones(3, 3, 4), "dot"),
     r"sparsetir\.sddmm: arguments 'x' \(2, 2, 4\) and 'y' \(3, 3, 4\) must have the same number of heads and columns"),
    (lambda: ops.sddmm(IP, IX, None, torch.ones(2, 2, 4), torch.ones(3, 8), "dot"),
     r"sparsetir\.sddmm: argument 'y' must be 3-D like 'x' \(2, 2, 4\), got shape \(3, 8\)"),
    (lambda: ops.sddmm(IP, IX, None, torch.ones(2, 4), torch.ones(3, 5), "add"),
     r"sparsetir\.sddmm: op=\"add\" takes 'x' \(m, \*F\) and 'y' \(n, \*F\) of one trailing shape F, got \(2, 4\) "
     r"and \(3, 5\)"),
    (lambda: ops.sddmm(IP, IX, torch.ones(3, 5), torch.ones(2, 4), torch.ones(3, 4), "mul"),
     r"sparsetir\.sddmm: argument 'values' must have one element per non-zero \(3\) or the output's shape "
     r"\(3, 4\), got shape \(3, 5\)"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 2), torch.ones(3, 8)),
     r"sparsetir\.gat_attention: argument 'x' must be 3-D"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2, 8)),
     r"sparsetir\.gat_attention: argument 'a_dst' must be \(rows, heads\) = \(2, 2\), got shape \(3, 2\)"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 1), torch.ones(3, 2, 8)),
     r"sparsetir\.gat_attention: argument 'a_src' must be \(x\.size\(0\), heads\) = \(3, 2\), got shape \(3, 1\)"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 2).double(), torch.ones(3, 2, 8)),
     r"sparsetir\.gat_attention: argument 'a_src' must have the dtype of 'x'"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 2), torch.ones(2, 2, 8)),
     r"sparsetir\.gat_attention: argument 'indices' holds column 2, out of range for 2 columns \(x\.size\(0\)\)"),
    (lambda: ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 2), torch.ones(3, 2, 8, dtype=torch.int32)),
     r"sparsetir\.gat_attention: argument 'x' must have a floating dtype"),
    (lambda: st.spmm(st.SparseMatrix(IP, IX, torch.ones(3, 2), (2, 3)), torch.ones(3, 4)),
     r"st\.spmm: argument 'B' must be 3-D \(n, heads, D\) for a multi-head A, got shape \(3, 4\)"),
    (lambda: st.SparseMatrix(IP, IX, torch.ones(3, 2), (2, 3)).hyb(1, 4),
     r"SparseMatrix\.hyb: a multi-head matrix"),
    (lambda: st.sddmm(st.SparseMatrix(IP, IX, torch.ones(3), (2, 3)), torch.ones(2, 4), torch.ones(3, 4), op="max"),
     r"st\.sddmm: argument 'op' must be one of 'dot', 'add', 'mul', got 'max'"),
    (lambda: st.gat_attention(st.SparseMatrix(IP, IX, torch.ones(3), (2, 3)), torch.ones(3, 2), torch.ones(3, 2),
                              torch.ones(3, 2, 4)),
     r"st\.gat_attention: a_dst \(3, 2\) must have A's rows \(2\)"),
])
def test_errors_name_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_mixed_devices_are_refused_by_name():
    with pytest.raises((ValueError, RuntimeError), match=r"sparsetir\.gat_attention: .*one device"):
        ops.gat_attention(IP, IX, torch.ones(2, 2), torch.ones(3, 2, device="meta"), torch.ones(3, 2, 8))


def test_one_feature_per_head_on_a_graph_large_enough_to_prefetch():
    """The mul gradient's shape (heads of width 1) on a graph whose gathered
    rows are prefetched (operand past L2, columns far from the diagonal):
    the prefetch region is the row's heads, contiguous despite the trailing
    dimension of extent 1."""
    n, per_row, heads = 1 << 18, 2, 8
    g = torch.Generator().manual_seed(0)
    indptr = torch.arange(0, n * per_row + 1, per_row, dtype=torch.int64)
    indices = torch.randint(0, n, (n * per_row,), generator=g).view(n, per_row).sort(1).values.flatten()
    assert _C.spmm_prefetch_level(indptr, indices, n, heads * 4) == 1  # 8 MiB, 1 KiB of rows ahead: into L1
    values, dense = torch.randn(n * per_row, heads, generator=g), torch.randn(n, heads, 1, generator=g)
    out = ops.spmm(indptr, indices, values, dense, "sum")
    rows = torch.arange(n).repeat_interleave(per_row)
    ref = torch.zeros(n, heads, 1, dtype=torch.float64).index_add_(
        0, rows, values.double().unsqueeze(-1) * dense.double()[indices])
    torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-5)
