"""Tests of the Python API st.spmm / st.sddmm / st.bsrmm / st.sparse_attention
and st.SparseMatrix: every accepted form of a sparse argument (torch sparse
CSR, COO coalesced and uncoalesced with duplicates, BSR, st.SparseMatrix, a
dense bool attention mask) against dense float64 references; SparseMatrix
conversions and transposes against scipy; the transpose and implicit COO
conversion caches; gradients to SparseMatrix values."""
import gc
import warnings

import numpy as np
import pytest
import scipy.sparse
import torch

import sparsetir_torch as st
from sparsetir_torch import sparse_matrix as sm
from conftest import make_csr, random_values

F64 = torch.float64
K = 3  # feature size (shared with test_ops_autograd.py: kernels compile once per session)
D, DV = 3, 2

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
warnings.filterwarnings("ignore", message="Sparse BSR tensor support is in beta state")


# --------------------------------------------------------------------------- inputs


def dense_matrix(m=9, n=7, density=0.35, seed=0, empty_rows=(2, 8)):
    """(dense float64 tensor, Csr) of a seeded random sparse matrix with empty rows."""
    c = make_csr(m, n, density=density, seed=seed, empty_rows=empty_rows)
    return torch.from_numpy(c.scipy().toarray()), c


def randn(rng, *shape, requires_grad=False):
    return torch.from_numpy(random_values(rng, shape)).requires_grad_(requires_grad)


def uncoalesced_coo(c):
    """A COO tensor holding every entry of c twice (values v and 2v: the matrix is 3 c),
    in reverse order: not coalesced."""
    rows, cols = torch.from_numpy(c.rows()), torch.from_numpy(c.indices)
    vals = torch.from_numpy(c.values)
    idx = torch.cat([torch.stack([rows, cols]), torch.stack([rows, cols])], 1).flip(1)
    t = torch.sparse_coo_tensor(idx, torch.cat([vals, 2 * vals]).flip(0), c.shape)
    assert not t.is_coalesced()
    return t


def sparse_forms(c):
    """name -> (argument, its dense float64 value) for every accepted CSR-like form."""
    a = torch.from_numpy(c.scipy().toarray())
    ip32, ix32 = c.torch_structure("int32")
    vals = torch.from_numpy(c.values)
    return {
        "csr": (a.to_sparse_csr(), a),
        "csr_int32": (torch.sparse_csr_tensor(ip32, ix32, vals, c.shape), a),
        "coo": (a.to_sparse().coalesce(), a),
        "coo_uncoalesced_duplicates": (uncoalesced_coo(c), 3 * a),
        "sparse_matrix": (st.SparseMatrix(*c.torch_structure("int64"), vals, c.shape), a),
        "sparse_matrix_int32": (st.SparseMatrix(ip32, ix32, vals, c.shape), a),
    }


FORMS = ["csr", "csr_int32", "coo", "coo_uncoalesced_duplicates", "sparse_matrix", "sparse_matrix_int32"]


def block_matrix(bh=2, bw=3, mb=4, nb=3, seed=3):
    """A dense float64 matrix with a random block pattern (block row 1 empty)."""
    c = make_csr(mb, nb, density=0.5, seed=seed, empty_rows=(1,), dense_rows=(3,))
    rng = np.random.default_rng(seed)
    blocks = random_values(rng, (c.nnz, bh, bw))
    a = scipy.sparse.bsr_matrix((blocks, c.indices, c.indptr), shape=(mb * bh, nb * bw)).toarray()
    return torch.from_numpy(a), c, blocks


def reduce_ref(a_dense, pattern_dense, b, reduce):
    """Row-wise reduce over the pattern of values * b rows (float64; empty rows 0)."""
    m, n = a_dense.shape
    out = torch.zeros(m, b.shape[1], dtype=F64)
    for i in range(m):
        cols = torch.nonzero(pattern_dense[i]).flatten()
        if cols.numel() == 0:
            continue
        prod = a_dense[i, cols].unsqueeze(1) * b[cols]
        out[i] = {"sum": prod.sum(0), "mean": prod.mean(0), "max": prod.amax(0), "min": prod.amin(0)}[reduce]
    return out


