"""Numeric tests of kernels over the sparse formats of the SparseTIR design
(tests/scripts/formats/*.py, plus tests/scripts/bsrmm_stage_i.py and csrmm.py):
CSR SpMV, A^T B by scattering (and by CSR SpMM over the transposed structure),
ELLPACK SpMM, ragged reductions / elementwise ops, DCSR SpMM, BSR SpMM, CSF
tensor-times-vector and MTTKRP, SDDMM with a row scale, and CSR row softmax.

Every reference is computed independently in float64 (numpy / scipy / dense
torch) from the rounded inputs. Outputs are pre-filled with NaN so that an
element the kernel fails to write is caught.
"""
import os

import numpy as np
import pytest
import scipy.sparse
import torch

import sparsetir_torch as st
from conftest import (
    CSR_CASES,
    REPO_ROOT,
    TORCH_DTYPES,
    UNIT_ROUNDOFF,
    Csr,
    assert_within_bound,
    get_kernel,
    make_csr,
    random_values,
    to_tensor,
)

FORMATS_DIR = os.path.join(REPO_ROOT, "tests", "scripts", "formats")
DTYPES = ("float32", "float64")
# CSR cases used by the CSR-based kernels (empty rows, a dense row, 1x1, no entries, ...).
CASES = ["1x1", "1x1_empty", "empty_rows", "zero_nnz", "dense_row", "fully_dense", "tall", "wide",
         "unsorted_with_duplicates", "no_rows", "no_columns"]
# Cases whose (row, column) pairs are unique (a dense masked reference can represent them).
UNIQUE_CASES = [c for c in CASES if c != "unsorted_with_duplicates"]


# --------------------------------------------------------------------------- helpers


def read_format_script(name: str, dtype: str) -> str:
    """tests/scripts/formats/<name>.py with its buffer dtype (and typed constants) switched to dtype."""
    with open(os.path.join(FORMATS_DIR, name + ".py"), encoding="utf-8") as f:
        text = f.read()
    assert '"float32"' in text, name
    if dtype != "float32":
        text = text.replace('"float32"', f'"{dtype}"').replace("T.float32(", f"T.{dtype}(")
    return text


_KERNELS = {}


def fkernel(name: str, dtype: str):
    """The compiled kernel of tests/scripts/formats/<name>.py (once per session and dtype)."""
    key = (name, dtype)
    if key not in _KERNELS:
        _KERNELS[key] = st.compile(read_format_script(name, dtype))
    return _KERNELS[key]


def idx(x) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.int32))


def nan_tensor(shape, dtype: str) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=TORCH_DTYPES[dtype])


def f64(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


def case_csr(case: str) -> Csr:
    return make_csr(seed=CASES.index(case) + 11, **CSR_CASES[case])


def unchanged(before, after):
    for old, new in zip(before, after):
        assert torch.equal(old, new) or (old.numel() == 0 and new.numel() == 0), "the kernel modified an input"


# --------------------------------------------------------------------------- the scripts themselves


FORMAT_SCRIPTS = sorted(os.path.splitext(f)[0] for f in os.listdir(FORMATS_DIR) if f.endswith(".py"))


@pytest.mark.parametrize("name", FORMAT_SCRIPTS)
def test_format_script_round_trips(name):
    f = st.parse(read_format_script(name, "float32"))
    assert f.stage == 1 and f.name == name
    printed = f.script()
    assert st.parse(printed).script() == printed
    assert st.lower_sparse_iter(f).stage == 2


# --------------------------------------------------------------------------- 1. CSR SpMV


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_csr_spmv(case, dtype):
    csr = case_csr(case)
    rng = np.random.default_rng(1)
    a = to_tensor(csr.values, dtype)
    x = to_tensor(random_values(rng, csr.n), dtype)
    y = nan_tensor((csr.m,), dtype)
    indptr, indices = csr.torch_structure("int32")
    before = [t.clone() for t in (a, x, indptr, indices)]
    fkernel("csr_spmv", dtype)(a=a, x=x, y=y, indptr=indptr, indices=indices, m=csr.m, n=csr.n, nnz=csr.nnz)
    unchanged(before, (a, x, indptr, indices))
    a64, x64 = f64(a), f64(x)
    ref = csr.scipy(a64) @ x64
    mag = csr.scipy(np.abs(a64)) @ np.abs(x64)
    assert_within_bound(y, np.asarray(ref), np.asarray(mag), csr.row_lengths(), dtype, f"spmv {case}")
    assert torch.all(y[torch.from_numpy(csr.row_lengths() == 0)] == 0), "empty rows must be exactly zero"


# --------------------------------------------------------------------------- 1b. A^T B


def _tmm_reference(csr: Csr, a: torch.Tensor, b: torch.Tensor):
    a64, b64 = f64(a), f64(b)
    ref = csr.scipy(a64).T @ b64
    mag = csr.scipy(np.abs(a64)).T @ np.abs(b64)
    col_counts = np.bincount(csr.indices, minlength=csr.n)[:, None] if csr.n else np.zeros((0, 1))
    return np.asarray(ref), np.asarray(mag), col_counts


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("feat", (1, 5))
@pytest.mark.parametrize("case", CASES)
def test_csr_transposed_mm_by_scatter(case, feat, dtype):
    """C = A^T B from A's CSR arrays (A^T's CSC arrays): a zero-fill iteration,
    then an all-spatial iteration that scatters into C[j_coord, k]."""
    csr = case_csr(case)
    rng = np.random.default_rng(2)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.m, feat)), dtype)
    c = nan_tensor((csr.n, feat), dtype)
    indptr, indices = csr.torch_structure("int32")
    fkernel("csr_tmm_scatter", dtype)(
        a=a, b=b, c=c, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz
    )
    ref, mag, terms = _tmm_reference(csr, a, b)
    assert_within_bound(c, ref, mag, terms, dtype, f"A^T B scatter {case}")
    if csr.n:
        empty_cols = torch.from_numpy(np.bincount(csr.indices, minlength=csr.n) == 0)
        assert torch.all(c[empty_cols] == 0), "columns of A without entries must give exact zero rows"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_csr_transposed_mm_by_transposed_structure(case, dtype):
    """C = A^T B as CSR SpMM (tests/scripts/csrmm.py) over A^T's CSR built with scipy."""
    csr = case_csr(case)
    feat = 3
    rng = np.random.default_rng(3)
    a = to_tensor(csr.values, dtype)
    at = csr.scipy(f64(a)).T.tocsr()  # keeps duplicates; exact (the values are already rounded)
    at_vals = to_tensor(at.data, dtype)
    b = to_tensor(random_values(rng, (csr.m, feat)), dtype)
    c = nan_tensor((csr.n, feat), dtype)
    get_kernel("csrmm", dtype, "int32")(
        a=at_vals, b=b, c=c, indptr=idx(at.indptr), indices=idx(at.indices),
        m=csr.n, n=csr.m, feat_size=feat, nnz=int(at.indices.size),
    )
    ref, mag, terms = _tmm_reference(csr, a, b)
    assert_within_bound(c, ref, mag, terms, dtype, f"A^T B via transposed CSR {case}")


