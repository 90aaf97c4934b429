"""SpMM on the hyb decomposition (sparsetir_torch/composable.py): ELL-bucket
kernels made by format_decompose, checked against a float64 dense product,
with every way buckets combine (overwrite, add, atomic add), dtypes, index
dtypes, gradients and the tuner's use of it."""
import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import composable, tuning

from conftest import DATASETS_DIR


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
    return st.SparseMatrix(csr.crow_indices().to(index_dtype), csr.col_indices().to(index_dtype), csr.values(),
                           dense.shape)


@pytest.mark.parametrize("parts,max_width,modes", [
    (1, 64, {composable.Mode.OVERWRITE}),
    (1, 4, {composable.Mode.ADD, composable.Mode.ATOMIC_ADD}),
    (3, 64, {composable.Mode.ADD}),
    (2, 2, {composable.Mode.ADD, composable.Mode.ATOMIC_ADD}),
])
@pytest.mark.parametrize("K", [1, 16, 33])
def test_hyb_spmm_matches_dense(parts, max_width, modes, K):
    rng = np.random.default_rng(K * 7 + parts)
    dense = power_law(rng, 40, 50, empty=(0, 7, 8), dense_row=13 if max_width < 50 else None)
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((50, K)).astype(np.float32))
    out = composable.hyb_spmm(A, B, parts, max_width)
    np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-4)
    buckets, _ = composable._bucket_plan(A, parts, max_width)
    assert {b[3] for b in buckets} == modes


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
def test_dtypes(dtype, index_dtype):
    rng = np.random.default_rng(1)
    dense = power_law(rng, 30, 30, empty=(3,))
    A = matrix(dense, dtype, index_dtype)
    B = torch.from_numpy(rng.standard_normal((30, 8))).to(dtype)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for parts, max_width in ((1, 32), (2, 4)):
        out = composable.hyb_spmm(A, B, parts, max_width)
        assert out.dtype == dtype
        np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=tol, atol=tol * 10)


def test_edge_shapes():
    for dense in (np.array([[2.0]]), np.zeros((4, 3)), np.eye(5)[:, :3] * 3, np.ones((1, 9))):
        A = matrix(dense)
        B = torch.ones(dense.shape[1], 16)
        for parts in (1, 2):  # zero non-zeros: no bucket at all, every row 0
            out = composable.hyb_spmm(A, B, parts, 16)
            np.testing.assert_allclose(out.numpy(), dense @ B.numpy(), rtol=1e-6)


def test_values_changes_are_seen():
    rng = np.random.default_rng(2)
    dense = power_law(rng, 20, 20)
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((20, 16)).astype(np.float32))
    first = composable.hyb_spmm(A, B, 1, 32)
    A.values.mul_(2)  # in place: a new version
    np.testing.assert_allclose(composable.hyb_spmm(A, B, 1, 32).numpy(), 2 * first.numpy(), rtol=1e-6)
    C = A.with_values(torch.ones_like(A.values))
    expected = (dense != 0).astype(np.float64) @ B.double().numpy()
    np.testing.assert_allclose(composable.hyb_spmm(C, B, 1, 32).double().numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("parts,max_width", [(1, 16), (2, 2)])
def test_gradients(parts, max_width):
    rng = np.random.default_rng(4)
    dense = power_law(rng, 12, 10, empty=(2,))
    A0 = matrix(dense, torch.float64)
    values = A0.values.clone().requires_grad_()
    B = torch.from_numpy(rng.standard_normal((10, 3))).requires_grad_()

    def f(v, b):
        return composable.hyb_spmm(A0.with_values(v), b, parts, max_width)

    assert torch.autograd.gradcheck(f, (values, B))


def test_bad_operands():
    A = matrix(np.eye(4))
    with pytest.raises(ValueError, match="B must have shape"):
        composable.hyb_spmm(A, torch.ones(3, 2), 1, 4)
    with pytest.raises(ValueError, match="B has dtype torch.float64"):
        composable.hyb_spmm(A, torch.ones(4, 2, dtype=torch.float64), 1, 4)


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
    assert tuning.hyb_padding(lengths) == 1.0
    parts, width = tuning.hyb_candidate(skewed)
    assert parts == 1 and width >= int(lengths.max())
    # A power-law graph with arbitrary row lengths pads its buckets by ~37 %:
    # on a CPU hyb cannot win that back, so it is not timed.
    heavy = matrix(power_law(rng, 200, 200))
    assert tuning.hyb_padding(np.diff(heavy.indptr.numpy())) > tuning.HYB_MAX_PADDING
    assert tuning.hyb_candidate(heavy) is None
    regular = matrix(np.kron(np.eye(50), np.ones((4, 4))))
    assert tuning.hyb_candidate(regular) is None


def test_hyb_padding_counts_power_of_two_slots():
    assert tuning.hyb_padding(np.array([0, 1, 2, 3, 5, 8])) == (1 + 2 + 4 + 8 + 8) / (1 + 2 + 3 + 5 + 8)


def test_a_hyb_choice_runs_through_st_spmm(monkeypatch):
    rng = np.random.default_rng(10)
    dense = power_law(rng, 60, 60, empty=(1,))
    A = matrix(dense)
    B = torch.from_numpy(rng.standard_normal((60, 16)).astype(np.float32))
    parts, width = 1, 64
    A._derived[("choice", "spmm", 16, torch.float32)] = {"format": "hyb", "parts": parts, "max_width": width,
                                                           "block": None, "candidates": [], "source": "test"}
    calls = []
    real = composable.hyb_spmm
    monkeypatch.setattr(composable, "hyb_spmm", lambda *a: calls.append(1) or real(*a))
    out = st.spmm(A, B)
    assert calls
    np.testing.assert_allclose(out.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)


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
        torch.testing.assert_close(composable.hyb_spmm(A, B, parts, width), expected, rtol=1e-4, atol=1e-4)


def test_inference_tensors_are_scattered_every_call():
    """Inference tensors have no version counter: their padded values must not
    be cached (a later in-place edit could not be seen), nor break the call."""
    rng = np.random.default_rng(13)
    dense = power_law(rng, 30, 30)
    B = torch.from_numpy(rng.standard_normal((30, 8)).astype(np.float32))
    with torch.inference_mode():
        A = matrix(dense)
        first = composable.hyb_spmm(A, B, 1, 32)
        A.values.mul_(3)
        second = composable.hyb_spmm(A, B, 1, 32)
    np.testing.assert_allclose(second.numpy(), 3 * first.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(first.double().numpy(), dense @ B.double().numpy(), rtol=1e-5, atol=1e-5)