def attention_ref(mask, q, k, v, scale=None):
    """Dense masked attention in float64; rows with no allowed key give 0."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = (q @ k.transpose(-1, -2)) * scale
    empty = ~mask.any(-1, keepdim=True)
    s = torch.where(mask | empty, s, torch.tensor(float("-inf"), dtype=s.dtype))
    return (torch.softmax(s, -1) * (~empty).to(s.dtype)) @ v


# --------------------------------------------------------------------------- st.spmm / st.sddmm / st.bsrmm


@pytest.mark.parametrize("form", FORMS)
def test_spmm_forms(form):
    _, c = dense_matrix()
    A, ref_a = sparse_forms(c)[form]
    B = randn(np.random.default_rng(1), c.n, K)
    out = st.spmm(A, B)
    assert out.shape == (c.m, K) and out.dtype == F64
    torch.testing.assert_close(out, ref_a @ B, rtol=1e-12, atol=1e-12)
    if isinstance(A, st.SparseMatrix):
        torch.testing.assert_close(A @ B, ref_a @ B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", ["mean", "max", "min"])
@pytest.mark.parametrize("form", FORMS)
def test_spmm_reduce_forms(form, reduce):
    _, c = dense_matrix()
    A, ref_a = sparse_forms(c)[form]
    B = randn(np.random.default_rng(2), c.n, K)
    out = st.spmm(A, B, reduce=reduce)
    torch.testing.assert_close(out, reduce_ref(ref_a, ref_a != 0, B, reduce), rtol=1e-12, atol=1e-12)


def test_spmm_bsr_forms():
    a, c, blocks = block_matrix()
    B = randn(np.random.default_rng(3), a.shape[1], K)
    bsr = a.to_sparse_bsr((2, 3))
    handle = st.SparseMatrix(*c.torch_structure("int32"), torch.from_numpy(blocks), a.shape)
    assert handle.is_block
    for A in (bsr, handle, st.SparseMatrix.from_torch(bsr)):
        torch.testing.assert_close(st.spmm(A, B), a @ B, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(st.bsrmm(A, B), a @ B, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="reduce='sum' only"):
        st.spmm(bsr, B, reduce="max")


def test_bsrmm_rejects_csr():
    _, c = dense_matrix()
    for form in ("csr", "coo", "sparse_matrix"):
        A, _ = sparse_forms(c)[form]
        with pytest.raises(ValueError, match="block-sparse"):
            st.bsrmm(A, torch.zeros(c.n, K, dtype=F64))


@pytest.mark.parametrize("form", FORMS)
def test_sddmm_forms(form):
    _, c = dense_matrix()
    A, ref_a = sparse_forms(c)[form]
    rng = np.random.default_rng(4)
    X, Y = randn(rng, c.m, K), randn(rng, c.n, K)
    out = st.sddmm(A, X, Y)
    assert out.layout == torch.sparse_csr and out.shape == (c.m, c.n) and out.dtype == F64
    # A's pattern (a COO argument: the pattern of its coalesced CSR form).
    torch.testing.assert_close(out.crow_indices().long(), torch.from_numpy(c.indptr), rtol=0, atol=0)
    torch.testing.assert_close(out.col_indices().long(), torch.from_numpy(c.indices), rtol=0, atol=0)
    torch.testing.assert_close(out.to_dense(), ref_a * (X @ Y.T), rtol=1e-12, atol=1e-12)


def test_sddmm_rejects_bsr():
    a, _, _ = block_matrix()
    with pytest.raises(ValueError, match="block-sparse"):
        st.sddmm(a.to_sparse_bsr((2, 3)), torch.zeros(a.shape[0], K, dtype=F64), torch.zeros(a.shape[1], K, dtype=F64))


def test_shape_errors():
    _, c = dense_matrix()
    A = sparse_forms(c)["csr"][0]
    with pytest.raises(ValueError, match="cannot be multiplied"):
        st.spmm(A, torch.zeros(c.n + 1, K, dtype=F64))
    with pytest.raises(ValueError):
        st.sddmm(A, torch.zeros(c.m + 1, K, dtype=F64), torch.zeros(c.n, K, dtype=F64))
    with pytest.raises(ValueError, match="sparse"):
        st.spmm(A.to_dense(), torch.zeros(c.n, K, dtype=F64))


# --------------------------------------------------------------------------- st.sparse_attention


def attention_inputs(seed=5, L=8, S=6, lead=(2, 2)):
    rng = np.random.default_rng(seed)
    mask = torch.from_numpy(rng.random((L, S)) < 0.4)
    mask[3] = False  # a row with no allowed key
    mask[5] = True
    q, k, v = randn(rng, *lead, L, D), randn(rng, *lead, S, D), randn(rng, *lead, S, DV)
    return mask, q, k, v


def mask_forms(mask):
    c = mask.to(F64).to_sparse_csr()
    values = torch.full((c.values().numel(),), 2.5, dtype=F64)  # the values of a mask do not matter
    return {
        "dense_bool": mask,
        "csr": torch.sparse_csr_tensor(c.crow_indices(), c.col_indices(), values, mask.shape),
        "coo": mask.to(F64).to_sparse().coalesce(),
        "coo_uncoalesced_duplicates": torch.sparse_coo_tensor(
            torch.cat([mask.to(F64).to_sparse()._indices()] * 2, 1).flip(1),
            torch.ones(2 * int(mask.sum()), dtype=F64), mask.shape),
        "sparse_matrix": st.SparseMatrix(c.crow_indices().int(), c.col_indices().int(), values, mask.shape),
    }


@pytest.mark.parametrize("scale", [None, 0.4])
@pytest.mark.parametrize("form", ["dense_bool", "csr", "coo", "coo_uncoalesced_duplicates", "sparse_matrix"])
def test_sparse_attention_masks(form, scale):
    mask, q, k, v = attention_inputs()
    out = st.sparse_attention(q, k, v, mask_forms(mask)[form], scale=scale)
    assert out.shape == (2, 2, 8, DV)
    torch.testing.assert_close(out, attention_ref(mask, q, k, v, scale), rtol=1e-12, atol=1e-12)
    assert torch.all(out[..., 3, :] == 0)


@pytest.mark.parametrize("block", [
    (1, 2),
    (2, 2),
])
def test_sparse_attention_bsr_mask(block):
    """A BSR mask allows every position of its stored blocks (like a CSR mask,
    whose stored entries count whatever their values)."""
    mask, q, k, v = attention_inputs()
    bh, bw = block
    L, S = mask.shape
    blocks = mask.reshape(L // bh, bh, S // bw, bw).any(3).any(1)  # block pattern of the mask
    block_mask = blocks.repeat_interleave(bh, 0).repeat_interleave(bw, 1)
    bsr = block_mask.to(F64).to_sparse_bsr(block)
    assert bsr.layout == torch.sparse_bsr
    out = st.sparse_attention(q, k, v, bsr)
    torch.testing.assert_close(out, attention_ref(block_mask, q, k, v), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("form", ["dense_bool", "csr"])
def test_attention_mask_follows_q_to_its_device(form):
    """A mask built on the CPU serves q, k, v on another device, dense or
    sparse alike (moved once); meta tensors stand for that device here."""
    mask = torch.rand(5, 6, generator=torch.Generator().manual_seed(5)) < 0.5
    q, k, v = (torch.empty(2, n, d, device="meta") for n, d in ((5, 4), (6, 4), (6, 3)))
    out = st.sparse_attention(q, k, v, mask if form == "dense_bool" else mask.to_sparse_csr())
    assert out.device.type == "meta" and out.shape == (2, 5, 3)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
def test_spmm_on_meta_tensors_gives_the_output_shape(reduce):
    """Every reduce of st.spmm on meta tensors (shape propagation) returns a
    meta tensor of the output's shape: no format is chosen off the CPU."""
    _, c = dense_matrix(seed=35)
    A = st.SparseMatrix(*c.torch_structure("int64"), torch.from_numpy(c.values), c.shape).to("meta")
    out = st.spmm(A, torch.empty(c.n, K, dtype=F64, device="meta"), reduce)
    assert out.device.type == "meta" and out.shape == (c.m, K) and out.dtype == F64


