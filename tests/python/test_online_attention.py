"""sparse_attention's forward on cuda: one launch of kernels/sparse_attention_online_columns.py
(or, with SPARSETIR_CUDA_ATTENTION_COLUMN_LANES=0, kernels/sparse_attention_online.py).

A warp per (row, head) walks the row's allowed columns once, groups of its
lanes scoring a column each (T.sp.lane_sum over the group; the warp scores
one column at a time in the second kernel), keeping a running max, sum of
exponentials and weighted sum of v rows that it rescales when the max grows
(the online softmax); T.sp.lane_shuffle gives every lane each column's
weight. Both kernels run under the SIMT
emulator (SPARSETIR_EMULATE_CUDA=1) against a float64 dense reference, over
the edge-case patterns, every dtype and both index dtypes, in every thread
order of the race check; wider heads than it takes fall back to the
multi-head operators. T.sp.lane_sum and its kin are part of the script
language for stage-III kernels.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import CSR_CASES, REPO_ROOT, TORCH_DTYPES, make_csr, run_emulated_cuda_benchmark

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

CASES = ("1x1", "1x1_empty", "empty_rows", "dense_row", "fully_dense", "tall", "wide", "unsorted_with_duplicates")
# Tolerance per dtype: the op computes 16-bit inputs in float32 and rounds the output once.
TOLERANCE = {"float32": 2e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.fixture(params=["column_groups", "warp_per_column"])
def emulate(monkeypatch, request):
    """The emulated cuda path, with each of the forward's two kernels."""
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    if request.param == "warp_per_column":
        monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", "0")
    else:
        monkeypatch.delenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", raising=False)
    yield


def reference(a, q, k, v, scale):
    """float64: softmax over each row's allowed columns (duplicates counted
    as often as they appear), a row without any gives zeros."""
    q, k, v = (t.double().numpy() for t in (q, k, v))
    out = np.zeros(q.shape[:-1] + v.shape[-1:])
    for i in range(a.m):
        cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
        if len(cols) == 0:
            continue
        s = np.einsum("...d,...jd->...j", q[..., i, :], k[..., cols, :]) * scale
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out[..., i, :] = np.einsum("...j,...jd->...d", p, v[..., cols, :])
    return out


def inputs(a, lead, d, dv, dtype, seed, spread=1.0):
    gen = torch.Generator().manual_seed(seed)
    t = TORCH_DTYPES[dtype]
    q = (torch.randn(*lead, a.m, d, generator=gen, dtype=torch.float64) * spread).to(t)
    k = (torch.randn(*lead, a.n, d, generator=gen, dtype=torch.float64) * spread).to(t)
    v = torch.randn(*lead, a.n, dv, generator=gen, dtype=torch.float64).to(t)
    return q, k, v


def check(a, q, k, v, scale, dtype, idtype, launches=1):
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v, scale)
    if a.nnz > 0 and q.numel() > 0:
        assert _C.emulated_runs() == before + launches
    assert out.dtype == q.dtype and out.shape == q.shape[:-1] + v.shape[-1:]
    ref = reference(a, q, k, v, scale)
    got = out.double().numpy()
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, ref, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("idtype", ("int32", "int64"))
def test_matches_float64(emulate, case, dtype, idtype):
    a = make_csr(seed=3, **CSR_CASES[case])
    q, k, v = inputs(a, (2,), 24, 40, dtype, seed=len(case))
    check(a, q, k, v, 0.3, dtype, idtype)


@pytest.mark.parametrize("d,dv", [(1, 1), (32, 32), (33, 65), (64, 64), (100, 7), (256, 256)])
def test_head_widths(emulate, d, dv):
    """Widths that fill the lanes, leave some idle, or take several features each."""
    a = make_csr(20, 30, density=0.3, seed=d, empty_rows=(3,), dense_rows=(0,))
    q, k, v = inputs(a, (), d, dv, "float32", seed=dv)
    check(a, q, k, v, d ** -0.5, "float32", "int32")


@pytest.mark.parametrize("d", [20, 64])
def test_rows_of_every_length_around_the_column_groups(emulate, d):
    """Row i holds i columns (0 to 9), then rows of 15-17, 31-33 and 63-65:
    rounds of four columns (a warp per column) and of 16 or 8 columns (groups
    of two or four lanes at these widths), full and partial; forward and
    backward."""
    from conftest import Csr

    lengths = np.concatenate([np.arange(10), [15, 16, 17, 31, 32, 33, 63, 64, 65]])
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.sort(np.random.default_rng(int(n)).choice(70, n, replace=False)) for n in lengths])
    a = Csr(indptr, indices.astype(np.int64), np.ones(len(indices)), (len(lengths), 70))
    q, k, v = inputs(a, (2,), d, 12, "float32", seed=8)
    check(a, q, k, v, 0.4, "float32", "int64")
    check_gradients(a, (2,), d, 12, "float64", "int64", seed=d)


