"""Numeric tests of the operator library (torch.ops.sparsetir.* and the st.*
wrappers): spmm (sum / mean / max / min), sddmm, bsrmm, sparse_attention and
the _csr_transpose helper.

Every reference is computed independently in float64 (numpy / scipy / dense
torch) from the rounded inputs, with error bounds scaled by the unit roundoff
of the storage dtype and the number of summed terms (conftest.assert_within_bound),
or, for attention, a bound derived below from the compute dtype's unit roundoff.

Kernels compile once per (script, dtype, index dtype, sizes): every dtype x
index dtype pair is covered at one feature size, the feature-size sweeps rotate
over the pairs so that the file stays fast.
"""
import numpy as np
import pytest
import scipy.sparse
import torch

import sparsetir_torch as st
from conftest import (
    CSR_CASES,
    INDEX_DTYPES,
    TORCH_DTYPES,
    UNIT_ROUNDOFF,
    Csr,
    assert_within_bound,
    make_csr,
    random_values,
    to_tensor,
)

ops = torch.ops.sparsetir
# torch warns that sparse CSR / BSR support is in beta whenever the tests build such tensors.
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = ("float32", "float64", "float16", "bfloat16")
IDTYPES = ("int32", "int64")
VARIANTS = [(d, i) for d in DTYPES for i in IDTYPES]
VARIANT_IDS = [f"{d}-{i}" for d, i in VARIANTS]
CASES = sorted(CSR_CASES)
# Feature sizes around the kernels' vector width of 16 (K = 3 is the size of
# the case tests). K = 1 and K = 100 (vector blocks plus an odd tail) run with
# every value dtype, 16 and 32 with two; the index dtype rotates.
FEATS = (1, 16, 32, 100)
FEAT_DTYPES = {1: DTYPES, 16: ("float32", "bfloat16"), 32: ("float64", "float16"), 100: DTYPES}
SPMM_FEAT_VARIANTS = [(k, d, IDTYPES[(FEATS.index(k) + DTYPES.index(d)) % 2]) for k in FEATS for d in FEAT_DTYPES[k]]
SDDMM_FEAT_VARIANTS = [(1, "float32", "int64"), (1, "float16", "int32"), (32, "float32", "int64"),
                       (32, "float64", "int32")] + [(100, d, IDTYPES[DTYPES.index(d) % 2]) for d in DTYPES]


def max_min_idtype(reduce: str, dtype: str) -> str:
    """The index dtype spmm max / min run with at K = 3: together they cover every pair."""
    return IDTYPES[(DTYPES.index(dtype) + (reduce == "min")) % 2]


MAX_MIN_VARIANTS = [(r, d, max_min_idtype(r, d)) for r in ("max", "min") for d in DTYPES]


def feat_ids(variants):
    return [f"K{k}-{d}-{i}" for k, d, i in variants]


# Two small real matrices from tests/data/matrices.
DATASET_NAMES = ("jgl009.mtx.gz", "lund_a.mtx.gz")


# --------------------------------------------------------------------------- helpers


def case_csr(case: str, seed_offset: int = 0) -> Csr:
    return make_csr(seed=CASES.index(case) + 31 + seed_offset, **CSR_CASES[case])


def f64(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


def structure(csr: Csr, idtype: str):
    return csr.torch_structure(idtype)


def dense(rng, shape, dtype: str) -> torch.Tensor:
    return to_tensor(random_values(rng, shape), dtype)


def assert_exact_zero_rows(out: torch.Tensor, csr: Csr, what: str):
    empty = csr.row_lengths() == 0
    if empty.any() and out.shape[1]:
        assert torch.all(out[torch.from_numpy(empty)] == 0), f"{what}: rows without non-zeros must be exactly 0"


def assert_unchanged(before, after):
    for old, new in zip(before, after):
        assert old.dtype == new.dtype and torch.equal(old, new), "the operator modified an input"


def assert_with_tolerance(out: torch.Tensor, ref: np.ndarray, tol: np.ndarray, what: str):
    got = out.detach().to(torch.float64).numpy()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    assert np.all(np.isfinite(got)), f"{what}: non-finite values in the output"
    err = np.abs(got - ref)
    bad = err > tol
    if bad.any():
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{what}: {int(bad.sum())} of {bad.size} elements off; first at {idx}: got {got[idx]!r}, "
            f"expected {ref[idx]!r} (tolerance {tol[idx]:.3g}, max error {err.max():.3g})"
        )


# --------------------------------------------------------------------------- spmm


def spmm_reference(csr: Csr, a64: np.ndarray, b64: np.ndarray, reduce: str):
    """(ref, magnitude, terms) of spmm in float64; duplicates are separate terms."""
    k = b64.shape[1]
    lengths = csr.row_lengths()[:, None]
    if reduce in ("sum", "mean"):
        ref = np.asarray(csr.scipy(a64) @ b64).reshape(csr.m, k)
        mag = np.asarray(csr.scipy(np.abs(a64)) @ np.abs(b64)).reshape(csr.m, k)
        if reduce == "mean":
            ref, mag = ref / np.maximum(lengths, 1), mag / np.maximum(lengths, 1)
        return ref, mag, np.broadcast_to(lengths, (csr.m, k))
    # max / min: the result is one of the products, rounded once to the dtype.
    products = a64[:, None] * b64[csr.indices] if csr.nnz else np.zeros((0, k))
    ref = np.full((csr.m, k), -np.inf if reduce == "max" else np.inf)
    (np.maximum if reduce == "max" else np.minimum).at(ref, csr.rows(), products)
    ref[csr.row_lengths() == 0] = 0.0
    return ref, np.abs(ref), np.zeros((csr.m, k))