def test_scatter_with_reduction_role_is_rejected():
    """Marking I as a reduction while the spatial J (the scatter target) lies under
    it leaves T.init() nowhere to run; the compiler must say so rather than
    place the init wrongly."""
    text = read_format_script("csr_tmm_scatter", "float32")
    text = text.replace('"SSS", "scatter"', '"RSS", "scatter"')
    text = text.replace("        C[j, k] = C[j, k] +", "        with T.init():\n            C[j, k] = 0.0\n        C[j, k] = C[j, k] +")
    assert '"RSS"' in text and "T.init" in text
    with pytest.raises(st.ScriptError, match="spatial iterator 'J' lies under reduction iterator 'I'"):
        st.compile(text)


# --------------------------------------------------------------------------- 2. ELLPACK


def ell_from_csr(csr: Csr, length: int):
    """ELL arrays (m, length): each row's entries then padding (column 0, value 0)."""
    cols = np.zeros((csr.m, length), dtype=np.int64)
    vals = np.zeros((csr.m, length))
    for r in range(csr.m):
        lo, hi = csr.indptr[r], csr.indptr[r + 1]
        cols[r, : hi - lo] = csr.indices[lo:hi]
        vals[r, : hi - lo] = csr.values[lo:hi]
    return cols, vals


ELL_CASES = ["1x1", "1x1_empty", "empty_rows", "zero_nnz", "dense_row", "fully_dense", "tall", "wide",
             "unsorted_with_duplicates"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("extra", (0, 2))
@pytest.mark.parametrize("case", ELL_CASES)
def test_ell_spmm(case, extra, dtype):
    csr = case_csr(case)
    length = int(csr.row_lengths().max(initial=0)) + extra
    if length == 0:
        length = 1  # a row length of 0 is tested separately
    feat = 4
    cols, vals = ell_from_csr(csr, length)
    rng = np.random.default_rng(4)
    a = to_tensor(vals.reshape(-1), dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = nan_tensor((csr.m, feat), dtype)
    fkernel("ell_spmm", dtype)(a=a, b=b, c=c, indices=idx(cols.reshape(-1)), m=csr.m, n=csr.n, length=length, feat_size=feat)
    a64, b64 = f64(a), f64(b)
    dense = np.zeros((csr.m, csr.n))
    np.add.at(dense, (np.repeat(np.arange(csr.m), length), cols.reshape(-1)), a64)
    absd = np.zeros((csr.m, csr.n))
    np.add.at(absd, (np.repeat(np.arange(csr.m), length), cols.reshape(-1)), np.abs(a64))
    assert_within_bound(c, dense @ b64, absd @ np.abs(b64), length, dtype, f"ell {case} length={length}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_ell_spmm_zero_length(dtype):
    m, n, feat = 5, 3, 2
    c = nan_tensor((m, feat), dtype)
    b = to_tensor(np.ones((n, feat)), dtype)
    fkernel("ell_spmm", dtype)(
        a=to_tensor(np.zeros(0), dtype), b=b, c=c, indices=idx(np.zeros(0)), m=m, n=n, length=0, feat_size=feat
    )
    assert torch.all(c == 0)


def test_ell_spmm_bad_call_raises_value_error():
    m, n, length, feat = 3, 4, 2, 2
    k = fkernel("ell_spmm", "float32")
    args = dict(a=torch.ones(m * length), b=torch.ones(n, feat), c=torch.zeros(m, feat),
                indices=idx(np.zeros(m * length - 1)), m=m, n=n, length=length, feat_size=feat)
    with pytest.raises(ValueError, match="indices"):
        k(**args)
    args["indices"] = idx(np.full(m * length, n))  # a column out of range
    with pytest.raises(ValueError, match="indices"):
        k(**args)


# --------------------------------------------------------------------------- 3. Ragged


RAGGED_LENGTHS = {
    "1x1": [1],
    "single_empty_row": [0],
    "empty_rows": [0, 3, 0, 0, 7, 1, 0],
    "dense_row": [2, 9, 0, 4],  # n = 9: row 1 is full
    "all_empty": [0, 0, 0],
    "no_rows": [],
    "long": list(np.random.default_rng(7).integers(0, 40, 60)),
}


def ragged_indptr(lengths):
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))]).astype(np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("script", ("ragged_rowsum", "ragged_rowsum_extent_only"))
@pytest.mark.parametrize("case", sorted(RAGGED_LENGTHS))
def test_ragged_rowsum(case, script, dtype):
    lengths = np.asarray(RAGGED_LENGTHS[case], dtype=np.int64)
    m, n = lengths.size, int(lengths.max(initial=0))
    indptr = ragged_indptr(lengths)
    nnz = int(indptr[-1])
    a = to_tensor(random_values(np.random.default_rng(8), nnz), dtype)
    y = nan_tensor((m,), dtype)
    sizes = dict(m=m, n=n, nnz=nnz) if script == "ragged_rowsum" else dict(m=m, n=n)
    fkernel(script, dtype)(a=a, y=y, indptr=idx(indptr), **sizes)
    a64 = f64(a)
    ref = np.array([a64[indptr[r]:indptr[r + 1]].sum() for r in range(m)])
    mag = np.array([np.abs(a64[indptr[r]:indptr[r + 1]]).sum() for r in range(m)])
    assert_within_bound(y, ref, mag, lengths, dtype, f"ragged rowsum {case}")
    assert torch.all(y[torch.from_numpy(lengths == 0)] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(RAGGED_LENGTHS))
def test_ragged_elementwise(case, dtype):
    lengths = np.asarray(RAGGED_LENGTHS[case], dtype=np.int64)
    m, n = lengths.size, int(lengths.max(initial=0))
    indptr = ragged_indptr(lengths)
    nnz = int(indptr[-1])
    rng = np.random.default_rng(9)
    a = to_tensor(random_values(rng, nnz), dtype)
    b = to_tensor(random_values(rng, nnz), dtype)
    s = to_tensor(random_values(rng, m), dtype)
    c = nan_tensor((nnz,), dtype)
    fkernel("ragged_elementwise", dtype)(a=a, b=b, s=s, c=c, indptr=idx(indptr), m=m, n=n, nnz=nnz)
    a64, b64, s64 = f64(a), f64(b), f64(s)
    rows = np.repeat(np.arange(m), lengths)
    ref = a64 * b64 + s64[rows] - np.exp(a64)
    # a few roundings of terms of magnitude <= e: a loose, still tight-ish bound
    u = UNIT_ROUNDOFF[dtype]
    got = f64(c)
    assert np.all(np.isfinite(got))
    tol = 16 * u * (np.abs(a64 * b64) + np.abs(s64[rows]) + np.exp(a64))
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"ragged elementwise {case}: max error {err.max():.3g}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(RAGGED_LENGTHS))
def test_ragged_select(case, dtype):
    """T.Select with a comparison, T.log, T.sqrt, T.min on a ragged tensor."""
    lengths = np.asarray(RAGGED_LENGTHS[case], dtype=np.int64)
    m, n = lengths.size, int(lengths.max(initial=0))
    indptr = ragged_indptr(lengths)
    nnz = int(indptr[-1])
    rng = np.random.default_rng(19)
    a = to_tensor(random_values(rng, nnz), dtype)
    b = to_tensor(random_values(rng, nnz) * 3.0, dtype)
    s = to_tensor(random_values(rng, m), dtype)
    c = nan_tensor((nnz,), dtype)
    fkernel("ragged_select", dtype)(a=a, b=b, s=s, c=c, indptr=idx(indptr), m=m, n=n, nnz=nnz)
    a64, b64, s64 = f64(a), f64(b), f64(s)
    rows = np.repeat(np.arange(m), lengths)
    picked = np.where(a64 > 0, a64 * b64, s64[rows])
    ref = picked + np.log(np.sqrt(b64 * b64 + 1.0)) + np.minimum(a64, b64)
    if nnz:
        assert (a64 > 0).any() and (a64 <= 0).any() or nnz < 4, "both branches of the select are exercised"
    u = UNIT_ROUNDOFF[dtype]
    got = f64(c)
    assert np.all(np.isfinite(got))
    tol = 16 * u * (np.abs(picked) + np.abs(np.log(np.sqrt(b64 * b64 + 1.0))) + 1.0 + np.abs(np.minimum(a64, b64)))
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"ragged select {case}: max error {err.max():.3g}"


# --------------------------------------------------------------------------- 4. DCSR


def dcsr_from_csr(csr: Csr, keep_empty=()):
    """DCSR arrays: the non-empty rows (plus the rows in keep_empty, stored with no entries)."""
    lens = csr.row_lengths()
    rows = np.array([r for r in range(csr.m) if lens[r] > 0 or r in keep_empty], dtype=np.int64)
    indptr_i = np.array([0, rows.size], dtype=np.int64)
    indptr_j = np.concatenate([[0], np.cumsum(lens[rows])]).astype(np.int64)
    return indptr_i, rows, indptr_j, csr.indices


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("keep_empty", (False, True), ids=("nonempty_rows", "stored_empty_rows"))
@pytest.mark.parametrize("case", CASES)
def test_dcsr_spmm(case, keep_empty, dtype):
    csr = case_csr(case)
    feat = 3
    empty_rows = tuple(np.nonzero(csr.row_lengths() == 0)[0][::2]) if keep_empty else ()
    indptr_i, indices_i, indptr_j, indices_j = dcsr_from_csr(csr, empty_rows)
    rng = np.random.default_rng(10)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = nan_tensor((csr.m, feat), dtype)
    fkernel("dcsr_spmm", dtype)(
        a=a, b=b, c=c, indptr_i=idx(indptr_i), indices_i=idx(indices_i), indptr_j=idx(indptr_j),
        indices_j=idx(indices_j), m=csr.m, n=csr.n, feat_size=feat, nnz_i=int(indices_i.size), nnz_j=csr.nnz,
    )
    a64, b64 = f64(a), f64(b)
    ref = csr.scipy(a64) @ b64
    mag = csr.scipy(np.abs(a64)) @ np.abs(b64)
    assert_within_bound(c, np.asarray(ref), np.asarray(mag), csr.row_lengths()[:, None], dtype, f"dcsr {case}")
    assert torch.all(c[torch.from_numpy(csr.row_lengths() == 0)] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_dcsr_spmm_compact_output(case, dtype):
    """The output shares A's (O, I) levels: one row per stored row of A."""
    csr = case_csr(case)
    feat = 3
    empty_rows = tuple(np.nonzero(csr.row_lengths() == 0)[0][::2])  # some stored rows without entries
    indptr_i, indices_i, indptr_j, indices_j = dcsr_from_csr(csr, empty_rows)
    rng = np.random.default_rng(17)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = nan_tensor((indices_i.size, feat), dtype)
    fkernel("dcsr_spmm_compact", dtype)(
        a=a, b=b, c=c, indptr_i=idx(indptr_i), indices_i=idx(indices_i), indptr_j=idx(indptr_j),
        indices_j=idx(indices_j), m=csr.m, n=csr.n, feat_size=feat, nnz_i=int(indices_i.size), nnz_j=csr.nnz,
    )
    a64, b64 = f64(a), f64(b)
    ref = np.asarray(csr.scipy(a64) @ b64)[indices_i]
    mag = np.asarray(csr.scipy(np.abs(a64)) @ np.abs(b64))[indices_i]
    assert_within_bound(c, ref, mag, csr.row_lengths()[indices_i][:, None], dtype, f"dcsr compact {case}")


# --------------------------------------------------------------------------- 5. BSR


def make_bsr(nb, mb, blk, density, seed, empty_block_rows=(), dense_block_rows=()):
    rng = np.random.default_rng(seed)
    mask = rng.random((nb, mb)) < density
    for r in dense_block_rows:
        mask[r, :] = True
    for r in empty_block_rows:
        mask[r, :] = False
    rows, cols = np.nonzero(mask)
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int64)
    data = random_values(rng, (rows.size, blk, blk))
    return indptr, cols.astype(np.int64), data


BSR_CASES = {
    "1x1_blocks": dict(nb=1, mb=1, density=1.0),
    "empty_and_dense_block_rows": dict(nb=9, mb=7, density=0.3, empty_block_rows=(0, 4), dense_block_rows=(2,)),
    "no_blocks": dict(nb=3, mb=4, density=0.0),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("blk", (2, 4, 16))
@pytest.mark.parametrize("case", sorted(BSR_CASES))
def test_bsr_spmm(case, blk, dtype):
    from conftest import read_script

    key = ("bsrmm_stage_i", dtype)
    if key not in _KERNELS:
        _KERNELS[key] = st.compile(read_script("bsrmm_stage_i", dtype))
    kern = _KERNELS[key]
    spec = dict(BSR_CASES[case])
    nb, mb = spec.pop("nb"), spec.pop("mb")
    indptr, indices, data = make_bsr(nb, mb, blk, seed=blk, **spec)
    feat = 5
    rng = np.random.default_rng(12)
    a = to_tensor(data, dtype)  # (nnzb, blk, blk), the layout of scipy's bsr data
    b = to_tensor(random_values(rng, (mb, blk, feat)), dtype)
    c = nan_tensor((nb, blk, feat), dtype)
    kern(a=a, b=b, c=c, indptr=idx(indptr), indices=idx(indices), nb=nb, mb=mb, nnzb=int(indices.size), blk=blk, feat_size=feat)
    a64 = f64(a)
    shape = (nb * blk, mb * blk)
    A = scipy.sparse.bsr_matrix((a64, indices, indptr), shape=shape)
    Aabs = scipy.sparse.bsr_matrix((np.abs(a64), indices, indptr), shape=shape)
    b64 = f64(b).reshape(mb * blk, feat)
    terms = np.repeat(np.diff(indptr) * blk, blk)[:, None]
    assert_within_bound(c.reshape(nb * blk, feat), np.asarray(A @ b64), np.asarray(Aabs @ np.abs(b64)), terms, dtype, f"bsr {case} blk={blk}")


# --------------------------------------------------------------------------- 6. CSF (3-D)


def make_csf(d0, d1, d2, density, seed, empty_slices=(), dense_fibers=(), dense_slices=(), stored_empty_fibers=()):
    """A random 3-D sparse tensor as (dense float64 array, CSF arrays). Fibers in
    stored_empty_fibers are stored in the J level with no K entries."""
    rng = np.random.default_rng(seed)
    mask = rng.random((d0, d1, d2)) < density
    for i, j in dense_fibers:
        mask[i, j, :] = True
    for i in dense_slices:
        mask[i] = True
    for i in empty_slices:
        mask[i] = False
    for i, j in stored_empty_fibers:
        mask[i, j, :] = False
    dense = np.where(mask, random_values(rng, mask.shape), 0.0)
    indptr_j, indices_j, indptr_k, indices_k, vals = [0], [], [0], [], []
    for i in range(d0):
        for j in range(d1):
            ks = np.nonzero(mask[i, j])[0]
            if ks.size or (i, j) in stored_empty_fibers:
                indices_j.append(j)
                indices_k.extend(ks.tolist())
                vals.extend(dense[i, j, ks].tolist())
                indptr_k.append(len(indices_k))
        indptr_j.append(len(indices_j))
    arrs = [np.asarray(x, dtype=np.int64) for x in (indptr_j, indices_j, indptr_k, indices_k)]
    return dense, arrs, np.asarray(vals, dtype=np.float64)


CSF_CASES = {
    "1x1x1": dict(d0=1, d1=1, d2=1, density=1.0),
    "mixed": dict(d0=7, d1=6, d2=9, density=0.2, empty_slices=(0, 5), dense_fibers=((2, 3),), dense_slices=(4,),
                  stored_empty_fibers=((1, 1),)),
    "empty": dict(d0=4, d1=3, d2=5, density=0.0),
}


def csf_args(case, dtype):
    dense, (indptr_j, indices_j, indptr_k, indices_k), vals = make_csf(seed=len(case), **CSF_CASES[case])
    t = to_tensor(vals, dtype)
    d0, d1, d2 = dense.shape
    # the values after rounding, back in a dense float64 tensor
    rounded = np.zeros_like(dense)
    rows_i = np.repeat(np.arange(d0), np.diff(indptr_j))
    rows_ij = np.repeat(np.arange(indices_j.size), np.diff(indptr_k))
    rounded[rows_i[rows_ij], indices_j[rows_ij], indices_k] = f64(t)
    args = dict(t=t, indptr_j=idx(indptr_j), indices_j=idx(indices_j), indptr_k=idx(indptr_k), indices_k=idx(indices_k),
                d0=d0, d1=d1, d2=d2, nnz_j=int(indices_j.size), nnz_k=int(indices_k.size))
    return rounded, args, (rows_i, indices_j, indptr_k)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSF_CASES))