def test_batch_and_heads(emulate):
    a = make_csr(17, 11, density=0.4, seed=9, empty_rows=(16,))
    q, k, v = inputs(a, (2, 3), 16, 8, "float64", seed=4)
    check(a, q, k, v, 0.25, "float64", "int64")


def test_large_scores_are_rescaled_not_overflowed(emulate):
    """Scores in the hundreds (exp overflows float32 past 88): the running max
    is subtracted before every exponential, and rows whose max grows along the
    row are rescaled."""
    a = make_csr(12, 40, density=0.5, seed=2, dense_rows=(1,))
    q, k, v = inputs(a, (2,), 8, 8, "float32", seed=5, spread=6.0)
    # Keys that grow along the columns: the max of a row rises as the kernel walks it.
    k = k + torch.linspace(0, 8, a.n).reshape(1, a.n, 1)
    scores = torch.einsum("hid,hjd->hij", q.double(), k.double())
    assert scores.abs().max() > 100
    check(a, q, k, v, 1.0, "float32", "int32")


def test_wider_heads_take_the_multi_head_operators(emulate):
    a = make_csr(9, 12, density=0.4, seed=6)
    q, k, v = inputs(a, (), 8, 257, "float32", seed=1)
    check(a, q, k, v, 0.5, "float32", "int32", launches=3)  # sddmm, edge_softmax, spmm


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_every_thread_order_gives_the_same_bits(emulate, monkeypatch, order):
    a = make_csr(25, 64, density=0.05, seed=2, dense_rows=(3,))
    q, k, v = inputs(a, (4,), 64, 64, "float32", seed=7)
    indptr, indices = a.torch_structure("int32")
    forward = torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v)
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    assert torch.equal(torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v), forward)


def test_the_kernel_writes_nothing_but_the_output_and_each_rows_log_sum_exp():
    source = _C.op_kernel_source("sparse_attention_online", "sparse_attention_online", "float32", "int32",
                                 {"head_dim": 64, "value_dim": 64}, "cuda")
    body = source[source.index('extern "C"'):]
    # Four columns' scores summed across the lanes per round.
    assert "? sparsetir_lane_reduce<SparsetirSum>(DOT[u_1], 32) : -INFINITY)" in body
    assert "for (int32_t u_1 = 0, u_1_end = 4;" in body
    stores = [line for line in body.splitlines() if "] = " in line and "float" not in line.split("=")[0]]
    assert stores and all(line.strip().startswith(("QL[", "MX[", "SM[", "COL[", "DOT[", "SCORE[", "ACC[", "O[",
                                                   "LSE["))
                          for line in stores), stores
    assert sum(line.strip().startswith("LSE[") for line in stores) == 1


# --------------------------------------------------------------------------- tiles in shared memory

# kernels/sparse_attention_tiles.py: a block of warps, one row each, walks
# the columns in tiles whose k and v rows it copies into shared memory. Three
# warps a block: the last block has rows past m, and the copies' rounds do
# not divide the tile.
TILE_ROWS = "3"


@pytest.fixture
def tiles(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    monkeypatch.delenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", raising=False)
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", TILE_ROWS)
    yield


def check_tiles(a, q, k, v, scale, dtype, idtype):
    """check(), then that the forward ran the tiles and its log-sum-exp is each row's."""
    check(a, q, k, v, scale, dtype, idtype)
    if a.nnz and q.numel():
        assert _C.last_emulated_kernel() == "sparse_attention_tiles"
    indptr, indices = a.torch_structure(idtype)
    _, lse = torch.ops.sparsetir._sparse_attention_forward(indptr, indices, q, k, v, scale)
    ref, got = reference_log_sum_exp(a, q, k, scale), lse.double().numpy()
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=tol, atol=tol)


def sorted_rows(lengths, columns, seed, repeat=()):
    """A pattern whose row r holds lengths[r] sorted columns of `columns`
    (a row in `repeat` holds each of its columns twice)."""
    from conftest import Csr

    rng = np.random.default_rng(seed)
    rows = []
    for r, n in enumerate(lengths):
        cols = np.sort(rng.choice(columns, n, replace=False))
        rows.append(np.repeat(cols, 2) if r in repeat else cols)
    indptr = np.concatenate([[0], np.cumsum([len(c) for c in rows])])
    indices = np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)
    return Csr(indptr, indices, np.ones(len(indices)), (len(lengths), columns))


@pytest.mark.parametrize("case", [c for c in CASES if c != "unsorted_with_duplicates"])
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
@pytest.mark.parametrize("idtype", ("int32", "int64"))
def test_tiles_match_float64(tiles, case, dtype, idtype):
    a = make_csr(seed=3, **CSR_CASES[case])
    q, k, v = inputs(a, (2,), 32, 32, dtype, seed=len(case))
    check_tiles(a, q, k, v, 0.3, dtype, idtype)