def check_spmm(csr: Csr, feat: int, dtype: str, idtype: str, reduce: str = "sum", seed: int = 0,
               b: torch.Tensor = None, values: torch.Tensor = None, what: str = ""):
    rng = np.random.default_rng(seed + 7)
    a = to_tensor(csr.values, dtype) if values is None else values
    if b is None:
        b = dense(rng, (csr.n, feat), dtype)
    indptr, indices = structure(csr, idtype)
    before = [t.clone() for t in (a, b, indptr, indices)]
    out = ops.spmm(indptr, indices, a, b, reduce)
    assert_unchanged(before, (a, b, indptr, indices))
    assert out.dtype == TORCH_DTYPES[dtype] and out.shape == (csr.m, feat)
    ref, mag, terms = spmm_reference(csr, f64(a), f64(b), reduce)
    label = f"spmm {reduce} {what or csr.shape} K={feat}"
    assert_within_bound(out, ref, mag, terms, dtype, label)
    assert_exact_zero_rows(out, csr, label)
    if csr.nnz and feat:
        assert np.abs(ref).max() > 0  # the comparison is not vacuous
    return out


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("case", CASES)
def test_spmm_sum_mean_cases(case, dtype, idtype):
    """Empty rows, no non-zeros, 1x1, a dense row, no rows, no columns, tall,
    wide, unsorted columns with duplicate entries; K = 3 (below the vector width)."""
    csr = case_csr(case)
    for reduce in ("sum", "mean"):
        check_spmm(csr, 3, dtype, idtype, reduce, seed=CASES.index(case), what=case)


@pytest.mark.parametrize("reduce,dtype,idtype", MAX_MIN_VARIANTS, ids=["-".join(v) for v in MAX_MIN_VARIANTS])
@pytest.mark.parametrize("case", CASES)
def test_spmm_max_min_cases(case, reduce, dtype, idtype):
    """As above for max / min: values of both signs, empty rows give exactly 0."""
    csr = case_csr(case)
    check_spmm(csr, 3, dtype, idtype, reduce, seed=CASES.index(case), what=case)


@pytest.mark.parametrize("feat,dtype,idtype", SPMM_FEAT_VARIANTS, ids=feat_ids(SPMM_FEAT_VARIANTS))
def test_spmm_feature_sizes(feat, dtype, idtype):
    """Odd and vector-width feature sizes over a matrix with empty rows, a dense
    row and unsorted columns with duplicates; sum and mean share a kernel."""
    csr = make_csr(37, 41, density=0.15, seed=feat, empty_rows=(0, 9, 36), dense_rows=(5,), shuffle=True,
                   duplicates=6)
    for reduce in ("sum", "mean"):
        check_spmm(csr, feat, dtype, idtype, reduce, seed=feat)


@pytest.mark.parametrize("feat", (1, 3, 20, 64, 130))
@pytest.mark.parametrize("dtype,idtype", [("float32", "int32"), ("float64", "int64"), ("float32", "int64")])
def test_spmm_mean_is_the_sum_divided_by_the_row_length(feat, dtype, idtype):
    """float32 / float64 means divide each row in the kernel (csrmm_mean, the
    row still in registers): the same bits as the sum kernel's rows divided
    by their lengths afterwards, over empty, dense and duplicate-holding rows,
    whole vectors, partial ones and scalar widths."""
    csr = make_csr(37, 41, density=0.15, seed=feat + 11, empty_rows=(0, 9, 36), dense_rows=(5,), shuffle=True,
                   duplicates=6)
    indptr, indices = structure(csr, idtype)
    values = to_tensor(csr.values, dtype)
    b = dense(np.random.default_rng(feat), (csr.n, feat), dtype)
    lengths = (indptr[1:] - indptr[:-1]).clamp_min(1).to(values.dtype)[:, None]
    mean = ops.spmm(indptr, indices, values, b, "mean")
    assert torch.equal(mean, ops.spmm(indptr, indices, values, b, "sum") / lengths)
    assert torch.equal(mean[[0, 9, 36]], torch.zeros(3, feat, dtype=values.dtype))


@pytest.mark.parametrize("feat", (1, 3, 20, 64, 130, 8200))
@pytest.mark.parametrize("dtype,idtype", [("bfloat16", "int32"), ("float16", "int64")])
def test_spmm_16bit_mean_rounds_once(feat, dtype, idtype):
    """A 16-bit mean is the float32 row sum divided by the row length in
    float32 and rounded to 16 bits once: the float32 kernel's sum (the
    16-bit kernel accumulates in float32 in the same order) divided and
    rounded gives the same bits. Rows of 300 non-zeros hold lengths a
    bfloat16 cannot (its integers are exact up to 256). K = 8200 is wider
    than a kernel keeps in registers."""
    rows = 40 if feat < 8200 else 6
    csr = make_csr(rows, 301, density=0.1, seed=feat + 5, empty_rows=(0, 3), dense_rows=(1,), shuffle=True,
                   duplicates=4)
    indptr, indices = structure(csr, idtype)
    values = to_tensor(csr.values, dtype)
    b = dense(np.random.default_rng(feat), (csr.n, feat), dtype)
    lengths = (indptr[1:] - indptr[:-1]).clamp_min(1).float()[:, None]
    assert lengths.max() > 256
    expected = (ops.spmm(indptr, indices, values.float(), b.float(), "sum") / lengths).to(values.dtype)
    assert torch.equal(ops.spmm(indptr, indices, values, b, "mean"), expected)
    assert torch.equal(ops.spmm(indptr, indices, values, b, "sum"),
                       ops.spmm(indptr, indices, values.float(), b.float(), "sum").to(values.dtype))


@pytest.mark.parametrize("dtype", ("bfloat16", "float16"))
def test_16bit_outputs_wider_than_registers_round_once(dtype):
    """A 16-bit kernel sums in float32 registers; an output tile wider than
    those registers hold (kMaxLocalTile, 8192 elements) would otherwise add up
    in the 16-bit output and round at every non-zero. The operators then
    compute in float32 and round once: the bits of the float32 operator's
    result rounded."""
    t = getattr(torch, dtype)
    g = torch.Generator().manual_seed(7)
    csr = make_csr(5, 40, density=0.5, seed=2, empty_rows=(3,), dense_rows=(1,))
    indptr, indices = structure(csr, "int32")
    values = to_tensor(csr.values, dtype)

    def rounded_once(op, *args):
        wide = [a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args]
        return op(*wide).to(t)

    # spmm with heads: 2 heads x 4100 features per row.
    hv = torch.randn(indices.numel(), 2, generator=g).to(t)
    hb = torch.randn(csr.n, 2, 4100, generator=g).to(t)
    assert torch.equal(ops.spmm(indptr, indices, hv, hb, "sum"), rounded_once(ops.spmm, indptr, indices, hv, hb, "sum"))
    # bsrmm: 2-row blocks x 4100 features.
    blocks = torch.randn(indices.numel(), 2, 2, generator=g).to(t)
    bd = torch.randn(csr.n * 2, 4100, generator=g).to(t)
    assert torch.equal(ops.bsrmm(indptr, indices, blocks, bd), rounded_once(ops.bsrmm, indptr, indices, blocks, bd))
    # bsr_linear's block gradients: 128 x 128 blocks summed over the batch.
    bi, bx = torch.tensor([0, 1, 1], dtype=torch.int32), torch.tensor([0], dtype=torch.int32)
    x = torch.randn(16, 128, generator=g).to(t)
    grad = torch.randn(16, 256, generator=g).to(t)
    assert torch.equal(ops._bsr_linear_grad_blocks(x, grad, bi, bx, 128, 128),
                       rounded_once(ops._bsr_linear_grad_blocks, x, grad, bi, bx, 128, 128))