def test_csf_ttv(case, dtype):
    D, args, (rows_i, indices_j, indptr_k) = csf_args(case, dtype)
    d0, d1, d2 = D.shape
    v = to_tensor(random_values(np.random.default_rng(13), d2), dtype)
    out = nan_tensor((args["nnz_j"],), dtype)
    fkernel("csf_ttv", dtype)(v=v, out=out, **args)
    v64 = f64(v)
    ref = (D @ v64)[rows_i, indices_j]
    mag = (np.abs(D) @ np.abs(v64))[rows_i, indices_j]
    assert_within_bound(out, ref, mag, np.diff(indptr_k), dtype, f"csf ttv {case}")
    assert torch.all(out[torch.from_numpy(np.diff(indptr_k) == 0)] == 0), "stored empty fibers must be zero"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSF_CASES))
def test_csf_mttkrp(case, dtype):
    D, args, _ = csf_args(case, dtype)
    d0, d1, d2 = D.shape
    rank = 6
    rng = np.random.default_rng(14)
    b = to_tensor(random_values(rng, (d1, rank)), dtype)
    c = to_tensor(random_values(rng, (d2, rank)), dtype)
    out = nan_tensor((d0, rank), dtype)
    fkernel("csf_mttkrp", dtype)(b=b, c=c, out=out, rank=rank, **args)
    b64, c64 = f64(b), f64(c)
    ref = np.einsum("ijk,jr,kr->ir", D, b64, c64)
    mag = np.einsum("ijk,jr,kr->ir", np.abs(D), np.abs(b64), np.abs(c64))
    terms = (D != 0).reshape(d0, -1).sum(axis=1)[:, None]
    assert_within_bound(out, ref, mag, terms, dtype, f"csf mttkrp {case}")
    assert torch.all(out[torch.from_numpy(terms[:, 0] == 0)] == 0)