def test_a_torch_bsr_tensor_that_requires_grad_is_refused_by_name():
    """torch cannot accumulate a BSR gradient (its backward fails naming no
    operator), so such an A is refused up front with the way that works: an
    st.SparseMatrix whose values require grad, whose gradient is checked here
    against the dense one. Without grad mode the tensor is taken as it is."""
    a, c, blocks = block_matrix()
    A = a.to_sparse_bsr((2, 3)).requires_grad_()
    B = randn(np.random.default_rng(36), a.shape[1], K)
    with pytest.raises(ValueError, match=r"st\.spmm: argument 'A': a torch BSR tensor cannot receive gradients"):
        st.spmm(A, B)
    with torch.no_grad():
        torch.testing.assert_close(st.spmm(A, B), a @ B, rtol=1e-12, atol=1e-12)
    values = A.detach().values().clone().requires_grad_()
    M = st.SparseMatrix(A.crow_indices(), A.col_indices(), values, A.shape)
    G = randn(np.random.default_rng(37), a.shape[0], K)
    st.spmm(M, B).backward(G)
    dense_grad = (G @ B.T).reshape(a.shape[0] // 2, 2, a.shape[1] // 3, 3).permute(0, 2, 1, 3)
    rows = torch.repeat_interleave(torch.arange(a.shape[0] // 2), A.crow_indices().diff())
    torch.testing.assert_close(values.grad, dense_grad[rows, A.col_indices()], rtol=1e-12, atol=1e-12)


def test_sparse_attention_mask_errors():
    mask, q, k, v = attention_inputs()
    with pytest.raises(ValueError, match="bool"):
        st.sparse_attention(q, k, v, mask.to(F64))
    with pytest.raises(ValueError):
        st.sparse_attention(q, k, v, mask[:, :-1])


# --------------------------------------------------------------------------- SparseMatrix


@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_sparse_matrix_transpose_vs_scipy(idtype):
    a, c = dense_matrix(11, 6, density=0.3, seed=6, empty_rows=(0, 10))
    c_sp = c.scipy()
    A = st.SparseMatrix(*c.torch_structure(idtype), torch.from_numpy(c.values), c.shape)
    np.testing.assert_array_equal(A.to_dense().numpy(), c_sp.toarray())
    At = A.t()
    assert At.shape == (6, 11) and not At.is_block
    ref = c_sp.T.tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(At.indptr.numpy(), ref.indptr)
    np.testing.assert_array_equal(At.indices.numpy(), ref.indices)
    np.testing.assert_array_equal(At.values.numpy(), ref.data)
    assert At.indptr.dtype == A.indptr.dtype
    np.testing.assert_array_equal(At.to_dense().numpy(), c_sp.T.toarray())
    # round trip
    Att = At.t()
    for x, y in ((Att.indptr, A.indptr), (Att.indices, A.indices), (Att.values, A.values)):
        assert torch.equal(x, y)
    # The transposed handle works in the operators: A^T @ B.
    B = randn(np.random.default_rng(6), 11, K)
    torch.testing.assert_close(st.spmm(At, B), a.T @ B, rtol=1e-12, atol=1e-12)


def test_sparse_matrix_from_torch_round_trip():
    a, c = dense_matrix(seed=7)
    for form, (t, ref) in sparse_forms(c).items():
        if isinstance(t, st.SparseMatrix):
            continue
        A = st.SparseMatrix.from_torch(t)
        assert A.shape == tuple(t.shape) and A.nnz == c.nnz and not A.is_block, form
        np.testing.assert_array_equal(A.to_dense().numpy(), ref.numpy())
        back = A.to_torch()
        assert back.layout == torch.sparse_csr
        np.testing.assert_array_equal(back.to_dense().numpy(), ref.numpy())
        np.testing.assert_array_equal(A.t().to_dense().numpy(), ref.numpy().T)
    with pytest.raises(ValueError):
        st.SparseMatrix.from_torch(a)


def test_sparse_matrix_bsr_transpose_vs_scipy():
    a, c, blocks = block_matrix(bh=2, bw=3)
    ref = scipy.sparse.bsr_matrix((blocks, c.indices, c.indptr), shape=a.shape)
    A = st.SparseMatrix.from_torch(a.to_sparse_bsr((2, 3)))
    assert A.is_block and A.values.shape[1:] == (2, 3)
    np.testing.assert_array_equal(A.to_dense().numpy(), ref.toarray())
    At = A.t()
    assert At.is_block and At.shape == (a.shape[1], a.shape[0]) and At.values.shape[1:] == (3, 2)
    np.testing.assert_array_equal(At.to_dense().numpy(), ref.T.toarray())
    ref_t = ref.T.tobsr(blocksize=(3, 2))
    ref_t.sort_indices()
    np.testing.assert_array_equal(At.indptr.numpy(), ref_t.indptr)
    np.testing.assert_array_equal(At.indices.numpy(), ref_t.indices)
    np.testing.assert_array_equal(At.values.numpy(), ref_t.data)
    assert At.to_torch().layout == torch.sparse_bsr
    np.testing.assert_array_equal(At.t().to_dense().numpy(), ref.toarray())
    B = randn(np.random.default_rng(8), a.shape[0], K)
    torch.testing.assert_close(st.spmm(At, B), a.T @ B, rtol=1e-12, atol=1e-12)


def test_sparse_matrix_to_moves_the_structure_once():
    """SparseMatrix.to: self where the matrix is already; elsewhere (the meta
    device here, CUDA on a GPU) the index tensors are moved once per
    structure and the values at every call, differentiably."""
    values = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    A = st.SparseMatrix(torch.tensor([0, 2, 2, 3]), torch.tensor([0, 2, 1]), values, (3, 3))
    assert A.to("cpu") is A
    moved = A.to("meta")
    assert moved.indptr.device.type == "meta" and moved.values.device.type == "meta" and moved.shape == A.shape
    again = A.with_values(values * 2).to("meta")
    assert again.indptr is moved.indptr and again.indices is moved.indices  # one copy of the structure
    A.indices.add_(0)  # an in-place write to the structure: moved anew
    assert A.to("meta").indices is not moved.indices
    (grad,) = torch.autograd.grad(A.to("cpu").values.sum(), values)
    assert torch.equal(grad, torch.ones(3))


def test_sparse_matrix_caches_transpose_structure():
    _, c = dense_matrix(seed=9)
    A = st.SparseMatrix(*c.torch_structure("int64"), torch.from_numpy(c.values), c.shape)
    first = A.transpose_structure()
    assert A.transpose_structure() is first
    assert A.t().indptr is first[0] and A.t().indices is first[1]
    # A handle with new values shares the cached structure.
    B = A.with_values(torch.from_numpy(c.values) * 2)
    assert B.transpose_structure() is first
    np.testing.assert_array_equal(B.t().to_dense().numpy(), 2 * c.scipy().T.toarray())


# --------------------------------------------------------------------------- implicit COO cache


class _CountConversions:
    """Counts the conversions of the conversion cache (monkeypatched _convert)."""

    def __init__(self, monkeypatch):
        self.calls = 0
        original = sm._ConversionCache._convert

        def counting(t):
            self.calls += 1
            return original(t)

        monkeypatch.setattr(sm._ConversionCache, "_convert", staticmethod(counting))


@pytest.fixture(autouse=True)
def private_conversion_cache(monkeypatch):
    """Every test gets an empty conversion cache of its own, so the tests are
    independent and none leaves entries behind in the process-wide cache
    (an entry lives as long as its tensor). The cache is dropped without
    holding its lock."""
    fresh = sm._ConversionCache()
    monkeypatch.setattr(sm, "_TORCH_SPARSE_CACHE", fresh)
    yield fresh
    entries, fresh._entries = fresh._entries, type(fresh._entries)()
    del entries


@pytest.fixture
def coo_cache(monkeypatch, private_conversion_cache):
    """.cache: the (empty) conversion cache the API uses in this test
    (sparsetir_torch.sparse_matrix._TORCH_SPARSE_CACHE); .calls: its conversions."""
    counter = _CountConversions(monkeypatch)
    counter.cache = private_conversion_cache
    assert len(counter.cache) == 0
    return counter


def coo_input(seed=10):
    a, c = dense_matrix(seed=seed)
    t = a.to_sparse().coalesce()
    return a, c, t


def test_coo_cache_reuses_conversion(coo_cache):
    a, c, t = coo_input()
    B = randn(np.random.default_rng(10), c.n, K)
    torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 1 and len(coo_cache.cache) == 1
    first = coo_cache.cache._entries[id(t)][2]
    torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    X = randn(np.random.default_rng(9), c.m, K)
    torch.testing.assert_close(st.sddmm(t, X, B).to_dense(), a * (X @ B.T), rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 1 and len(coo_cache.cache) == 1
    assert coo_cache.cache._entries[id(t)][2] is first
    # The C++ structure cache sees the same index tensors again: a hit, no new entry.
    before = st.graph_cache_info()
    st.spmm(t, B)
    after = st.graph_cache_info()
    assert after["hits"] > before["hits"] and after["misses"] == before["misses"]


def test_coo_cache_picks_up_value_changes(coo_cache):
    a, c, t = coo_input()
    B = randn(np.random.default_rng(11), c.n, K)
    st.spmm(t, B)
    t._values().mul_(-2)  # in place: the same tensor, new values
    torch.testing.assert_close(st.spmm(t, B), -2 * a @ B, rtol=1e-12, atol=1e-12)
    assert len(coo_cache.cache) == 1


def test_coo_cache_invalidated_by_index_change(coo_cache):
    a, c, t = coo_input(seed=13)
    B = randn(np.random.default_rng(13), c.n, K)
    torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    # Move the last stored entry of its row to a column that keeps the row sorted.
    idx = t._indices()
    e = idx.shape[1] - 1
    row, col = int(idx[0, e]), int(idx[1, e])
    assert col < c.n - 1
    idx[1, e] = c.n - 1  # in place, keeps the tensor coalesced (sorted, no duplicates)
    a2 = a.clone()
    a2[row, c.n - 1] = a[row, col]
    a2[row, col] = 0
    assert torch.equal(t.to_dense(), a2)
    torch.testing.assert_close(st.spmm(t, B), a2 @ B, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 2 and len(coo_cache.cache) == 1


def test_coo_cache_entry_released_with_tensor(coo_cache):
    B = randn(np.random.default_rng(14), 7, K)
    _, _, keep = coo_input(seed=14)
    _, _, t = coo_input(seed=15)
    st.spmm(keep, B)
    st.spmm(t, B)
    assert len(coo_cache.cache) == 2
    del t
    gc.collect()
    assert len(coo_cache.cache) == 1
    st.spmm(keep, B)
    assert coo_cache.calls == 2  # the surviving entry is still used


def test_uncoalesced_coo_is_not_cached(coo_cache):
    _, c = dense_matrix(seed=16)
    t = uncoalesced_coo(c)
    B = randn(np.random.default_rng(16), c.n, K)
    torch.testing.assert_close(st.spmm(t, B), 3 * torch.from_numpy(c.scipy().toarray()) @ B, rtol=1e-12, atol=1e-12)
    assert len(coo_cache.cache) == 0 and not t.is_coalesced()


def test_csr_cache_reuses_structure(coo_cache):
    """A torch CSR tensor passed again reuses its SparseMatrix (same index
    tensors: the C++ structure cache hits) and picks up in-place value changes."""
    a, c = dense_matrix(seed=21)
    t = a.to_sparse_csr()
    B = randn(np.random.default_rng(21), c.n, K)
    torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    first = coo_cache.cache._entries[id(t)][2]
    before = st.graph_cache_info()
    torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    after = st.graph_cache_info()
    assert after["misses"] == before["misses"] and after["hits"] > before["hits"]
    assert coo_cache.cache._entries[id(t)][2] is first and len(coo_cache.cache) == 1
    t.values().mul_(3)
    torch.testing.assert_close(st.spmm(t, B), 3 * a @ B, rtol=1e-12, atol=1e-12)
    assert len(coo_cache.cache) == 1


@pytest.mark.xfail(strict=True, reason=(
    "BUG: the conversion cache keys on the index tensors' _version, but a torch sparse tensor's indices and "
    "values share one version counter: an in-place change of the values alone re-runs the conversion and the "
    "C++ structure cache misses (validation, transposes rebuilt) although the structure did not change"))
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_cache_value_changes_reuse_structure(coo_cache, layout):
    a, c = dense_matrix(seed=12)
    t = a.to_sparse().coalesce() if layout == "coo" else a.to_sparse_csr()
    B = randn(np.random.default_rng(12), c.n, K)
    st.spmm(t, B)
    calls, misses = coo_cache.calls, st.graph_cache_info()["misses"]
    (t._values() if layout == "coo" else t.values()).mul_(-2)
    torch.testing.assert_close(st.spmm(t, B), -2 * a @ B, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == calls, "the structure was converted again after a change of the values only"
    assert st.graph_cache_info()["misses"] == misses, "the C++ structure cache missed"


@pytest.mark.parametrize("layout", ["csr", "bsr"])
def test_csr_bsr_cache_entry_released_with_tensor(coo_cache, layout):
    a, _, _ = block_matrix()
    t = a.to_sparse_csr() if layout == "csr" else a.to_sparse_bsr((2, 3))
    st.spmm(t, randn(np.random.default_rng(22), a.shape[1], K))
    assert len(coo_cache.cache) == 1
    del t
    gc.collect()
    assert len(coo_cache.cache) == 0


def csr_from_components(seed):
    """(dense float64, Csr, indptr, indices, values, t): a torch CSR tensor built
    from component tensors, which it then holds itself (not copies)."""
    a, c = dense_matrix(seed=seed)
    indptr, indices = c.torch_structure("int64")
    values = torch.from_numpy(c.values).clone()
    return a, c, indptr, indices, values, torch.sparse_csr_tensor(indptr, indices, values, c.shape)


def test_csr_cache_invalidated_by_edit_of_its_index_tensors(coo_cache):
    """An in-place edit of the index tensors a CSR tensor was built from bumps
    their version counters, not the sparse tensor's: the entry is rebuilt and
    the structure validated again (an out-of-range column raises instead of
    reaching the kernel)."""
    a, c, indptr, indices, values, t = csr_from_components(seed=24)
    B = randn(np.random.default_rng(24), c.n, K)
    st.spmm(t, B)
    st.spmm(t, B)
    assert coo_cache.calls == 1
    e = int(indptr[1]) - 1  # the last non-zero of row 0
    col = int(indices[e])
    assert col < c.n - 1 and (e == 0 or int(indices[e - 1]) < col)
    indices[e] = c.n - 1  # in place, the row stays sorted
    a2 = a.clone()
    a2[0, c.n - 1], a2[0, col] = a[0, col], 0
    misses = st.graph_cache_info()["misses"]
    torch.testing.assert_close(st.spmm(t, B), a2 @ B, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 2 and len(coo_cache.cache) == 1
    assert st.graph_cache_info()["misses"] == misses + 1, "the edited structure was not validated again"
    indices[e] = 1_000_000
    with pytest.raises(ValueError, match=r"st\.spmm: argument 'indices' holds column 1000000, out of range"):
        st.spmm(t, B)
    indptr[1:3].fill_(c.nnz + 1)  # through a view of indptr: its counter too
    indices[e] = col
    with pytest.raises(ValueError, match=r"st\.spmm: indptr"):
        st.spmm(t, B)


def test_csr_cache_invalidated_by_edit_through_accessor(coo_cache):
    """t.col_indices() is a view sharing the sparse tensor's version counter."""
    a, c, _, _, _, t = csr_from_components(seed=25)
    B = randn(np.random.default_rng(25), c.n, K)
    st.spmm(t, B)
    t.col_indices()[0] = 1_000_000
    with pytest.raises(ValueError, match=r"st\.spmm: argument 'indices' holds column 1000000"):
        st.spmm(t, B)
    assert coo_cache.calls == 2


def test_csr_cache_sees_values_changes(coo_cache):
    """Values are read from the tensor on every call: an in-place change of the
    values tensor t was built from is seen without converting again (its
    counter is its own, not the structure's), and so is a new tensor over the
    same index tensors."""
    a, c, indptr, indices, values, t = csr_from_components(seed=26)
    B = randn(np.random.default_rng(26), c.n, K)
    for _ in range(2):  # the second call is a hit
        torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
    misses = st.graph_cache_info()["misses"]
    values.mul_(-3)
    torch.testing.assert_close(st.spmm(t, B), -3 * a @ B, rtol=1e-12, atol=1e-12)
    values[:2] = 7.0  # through a view of the values
    a7 = -3 * a
    a7[torch.from_numpy(c.rows()[:2]), torch.from_numpy(c.indices[:2])] = 7.0
    torch.testing.assert_close(st.spmm(t, B), a7 @ B, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 1 and st.graph_cache_info()["misses"] == misses
    t2 = torch.sparse_csr_tensor(indptr, indices, values * 2, c.shape)
    torch.testing.assert_close(st.spmm(t2, B), 2 * a7 @ B, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(st.spmm(t, B), a7 @ B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("requires_grad", [False, True])
def test_csr_cache_entry_released_after_hits(coo_cache, requires_grad):
    """After hits (which keep the matrix of the values t holds, or not, when
    gradients must reach t through the view t.values()) a freed tensor's
    entry still goes."""
    a, c = dense_matrix(seed=27)
    t = a.to_sparse_csr().requires_grad_(requires_grad)
    B = randn(np.random.default_rng(27), c.n, K)
    for _ in range(3):
        st.spmm(t, B)
    with torch.no_grad():
        st.spmm(t, B)
    assert len(coo_cache.cache) == 1
    del t
    gc.collect()
    assert len(coo_cache.cache) == 0


def test_grad_to_torch_csr_values(coo_cache):
    """A torch CSR tensor that requires grad gets the gradient of its values,
    on every call (hits included)."""
    a, c = dense_matrix(seed=28)
    t = a.to_sparse_csr().requires_grad_()
    rng = np.random.default_rng(28)
    B, G = randn(rng, c.n, K), randn(rng, c.m, K)
    for _ in range(2):
        st.spmm(t, B).backward(G)
    expected = 2 * (G @ B.T) * (a != 0)
    torch.testing.assert_close(t.grad.to_dense(), expected, rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 1


@pytest.mark.parametrize("requires_grad", [False, True])
def test_grad_to_torch_coo_values(coo_cache, requires_grad):
    """A coalesced COO tensor that requires grad gets the gradient of its values
    (as torch.sparse.mm gives it), on every call (hits included); its entry
    still goes when it is freed."""
    a, c = dense_matrix(seed=31)
    t = a.to_sparse().coalesce().requires_grad_(requires_grad)
    rng = np.random.default_rng(31)
    B, G = randn(rng, c.n, K), randn(rng, c.m, K)
    for _ in range(2):
        out = st.spmm(t, B)
        torch.testing.assert_close(out, a @ B, rtol=1e-12, atol=1e-12)
        if requires_grad:
            out.backward(G)
    if requires_grad:
        peer = a.to_sparse().coalesce().requires_grad_()
        for _ in range(2):
            torch.sparse.mm(peer, B).backward(G)
        torch.testing.assert_close(t.grad.to_dense(), 2 * (G @ B.T) * (a != 0), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(t.grad.to_dense(), peer.grad.to_dense(), rtol=1e-12, atol=1e-12)
    assert coo_cache.calls == 1 and len(coo_cache.cache) == 1
    del t, out  # out's graph holds t (its gradient's accumulator) until then
    gc.collect()
    assert len(coo_cache.cache) == 0


def marked_coalesced(rows, cols, values, shape):
    """A COO tensor marked coalesced whatever its entries' order: torch trusts the mark."""
    t = torch.sparse_coo_tensor(torch.tensor([rows, cols]), torch.tensor(values, dtype=F64), shape,
                                is_coalesced=True)
    assert t.is_coalesced()
    return t


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("entries", [
    ([2, 0], [0, 1], [1.0, 2.0]),                        # rows out of order
    ([1, 1, 1], [3, 0, 2], [1.0, -2.0, 4.0]),            # columns out of order in a row
    ([0, 2, 0, 2], [1, 3, 1, 0], [1.0, 2.0, 5.0, -1.0]),  # a repeated entry
], ids=["rows", "columns", "duplicate"])
def test_coo_marked_coalesced_but_unsorted_is_sorted_here(coo_cache, entries, requires_grad):
    """is_coalesced=True on entries that are not sorted (or repeat): torch.sparse.mm
    reads the entries as they are (repeats add up), and so does st.spmm; such a
    tensor is not cached (its values are not in CSR order). Gradients reach
    its values."""
    rows, cols, values = entries
    t = marked_coalesced(rows, cols, values, (3, 4)).requires_grad_(requires_grad)
    dense = torch.zeros(3, 4, dtype=F64)
    for r, col, v in zip(rows, cols, values):
        dense[r, col] += v
    B = randn(np.random.default_rng(32), 4, K)
    for reduce in ("sum", "max"):
        ref = dense @ B if reduce == "sum" else None
        out = st.spmm(t, B, reduce)
        if ref is not None:
            torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(out, torch.sparse.mm(t.detach(), B), rtol=1e-12, atol=1e-12)
    assert len(coo_cache.cache) == 0
    if requires_grad:
        G = randn(np.random.default_rng(33), 3, K)
        st.spmm(t, B).backward(G)
        per_entry = (G[torch.tensor(rows)] * B[torch.tensor(cols)]).sum(1)
        torch.testing.assert_close(t.grad._values(), per_entry, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("coalesced", [False, True])
@pytest.mark.parametrize("bad", [(5, 1, "row index 5, out of range for 3 rows"),
                                 (-1, 1, "row index -1, out of range for 3 rows"),
                                 (0, 4, "column index 4, out of range for 4 columns")],
                         ids=["row", "negative", "column"])
def test_coo_indices_out_of_range_are_named(coo_cache, bad, coalesced):
    """A COO tensor made without torch's checks (check_invariants=False) whose
    indices lie outside its shape: torch's coalesce() would write out of
    bounds, so the indices are checked first."""
    row, col, message = bad
    idx = torch.tensor([[0, row], [0, col]]) if coalesced else torch.tensor([[0, row, 0], [0, col, 0]])
    t = torch.sparse_coo_tensor(idx, torch.ones(idx.shape[1], dtype=F64), (3, 4), check_invariants=False,
                                is_coalesced=coalesced)
    B = randn(np.random.default_rng(34), 4, K)
    with pytest.raises(ValueError, match=f"st.spmm: argument 'A': .*entry 1 has {message}"):
        st.spmm(t, B)
    with pytest.raises(ValueError, match=f"entry 1 has {message}"):
        st.SparseMatrix.from_torch(t)


def test_inference_tensors_are_not_cached(coo_cache):
    """Inference tensors have no version counters: they are converted on every
    call, so an in-place edit is still seen."""
    with torch.inference_mode():
        a, c, indptr, indices, values, t = csr_from_components(seed=29)
        B = randn(np.random.default_rng(29), c.n, K)
        for _ in range(2):
            torch.testing.assert_close(st.spmm(t, B), a @ B, rtol=1e-12, atol=1e-12)
        assert len(coo_cache.cache) == 0 and coo_cache.calls == 2
        indices[0] = 1_000_000
        with pytest.raises(ValueError, match=r"st\.spmm: argument 'indices' holds column 1000000"):
            st.spmm(t, B)


def test_conversion_cache_threads_smoke(monkeypatch):
    """Threads calling st.spmm on shared torch sparse tensors, more of them
    than the cache holds (evictions), while one thread replaces tensors (the
    old ones are freed and their entries dropped) and another clears the
    cache: every result is right and nothing hangs."""
    import threading

    cache = sm._ConversionCache(capacity=3)
    monkeypatch.setattr(sm, "_TORCH_SPARSE_CACHE", cache)
    mats = [dense_matrix(seed=30 + i)[0] for i in range(6)]

    def torch_sparse(i):
        return mats[i].to_sparse_csr() if i % 2 else mats[i].to_sparse().coalesce()

    tensors = [torch_sparse(i) for i in range(len(mats))]
    B = randn(np.random.default_rng(30), mats[0].shape[1], K)
    refs = [m @ B for m in mats]
    errors = []

    def caller(seed):
        for i in np.random.default_rng(seed).integers(0, len(tensors), 300):
            try:
                if not torch.allclose(st.spmm(tensors[i], B), refs[i], rtol=1e-12, atol=1e-12):
                    errors.append(f"tensor {i}: wrong result")
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(f"tensor {i}: {e!r}")

    def replacer():
        for n in range(200):
            tensors[n % len(tensors)] = torch_sparse(n % len(tensors))

    def clearer():
        for _ in range(20):
            cache.clear()

    workers = [threading.Thread(target=caller, args=(s,)) for s in range(4)]
    workers += [threading.Thread(target=replacer), threading.Thread(target=clearer)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not any(w.is_alive() for w in workers), "a thread hung"
    assert not errors, errors[:5]
    assert len(cache) <= cache.capacity


_DEADLOCK_SCRIPT = r"""
import gc, sys, threading, time, warnings
warnings.simplefilter("ignore")
import torch
from sparsetir_torch import sparse_matrix as sm

def fresh_csr():
    return torch.eye(6, 5, dtype=torch.float64).to_sparse_csr()

def clear(cache):
    cache.get(fresh_csr())  # what st.spmm(A, B) does with a torch sparse A; the tensor is then freed
    gc.collect()
    cache.clear()

def evict(cache):
    for _ in range(cache.capacity + 2):
        cache.get(fresh_csr())

# Each scenario in a thread of its own, on a cache of its own.
workers = {name: threading.Thread(target=globals()[name], args=(sm._ConversionCache(),), daemon=True)
           for name in sys.argv[1:]}
for w in workers.values():
    w.start()
deadline = time.time() + 4  # each scenario takes well under a second
for name, w in workers.items():
    w.join(max(0.0, deadline - time.time()))
    print(name, "HANG" if w.is_alive() else "OK", flush=True)
"""


@pytest.fixture(scope="module")
def deadlock_results():
    """Runs the cache scenarios in a subprocess, each in a thread with a time
    limit, so a deadlock is reported instead of hanging the test session."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _DEADLOCK_SCRIPT, "clear", "evict"], capture_output=True,
                          text=True, timeout=240, cwd=os.path.dirname(__file__))
    results = dict(line.split() for line in proc.stdout.splitlines() if line.split()[-1:] in (["OK"], ["HANG"]))
    return results, proc


@pytest.mark.parametrize("scenario", ["clear", "evict"])
def test_conversion_cache_does_not_deadlock(deadlock_results, scenario):
    results, proc = deadlock_results
    assert scenario in results, proc.stdout + proc.stderr
    assert results[scenario] == "OK", f"{scenario}: the cache deadlocked"


@pytest.mark.parametrize("fmt", ["csr", "bsr2", "bsr4"])
def test_spmm_every_tuned_format(fmt):
    """st.spmm (sum) runs the format chosen per graph (tuning.py): each choice
    gives A @ B and the gradients of A's values and B."""
    tuning = pytest.importorskip("sparsetir_torch.tuning")
    rng = np.random.default_rng(23)
    # 12 x 8 with 2 x 2 block structure (fill ratio 1 for 2 x 2 blocks).
    blocks = rng.random((6, 4)) < 0.4
    blocks[2] = False
    pattern = np.kron(blocks, np.ones((2, 2), dtype=bool))
    dense = np.where(pattern, random_values(rng, pattern.shape), 0.0)
    c = scipy.sparse.csr_matrix(dense)
    values = torch.from_numpy(c.data).clone().requires_grad_()
    A = st.SparseMatrix(torch.from_numpy(c.indptr).long(), torch.from_numpy(c.indices).long(), values, c.shape)
    B = randn(rng, 8, K, requires_grad=True)
    choice = {"format": "csr", "block": None} if fmt == "csr" else {"format": "bsr", "block": int(fmt[3:])}
    A._derived[("choice", "spmm", K, F64)] = dict(choice, candidates=[], source="test")
    G = randn(rng, 12, K)
    out = st.spmm(A, B)
    out.backward(G)
    a = torch.from_numpy(dense).requires_grad_()
    b = B.detach().clone().requires_grad_()
    (a @ b).backward(G)
    torch.testing.assert_close(out, torch.from_numpy(dense) @ B.detach(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(values.grad, a.grad[torch.from_numpy(pattern)], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(B.grad, b.grad, rtol=1e-12, atol=1e-12)
    assert tuning.choose(A, "spmm", K, F64)["format"] == choice["format"]


# --------------------------------------------------------------------------- gradients through the API


def dense_from_values(c, values):
    """The dense matrix of c's structure with the given (differentiable) values."""
    out = torch.zeros(c.shape, dtype=values.dtype)
    return out.index_put((torch.from_numpy(c.rows()), torch.from_numpy(c.indices)), values, accumulate=True)


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_grad_to_sparse_matrix_values_spmm(reduce):
    _, c = dense_matrix(seed=17)
    rng = np.random.default_rng(17)
    values = torch.from_numpy(c.values).clone().requires_grad_()
    B = randn(rng, c.n, K, requires_grad=True)
    G = randn(rng, c.m, K)
    A = st.SparseMatrix(*c.torch_structure("int32"), values, c.shape)
    st.spmm(A, B, reduce=reduce).backward(G)
    v_ref, b_ref = values.detach().clone().requires_grad_(), B.detach().clone().requires_grad_()
    a_ref = dense_from_values(c, v_ref)
    if reduce == "mean":
        a_ref = a_ref / torch.from_numpy(np.maximum(c.row_lengths(), 1)).to(F64).unsqueeze(1)
    (a_ref @ b_ref).backward(G)
    torch.testing.assert_close(values.grad, v_ref.grad, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(B.grad, b_ref.grad, rtol=1e-12, atol=1e-12)


def test_grad_to_sparse_matrix_values_sddmm_and_transpose():
    _, c = dense_matrix(seed=18)
    rng = np.random.default_rng(18)
    values = torch.from_numpy(c.values).clone().requires_grad_()
    X, Y = randn(rng, c.m, K, requires_grad=True), randn(rng, c.n, K, requires_grad=True)
    A = st.SparseMatrix(*c.torch_structure("int64"), values, c.shape)
    G = randn(rng, c.nnz)
    out = st.sddmm(A, X, Y)
    (out.values() * G).sum().backward()
    grads = [values.grad.clone(), X.grad.clone(), Y.grad.clone()]
    refs = [t.detach().clone().requires_grad_() for t in (values, X, Y)]
    rows, cols = torch.from_numpy(c.rows()), torch.from_numpy(c.indices)
    ((refs[0] * (refs[1][rows] * refs[2][cols]).sum(1)) * G).sum().backward()
    for g, r in zip(grads, refs):
        torch.testing.assert_close(g, r.grad, rtol=1e-12, atol=1e-12)
    # Through the transposed handle: values.grad of (A^T @ Z).
    values.grad = None
    Z = randn(rng, c.m, K)
    GT = randn(rng, c.n, K)
    st.spmm(A.t(), Z).backward(GT)
    v_ref = values.detach().clone().requires_grad_()
    (dense_from_values(c, v_ref).T @ Z).backward(GT)
    torch.testing.assert_close(values.grad, v_ref.grad, rtol=1e-12, atol=1e-12)


def test_grad_to_sparse_matrix_blocks_and_attention():
    a, c, blocks = block_matrix()
    rng = np.random.default_rng(19)
    blk = torch.from_numpy(blocks).clone().requires_grad_()
    A = st.SparseMatrix(*c.torch_structure("int64"), blk, a.shape)
    B = randn(rng, a.shape[1], K)
    G = randn(rng, a.shape[0], K)
    st.bsrmm(A, B).backward(G)
    # d/dblock[e] = G[block row rows] @ B[block column]^T
    rows = np.repeat(np.arange(c.m), np.diff(c.indptr))
    ref = torch.stack([G[2 * r:2 * r + 2] @ B[3 * j:3 * j + 3].T for r, j in zip(rows, c.indices)])
    torch.testing.assert_close(blk.grad, ref, rtol=1e-12, atol=1e-12)

    mask, q, k, v = attention_inputs(seed=20)
    qkv = [t.clone().requires_grad_() for t in (q, k, v)]
    handle = mask_forms(mask)["sparse_matrix"]
    out = st.sparse_attention(*qkv, handle)
    go = randn(rng, *out.shape)
    out.backward(go)
    refs = [t.clone().requires_grad_() for t in (q, k, v)]
    attention_ref(mask, *refs).backward(go)
    for name, x, r in zip("qkv", qkv, refs):
        torch.testing.assert_close(x.grad, r.grad, rtol=1e-10, atol=1e-12, msg=f"d{name}")