@pytest.mark.parametrize("reduce,dtype,idtype", [("max", "float32", "int32"), ("min", "bfloat16", "int32")])
@pytest.mark.parametrize("feat", (1, 100))
def test_spmm_max_min_feature_sizes(feat, reduce, dtype, idtype):
    csr = make_csr(29, 33, density=0.2, seed=feat + 3, empty_rows=(1, 28), dense_rows=(4,), shuffle=True,
                   duplicates=4)
    check_spmm(csr, feat, dtype, idtype, reduce, seed=feat)


def test_spmm_duplicates_are_added():
    """Two stored entries at (0, 1) add up (sum) and both count (mean)."""
    def structure_for(reduce):  # the index dtype of the (reduce, float64) kernels compiled elsewhere
        t = INDEX_DTYPES[max_min_idtype(reduce, "float64")]
        return torch.tensor([0, 3, 3], dtype=t), torch.tensor([1, 1, 0], dtype=t)

    values = torch.tensor([2.0, 3.0, 1.0], dtype=torch.float64)
    b = torch.tensor([[1.0, 10.0, 100.0], [0.5, 0.25, -1.0]], dtype=torch.float64)
    out = ops.spmm(*structure_for("sum"), values, b)
    expected = torch.tensor([[3.5, 11.25, 95.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    assert torch.equal(out, expected)
    # mean divides the row's sum by its length, once: both entries count.
    assert torch.equal(ops.spmm(*structure_for("sum"), values, b, "mean"),
                       expected / torch.tensor([[3.0], [1.0]], dtype=torch.float64))
    assert torch.equal(ops.spmm(*structure_for("max"), values, b, "max"),
                       torch.tensor([[1.5, 10.0, 100.0], [0, 0, 0]], dtype=torch.float64))
    assert torch.equal(ops.spmm(*structure_for("min"), values, b, "min"),
                       torch.tensor([[1.0, 0.5, -3.0], [0, 0, 0]], dtype=torch.float64))


def test_spmm_max_min_all_negative_rows_and_empty_rows():
    """max over an all-negative row is negative (not clipped at 0); empty rows give 0, not -inf/inf."""
    csr = Csr(np.array([0, 2, 2, 3]), np.array([0, 1, 1]), np.array([-0.5, -0.25, 0.75]), (3, 2))
    b = torch.tensor([[1.0, 2.0, -4.0], [4.0, 1.0, 2.0]], dtype=torch.float32)
    a = to_tensor(csr.values, "float32")
    mx = ops.spmm(*structure(csr, max_min_idtype("max", "float32")), a, b, "max")
    mn = ops.spmm(*structure(csr, max_min_idtype("min", "float32")), a, b, "min")
    assert torch.equal(mx, torch.tensor([[-0.5, -0.25, 2.0], [0, 0, 0], [3.0, 0.75, 1.5]]))
    assert torch.equal(mn, torch.tensor([[-1.0, -1.0, -0.5], [0, 0, 0], [3.0, 0.75, 1.5]]))


@pytest.mark.parametrize("dtype,idtype", [("float32", "int32"), ("float64", "int64"), ("bfloat16", "int64")])
@pytest.mark.parametrize("layout", ("transposed", "strided_rows", "strided_values"))
def test_spmm_non_contiguous_inputs(layout, dtype, idtype):
    csr = make_csr(21, 14, density=0.3, seed=8, empty_rows=(2,))
    rng = np.random.default_rng(9)
    b = dense(rng, (csr.n, 3), dtype)
    values = None
    if layout == "transposed":
        b = b.t().contiguous().t()
    elif layout == "strided_rows":
        b = dense(rng, (2 * csr.n, 3), dtype)[::2]
    else:
        values = to_tensor(np.repeat(csr.values, 2), dtype)[::2]
        assert torch.equal(values, to_tensor(csr.values, dtype))
    assert not b.is_contiguous() or not values.is_contiguous()
    for reduce in ("sum", "max"):
        idt = idtype if reduce == "sum" else max_min_idtype(reduce, dtype)
        check_spmm(csr, 3, dtype, idt, reduce, b=b, values=values, what=layout)


def test_spmm_zero_feature_columns():
    csr = make_csr(6, 5, density=0.5, seed=1)
    indptr, indices = structure(csr, "int64")
    out = ops.spmm(indptr, indices, to_tensor(csr.values, "float32"), torch.zeros(5, 0))
    assert out.shape == (6, 0) and out.dtype == torch.float32


@pytest.mark.parametrize("kind", ("csr", "coo", "coo_uncoalesced", "SparseMatrix"))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_spmm_wrapper(kind, dtype):
    """st.spmm(A, B) against dense float64 A @ B for every accepted kind of A."""
    csr = make_csr(23, 17, density=0.25, seed=12, empty_rows=(3, 22), shuffle=True)
    rng = np.random.default_rng(13)
    a = to_tensor(csr.values, dtype)
    feat = {"float32": 16, "float64": 1}[dtype]  # sizes whose int64 kernels test_spmm_feature_sizes compiles
    b = dense(rng, (csr.n, feat), dtype)
    indptr, indices = structure(csr, "int64")
    rows = torch.from_numpy(csr.rows())
    terms = csr.row_lengths()[:, None]
    a_ref = csr.scipy(f64(a))
    if kind == "csr":
        A = torch.sparse_csr_tensor(indptr, indices, a, csr.shape)
    elif kind == "coo":
        A = torch.sparse_coo_tensor(torch.stack([rows, indices]), a, csr.shape).coalesce()
    elif kind == "coo_uncoalesced":
        # every entry stored as two halves (exact in binary): coalescing adds them back
        A = torch.sparse_coo_tensor(torch.stack([rows.repeat(2), indices.repeat(2)]), torch.cat([a / 2, a / 2]),
                                    csr.shape)
        assert not A.is_coalesced()  # a / 2 + a / 2 == a exactly: same reference
    else:
        A = st.SparseMatrix(indptr, indices, a, csr.shape)
    out = st.spmm(A, b)
    ref = a_ref.toarray() @ f64(b)
    mag = np.abs(a_ref.toarray()) @ np.abs(f64(b))
    assert_within_bound(out, ref, mag, np.broadcast_to(terms, ref.shape), dtype, f"st.spmm {kind}")
    if kind == "SparseMatrix":
        assert_within_bound(A @ b, ref, mag, np.broadcast_to(terms, ref.shape), dtype, "SparseMatrix @")


@pytest.mark.parametrize("name", DATASET_NAMES)
@pytest.mark.parametrize("dtype,idtype", [("float32", "int64"), ("float64", "int32")])
def test_spmm_dataset(dataset, name, dtype, idtype):
    csr = dataset(name)
    check_spmm(csr, 100, dtype, idtype, "sum", seed=5, what=name)


@pytest.mark.parametrize("feat,dtype,idtype", [(128, "float32", "int32"), (256, "float64", "int64"),
                                                (256, "bfloat16", "int32")])
def test_spmm_rows_wider_than_the_registers(feat, dtype, idtype):
    """Rows of more vectors than the level has registers (AVX2 at K = 256,
    SSE2 at both widths), gathered from an operand large and scattered enough
    to be prefetched, run in feature tiles, one pass over the row's non-zeros
    per tile; every reduce but mean, which keeps its row whole. The same
    widths on a cached operand keep their rows whole."""
    from sparsetir_torch import _C
    from sparsetir_torch.recipes import csrmm_plan

    element_bytes = 8 if dtype == "float64" else 4
    for csr in (make_csr(300, 4096, density=0.004, seed=feat, empty_rows=(3,), dense_rows=(11,), shuffle=True),
                make_csr(40, 70, density=0.15, seed=feat, empty_rows=(0, 39), dense_rows=(5,), duplicates=2)):
        indptr, indices = structure(csr, idtype)
        level = _C.spmm_prefetch_level(indptr, indices, csr.n, feat * element_bytes)
        plan = csrmm_plan(feat, element_bytes, prefetch=level)
        vectors = feat // plan["vector_lanes"]
        tiled = level > 0 and vectors > st.recipes.cpu_target()["vector_registers"]
        assert (plan["feature_tile"] < feat) == tiled, (plan, level)
        for reduce in ("sum", "mean", "max", "min"):
            check_spmm(csr, feat, dtype, idtype, reduce, seed=feat, what=f"wide rows, tiled={tiled}")


@pytest.mark.parametrize("feat,level", [(64, 1), (128, 2)])
def test_kernels_that_prefetch_into_l1_and_l2(feat, level):
    """A scattered graph whose dense operand (4096 rows) is too large for L2:
    at K = 64 the gathered rows are prefetched into L1, at K = 128 (16 KiB of
    rows ahead) into L2. Every reduce of spmm and sddmm, both index dtypes,
    against float64, with an empty and a dense row."""
    from sparsetir_torch import _C

    csr = make_csr(300, 4096, density=0.004, seed=feat, empty_rows=(3,), dense_rows=(11,), shuffle=True)
    for idtype in IDTYPES:
        indptr, indices = structure(csr, idtype)
        assert _C.spmm_prefetch_level(indptr, indices, csr.n, feat * 4) == level
        for reduce in ("sum", "mean", "max", "min"):
            check_spmm(csr, feat, "float32", idtype, reduce, seed=feat, what=f"prefetch into L{level}")
        check_sddmm(csr, feat, "float32", idtype, seed=feat, what=f"prefetch into L{level}")


# --------------------------------------------------------------------------- sddmm


def check_sddmm(csr: Csr, feat: int, dtype: str, idtype: str, with_values: bool = True, seed: int = 0,
                x: torch.Tensor = None, y: torch.Tensor = None, what: str = ""):
    rng = np.random.default_rng(seed + 17)
    if x is None:
        x = dense(rng, (csr.m, feat), dtype)
    if y is None:
        y = dense(rng, (csr.n, feat), dtype)
    v = to_tensor(csr.values, dtype) if with_values else None
    indptr, indices = structure(csr, idtype)
    inputs = [t for t in (v, x, y, indptr, indices) if t is not None]
    before = [t.clone() for t in inputs]
    out = ops.sddmm(indptr, indices, v, x, y)
    assert_unchanged(before, inputs)
    assert out.dtype == TORCH_DTYPES[dtype] and out.shape == (csr.nnz,)
    x64, y64 = f64(x), f64(y)
    v64 = f64(v) if with_values else np.ones(csr.nnz)
    products = x64[csr.rows()] * y64[csr.indices] * v64[:, None]  # (nnz, feat)
    ref, mag = products.sum(axis=1), np.abs(products).sum(axis=1)
    terms = feat + 1 if with_values else feat  # the scaling by values is one more rounding
    label = f"sddmm {what or csr.shape} K={feat} values={with_values}"
    assert_within_bound(out, ref, mag, terms, dtype, label)
    if csr.nnz and feat:
        assert np.abs(ref).max() > 0
    return out


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("case", CASES)
def test_sddmm_cases(case, dtype, idtype):
    csr = case_csr(case, 100)
    for with_values in (True, False):
        check_sddmm(csr, 3, dtype, idtype, with_values, seed=CASES.index(case), what=case)


def rows_of_every_length(m: int, n: int, seed: int) -> Csr:
    """Rows of 0 to 9 non-zeros in turn (groups of four and every
    remainder), one dense row, columns unsorted."""
    rng = np.random.default_rng(seed)
    lengths = np.arange(m) % 10
    lengths[m // 2] = n
    indices = [rng.permutation(n)[:k] for k in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    cols = np.concatenate(indices).astype(np.int64)
    return Csr(indptr, cols, rng.uniform(-1, 1, cols.size), (m, n))


@pytest.mark.parametrize("feat,dtype,idtype", [(64, "float32", "int32"), (64, "float64", "int64"),
                                               (256, "float32", "int64"), (100, "float32", "int32"),
                                               (32, "float64", "int32"), (8, "float32", "int64"),
                                               (32, "float32", "int64"), (16, "float32", "int32")])
def test_sddmm_four_nonzeros_at_a_time(feat, dtype, idtype):
    """Where Y is cached, sddmm computes four of a row's dot products at a time
    (each vector of X loaded once for the four), the row's last ones one at a
    time; rows of every length mod 4, a dense row, an empty one, no rows, no
    non-zeros. Against float64."""
    from sparsetir_torch import _C

    element_bytes = 8 if dtype == "float64" else 4
    lanes = _C.sddmm_group_lanes(feat, element_bytes)
    widest = _C.vector_lanes(feat, element_bytes)
    # Groups take the widest vector of 16 bytes or more that gives rows of 4
    # vectors or more, when there is one.
    fitting = [w for w in (16, 8, 4, 2) if w <= widest and w * element_bytes >= 16 and feat % w == 0
               and feat >= 4 * w]
    assert lanes == (fitting[0] if fitting else 0), (feat, lanes, widest)
    csr = rows_of_every_length(41, 30, seed=feat)
    for with_values in (True, False):
        check_sddmm(csr, feat, dtype, idtype, with_values, seed=feat, what="rows of 0-9 non-zeros")
    check_sddmm(make_csr(0, 5), feat, dtype, idtype, seed=1, what="no rows")
    check_sddmm(make_csr(3, 4, density=0.0), feat, dtype, idtype, seed=1, what="zero nnz")


def test_sddmm_group_lanes_per_level():
    """The grouped sddmm takes the level's vector, on rows of 4 vectors or
    more, 16 lanes at most; a shorter row takes narrower vectors, down to 16
    bytes."""
    from sparsetir_torch import _C

    assert [_C.sddmm_group_lanes(64, 4, isa) for isa in ("generic", "avx2", "avx512", "neon")] == [4, 8, 16, 4]
    assert _C.sddmm_group_lanes(32, 4, "avx512") == 8  # 4 vectors of 8 lanes, not 2 of 16
    assert _C.sddmm_group_lanes(16, 4, "avx512") == 4
    assert _C.sddmm_group_lanes(16, 4, "avx2") == 4
    assert _C.sddmm_group_lanes(8, 4, "avx512") == 0  # 2 float32 lanes: narrower than 16 bytes
    assert _C.sddmm_group_lanes(8, 8, "avx2") == 2  # 2 float64 lanes: 16 bytes
    assert _C.sddmm_group_lanes(32, 4, "avx2") == 8
    assert _C.sddmm_group_lanes(64, 8, "avx512") == 8
    assert _C.sddmm_group_lanes(7, 4, "avx2") == 0  # no vector divides 7
    assert _C.sddmm_group_lanes(12, 4, "generic") == 0  # 3 vectors


@pytest.mark.parametrize("feat,dtype,idtype", SDDMM_FEAT_VARIANTS, ids=feat_ids(SDDMM_FEAT_VARIANTS))
def test_sddmm_feature_sizes(feat, dtype, idtype):
    csr = make_csr(26, 31, density=0.2, seed=feat + 50, empty_rows=(0, 25), dense_rows=(7,), shuffle=True,
                   duplicates=3)
    check_sddmm(csr, feat, dtype, idtype, with_values=True, seed=feat)


def test_sddmm_zero_feature_columns():
    csr = make_csr(5, 4, density=0.6, seed=2)
    indptr, indices = structure(csr, "int32")
    out = ops.sddmm(indptr, indices, to_tensor(csr.values, "float32"), torch.zeros(5, 0), torch.zeros(4, 0))
    assert out.shape == (csr.nnz,) and torch.all(out == 0)


@pytest.mark.parametrize("dtype,idtype", [("float32", "int64"), ("float16", "int32")])
def test_sddmm_non_contiguous_inputs(dtype, idtype):
    csr = make_csr(19, 23, density=0.25, seed=21, empty_rows=(4,))
    rng = np.random.default_rng(22)
    x = dense(rng, (3, csr.m), dtype).t()
    y = dense(rng, (2 * csr.n, 3), dtype)[::2]
    assert not x.is_contiguous() and not y.is_contiguous()
    check_sddmm(csr, 3, dtype, idtype, True, x=x, y=y, what="non-contiguous")


@pytest.mark.parametrize("kind", ("csr", "coo", "SparseMatrix"))
def test_sddmm_wrapper(kind):
    """st.sddmm returns a sparse CSR tensor with A's pattern and A * (X Y^T) on it."""
    csr = make_csr(18, 27, density=0.2, seed=40, empty_rows=(0, 17))
    dtype, feat = "float32", 32
    rng = np.random.default_rng(41)
    a = to_tensor(csr.values, dtype)
    x, y = dense(rng, (csr.m, feat), dtype), dense(rng, (csr.n, feat), dtype)
    indptr, indices = structure(csr, "int64")
    if kind == "csr":
        A = torch.sparse_csr_tensor(indptr, indices, a, csr.shape)
    elif kind == "coo":
        A = torch.sparse_coo_tensor(torch.stack([torch.from_numpy(csr.rows()), indices]), a, csr.shape).coalesce()
    else:
        A = st.SparseMatrix(indptr, indices, a, csr.shape)
    out = st.sddmm(A, x, y)
    assert out.layout == torch.sparse_csr and out.shape == csr.shape
    assert torch.equal(out.crow_indices(), indptr) and torch.equal(out.col_indices(), indices)
    full = f64(x) @ f64(y).T
    ref = np.where(csr.scipy().toarray() != 0, csr.scipy(f64(a)).toarray() * full, 0.0)
    mag = np.abs(csr.scipy(f64(a)).toarray()) * (np.abs(f64(x)) @ np.abs(f64(y)).T)
    assert_within_bound(out.to_dense(), ref, mag, feat + 1, dtype, f"st.sddmm {kind}")


@pytest.mark.parametrize("name", DATASET_NAMES)
@pytest.mark.parametrize("dtype,idtype", [("float32", "int64"), ("float64", "int32")])
def test_sddmm_dataset(dataset, name, dtype, idtype):
    csr = dataset(name)
    check_sddmm(csr, 32, dtype, idtype, True, seed=6, what=name)


# --------------------------------------------------------------------------- bsrmm


def check_bsrmm(pattern: Csr, block, feat: int, dtype: str, idtype: str, seed: int = 0):
    """pattern: the block-level CSR structure; block: (bh, bw)."""
    bh, bw = block
    rng = np.random.default_rng(seed + 27)
    blocks = to_tensor(random_values(rng, (pattern.nnz, bh, bw)), dtype)
    b = dense(rng, (pattern.n * bw, feat), dtype)
    indptr, indices = structure(pattern, idtype)
    before = [t.clone() for t in (blocks, b, indptr, indices)]
    out = ops.bsrmm(indptr, indices, blocks, b)
    assert_unchanged(before, (blocks, b, indptr, indices))
    shape = (pattern.m * bh, pattern.n * bw)
    assert out.dtype == TORCH_DTYPES[dtype] and out.shape == (shape[0], feat)
    blocks64, b64 = f64(blocks), f64(b)
    a_ref = scipy.sparse.bsr_matrix((blocks64, pattern.indices, pattern.indptr), shape=shape)
    a_abs = scipy.sparse.bsr_matrix((np.abs(blocks64), pattern.indices, pattern.indptr), shape=shape)
    ref = np.asarray(a_ref @ b64).reshape(shape[0], feat)
    mag = np.asarray(a_abs @ np.abs(b64)).reshape(shape[0], feat)
    terms = np.repeat(pattern.row_lengths() * bw, bh)[:, None]
    label = f"bsrmm {pattern.shape} blocks {bh}x{bw} K={feat}"
    assert_within_bound(out, ref, mag, terms, dtype, label)
    empty = np.repeat(pattern.row_lengths() == 0, bh)
    if empty.any() and feat:
        assert torch.all(out[torch.from_numpy(empty)] == 0), f"{label}: empty block rows must be exactly 0"
    if pattern.nnz and feat:
        assert np.abs(ref).max() > 0
    return out


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("case", ("empty_rows", "zero_nnz", "1x1", "dense_row", "no_rows", "tall", "wide"))
def test_bsrmm_cases(case, dtype, idtype):
    """Rectangular 2x4 blocks, every dtype pair, over the CSR cases as block patterns."""
    kw = dict(CSR_CASES[case])
    if case in ("tall", "wide", "empty_rows", "dense_row"):  # keep the block counts small
        kw.update(m=max(1, kw["m"] // 4), n=max(1, kw["n"] // 4), empty_rows=(0,), dense_rows=(1,))
    pattern = make_csr(seed=7, **kw)
    check_bsrmm(pattern, (2, 4), 3, dtype, idtype, seed=len(case))


# (block shape, K); 2x4 runs K = 3 in test_bsrmm_cases.
BLOCK_FEATS = [((1, 1), 1), ((1, 1), 100), ((4, 2), 1), ((4, 2), 100), ((8, 8), 32), ((32, 32), 3)]


def bsrmm_variant(block, feat):
    return VARIANTS[(3 * BLOCK_FEATS.index((block, feat)) + 1) % len(VARIANTS)]


@pytest.mark.parametrize("block,feat", BLOCK_FEATS, ids=[f"{h}x{w}-K{k}" for (h, w), k in BLOCK_FEATS])
def test_bsrmm_block_shapes(block, feat):
    """Block shapes x feature sizes, the dtype pair rotating."""
    variant = bsrmm_variant(block, feat)
    nb_rows, nb_cols = (3, 2) if block == (32, 32) else (7, 5)
    pattern = make_csr(nb_rows, nb_cols, density=0.4, seed=feat, empty_rows=(1,), dense_rows=(0,), shuffle=True)
    check_bsrmm(pattern, block, feat, *variant, seed=feat)


@pytest.mark.parametrize("block,feat,dtype,idtype", [((4, 4), 256, "float32", "int32"),
                                                   ((2, 2), 512, "float64", "int64"),
                                                   ((32, 32), 512, "float32", "int64"),
                                                   ((32, 16), 256, "float32", "int32"),
                                                   ((4, 2), 256, "bfloat16", "int32"),
                                                   ((4, 4), 100, "float16", "int64")])
def test_bsrmm_rows_wider_than_half_the_registers(block, feat, dtype, idtype):
    """Output rows of more vectors than half the registers run in feature
    tiles, the tile loop outside the block's rows (SSE2 and AVX2 at K = 256,
    AVX-512 at K = 512 in float32; K = 100 is 25 vectors of 4 lanes: tiles of
    5 below AVX-512); with 32-row blocks and rows 1 KiB apart, a tile's slice
    of the B block is packed first; a 32 x 512 output tile is too large for
    the stack and accumulates in the output. Against scipy in float64, with an empty and a
    dense block row."""
    from sparsetir_torch.recipes import bsrmm_plan, cpu_target

    element_bytes = 8 if dtype == "float64" else 4
    plan = bsrmm_plan(block[0], feat, element_bytes)
    vectors = feat // plan["vector_lanes"]
    half = cpu_target()["vector_registers"] // 2
    assert plan["unrolled_vectors"] * plan["vector_lanes"] == min(plan["feature_tile"], feat) or \
        plan["unrolled_vectors"] == 1, plan
    assert (plan["feature_tile"] < feat) == (vectors > half and plan["unrolled_vectors"] > 1), (plan, half)
    assert plan["output_tile_local"] == (block[0] * feat <= 8192)
    pattern = make_csr(5, 6, density=0.4, seed=feat, empty_rows=(1,), dense_rows=(3,), shuffle=True)
    check_bsrmm(pattern, block, feat, dtype, idtype, seed=feat + block[0])


@pytest.mark.parametrize("kind", ("bsrmm", "spmm"))
def test_bsrmm_wrappers(kind):
    """st.bsrmm / st.spmm with a torch BSR tensor and a block SparseMatrix, against dense float64."""
    rng = np.random.default_rng(61)
    pattern = make_csr(6, 4, density=0.4, seed=62, empty_rows=(2,))
    bh, bw, feat = 4, 2, 100
    dtype, idtype = bsrmm_variant((bh, bw), feat)
    blocks = to_tensor(random_values(rng, (pattern.nnz, bh, bw)), dtype)
    indptr, indices = structure(pattern, idtype)
    shape = (pattern.m * bh, pattern.n * bw)
    b = dense(rng, (shape[1], feat), dtype)
    a_dense = torch.sparse_bsr_tensor(indptr, indices, blocks.double(), shape).to_dense().numpy()
    ref, mag = a_dense @ f64(b), np.abs(a_dense) @ np.abs(f64(b))
    terms = np.repeat(pattern.row_lengths() * bw, bh)[:, None]
    fn = st.bsrmm if kind == "bsrmm" else st.spmm
    for A in (torch.sparse_bsr_tensor(indptr, indices, blocks, shape), st.SparseMatrix(indptr, indices, blocks, shape)):
        out = fn(A, b)
        assert_within_bound(out, ref, mag, np.broadcast_to(terms, ref.shape), dtype, f"st.{kind} {type(A)}")


# --------------------------------------------------------------------------- sparse attention


def attention_reference(q, k, v, mask: np.ndarray, scale, dtype: str):
    """(ref, tol) in float64 for q (..., L, D), k (..., S, D), v (..., S, Dv) and mask (L, S) bool.

    Error bound, first order in the compute dtype's unit roundoff u (float32 for
    the 16-bit dtypes), per query row with n allowed keys:
      scores: q is scaled then dotted over D terms: |ds_j| <= (D + 2) u scale sum_d |q_d k_jd| =: e_j;
      exp(s_j - m): the subtraction (u |s_j - m|) and exp (allowed 2 ulps = 4u);
      so every exp factor is off by at most H = 2 max e + u max |s_j - m| + 4u (relative),
      the probabilities by 2 H + (n + 1) u (numerator, normalizing sum of n terms, division);
      out = sum_j p_j v_j adds (n + 1) u sum_j p_j |v_j|, and the cast to a 16-bit dtype u_dtype |out|.
    The bound is doubled as a margin (as assert_within_bound does).
    """
    q64, k64, v64 = f64(q), f64(k), f64(v)
    D = q64.shape[-1]
    scale = 1.0 / np.sqrt(D) if scale is None else scale
    u = UNIT_ROUNDOFF["float64" if dtype == "float64" else "float32"]
    s = scale * q64 @ np.swapaxes(k64, -1, -2)  # (..., L, S)
    s_mag = abs(scale) * np.abs(q64) @ np.abs(np.swapaxes(k64, -1, -2))
    allowed = np.broadcast_to(mask, s.shape)
    n = mask.sum(-1)  # (L,)
    s_masked = np.where(allowed, s, -np.inf)
    m = s_masked.max(-1, keepdims=True, initial=-np.inf)  # initial: S may be 0
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.where(allowed, np.exp(s_masked - m), 0.0)
    z = e.sum(-1, keepdims=True)
    p = e / np.where(z > 0, z, 1.0)
    ref = p @ v64
    pv_mag = p @ np.abs(v64)
    eps_s = np.where(allowed, (D + 2) * u * s_mag, 0.0).max(-1, initial=0.0)
    spread = np.where(allowed, np.abs(s - m), 0.0).max(-1, initial=0.0)
    h = 2 * eps_s + u * spread + 4 * u
    rel_p = 2 * h + (n + 1) * u
    tol = 2.0 * ((rel_p + (n + 1) * u)[..., None] * pv_mag + UNIT_ROUNDOFF[dtype] * np.abs(ref))
    if dtype == "float16":
        tol = tol + 2.0**-24
    return ref, tol


def random_mask(L: int, S: int, density: float, seed: int, empty_rows=(), dense_rows=()) -> Csr:
    return make_csr(L, S, density=density, seed=seed, empty_rows=empty_rows, dense_rows=dense_rows)


def check_attention(pattern: Csr, lead, D: int, Dv: int, dtype: str, idtype: str, scale=None, seed: int = 0,
                    magnitude: float = 1.0, what: str = ""):
    rng = np.random.default_rng(seed + 91)
    L, S = pattern.shape
    q = to_tensor(magnitude * random_values(rng, tuple(lead) + (L, D)), dtype)
    k = to_tensor(magnitude * random_values(rng, tuple(lead) + (S, D)), dtype)
    v = to_tensor(random_values(rng, tuple(lead) + (S, Dv)), dtype)
    indptr, indices = structure(pattern, idtype)
    before = [t.clone() for t in (q, k, v, indptr, indices)]
    out = ops.sparse_attention(indptr, indices, q, k, v, scale)
    assert_unchanged(before, (q, k, v, indptr, indices))
    assert out.dtype == TORCH_DTYPES[dtype] and out.shape == tuple(lead) + (L, Dv)
    mask = pattern.scipy(np.ones(pattern.nnz)).toarray() > 0 if pattern.nnz else np.zeros(pattern.shape, bool)
    ref, tol = attention_reference(q, k, v, mask, scale, dtype)
    label = f"sparse_attention {what} lead={tuple(lead)} L={L} S={S} D={D} Dv={Dv} scale={scale} ({dtype})"
    assert_with_tolerance(out, ref, tol, label)
    empty = pattern.row_lengths() == 0
    if empty.any():
        assert torch.all(out[..., torch.from_numpy(empty), :] == 0), f"{label}: fully masked rows must be exactly 0"
    return out


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=VARIANT_IDS)
def test_attention_batched_multi_head(dtype, idtype):
    """(2, 3, L, D) with a fully masked row, a dense row and L != S."""
    pattern = random_mask(20, 24, 0.3, seed=3, empty_rows=(4,), dense_rows=(0,))
    check_attention(pattern, (2, 3), 16, 16, dtype, idtype, seed=1, what="batched")


@pytest.mark.parametrize("dtype,idtype", [("float32", "int32"), ("float64", "int64"), ("float16", "int32"),
                                          ("bfloat16", "int32")])
@pytest.mark.parametrize("lead,D,Dv", [((), 5, 3), ((3,), 3, 17), ((2, 1), 16, 1)],
                         ids=["2d-D5-Dv3", "heads3-D3-Dv17", "b2h1-D16-Dv1"])
def test_attention_value_dim_differs(lead, D, Dv, dtype, idtype):
    pattern = random_mask(11, 9, 0.4, seed=D + Dv, empty_rows=(10,))
    check_attention(pattern, lead, D, Dv, dtype, idtype, seed=D, what="Dv != D")


@pytest.mark.parametrize("scale", (0.3, 1.0, 2.5, -0.7))
@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_attention_explicit_scale(scale, dtype):
    pattern = random_mask(13, 15, 0.35, seed=11, empty_rows=(0,), dense_rows=(12,))
    check_attention(pattern, (2,), 16, 16, dtype, "int64", scale=scale, seed=2, magnitude=2.0, what="scale")


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_attention_default_scale_is_inverse_sqrt_d(dtype):
    pattern = random_mask(8, 8, 0.5, seed=5)
    indptr, indices = structure(pattern, "int64")
    rng = np.random.default_rng(3)
    q, k, v = (dense(rng, (8, 16), dtype) for _ in range(3))
    default = ops.sparse_attention(indptr, indices, q, k, v)
    explicit = ops.sparse_attention(indptr, indices, q, k, v, 0.25)
    assert torch.equal(default, explicit)


@pytest.mark.parametrize("dtype,idtype", [("float32", "int64"), ("float64", "int32"), ("bfloat16", "int64")])
@pytest.mark.parametrize("case", ("all_masked", "one_key", "1x1", "large_scores"))
def test_attention_edge_patterns(case, dtype, idtype):
    D = 16
    if case == "all_masked":
        pattern, lead = random_mask(6, 7, 0.0, seed=1), (2,)
    elif case == "one_key":  # each row allows exactly one key: out = v of that key
        cols = np.array([3, 0, 3, 6, 1])
        pattern, lead = Csr(np.arange(6), cols, np.ones(5), (5, 7)), (3,)
    elif case == "1x1":
        pattern, lead = random_mask(1, 1, 1.0, seed=1), ()
    else:  # scores up to ~60: a naive exp without the row max would overflow float32
        pattern, lead = random_mask(9, 10, 0.6, seed=4, dense_rows=(2,)), (2,)
    out = check_attention(pattern, lead, D, D, dtype, idtype, seed=7,
                          magnitude=4.0 if case == "large_scores" else 1.0, what=case)
    if case == "all_masked":
        assert torch.all(out == 0)


@pytest.mark.parametrize("lead,L,S,D,Dv", [
    pytest.param((2, 2), 0, 4, 16, 16, id="L0"),
    pytest.param((), 0, 4, 16, 16, id="L0-2d"),
    pytest.param((2,), 5, 0, 16, 16, id="S0"),
    pytest.param((2,), 5, 7, 16, 0, id="Dv0"),
    pytest.param((2,), 5, 7, 0, 16, id="D0"),
    pytest.param((0, 3), 5, 7, 16, 16, id="batch0"),
])
def test_attention_empty_dimensions(lead, L, S, D, Dv):
    """Empty q/k/v dimensions: no rows, no keys (every row fully masked), no
    value columns, or D = 0 (all scores 0: the mean of the allowed values)."""
    pattern = random_mask(L, S, 0.5, seed=2, empty_rows=(1,) if L > 1 else ())
    check_attention(pattern, lead, D, Dv, "float32", "int64", seed=3, what="empty dimension")


@pytest.mark.parametrize("mask_kind", ("dense_bool", "csr", "coo", "SparseMatrix"))
def test_attention_wrapper(mask_kind):
    pattern = random_mask(10, 12, 0.3, seed=8, empty_rows=(3,))
    rng = np.random.default_rng(9)
    q, k, v = (dense(rng, (2, n, 16), "float32") for n in (10, 12, 12))
    mask = torch.from_numpy(pattern.scipy(np.ones(pattern.nnz)).toarray() > 0)
    indptr, indices = structure(pattern, "int64")
    ones = torch.ones(pattern.nnz)
    A = {
        "dense_bool": mask,
        "csr": torch.sparse_csr_tensor(indptr, indices, ones, pattern.shape),
        "coo": mask.to(torch.float32).to_sparse(),
        "SparseMatrix": st.SparseMatrix(indptr, indices, ones, pattern.shape),
    }[mask_kind]
    ref, tol = attention_reference(q, k, v, mask.numpy(), None, "float32")
    out = st.sparse_attention(q, k, v, A)
    assert_with_tolerance(out, ref, tol, f"st.sparse_attention mask={mask_kind}")
    assert torch.all(out[:, 3] == 0)
    out_scaled = st.sparse_attention(q, k, v, A, scale=0.5)
    ref, tol = attention_reference(q, k, v, mask.numpy(), 0.5, "float32")
    assert_with_tolerance(out_scaled, ref, tol, f"st.sparse_attention mask={mask_kind} scale=0.5")


def test_attention_non_contiguous_inputs():
    pattern = random_mask(12, 10, 0.4, seed=2, empty_rows=(5,))
    rng = np.random.default_rng(5)
    q = dense(rng, (2, 16, 12), "float32").transpose(1, 2)
    k = dense(rng, (2, 20, 16), "float32")[:, ::2]
    v = dense(rng, (3, 2, 10, 16), "float32")[1]
    assert not q.is_contiguous() and not k.is_contiguous()
    indptr, indices = structure(pattern, "int32")
    out = ops.sparse_attention(indptr, indices, q, k, v)
    mask = pattern.scipy(np.ones(pattern.nnz)).toarray() > 0
    ref, tol = attention_reference(q, k, v, mask, None, "float32")
    assert_with_tolerance(out, ref, tol, "sparse_attention non-contiguous")


# --------------------------------------------------------------------------- _csr_transpose


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("case", CASES)
def test_csr_transpose(case, idtype):
    csr = case_csr(case, 200)
    columns = csr.n + 2  # trailing empty columns
    indptr, indices = structure(csr, idtype)
    t_indptr, t_indices, perm = ops._csr_transpose(indptr, indices, columns)
    t = INDEX_DTYPES[idtype]
    assert t_indptr.dtype == t and t_indices.dtype == t and perm.dtype == t
    assert t_indptr.shape == (columns + 1,) and t_indices.shape == (csr.nnz,) and perm.shape == (csr.nnz,)
    perm64 = perm.numpy().astype(np.int64)
    assert np.array_equal(np.sort(perm64), np.arange(csr.nnz)), "perm must be a permutation"
    expected_indptr = np.concatenate([[0], np.cumsum(np.bincount(csr.indices, minlength=columns))])
    assert np.array_equal(t_indptr.numpy(), expected_indptr)
    # entry e of the transpose is entry perm[e] of the original, with row and column swapped
    t_rows = np.repeat(np.arange(columns), np.diff(expected_indptr))
    assert np.array_equal(t_rows, csr.indices[perm64])
    assert np.array_equal(t_indices.numpy(), csr.rows()[perm64])
    # and it is the transpose, duplicates included
    at = scipy.sparse.csr_matrix((csr.values[perm64], t_indices.numpy(), t_indptr.numpy()), shape=(columns, csr.m))
    a = scipy.sparse.csr_matrix((csr.values, csr.indices, csr.indptr), shape=(csr.m, columns))
    assert np.array_equal(at.toarray(), a.T.toarray())
