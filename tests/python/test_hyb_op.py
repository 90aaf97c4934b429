"""SpMM on the hyb decomposition: torch.ops.sparsetir._spmm_hyb
(csrc/ops/op_spmm_hyb.cc), whose ELL-bucket kernels are made by
format_decompose and scheduled by the C++ recipe csrmm_ell_<mode>. Checked
against a float64 dense product, with every way buckets combine (overwrite,
add, atomic add), dtypes, index dtypes, edge shapes, gradients, opcheck,
torch.compile, bad arguments and the tuner's use of it."""
import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C, tuning

from conftest import DATASETS_DIR

ops = torch.ops.sparsetir


def power_law(rng, m, n, empty=(), dense_row=None):
    """Row lengths from a heavy-tailed distribution, some rows empty."""
    lengths = np.minimum(rng.zipf(1.6, m), n)
    lengths[list(empty)] = 0
    if dense_row is not None:
        lengths[dense_row] = n
    dense = np.zeros((m, n))
    for r, length in enumerate(lengths):
        cols = rng.choice(n, size=length, replace=False)
        dense[r, cols] = rng.uniform(0.25, 1.0, length) * rng.choice([-1, 1], length)
    return dense


def matrix(dense, dtype=torch.float32, index_dtype=torch.int32):
    csr = torch.from_numpy(dense).to(dtype).to_sparse_csr()
    # Plain tensors, not views of the sparse tensor (torch.compile takes no sparse layouts).
    return st.SparseMatrix(csr.crow_indices().to(index_dtype).clone(), csr.col_indices().to(index_dtype).clone(),
                           csr.values().clone(), dense.shape)


def hyb_spmm(A, B, parts, max_width):
    return ops._spmm_hyb(A.indptr, A.indices, A.values, B, parts, max_width)


def modes(A, parts, max_width):
    return {b["mode"] for b in _C.hyb_plan(A.indptr, A.indices, A.shape[1], parts, max_width)}


@pytest.mark.parametrize("parts,max_width,expected_modes", [
    (1, 64, {"overwrite"}),
    (1, 4, {"add", "atomic"}),    # the dense row is split into pieces of 4
    (3, 64, {"add"}),             # column parts share rows
    (2, 2, {"add", "atomic"}),
])
@pytest.mark.parametrize("K", [1, 16, 33])
def test_hyb_spmm_matches_dense(parts, max_width, expected_modes, K):
    rng = np.random.default_rng(K * 7 + parts)
    dense = power_law(rng, 40, 50, empty=(0, 7, 8), dense_row=13 if max_width < 50 else None)
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((50, K)).astype(np.float32))
    out = hyb_spmm(A, B, parts, max_width)
    np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-4)
    assert modes(A, parts, max_width) == expected_modes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("K", [8, 32, 128])
def test_dtypes(dtype, index_dtype, K):
    rng = np.random.default_rng(1)
    dense = power_law(rng, 30, 30, empty=(3,), dense_row=5)
    A = matrix(dense, dtype, index_dtype)
    B = torch.from_numpy(rng.standard_normal((30, K))).to(dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for parts, max_width in ((1, 32), (2, 4), (1, 8)):
        out = hyb_spmm(A, B, parts, max_width)
        assert out.dtype == dtype and out.shape == (30, K)
        np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=tol, atol=tol * 10)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_16_bit_values_are_refused(dtype):
    A = matrix(np.eye(4), dtype)
    with pytest.raises(ValueError, match=r"^sparsetir\._spmm_hyb: argument 'values' must be float32 or float64"):
        hyb_spmm(A, torch.ones(4, 2, dtype=dtype), 1, 4)


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_edge_shapes(index_dtype):
    # 1x1, zero non-zeros (no bucket at all: every row 0), a diagonal with
    # empty rows, one dense row, no rows, no columns.
    for dense in (np.array([[2.0]]), np.zeros((4, 3)), np.eye(5)[:, :3] * 3, np.ones((1, 9)), np.zeros((0, 4)),
                  np.zeros((3, 0))):
        A = matrix(dense, index_dtype=index_dtype)
        for K in (16, 0):
            B = torch.ones(dense.shape[1], K)
            for parts, width in ((1, 16), (2, 16), (1, 2)):
                out = hyb_spmm(A, B, parts, width)
                assert out.shape == (dense.shape[0], K)
                np.testing.assert_allclose(out.numpy(), dense @ B.numpy(), rtol=1e-6)