# --------------------------------------------------------------------------- 7. SDDMM with a row scale


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES)
def test_sddmm_row_scale(case, dtype):
    csr = case_csr(case)
    feat = 6
    rng = np.random.default_rng(15)
    a = to_tensor(random_values(rng, (csr.m, feat)), dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    x = to_tensor(csr.values, dtype)
    s = to_tensor(random_values(rng, csr.m), dtype)
    y = nan_tensor((csr.nnz,), dtype)
    indptr, indices = csr.torch_structure("int32")
    before = [t.clone() for t in (a, b, x, s)]
    fkernel("sddmm_row_scale", dtype)(
        a=a, b=b, x=x, s=s, y=y, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz
    )
    unchanged(before, (a, b, x, s))
    a64, b64, x64, s64 = f64(a), f64(b), f64(x), f64(s)
    rows, cols = csr.rows(), csr.indices
    dots = np.einsum("ef,ef->e", a64[rows], b64[cols]) if csr.nnz else np.zeros(0)
    adots = np.einsum("ef,ef->e", np.abs(a64[rows]), np.abs(b64[cols])) if csr.nnz else np.zeros(0)
    ref = s64[rows] * x64 * dots
    mag = np.abs(s64[rows] * x64) * adots
    assert_within_bound(y, ref, mag, feat + 2, dtype, f"sddmm row scale {case}")


# --------------------------------------------------------------------------- 8. CSR row softmax


def dense_masked_softmax(csr: Csr, vals64: np.ndarray) -> np.ndarray:
    """Softmax of every row over its stored entries via a dense -inf-masked
    tensor in float64; returns one value per stored entry."""
    rows = csr.rows()
    dense = torch.full(csr.shape, float("-inf"), dtype=torch.float64)
    dense[torch.from_numpy(rows), torch.from_numpy(csr.indices)] = torch.from_numpy(vals64)
    sm = torch.softmax(dense, dim=1)  # empty rows give NaN here; they have no stored entries
    return sm[torch.from_numpy(rows), torch.from_numpy(csr.indices)].numpy()


def run_softmax(csr: Csr, vals: np.ndarray, dtype: str, what: str):
    a = to_tensor(vals, dtype)
    out = nan_tensor((csr.nnz,), dtype)
    indptr, indices = csr.torch_structure("int32")
    fkernel("csr_softmax", dtype)(a=a, out=out, indptr=indptr, indices=indices, m=csr.m, n=csr.n, nnz=csr.nnz)
    a64 = f64(a)
    got = f64(out)
    assert np.all(np.isfinite(got)), f"{what}: non-finite softmax values {got[~np.isfinite(got)][:5]}"
    ref = dense_masked_softmax(csr, a64)
    rows = csr.rows()
    row_max = np.full(csr.m, -np.inf)
    np.maximum.at(row_max, rows, a64)
    spread = np.abs(a64 - row_max[rows]) if csr.nnz else np.zeros(0)
    u = UNIT_ROUNDOFF[dtype]
    # exp(x - max) is off by ~u |x - max| (rounded subtraction) + a few ulps, the row
    # sum by len u, the division by u: relative, doubled as a margin; plus an absolute
    # allowance for the values that underflow the dtype.
    tol = 2.0 * u * (spread + csr.row_lengths()[rows] + 8.0) * np.abs(ref)
    tol = tol + 2.0 * torch.finfo(TORCH_DTYPES[dtype]).tiny  # results below the normal range (underflow)
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"{what}: max error {err.max():.3g}, first bad at {np.argmax(err > tol)}"
    if csr.nnz:
        sums = np.bincount(rows, weights=got, minlength=csr.m)
        nonempty = csr.row_lengths() > 0
        sum_err = np.abs(sums[nonempty] - 1.0)
        assert np.all(sum_err <= 4 * u * (csr.row_lengths()[nonempty] + 8)), f"{what}: row sums off by {sum_err.max():.3g}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", UNIQUE_CASES)