@pytest.mark.parametrize("rows", ["1", "3", "8"])
@pytest.mark.parametrize("d,dtype", [(64, "float32"), (64, "float16"), (32, "float64"), (256, "float32")])
def test_tiles_take_each_rows_columns_tile_by_tile(tiles, monkeypatch, rows, d, dtype):
    """200 columns: tiles of 64 (16 at d = 256, 32 for float64), the last one
    partial. Rows of every length around a tile's columns and a step's (8 or
    16 columns), an empty row, a row of every column, a row only in the last
    tile, one only in the first, and a row holding each column twice."""
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", rows)
    lengths = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 130, 200, 3, 40, 12]
    a = sorted_rows(lengths, 200, seed=d, repeat=(14,))
    last = np.arange(190, 200)
    a.indices[a.indptr[13]:a.indptr[14]] = last[:3]  # only in the last, partial tile
    a.indices[a.indptr[15]:a.indptr[16]] = np.arange(12)  # only in the first
    q, k, v = inputs(a, (2,), d, 64, dtype, seed=len(rows))
    check_tiles(a, q, k, v, d ** -0.5, dtype, "int64")


def test_tiles_of_a_banded_pattern(tiles):
    """Each block walks only the tiles its rows reach: a band of 9 columns
    around the diagonal over 300 columns, the first block's rows all empty
    (no tile at all), and a row of the middle reaching the last tile."""
    from conftest import Csr

    m = 300
    rows = [np.arange(max(0, i - 4), min(m, i + 5)) for i in range(m)]
    rows[0] = rows[1] = rows[2] = np.zeros(0, np.int64)
    rows[150] = np.array([149, 150, 290, 299])
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    a = Csr(indptr, np.concatenate(rows).astype(np.int64), np.ones(indptr[-1]), (m, m))
    q, k, v = inputs(a, (2,), 64, 32, "float32", seed=11)
    check_tiles(a, q, k, v, 0.125, "float32", "int32")


def test_tiles_rescale_large_scores(tiles):
    a = make_csr(12, 150, density=0.5, seed=2, dense_rows=(1,))
    # 8 features, as the column kernels' test: wider heads' scores in the hundreds round differently in each
    # summation order, past the tolerance.
    q, k, v = inputs(a, (2,), 8, 32, "float32", seed=5, spread=6.0)
    k = k + torch.linspace(0, 8, a.n).reshape(1, a.n, 1)  # each row's max grows tile after tile
    assert torch.einsum("hid,hjd->hij", q.double(), k.double()).abs().max() > 100
    check_tiles(a, q, k, v, 1.0, "float32", "int32")


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_tiles_give_the_same_bits_in_every_thread_order(tiles, monkeypatch, order):
    a = make_csr(40, 150, density=0.1, seed=2, dense_rows=(3,), empty_rows=(0, 39))
    q, k, v = inputs(a, (2,), 64, 64, "float32", seed=7)
    indptr, indices = a.torch_structure("int32")
    forward = torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v)
    assert _C.last_emulated_kernel() == "sparse_attention_tiles"
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    assert torch.equal(torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v), forward)


def test_rows_out_of_column_order_keep_the_column_groups(tiles):
    """The tiles find a row's columns by binary search: a pattern with a row
    out of order runs the column-group kernel, whatever the setting."""
    a = make_csr(seed=3, **CSR_CASES["unsorted_with_duplicates"])
    assert _C.check_csr("t", *a.torch_structure("int32"), a.n, "n")["unsorted_rows"] > 0
    q, k, v = inputs(a, (2,), 32, 32, "float32", seed=1)
    check(a, q, k, v, 0.3, "float32", "int32")
    assert _C.last_emulated_kernel() == "sparse_attention_online_columns"


def test_widths_the_tiles_do_not_take_keep_the_column_groups(tiles):
    a = make_csr(20, 30, density=0.3, seed=4)
    for d, dv in ((20, 32), (32, 40), (1, 1)):
        q, k, v = inputs(a, (), d, dv, "float32", seed=d)
        check(a, q, k, v, 0.5, "float32", "int32")
        assert _C.last_emulated_kernel() == "sparse_attention_online_columns", (d, dv)


def test_tile_choice():
    f32 = _C.cuda_attention_tile(64, 64, 4, 4, 8)
    # 64 columns of k rows padded by 64 bytes and of v rows: 36 KiB.
    assert f32 == {"rows": 8, "columns": 64, "piece": 4, "k_stride": 80}
    assert _C.cuda_attention_tile(64, 64, 2, 2, 16) == {"rows": 16, "columns": 64, "piece": 8, "k_stride": 96}
    # 256-wide heads: tiles of 16 columns (33 KiB); float64, 8.
    assert _C.cuda_attention_tile(256, 256, 4, 16, 8)["columns"] == 16
    assert _C.cuda_attention_tile(256, 256, 8, 16, 8)["columns"] == 8
    # Rows 96 bytes long need no pad.
    assert _C.cuda_attention_tile(24, 32, 4, 2, 8)["k_stride"] == 24
    for d, dv, lanes in ((40, 64, 4), (64, 48, 4), (64, 64, 0)):
        assert _C.cuda_attention_tile(d, dv, 4, lanes, 8)["rows"] == 0, (d, dv, lanes)
    assert _C.cuda_attention_tile(64, 64, 4, 4, 0)["rows"] == 0
    with pytest.raises(ValueError, match="rows must be from 0 to 16, got 17"):
        _C.cuda_attention_tile(64, 64, 4, 4, 17)


