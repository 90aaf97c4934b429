"""st.edge_softmax / torch.ops.sparsetir.edge_softmax: values against a float64
NumPy softmax per row, gradients (gradcheck, gradgradcheck), opcheck,
torch.compile, autocast and the argument errors."""
import numpy as np
import pytest
import torch
from torch.library import opcheck

import sparsetir_torch as st
from conftest import CSR_CASES, UNIT_ROUNDOFF, make_csr

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
IDTYPES = {"int32": torch.int32, "int64": torch.int64}


def reference(indptr: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64 (scores (nnz, H))."""
    out = np.empty_like(scores)
    for i in range(indptr.size - 1):
        row = scores[indptr[i]:indptr[i + 1]]
        if row.size:
            e = np.exp(row - row.max(axis=0))
            out[indptr[i]:indptr[i + 1]] = e / e.sum(axis=0)
    return out


def structure(csr, idtype):
    return torch.from_numpy(csr.indptr).to(IDTYPES[idtype]), torch.from_numpy(csr.indices).to(IDTYPES[idtype])


@pytest.mark.parametrize("heads", (None, 1, 3))
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_values_match_a_float64_softmax_per_row(case, dtype, idtype, heads):
    csr = make_csr(seed=7, **CSR_CASES[case])
    indptr, indices = structure(csr, idtype)
    rng = np.random.default_rng(3)
    shape = (csr.nnz,) if heads is None else (csr.nnz, heads)
    scores = torch.from_numpy(rng.normal(0, 3, shape)).to(DTYPES[dtype])
    out = ops.edge_softmax(indptr, indices, scores)
    assert out.shape == scores.shape and out.dtype == scores.dtype
    s64 = scores.double().numpy().reshape(csr.nnz, heads or 1)
    ref = reference(csr.indptr, s64).reshape(shape)
    # float32 arithmetic for the 32-bit and 16-bit types, then one rounding to
    # the output dtype; the row sums add up to a row's length of terms.
    longest = int(np.diff(csr.indptr).max(initial=1))
    tol = 2 * UNIT_ROUNDOFF[dtype] + (longest + 4) * (2.0**-53 if dtype == "float64" else 2.0**-24)
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=tol, atol=tol)


def test_rows_sum_to_one_and_large_scores_stay_finite():
    csr = make_csr(60, 50, density=0.2, seed=1, empty_rows=(4,), dense_rows=(9,))
    indptr, indices = structure(csr, "int64")
    scores = torch.from_numpy(np.random.default_rng(0).normal(0, 1, (csr.nnz, 2))).float() * 1e4
    out = st.edge_softmax(torch.sparse_csr_tensor(indptr, indices, torch.ones(csr.nnz), csr.shape), scores)
    assert torch.isfinite(out).all()
    sums = torch.zeros(60, 2).index_add_(0, torch.repeat_interleave(torch.arange(60), indptr.diff()), out)
    lengths = indptr.diff()
    torch.testing.assert_close(sums[lengths > 0], torch.ones(int((lengths > 0).sum()), 2))


def test_negative_infinity_scores_get_zero_weight():
    indptr, indices = torch.tensor([0, 3]), torch.tensor([0, 1, 2])
    scores = torch.tensor([0.0, float("-inf"), 0.0])
    torch.testing.assert_close(ops.edge_softmax(indptr, indices, scores), torch.tensor([0.5, 0.0, 0.5]))


def test_matches_torch_sparse_softmax_of_a_coo_matrix():
    csr = make_csr(30, 20, density=0.3, seed=2, empty_rows=(3,))
    A = torch.sparse_csr_tensor(torch.from_numpy(csr.indptr), torch.from_numpy(csr.indices),
                                torch.from_numpy(csr.values), csr.shape)
    expected = torch.sparse.softmax(A.to_sparse_coo(), 1).coalesce().values()
    torch.testing.assert_close(st.edge_softmax(A, A.values()), expected)


@pytest.mark.parametrize("heads", (None, 2))
def test_gradcheck_and_gradgradcheck(heads):
    csr = make_csr(15, 12, density=0.3, seed=4, empty_rows=(2,), dense_rows=(5,))
    indptr, indices = structure(csr, "int32")
    shape = (csr.nnz,) if heads is None else (csr.nnz, heads)
    scores = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    f = lambda s: ops.edge_softmax(indptr, indices, s)  # noqa: E731
    assert torch.autograd.gradcheck(f, (scores,))
    assert torch.autograd.gradgradcheck(f, (scores,))


def test_opcheck():
    csr = make_csr(20, 20, density=0.2, seed=5, empty_rows=(0,))
    for idtype in IDTYPES:
        indptr, indices = structure(csr, idtype)
        for shape in ((csr.nnz,), (csr.nnz, 4)):
            opcheck(ops.edge_softmax, (indptr, indices, torch.randn(shape, requires_grad=True)))
            opcheck(ops._edge_softmax_backward, (indptr, indices, torch.rand(shape), torch.randn(shape)))


def test_torch_compile_fullgraph_matches_eager():
    csr = make_csr(40, 40, density=0.1, seed=6)
    indptr, indices = structure(csr, "int64")

    def f(s):
        return (ops.edge_softmax(indptr, indices, torch.nn.functional.leaky_relu(s, 0.2)) * 2).sum(0)

    s = torch.randn(csr.nnz, 3, requires_grad=True)
    compiled = torch.compile(f, fullgraph=True)
    out = compiled(s)
    torch.testing.assert_close(out, f(s))
    (g,) = torch.autograd.grad(out.sum(), s)
    (g_ref,) = torch.autograd.grad(f(s).sum(), s)
    torch.testing.assert_close(g, g_ref)


def test_autocast_bfloat16():
    csr = make_csr(30, 30, density=0.2, seed=8)
    indptr, indices = structure(csr, "int32")
    s = torch.randn(csr.nnz, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = ops.edge_softmax(indptr, indices, s)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), ops.edge_softmax(indptr, indices, s.bfloat16().float()),
                               rtol=2**-7, atol=2**-8)


def test_bad_arguments_name_the_argument():
    indptr, indices = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    with pytest.raises(ValueError, match="edge_softmax: argument 'scores' must have one row per non-zero"):
        ops.edge_softmax(indptr, indices, torch.randn(4))
    with pytest.raises(ValueError, match="edge_softmax: argument 'scores' must be 1-D .* or 2-D"):
        ops.edge_softmax(indptr, indices, torch.randn(3, 2, 2))
    with pytest.raises(ValueError, match="edge_softmax: argument 'scores' must have a floating dtype"):
        ops.edge_softmax(indptr, indices, torch.ones(3, dtype=torch.int64))
    with pytest.raises(ValueError, match="edge_softmax: indptr must be non-decreasing"):
        ops.edge_softmax(torch.tensor([0, 3, 2]), indices, torch.randn(3))
    with pytest.raises(ValueError, match="edge_softmax: arguments 'indptr' and 'indices' must have the same dtype"):
        ops.edge_softmax(indptr.int(), indices, torch.randn(3))
    with pytest.raises(ValueError, match="_edge_softmax_backward: argument 'grad' must have the shape of 'out'"):
        ops._edge_softmax_backward(indptr, indices, torch.rand(3), torch.rand(3, 1))
    with pytest.raises(ValueError, match="st.edge_softmax: A must be CSR or COO"):
        st.edge_softmax(torch.eye(4).to_sparse_bsr((2, 2)), torch.randn(2))