def test_csr_softmax(case, dtype):
    csr = case_csr(case)
    vals = csr.values * 4.0
    run_softmax(csr, vals, dtype, f"softmax {case}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_csr_softmax_large_logits(dtype):
    """Logits whose exp overflows without the max subtraction (e^100 > float32 max,
    e^1000 > float64 max), including a row whose every logit is hugely negative."""
    big = 100.0 if dtype == "float32" else 1000.0
    csr = make_csr(20, 16, density=0.4, seed=21, empty_rows=(0, 7), dense_rows=(3,))
    rng = np.random.default_rng(22)
    vals = rng.uniform(-1.0, 1.0, csr.nnz) * big
    lo, hi = csr.indptr[3], csr.indptr[4]
    vals[lo:hi] = -big * 3 + rng.uniform(-1.0, 1.0, hi - lo)  # all very negative
    run_softmax(csr, vals, dtype, "softmax large logits")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["empty_rows", "dense_row", "1x1", "zero_nnz", "unsorted_with_duplicates"])
def test_csr_softmax_stats(case, dtype):
    """Row max and row sum as match_buffer outputs; empty rows keep the T.init values."""
    csr = case_csr(case)
    vals = csr.values * 6.0
    a = to_tensor(vals, dtype)
    out = nan_tensor((csr.nnz,), dtype)
    mx = nan_tensor((csr.m,), dtype)
    sm = nan_tensor((csr.m,), dtype)
    indptr, indices = csr.torch_structure("int32")
    fkernel("csr_softmax_stats", dtype)(a=a, out=out, mx=mx, sm=sm, indptr=indptr, indices=indices, m=csr.m, n=csr.n, nnz=csr.nnz)
    a64 = f64(a)
    rows, lens = csr.rows(), csr.row_lengths()
    empty = lens == 0
    ref_mx = np.full(csr.m, np.nan)
    for r in np.nonzero(~empty)[0]:
        ref_mx[r] = a64[csr.indptr[r]:csr.indptr[r + 1]].max()
    got_mx, got_sm, got = f64(mx), f64(sm), f64(out)
    assert np.array_equal(got_mx[~empty], ref_mx[~empty]), "the row max is exact"
    init = torch.tensor(-3.0e38, dtype=TORCH_DTYPES[dtype]).double().item()
    assert np.all(got_mx[empty] == init) and np.all(got_sm[empty] == 0), "empty rows keep the T.init values"
    u = UNIT_ROUNDOFF[dtype]
    e = np.exp(a64 - ref_mx[rows]) if csr.nnz else np.zeros(0)
    ref_sm = np.bincount(rows, weights=e, minlength=csr.m)
    spread = np.zeros(csr.m)
    np.maximum.at(spread, rows, np.abs(a64 - ref_mx[rows]))
    sm_tol = 2.0 * u * (lens + 8.0 + spread) * ref_sm
    sm_err = np.abs(got_sm - ref_sm)
    assert np.all(sm_err[~empty] <= sm_tol[~empty]), f"row sums off by {sm_err[~empty].max():.3g}"
    ref = e / ref_sm[rows] if csr.nnz else np.zeros(0)  # duplicates count as separate entries
    tol = 2.0 * u * (np.abs(a64 - ref_mx[rows]) + lens[rows] + 8.0) * ref if csr.nnz else np.zeros(0)
    err = np.abs(got - ref)
    assert np.all(np.isfinite(got)) and np.all(err <= tol), f"softmax stats {case}: max error {err.max(initial=0):.3g}"