def test_tile_setting_is_checked(monkeypatch):
    assert _C.cuda_attention_tile(64, 64, 4, 4)["rows"] == 0  # unset: the column groups, until timed on a GPU
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", "8")
    explained = st.explain(None, op="attention", k=64, device="cuda")
    assert explained["script"] == "sparse_attention_tiles" and explained["tile"]["rows"] == 8
    assert "tile_columns=64" in explained["schedule"] and "k_stride=80" in explained["schedule"]
    for bad in ("17", "-1", "eight"):
        monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", bad)
        with pytest.raises(ValueError, match=r"SPARSETIR_CUDA_ATTENTION_TILE_ROWS must be warps a block \(1-16\), "
                                             r"or 0 \(no tiles\)"):
            st.explain(None, op="attention", k=64, device="cuda")


def test_explain_keeps_the_column_groups_for_rows_out_of_order(monkeypatch):
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", "8")
    a = make_csr(seed=3, **CSR_CASES["unsorted_with_duplicates"])
    indptr, indices = a.torch_structure("int32")
    A = st.SparseMatrix(indptr, indices, torch.ones(a.nnz), (a.m, a.n))
    assert st.explain(A, op="attention", k=64, device="cuda")["script"] == "sparse_attention_online_columns"
    a = make_csr(seed=3, **CSR_CASES["empty_rows"])
    indptr, indices = a.torch_structure("int32")
    A = st.SparseMatrix(indptr, indices, torch.ones(a.nnz), (a.m, a.n))
    assert st.explain(A, op="attention", k=64, device="cuda")["script"] == "sparse_attention_tiles"


# --------------------------------------------------------------------------- the backward


def reference_gradients(a, q, k, v, scale, weight):
    """float64 autograd through a row-by-row softmax over each row's column
    list (duplicates as often as they appear)."""
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    if a.nnz == 0:  # no allowed column: the output is zeros, whatever q, k, v are
        return tuple(torch.zeros_like(t) for t in (q64, k64, v64))
    rows = []
    for i in range(a.m):
        cols = torch.from_numpy(a.indices[a.indptr[i]:a.indptr[i + 1]])
        if len(cols) == 0:
            rows.append(torch.zeros(q.shape[:-2] + v.shape[-1:], dtype=torch.float64))
            continue
        s = torch.einsum("...d,...jd->...j", q64[..., i, :], k64[..., cols, :]) * scale
        rows.append(torch.einsum("...j,...jd->...d", torch.softmax(s, -1), v64[..., cols, :]))
    out = torch.stack(rows, -2)
    return torch.autograd.grad((out * weight.double()).sum(), (q64, k64, v64))


def check_gradients(a, lead, d, dv, dtype, idtype, seed, launches=4):
    q, k, v = (t.requires_grad_() for t in inputs(a, lead, d, dv, dtype, seed=seed))
    weight = torch.randn(*lead, a.m, dv, generator=torch.Generator().manual_seed(seed)).to(q.dtype)
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    out = torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v, 0.3)
    grads = torch.autograd.grad((out * weight).sum(), (q, k, v))
    if a.nnz > 0:
        assert _C.emulated_runs() == before + launches
    tol = {"float32": 1e-4, "float64": 1e-10, "float16": 2e-2, "bfloat16": 1e-1}[dtype]
    for got, ref, name in zip(grads, reference_gradients(a, q, k, v, 0.3, weight), ("dq", "dk", "dv")):
        assert got.dtype == q.dtype, name
        np.testing.assert_allclose(got.double().numpy(), ref.numpy(), rtol=tol, atol=tol, err_msg=name)


def reference_log_sum_exp(a, q, k, scale):
    """float64: each row's log-sum-exp of its scaled scores, -inf without columns."""
    q, k = q.double().numpy(), k.double().numpy()
    out = np.full(q.shape[:-1], -np.inf)
    for i in range(a.m):
        cols = a.indices[a.indptr[i]:a.indptr[i + 1]]
        if len(cols):
            s = np.einsum("...d,...jd->...j", q[..., i, :], k[..., cols, :]) * scale
            top = s.max(axis=-1)
            out[..., i] = top + np.log(np.exp(s - top[..., None]).sum(axis=-1))
    return out