def test_a_dense_row_split_runs_atomic_and_column_parts_add():
    rng = np.random.default_rng(3)
    dense = power_law(rng, 20, 300, dense_row=4)
    A = matrix(dense, torch.float64)
    B = torch.from_numpy(rng.standard_normal((300, 32)))
    expected = dense @ B.numpy()
    # The dense row of 300 non-zeros in pieces of 16: one bucket repeats it.
    assert "atomic" in modes(A, 1, 16)
    np.testing.assert_allclose(hyb_spmm(A, B, 1, 16).numpy(), expected, rtol=1e-12, atol=1e-12)
    # Wide enough for every row, but in 4 column parts: each adds its share.
    assert modes(A, 4, 512) == {"add"}
    np.testing.assert_allclose(hyb_spmm(A, B, 4, 512).numpy(), expected, rtol=1e-12, atol=1e-12)
    assert modes(A, 1, 512) == {"overwrite"}
    np.testing.assert_allclose(hyb_spmm(A, B, 1, 512).numpy(), expected, rtol=1e-12, atol=1e-12)


def test_values_changes_are_seen():
    rng = np.random.default_rng(2)
    dense = power_law(rng, 20, 20)
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((20, 16)).astype(np.float32))
    first = hyb_spmm(A, B, 1, 32)
    A.values.mul_(2)  # in place: a new version
    np.testing.assert_allclose(hyb_spmm(A, B, 1, 32).numpy(), 2 * first.numpy(), rtol=1e-6)
    C = A.with_values(torch.ones_like(A.values))
    expected = (dense != 0).astype(np.float64) @ B.double().numpy()
    np.testing.assert_allclose(hyb_spmm(C, B, 1, 32).double().numpy(), expected, rtol=1e-5, atol=1e-5)
    # A values tensor freed and another made: the new values are used.
    del C
    D = A.with_values(torch.full_like(A.values, 3.0))
    np.testing.assert_allclose(hyb_spmm(D, B, 1, 32).double().numpy(), 3 * expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("parts,max_width", [(1, 16), (2, 2), (1, 2)])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_gradients(parts, max_width, index_dtype):
    rng = np.random.default_rng(4)
    dense = power_law(rng, 12, 10, empty=(2,), dense_row=6)
    A0 = matrix(dense, torch.float64, index_dtype)
    values = A0.values.clone().requires_grad_()
    B = torch.from_numpy(rng.standard_normal((10, 3))).requires_grad_()

    def f(v, b):
        return ops._spmm_hyb(A0.indptr, A0.indices, v, b, parts, max_width)

    assert torch.autograd.gradcheck(f, (values, B))
    assert torch.autograd.gradgradcheck(f, (values, B))


def test_gradients_match_dense():
    rng = np.random.default_rng(5)
    dense = power_law(rng, 25, 30, empty=(4,), dense_row=9)
    A = matrix(dense, torch.float64)
    values = A.values.clone().requires_grad_()
    B = torch.from_numpy(rng.standard_normal((30, 16))).requires_grad_()
    G = torch.from_numpy(rng.standard_normal((25, 16)))
    ops._spmm_hyb(A.indptr, A.indices, values, B, 1, 8).backward(G)
    mask = torch.from_numpy(dense != 0)
    a = torch.from_numpy(dense).requires_grad_()
    b = B.detach().clone().requires_grad_()
    (a @ b).backward(G)
    torch.testing.assert_close(values.grad, a.grad[mask], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(B.grad, b.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("parts,max_width", [(1, 16), (2, 2)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_opcheck(parts, max_width, dtype):
    rng = np.random.default_rng(6)
    A = matrix(power_law(rng, 15, 12, empty=(1,), dense_row=3), dtype)
    for grad in (False, True):
        values = A.values.clone().requires_grad_(grad)
        B = torch.from_numpy(rng.standard_normal((12, 8))).to(dtype).requires_grad_(grad)
        torch.library.opcheck(ops._spmm_hyb.default, (A.indptr, A.indices, values, B, parts, max_width))


def test_bad_arguments():
    A = matrix(np.eye(4))
    B = torch.ones(4, 2)
    op = r"^sparsetir\._spmm_hyb: "
    with pytest.raises(ValueError, match=op + r".*dense\.size\(0\)"):
        hyb_spmm(A, torch.ones(3, 2), 1, 4)  # column 3 is out of range
    with pytest.raises(ValueError, match=op + "argument 'dense'"):
        hyb_spmm(A, torch.ones(4, 2, dtype=torch.float64), 1, 4)
    with pytest.raises(ValueError, match=op + "argument 'dense' must be 2-D"):
        hyb_spmm(A, torch.ones(4), 1, 4)
    with pytest.raises(ValueError, match=op + "argument 'parts' must be positive, got 0"):
        hyb_spmm(A, B, 0, 4)
    with pytest.raises(ValueError, match=op + "argument 'max_width' must be a positive power of two, got 3"):
        hyb_spmm(A, B, 1, 3)
    with pytest.raises(ValueError, match=op + "argument 'max_width' must be a positive power of two, got 0"):
        hyb_spmm(A, B, 1, 0)
    with pytest.raises(ValueError, match=op + "argument 'values' must have one element per non-zero"):
        ops._spmm_hyb(A.indptr, A.indices, A.values[:3], B, 1, 4)
    with pytest.raises(ValueError, match=op + "argument 'values'"):
        ops._spmm_hyb(A.indptr, A.indices, A.indices, B, 1, 4)
    with pytest.raises(ValueError, match=op + ".*indptr"):
        ops._spmm_hyb(torch.tensor([0, 2, 1, 3, 4], dtype=torch.int32), A.indices, A.values, B, 1, 4)


def power_of_two_rows(rng, m, n):
    """A skewed matrix whose row lengths are powers of two (1 .. 64, most
    rows short): hyb's buckets then hold it without padding."""
    lengths = np.minimum(1 << np.minimum(rng.zipf(1.6, m) - 1, 6), n)
    dense = np.zeros((m, n))
    for r, length in enumerate(lengths):
        dense[r, rng.choice(n, size=length, replace=False)] = rng.uniform(0.25, 1.0, length)
    return dense


def test_tuner_offers_hyb_on_skewed_graphs_it_does_not_pad():
    rng = np.random.default_rng(9)
    skewed = matrix(power_of_two_rows(rng, 200, 200))
    lengths = np.diff(skewed.indptr.numpy())
    assert float(lengths.std() / lengths.mean()) >= tuning.HYB_MIN_SPREAD
    assert padding(skewed) == padding_reference(lengths) == 1.0
    parts, width = tuning.hyb_candidate(skewed)
    assert parts == 1 and width >= int(lengths.max())
    # A power-law graph with arbitrary row lengths pads its buckets by ~37 %:
    # on a CPU hyb cannot win that back, so it is not timed.
    heavy = matrix(power_law(rng, 200, 200))
    assert padding(heavy) == padding_reference(np.diff(heavy.indptr.numpy())) > tuning.HYB_MAX_PADDING
    assert tuning.hyb_candidate(heavy) is None
    regular = matrix(np.kron(np.eye(50), np.ones((4, 4))))
    assert tuning.hyb_candidate(regular) is None


def padding_reference(lengths: np.ndarray) -> float:
    """Slots per non-zero of hyb's one-part buckets: each non-empty row padded
    to the next power of two."""
    rows = lengths[lengths > 0]
    widths = np.left_shift(1, np.ceil(np.log2(rows)).astype(np.int64))
    return float(widths.sum()) / float(rows.sum())


def padding(A) -> float:
    """The same from the summary the chooser reads (the validation pass's)."""
    s = tuning.structure_summary(A)
    return s["padded_slots"] / s["nnz"]


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_structure_summary_counts_row_lengths_and_power_of_two_slots(idtype):
    lengths = [0, 1, 2, 3, 5, 8, 0]
    indptr = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]), dtype=idtype)
    indices = torch.cat([torch.arange(n) for n in lengths]).to(idtype)
    A = st.SparseMatrix(indptr, indices, torch.ones(indices.numel()), (7, 8))
    s = tuning.structure_summary(A)
    assert (s["rows"], s["nnz"], s["empty_rows"], s["max_row_length"]) == (7, 19, 2, 8)
    assert s["row_length_squares"] == sum(n * n for n in lengths)
    assert s["padded_slots"] == 1 + 2 + 4 + 8 + 8
    assert s["padded_slots"] / s["nnz"] == padding_reference(np.array(lengths))


def force_hyb(A, K, dtype, parts=1, width=64):
    A._derived[("choice", "spmm", K, dtype)] = {"format": "hyb", "parts": parts, "max_width": width,
                                                "block": None, "candidates": [], "source": "test"}


def test_a_hyb_choice_runs_through_st_spmm(monkeypatch):
    rng = np.random.default_rng(10)
    dense = power_law(rng, 60, 60, empty=(1,))
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((60, 16)).astype(np.float32))
    force_hyb(A, 16, torch.float32)
    calls = []
    real = tuning._SPMM_HYB
    monkeypatch.setattr(tuning, "_SPMM_HYB", lambda *a: calls.append(a[4:]) or real(*a))
    out = st.spmm(A, B)
    assert calls == [(1, 64)]
    np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)