# --------------------------------------------------------------------------- search in a compressed level


SEARCH_SCRIPTS = {
    # A (I, J) is read at the coordinate j of a different compressed iterator JB.
    "coiteration": """
@T.prim_func
def ewise_mul(a: T.handle, b: T.handle, c: T.handle, indptr: T.handle, indices: T.handle,
              indptr_b: T.handle, indices_b: T.handle, m: T.int32, n: T.int32, nnz: T.int32, nnz_b: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    JB = T.sp.compressed_varied(I, (n, nnz_b), (indptr_b, indices_b), "int32")
    A = T.sp.match_buffer(a, (I, J), "float32")
    B = T.sp.match_buffer(b, (I, JB), "float32")
    C = T.sp.match_buffer(c, (I, J), "float32")
    with T.sp.iteration([I, J], "SS", "mul") as [i, j]:
        C[i, j] = A[i, j] * B[i, j]
""",
    # sparse-to-dense by iterating the dense columns: A[i, jd] needs a search of jd in J.
    "dense_iterator": """
@T.prim_func
def to_dense(a: T.handle, d: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32, nnz: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    J_detach = T.sp.dense_fixed(n)
    A = T.sp.match_buffer(a, (I, J), "float32")
    D = T.sp.match_buffer(d, (I, J_detach), "float32")
    with T.sp.iteration([I, J_detach], "SS", "densify") as [i, jd]:
        D[i, jd] = A[i, jd]
""",
}