@pytest.mark.parametrize("path", ["cpu", "column_groups", "warp_per_column", "multi_head_operators"])
@pytest.mark.parametrize("case", ("1x1", "1x1_empty", "empty_rows", "dense_row", "unsorted_with_duplicates",
                                  "zero_nnz"))
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
def test_the_forward_returns_each_rows_log_sum_exp(monkeypatch, path, case, dtype):
    """_sparse_attention_forward: the output of sparse_attention and, for the
    backward, each row's log-sum-exp of its scaled scores in the compute dtype
    (float64 for float64, else float32), -inf for a row without columns, from
    the CPU kernel, both one-pass cuda kernels and the multi-head operators
    (heads wider than the one-pass kernels take)."""
    if path != "cpu":
        monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    if path == "warp_per_column":
        monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", "0")
    a = make_csr(seed=5, **CSR_CASES[case])
    d = 257 if path == "multi_head_operators" else 24
    q, k, v = inputs(a, (2,), d, 8, dtype, seed=len(case))
    indptr, indices = a.torch_structure("int32")
    out, lse = torch.ops.sparsetir._sparse_attention_forward(indptr, indices, q, k, v, 0.3)
    assert torch.equal(out, torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v, 0.3))
    assert lse.dtype == (torch.float64 if dtype == "float64" else torch.float32)
    assert lse.shape == q.shape[:-1]
    ref = reference_log_sum_exp(a, q, k, 0.3)
    got = lse.double().numpy()
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=tol, atol=tol)


@pytest.mark.parametrize("case", ("empty_rows", "dense_row", "unsorted_with_duplicates"))
def test_the_backward_from_the_forwards_log_sum_exp_matches_its_recomputation(emulate, case):
    """The one-pass backward kernel reads the forward's log-sum-exp (autograd
    passes it) or, called without it, recomputes the softmax in a first pass:
    the same gradients either way, one launch less of reading k."""
    a = make_csr(seed=6, **CSR_CASES[case])
    q, k, v = inputs(a, (2,), 32, 16, "float64", seed=3)
    indptr, indices = a.torch_structure("int64")
    out, lse = torch.ops.sparsetir._sparse_attention_forward(indptr, indices, q, k, v, 0.3)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    given = torch.ops.sparsetir._sparse_attention_backward(indptr, indices, q, k, v, out, grad, 0.3, lse)
    recomputed = torch.ops.sparsetir._sparse_attention_backward(indptr, indices, q, k, v, out, grad, 0.3)
    for x, y, name in zip(given, recomputed, ("dq", "dk", "dv")):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12, msg=name)


@pytest.mark.parametrize("path", ["cpu", "column_groups"])
def test_values_without_features_still_give_the_scores_log_sum_exp(monkeypatch, path):
    """v of width 0: an empty output, but the log-sum-exp of the scores all the
    same, and zero gradients from it (not exp(score + inf) * 0)."""
    if path != "cpu":
        monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    a = make_csr(7, 6, density=0.5, seed=2, empty_rows=(1,))
    q, k, v = inputs(a, (2,), 8, 0, "float64", seed=2)
    indptr, indices = a.torch_structure("int64")
    out, lse = torch.ops.sparsetir._sparse_attention_forward(indptr, indices, q, k, v, 0.5)
    assert out.shape == (2, 7, 0)
    ref = reference_log_sum_exp(a, q, k, 0.5)
    np.testing.assert_allclose(lse.numpy(), ref, rtol=1e-12, atol=1e-12)
    grads = torch.ops.sparsetir._sparse_attention_backward(indptr, indices, q, k, v, out, out, 0.5, lse)
    for g, t in zip(grads, (q, k, v)):
        assert torch.equal(g, torch.zeros_like(t))


def test_errors_through_the_autograd_kernel_name_sparse_attention():
    """With inputs that require grad the autograd kernel calls the forward
    helper (_sparse_attention_forward); its errors still name the operator
    the user called."""
    a = make_csr(6, 5, density=0.5, seed=1)
    q, k, v = inputs(a, (2,), 8, 8, "float32", seed=1)
    indptr, indices = a.torch_structure("int32")
    with pytest.raises(ValueError, match=r"^sparsetir\.sparse_attention: argument 'k' \(2, 5, 7\) must have the head "
                                         r"dimension of 'q'"):
        torch.ops.sparsetir.sparse_attention(indptr, indices, q.requires_grad_(), k[..., :7], v)


def test_a_log_sum_exp_of_the_wrong_shape_is_refused():
    a = make_csr(6, 5, density=0.5, seed=1)
    q, k, v = inputs(a, (2,), 8, 8, "float32", seed=1)
    indptr, indices = a.torch_structure("int32")
    out = torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v)
    with pytest.raises(ValueError, match=r"sparsetir\._sparse_attention_backward: argument 'lse' must have shape "
                                         r"\(\.\.\., L\) = \(2, 6\), got \(2, 5\)"):
        torch.ops.sparsetir._sparse_attention_backward(indptr, indices, q, k, v, out, out, None, torch.zeros(2, 5))


@pytest.mark.parametrize("case", ("1x1", "empty_rows", "dense_row", "unsorted_with_duplicates", "zero_nnz"))
@pytest.mark.parametrize("dtype", ("float32", "float64", "float16", "bfloat16"))
def test_gradients_match_float64(emulate, case, dtype):
    """One forward launch; the backward's kernel (P, dS, dq) and two spmm."""
    a = make_csr(seed=4, **CSR_CASES[case])
    check_gradients(a, (2,), 24, 40, dtype, "int32" if len(case) % 2 else "int64", seed=len(case))