class HybLayer(torch.nn.Module):
    """A graph layer whose graph's chosen format is hyb: A @ (x W)."""

    def __init__(self, A, features):
        super().__init__()
        self.A = A
        self.weight = torch.nn.Parameter(torch.randn(features, features, dtype=torch.float64,
                                                     generator=torch.Generator().manual_seed(0)))

    def forward(self, x, values):
        return st.spmm(self.A.with_values(values), x @ self.weight).relu()


@pytest.mark.parametrize("parts,width", [(1, 64), (1, 4), (2, 64)])
def test_torch_compile_runs_the_hyb_choice(parts, width):
    """Under torch.compile(fullgraph=True) st.spmm runs the hyb choice made in
    eager mode through the op (no graph break), forward and backward equal
    to eager mode."""
    from torch._dynamo.backends.debugging import aot_eager

    torch._dynamo.reset()
    rng = np.random.default_rng(11)
    dense = power_law(rng, 40, 40, empty=(2,), dense_row=7)
    A = matrix(dense, torch.float64)
    K = 16
    force_hyb(A, K, torch.float64, parts, width)
    layer = HybLayer(A, K)
    x = torch.from_numpy(rng.standard_normal((40, K))).requires_grad_()
    values = A.values.clone().requires_grad_()
    eager = layer(x, values)
    eager_grads = torch.autograd.grad(eager.sum(), (x, values, layer.weight))
    graphs = []

    def backend(gm, inputs):
        graphs.append(gm)
        return aot_eager(gm, inputs)

    compiled = torch.compile(layer, fullgraph=True, backend=backend)
    out = compiled(x, values)
    grads = torch.autograd.grad(out.sum(), (x, values, layer.weight))
    assert len(graphs) == 1 and "sparsetir._spmm_hyb" in graphs[0].code  # the chosen form, in the graph
    torch.testing.assert_close(out, eager, rtol=1e-12, atol=1e-12)
    for g, e in zip(grads, eager_grads):
        torch.testing.assert_close(g, e, rtol=1e-12, atol=1e-12)
    expected = np.maximum(dense @ (x.detach().numpy() @ layer.weight.detach().numpy()), 0)
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)