# These were refused while lowering could not search a compressed level; now
# the coordinate is located by binary search (0 where absent), so both run.
def test_search_coiteration_runs():
    a_csr = make_csr(30, 25, density=0.3, seed=5, empty_rows=(2,))
    b_csr = make_csr(30, 25, density=0.4, seed=6, empty_rows=(4,))
    a, b = to_tensor(a_csr.values, "float32"), to_tensor(b_csr.values, "float32")
    c = nan_tensor((a_csr.nnz,), "float32")
    ip, ix = a_csr.torch_structure("int32")
    ipb, ixb = b_csr.torch_structure("int32")
    st.compile(SEARCH_SCRIPTS["coiteration"])(a=a, b=b, c=c, indptr=ip, indices=ix, indptr_b=ipb, indices_b=ixb,
                                              m=30, n=25, nnz=a_csr.nnz, nnz_b=b_csr.nnz)
    ref = f64(a) * b_csr.scipy(f64(b)).toarray()[a_csr.rows(), a_csr.indices]
    assert np.array_equal(f64(c), f64(torch.from_numpy(ref).float()))  # one rounded product each


def test_search_dense_iterator_runs():
    csr = make_csr(30, 25, density=0.3, seed=7, empty_rows=(0, 29), dense_rows=(3,))
    a = to_tensor(csr.values, "float32")
    d = nan_tensor((30, 25), "float32")
    ip, ix = csr.torch_structure("int32")
    st.compile(SEARCH_SCRIPTS["dense_iterator"])(a=a, d=d, indptr=ip, indices=ix, m=30, n=25, nnz=csr.nnz)
    assert np.array_equal(f64(d), csr.scipy(f64(a)).toarray())


# --------------------------------------------------------------------------- 9. coordinates located by search


LOOKUP_CASES = [c for c in UNIQUE_CASES if c != "no_columns"]  # rows sorted, columns to look up


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", LOOKUP_CASES)
def test_csr_lookup_dense(case, dtype):
    """A dense walk over all columns reads the CSR buffer by binary search:
    absent columns read 0, so the result is A @ B with A as a dense matrix."""
    csr = case_csr(case)
    feat = 5
    rng = np.random.default_rng(31)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = nan_tensor((csr.m, feat), dtype)
    indptr, indices = csr.torch_structure("int32")
    fkernel("csr_lookup_dense", dtype)(a=a, b=b, c=c, indptr=indptr, indices=indices, m=csr.m, n=csr.n,
                                       feat_size=feat, nnz=csr.nnz)
    a64, b64 = f64(a), f64(b)
    ref = np.asarray(csr.scipy(a64) @ b64).reshape(csr.m, feat)
    mag = np.asarray(csr.scipy(np.abs(a64)) @ np.abs(b64)).reshape(csr.m, feat)
    assert_within_bound(c, ref, mag, np.full((csr.m, 1), csr.n), dtype, f"lookup dense {case}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", LOOKUP_CASES)