@pytest.mark.parametrize("d,dv", [(1, 1), (33, 65), (64, 64), (256, 8)])
def test_gradients_at_every_width(emulate, d, dv):
    a = make_csr(14, 19, density=0.35, seed=d, empty_rows=(2,), dense_rows=(5,))
    check_gradients(a, (), d, dv, "float64", "int32", seed=dv)


def test_gradients_of_wider_heads_take_the_multi_head_operators(emulate):
    a = make_csr(9, 12, density=0.4, seed=6)
    check_gradients(a, (), 8, 257, "float64", "int32", seed=1, launches=3 + 7)


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_the_backward_gives_the_same_bits_in_every_thread_order(emulate, monkeypatch, order):
    a = make_csr(25, 64, density=0.05, seed=2, dense_rows=(3,))
    q, k, v = (t.requires_grad_() for t in inputs(a, (2,), 64, 32, "float32", seed=7))
    indptr, indices = a.torch_structure("int32")

    def grads():
        return torch.autograd.grad(torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v).sum(), (q, k, v))

    forward = grads()
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    for again, first in zip(grads(), forward):
        assert torch.equal(again, first)


# --------------------------------------------------------------------------- lane operations in scripts

LANE_MAX = '''
@T.prim_func
def row_max(x: T.handle, y: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    X = T.match_buffer(x, (n, 32), "float32")
    Y = T.match_buffer(y, (n, 32), "float32")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for lane in T.thread_binding(32, thread="threadIdx.x"):
            Y[i, lane] = T.sp.LANE_OP(X[i, lane], LANES)
'''