def test_torch_compile_inductor_runs_the_op():
    torch._dynamo.reset()
    rng = np.random.default_rng(14)
    dense = power_law(rng, 30, 30, dense_row=3)
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((30, 8)).astype(np.float32))

    def f(indptr, indices, values, b):
        return ops._spmm_hyb(indptr, indices, values, b, 1, 4) * 2

    out = torch.compile(f, fullgraph=True)(A.indptr, A.indices, A.values, B)
    np.testing.assert_allclose(out.double().numpy(), 2 * dense @ B.double().numpy(), rtol=1e-5, atol=1e-4)


def test_explain_times_the_hyb_candidate(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSETIR_TUNE", "1")
    rng = np.random.default_rng(12)
    A = matrix(power_of_two_rows(rng, 300, 300))
    report = st.explain(A, op="spmm", k=32)
    formats = [c["format"] for c in report["candidates"]]
    assert formats[:2] == ["csr", "hyb"]
    assert all(c["time_ms"] > 0 for c in report["candidates"])


def test_email_enron_matches_csr():
    import os

    from sparsetir_torch.matrix_market import read_matrix_market

    path = os.path.join(DATASETS_DIR, "email-Enron.mtx.gz")
    if not os.path.isfile(path):
        pytest.skip("datasets not available")
    M = read_matrix_market(path)
    A = st.SparseMatrix(M.indptr.to(torch.int32), M.indices.to(torch.int32),
                        torch.rand(M.nnz, generator=torch.Generator().manual_seed(0)) + 0.5, M.shape)
    B = torch.randn(M.shape[1], 32, generator=torch.Generator().manual_seed(1))
    expected = torch.ops.sparsetir.spmm(A.indptr, A.indices, A.values, B, "sum")
    for parts, width in ((1, 2048), (1, 32), (2, 2048)):
        torch.testing.assert_close(hyb_spmm(A, B, parts, width), expected, rtol=1e-4, atol=1e-4)


def test_inference_tensors_are_scattered_every_call():
    """Inference tensors have no version counter: their padded values must not
    be cached (a later in-place edit could not be seen), nor break the call."""
    rng = np.random.default_rng(13)
    dense = power_law(rng, 30, 30)
    B = torch.from_numpy(rng.standard_normal((30, 8)).astype(np.float32))
    with torch.inference_mode():
        A = matrix(dense)
        first = hyb_spmm(A, B, 1, 32)
        A.values.mul_(3)
        second = hyb_spmm(A, B, 1, 32)
    np.testing.assert_allclose(second.numpy(), 3 * first.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)