def test_csr_intersect_other_structure(case, dtype):
    """A * B on A's pattern with B on its own CSR structure (a different tree):
    each B[i, j] is found by binary search in B's row i, 0 where absent."""
    a_csr = case_csr(case)
    b_csr = make_csr(a_csr.m, a_csr.n, density=0.5, seed=77, empty_rows=(0,) if a_csr.m > 1 else ())
    a = to_tensor(a_csr.values, dtype)
    b = to_tensor(b_csr.values, dtype)
    c = nan_tensor((a_csr.nnz,), dtype)
    a_indptr, a_indices = a_csr.torch_structure("int32")
    b_indptr, b_indices = b_csr.torch_structure("int32")
    fkernel("csr_intersect", dtype)(a=a, b=b, c=c, a_indptr=a_indptr, a_indices=a_indices, b_indptr=b_indptr,
                                    b_indices=b_indices, m=a_csr.m, n=a_csr.n, a_nnz=a_csr.nnz, b_nnz=b_csr.nnz)
    dense_b = b_csr.scipy(f64(b)).toarray() if b_csr.nnz else np.zeros(b_csr.shape)
    # One product per element: the exact product rounded once to the dtype.
    ref = f64(torch.from_numpy(f64(a) * dense_b[a_csr.rows(), a_csr.indices]).to(TORCH_DTYPES[dtype]))
    assert np.array_equal(f64(c), ref), f"intersect {case}: {f64(c)[:8]} vs {ref[:8]}"


def test_store_at_a_searched_coordinate_is_an_error():
    text = read_format_script("csr_intersect", "float32").replace("C[i, j] = A[i, j] * B[i, j]", "B[i, j] = A[i, j]")
    with pytest.raises(st.ScriptError, match=r"buffer 'B': a store must walk the buffer's own compressed iterators"):
        st.lower_sparse_iter(st.parse(text))


# --------------------------------------------------------------------------- 10. fusing a CSF chain


@pytest.mark.parametrize("fused", [None, ["I", "J"], ["I", "J", "K"]], ids=["unfused", "IJ", "IJK"])
@pytest.mark.parametrize("case", sorted(CSF_CASES))
def test_csf_scale_fused_chain(case, fused):
    """One loop over a CSF's leaf non-zeros (sparse_fuse of I, J, K): each
    ancestor's position comes from a binary search in the indptr below it."""
    D, args, _ = csf_args(case, "float64")
    sch = st.Schedule(read_format_script("csf_scale", "float64"))
    if fused:
        sch.sparse_fuse("scale", fused)
        sch.parallel(sch.get_loops("scale")[0])
    nnz_k = args["nnz_k"]
    v = to_tensor(random_values(np.random.default_rng(15), D.shape[2]), "float64")
    out = nan_tensor((nnz_k,), "float64")
    st.compile(sch)(v=v, out=out, **args)
    ref = f64(args["t"]) * f64(v)[args["indices_k"].numpy()]
    assert np.array_equal(f64(out), ref), f"csf scale {case} fused={fused}"
    if fused == ["I", "J", "K"]:
        assert len(sch.get_loops("scale")) == 1


def test_sparse_fuse_chain_errors():
    sch = st.Schedule(read_format_script("csf_scale", "float32"))
    with pytest.raises(st.ScheduleError, match=r"'K' must come right after 'I'"):
        sch.sparse_fuse("scale", ["I", "K"])
    with pytest.raises(st.ScheduleError, match=r"the parent 'J' must be a dense_fixed root"):
        sch.sparse_fuse("scale", ["J", "K"])


def test_fused_iterator_spelling_matches_sparse_fuse():
    """F = T.sp.fuse(I, J, K) in the iteration list is sch.sparse_fuse(I, J, K)."""
    text = read_format_script("csf_scale", "float64")
    spelled = text.replace('    with T.sp.iteration([I, J, K], "SSS", "scale") as [i, j, k]:',
                           '    F = T.sp.fuse(I, J, K)\n    with T.sp.iteration([F], "S", "scale") as [i, j, k]:')
    assert spelled != text
    sch = st.Schedule(text)
    sch.sparse_fuse("scale", ["I", "J", "K"])
    lowered = st.lower_sparse_iter(st.parse(spelled)).script()
    assert "for ijk in T.serial(nnz_k):" in lowered
    D, args, _ = csf_args("mixed" if "mixed" in CSF_CASES else sorted(CSF_CASES)[0], "float64")
    v = to_tensor(random_values(np.random.default_rng(16), D.shape[2]), "float64")
    outs = []
    for f in (st.parse(spelled), sch):
        out = nan_tensor((args["nnz_k"],), "float64")
        st.compile(f)(v=v, out=out, **args)
        outs.append(out)
    assert torch.equal(outs[0], outs[1])
    assert np.array_equal(f64(outs[0]), f64(args["t"]) * f64(v)[args["indices_k"].numpy()])