@pytest.mark.parametrize("op,lanes", [("lane_max", 32), ("lane_sum", 8), ("lane_min", 1)])
def test_lane_reductions_in_a_script(op, lanes):
    text = LANE_MAX.replace("LANE_OP", op).replace("LANES", str(lanes))
    assert st.parse(text).script().count(f"T.sp.{op}(X[i, lane], {lanes})") == 1
    kernel = st.compile(text, target="cuda")
    x = torch.randn(3, 32, generator=torch.Generator().manual_seed(lanes))
    y = torch.empty_like(x)
    kernel(x=x, y=y, n=3)
    groups = x.reshape(3, 32 // lanes, lanes)
    combined = {"lane_max": groups.amax(-1), "lane_sum": groups.sum(-1), "lane_min": groups.amin(-1)}[op]
    torch.testing.assert_close(y, combined.repeat_interleave(lanes, -1))


@pytest.mark.parametrize("lanes", ["33", "12", "n * 2", "0"])
def test_lane_reduction_script_errors(lanes):
    text = LANE_MAX.replace("LANE_OP", "lane_sum").replace("LANES", lanes)
    with pytest.raises(st.ScriptError, match="T.sp.lane_sum: the lanes must be a constant power of two from 1 to 32"):
        st.parse(text)
    with pytest.raises(st.ScriptError, match="T.sp.lane_max takes 2 arguments"):
        st.parse(LANE_MAX.replace("LANE_OP", "lane_max").replace(", LANES", ""))


def test_lanes_named_by_a_size_parameter_must_be_specialized():
    text = LANE_MAX.replace("LANE_OP", "lane_sum").replace("LANES", "n")
    with pytest.raises(st.ScheduleError, match=r"T.sp.lane_sum: the lanes must be a power of two from 1 to 1024 "
                                               "when the kernel is built; specialize the size parameter"):
        st.compile(text, target="cuda")
    with pytest.raises(st.ScheduleError, match="the lanes must be a power of two from 1 to 1024 when the kernel"):
        st.compile(st.specialize(st.parse(text), n=12), target="cuda")
    kernel = st.compile(st.specialize(st.parse(text), n=4), target="cuda")
    x = torch.randn(4, 32, generator=torch.Generator().manual_seed(4))
    y = torch.empty_like(x)
    kernel(x=x, y=y, n=4)
    torch.testing.assert_close(y, x.reshape(4, 8, 4).sum(-1).repeat_interleave(4, -1))


# The same kernel, each lane given the value of one lane of its group.
LANE_SHUFFLE = LANE_MAX.replace("T.sp.LANE_OP(X[i, lane], LANES)", "T.sp.lane_shuffle(X[i, lane], SOURCE, LANES)")


@pytest.mark.parametrize("source,lanes", [("0", 32), ("31", 32), ("3", 4), ("(i + 1) % 8", 8), ("0", 1)])
def test_lane_shuffle_gives_the_group_one_lanes_value(source, lanes):
    text = LANE_SHUFFLE.replace("SOURCE", source).replace("LANES", str(lanes))
    if source.isdigit():  # printed as parsed
        assert st.parse(text).script().count(f"T.sp.lane_shuffle(X[i, lane], {source}, {lanes})") == 1
    kernel = st.compile(text, target="cuda")
    assert "sparsetir_lane_shuffle(" in kernel.source
    x = torch.randn(3, 32, generator=torch.Generator().manual_seed(lanes))
    y = torch.empty_like(x)
    kernel(x=x, y=y, n=3)
    sources = [eval(source, {"i": i}) for i in range(3)]  # noqa: S307 - the test's own expressions
    expected = torch.stack([x[i].reshape(32 // lanes, lanes)[:, sources[i]] for i in range(3)])
    torch.testing.assert_close(y, expected.repeat_interleave(lanes, -1), rtol=0, atol=0)


def test_lane_shuffle_errors():
    text = LANE_SHUFFLE.replace("SOURCE", "0").replace("LANES", "32")
    with pytest.raises(st.ScriptError, match="T.sp.lane_shuffle takes 3 arguments"):
        st.parse(text.replace("lane], 0, 32)", "lane], 0)"))
    with pytest.raises(st.ScriptError, match="T.sp.lane_shuffle: the lanes must be a constant power of two"):
        st.parse(text.replace("lane], 0, 32)", "lane], 0, 48)"))
    with pytest.raises(st.ScriptError, match="the source lane of T.sp.lane_shuffle must be an integer, got float32"):
        st.parse(text.replace("X[i, lane], 0,", "X[i, lane], X[i, 0],"))
    with pytest.raises(st.ScheduleError, match="T.sp.lane_shuffle passes values between the lanes of a warp, which "
                                               "only the cuda target has"):
        st.compile(text.replace('thread="blockIdx.x"', "").replace("T.thread_binding(n, )", "T.serial(n)")
                   .replace('T.thread_binding(32, thread="threadIdx.x")', "T.serial(32)"), target="cpu")
    narrow = text.replace('T.thread_binding(32, thread="threadIdx.x")', 'T.thread_binding(16, thread="threadIdx.x")')
    with pytest.raises(st.ScheduleError, match=r"T.sp.lane_shuffle\(..., 32\) combines groups of 32 lanes"):
        st.compile(narrow.replace("(n, 32)", "(n, 16)"), target="cuda")


def test_lane_reductions_need_lanes():
    text = LANE_MAX.replace("LANE_OP", "lane_sum").replace("LANES", "32")
    with pytest.raises(st.ScheduleError, match="T.sp.lane_sum combines values across the lanes of a warp, which only "
                                               "the cuda target has"):
        st.compile(text.replace('thread="blockIdx.x"', "").replace("T.thread_binding(n, )", "T.serial(n)")
                   .replace('T.thread_binding(32, thread="threadIdx.x")', "T.serial(32)"), target="cpu")
    narrow = text.replace('T.thread_binding(32, thread="threadIdx.x")', 'T.thread_binding(16, thread="threadIdx.x")')
    with pytest.raises(st.ScheduleError, match=r"T.sp.lane_sum\(..., 32\) combines groups of 32 lanes along "
                                               "threadIdx.x, but the block has 16 threads along threadIdx.x"):
        st.compile(narrow.replace("(n, 32)", "(n, 16)"), target="cuda")


def test_explain_says_which_attention_runs(monkeypatch):
    online = st.explain(None, op="attention", k=64, dtype=torch.float16, device="cuda")
    assert online["online_softmax"] and online["script"] == "sparse_attention_online_columns"
    # 64 bytes of a k row per lane: 32 features in 16-bit; the backward computes in float32 (16 a lane).
    assert online["column_lanes"] == 2 and online["backward_column_lanes"] == 4
    assert online["backward"] == "sparse_attention_backward_online_columns, csrmm_heads"
    assert 'sch.specialize(column_lanes=2, head_dim=64, value_dim=64)' in online["schedule"]
    for dtype, lanes in ((torch.float32, 4), (torch.bfloat16, 2), (torch.float64, 8)):
        explained = st.explain(None, op="attention", k=64, dtype=dtype, device="cuda")
        assert explained["column_lanes"] == lanes and explained["backward_column_lanes"] == max(lanes, 4)
    for bad in (0, 65):
        with pytest.raises(ValueError, match=f"element_bytes must be from 1 to 64, got {bad}"):
            _C.cuda_attention_column_lanes(64, bad)
    with pytest.raises(TypeError):  # no default element size: the lanes depend on it
        _C.cuda_attention_column_lanes(64)
    assert st.explain(None, op="attention", k=16, device="cuda")["column_lanes"] == 1
    assert st.explain(None, op="attention", k=17, device="cuda")["column_lanes"] == 2
    assert st.explain(None, op="attention", k=256, device="cuda")["column_lanes"] == 16
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", "0")
    warp = st.explain(None, op="attention", k=64, device="cuda")
    assert warp["column_lanes"] == 0 and warp["script"] == "sparse_attention_online"
    assert warp["backward"] == "sparse_attention_backward_online, csrmm_heads"
    for bad in ("3", "32", "-1", "two"):
        monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_COLUMN_LANES", bad)
        with pytest.raises(ValueError, match="SPARSETIR_CUDA_ATTENTION_COLUMN_LANES must be a power of two from 1 "
                                             r"to 16 \(lanes per column\), or 0"):
            st.explain(None, op="attention", k=64, device="cuda")
    wide = st.explain(None, op="attention", k=512, device="cuda")
    # The scores of 512-wide heads: a warp per row segment and head.
    assert not wide["online_softmax"] and wide["script"] == "sddmm_heads_segments, edge_softmax, csrmm_heads"


def test_the_cuda_benchmark_checks_the_training_step_under_the_emulator(tmp_path):
    """Without a GPU, benchmarks/bench_cuda.py --ops attention_train runs our
    forward and backward (the column-group kernels) under the emulator and
    checks dq, dk and dv against float64; nothing is timed."""
    stdout = run_emulated_cuda_benchmark("attention_train", tmp_path)
    assert "emulated: 2 cases checked, 0 wrong; nothing timed" in stdout, stdout
    assert "attention_train L128_h4_rand10_fwd+bwd K=64 float16: ok (emulated, not timed)" in stdout


def test_the_attention_profile_lists_the_steps_operators_under_the_emulator(tmp_path):
    """Without a GPU, benchmarks/profile_cuda_attention.py runs the training step under the emulator, lists the
    host operators in order, says that it measured nothing, and writes the same lines into --out."""
    if not st.cuda_unavailable_reason():
        pytest.skip("a GPU is present: the script profiles its kernels instead")
    out = tmp_path / "profile.txt"
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "benchmarks", "profile_cuda_attention.py"),
                           "--L", "16", "--steps", "1", "--dtypes", "float32", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": REPO_ROOT})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = out.read_text()
    assert "no GPU: the steps run under the SIMT emulator" in text
    lines = text.splitlines()
    listed = lines[lines.index("== sparsetir sparse_attention, float32") + 2:]
    assert listed[0].startswith("sparsetir::sparse_attention "), text  # the forward, then its backward
    assert "CppNode<sparsetir" in listed[1], text


# --------------------------------------------------------------------------- on a GPU

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@needs_gpu
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16", "float64"))
@pytest.mark.parametrize("case", ("empty_rows", "dense_row", "unsorted_with_duplicates"))
def test_gpu_one_pass_attention_matches_float64(dtype, case):
    a = make_csr(seed=3, **CSR_CASES[case])
    q, k, v = inputs(a, (2, 3), 64, 48, dtype, seed=len(case))
    indptr, indices = a.torch_structure("int32")
    out = torch.ops.sparsetir.sparse_attention(indptr.cuda(), indices.cuda(), q.cuda(), k.cuda(), v.cuda(), 0.125)
    assert out.is_cuda and out.dtype == q.dtype
    np.testing.assert_allclose(out.double().cpu().numpy(), reference(a, q, k, v, 0.125),
                               rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@needs_gpu
@pytest.mark.parametrize("rows", ("3", "8", "16"))
@pytest.mark.parametrize("dtype", ("float32", "float16", "bfloat16", "float64"))
def test_gpu_tiles_match_float64(monkeypatch, rows, dtype):
    """The shared-tile forward on a GPU, where the block's warps meet at its barriers for real."""
    monkeypatch.setenv("SPARSETIR_CUDA_ATTENTION_TILE_ROWS", rows)
    lengths = [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 130, 200, 3, 40, 12] * 5
    a = sorted_rows(lengths, 200, seed=int(rows), repeat=(14,))
    q, k, v = inputs(a, (2, 3), 64, 64, dtype, seed=len(dtype))
    indptr, indices = a.torch_structure("int32")
    out, lse = torch.ops.sparsetir._sparse_attention_forward(indptr.cuda(), indices.cuda(), q.cuda(), k.cuda(),
                                                             v.cuda(), 0.125)
    np.testing.assert_allclose(out.double().cpu().numpy(), reference(a, q, k, v, 0.125),
                               rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    ref = reference_log_sum_exp(a, q, k, 0.125)
    got = lse.double().cpu().numpy()
    assert np.array_equal(np.isneginf(got), np.isneginf(ref))
    np.testing.assert_allclose(got[np.isfinite(ref)], ref[np.isfinite(ref)], rtol=1e-5, atol=1e-5)


@needs_gpu
def test_gpu_one_pass_attention_gradients_match_the_cpu():
    a = make_csr(40, 30, density=0.2, seed=5, empty_rows=(1,), dense_rows=(2,))
    q, k, v = (t.requires_grad_() for t in inputs(a, (2,), 32, 16, "float32", seed=2))
    indptr, indices = a.torch_structure("int64")
    weight = torch.randn(2, a.m, 16)
    cpu = torch.autograd.grad((torch.ops.sparsetir.sparse_attention(indptr, indices, q, k, v) * weight).sum(),
                              (q, k, v))
    qc, kc, vc = (t.detach().cuda().requires_grad_() for t in (q, k, v))
    out = torch.ops.sparsetir.sparse_attention(indptr.cuda(), indices.cuda(), qc, kc, vc)
    gpu = torch.autograd.grad((out * weight.cuda()).sum(), (qc, kc, vc))
    for g, c in zip(gpu, cpu):
        torch.testing.assert_close(g.cpu(), c, rtol=1e-4, atol=1e-5)
