"""Format conversions of the C++ runtime as operators and SparseMatrix methods:
torch.ops.sparsetir._coo_to_csr, _csr_to_ell, _csr_to_hyb, SparseMatrix.from_coo,
.ell(width) and .hyb(parts, max_width).

- Every conversion is rebuilt into a matrix with numpy (values scattered at
  `slot`, padding included) and compared with scipy / the CSR itself, on the
  shared random cases (empty rows, zero nnz, 1x1, a dense row, tall and wide,
  unsorted columns with duplicates), on more random shapes and on the dataset
  matrices (arrow's dense row, power-law graphs, row slices for rectangular
  shapes), int32 and int64. Values 1..nnz keep every sum exact.
- The hyb layout is also compared with one built from its definition
  (buckets, their order, the CSR row of every ELL row), and the padding rule
  (repeat the last real column of the ELL row) is checked slot by slot.
- COO -> CSR matches scipy's coo_matrix(...).tocsr() with duplicates summed;
  without summing, duplicates stay in their COO order.
- Bad input raises a ValueError that names the op and the argument; the
  per-graph cache returns the same tensors for the same index tensors;
  torch.library.opcheck passes for each op.
"""
import numpy as np
import pytest
import scipy.sparse
import torch

import sparsetir_torch as st
from conftest import CSR_CASES, INDEX_DTYPES, Csr, make_csr

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

IDTYPES = ("int32", "int64")
HYB_PARAMS = ((1, 1), (1, 32), (2, 8), (4, 64), (7, 2))
# Datasets whose ELL form (rows x longest row) stays small; arrow's dense row
# (46,500 x 46,500 slots) and email-Enron's are what hyb is for.
ELL_DATASETS = ("jgl009.mtx.gz", "lund_a.mtx.gz", "bcsstk16.mtx.gz", "horse-laplacian.mtx.gz")
HYB_DATASETS = ELL_DATASETS + ("arrow.mtx.gz", "cond-mat-2005.mtx.gz", "email-Enron.mtx.gz")


# --------------------------------------------------------------------------- helpers


def exact_values(nnz):
    return np.arange(1, nnz + 1, dtype=np.float64)


def expected_matrix(csr: Csr, values) -> scipy.sparse.csr_matrix:
    """The CSR matrix with `values`, duplicates summed (on copies: scipy sorts in place)."""
    s = scipy.sparse.csr_matrix((values.copy(), csr.indices.copy(), csr.indptr.copy()), shape=csr.shape)
    s.sum_duplicates()
    return s


def assert_same_matrix(rows, cols, vals, csr: Csr, values, what):
    """The matrix summing vals at (rows, cols) equals the CSR matrix."""
    got = scipy.sparse.coo_matrix((vals, (rows, cols)), shape=csr.shape).tocsr()
    diff = abs(got - expected_matrix(csr, values))
    assert diff.nnz == 0 or diff.max() == 0, f"{what}: the rebuilt matrix differs"
    if csr.m * csr.n <= 100_000:
        dense = np.zeros(csr.shape)
        np.add.at(dense, (rows, cols), vals)
        assert np.array_equal(dense, expected_matrix(csr, values).toarray()), what


def check_padding(indices, real, row_starts, what):
    """Padding repeats the slot before it, and every ELL row starts with an
    entry (unless `row_starts` may be padding: the empty rows of ELL)."""
    pad = np.flatnonzero(~real)
    after_entry = pad[~np.isin(pad, row_starts)]
    assert np.array_equal(indices[after_entry], indices[after_entry - 1]), f"{what}: padding rule"
    return pad[np.isin(pad, row_starts)]


def check_ell(csr: Csr, idtype, width):
    what = f"ELL {csr.shape} nnz={csr.nnz} {idtype} width={width}"
    indptr, indices = csr.torch_structure(idtype)
    ell_indices, slot = ops._csr_to_ell(indptr, indices, width)
    assert ell_indices.dtype == INDEX_DTYPES[idtype] and slot.dtype == torch.int64, what
    assert ell_indices.shape == (csr.m, width) and slot.shape == (csr.nnz,), what
    ix, sl = ell_indices.numpy().astype(np.int64).ravel(), slot.numpy()
    rows = csr.rows()
    rank = np.arange(csr.nnz) - csr.indptr[rows]
    assert np.array_equal(sl, rows * width + rank), f"{what}: entries in CSR order from the row start"
    assert np.array_equal(ix[sl], csr.indices), what
    real = np.zeros(ix.size, dtype=bool)
    real[sl] = True
    empty_starts = check_padding(ix, real, np.arange(csr.m) * width, what)
    assert np.all(ix[empty_starts] == 0), f"{what}: an empty row pads with column 0"
    if csr.n == 0:
        return  # no column to rebuild into (the padding's column 0 does not exist either)
    padded = np.zeros(ix.size)
    padded[sl] = exact_values(csr.nnz)
    assert_same_matrix(np.repeat(np.arange(csr.m), width), ix, padded, csr, exact_values(csr.nnz), what)


def hyb_definition(csr: Csr, parts, max_width):
    """(bucket_info, row_map) built from the definition of hyb."""
    part_columns = max(1, -(-csr.n // parts))
    key = csr.rows() * parts + csr.indices // part_columns  # (row, part), row-major
    groups, lengths = np.unique(key, return_counts=True)
    row, part = groups // parts, groups % parts
    width = np.where(lengths <= max_width, 2 ** np.ceil(np.log2(lengths)).astype(np.int64), max_width)
    pieces = -(-lengths // width)
    order = np.lexsort((row, width, part))  # by part, then width, then row
    row, part, width, pieces = row[order], part[order], width[order], pieces[order]
    buckets = sorted(set(zip(part.tolist(), width.tolist())))
    info = [(p, w, int(pieces[(part == p) & (width == w)].sum())) for p, w in buckets]
    return np.array(info, dtype=np.int64).reshape(-1, 3), np.repeat(row, pieces)


def check_hyb(csr: Csr, idtype, parts, max_width):
    what = f"hyb {csr.shape} nnz={csr.nnz} {idtype} parts={parts} max_width={max_width}"
    indptr, indices = csr.torch_structure(idtype)
    bucket_info, row_map, hyb_indices, slot = ops._csr_to_hyb(indptr, indices, csr.n, parts, max_width)
    itype = INDEX_DTYPES[idtype]
    assert bucket_info.dtype == torch.int64 and slot.dtype == torch.int64, what
    assert row_map.dtype == itype and hyb_indices.dtype == itype, what
    info, rm, ix, sl = (t.numpy().astype(np.int64) for t in (bucket_info, row_map, hyb_indices, slot))
    expected_info, expected_rows = hyb_definition(csr, parts, max_width)
    assert np.array_equal(info, expected_info), f"{what}: buckets\n{info}\n{expected_info}"
    assert np.array_equal(rm, expected_rows), f"{what}: row_map"
    widths = np.repeat(info[:, 1], info[:, 2])  # per ELL row
    starts = np.concatenate([[0], np.cumsum(widths)])
    assert ix.size == starts[-1] and sl.shape == (csr.nnz,), what
    slot_row = np.repeat(np.arange(widths.size), widths)  # the ELL row of every slot
    assert np.unique(sl).size == csr.nnz, f"{what}: two entries share a slot"
    assert np.array_equal(ix[sl], csr.indices), what
    assert np.array_equal(rm[slot_row[sl]], csr.rows()), f"{what}: an entry in another row"
    part_columns = max(1, -(-csr.n // parts))
    assert np.array_equal(np.repeat(info[:, 0], info[:, 2])[slot_row[sl]], csr.indices // part_columns), what
    real = np.zeros(ix.size, dtype=bool)
    real[sl] = True
    assert check_padding(ix, real, starts[:-1], what).size == 0, f"{what}: an ELL row without entries"
    padded = np.zeros(ix.size)
    padded[sl] = exact_values(csr.nnz)
    assert_same_matrix(rm[slot_row], ix, padded, csr, exact_values(csr.nnz), what)


def longest_row(csr: Csr) -> int:
    return int(csr.row_lengths().max()) if csr.m else 0


def row_slice(csr: Csr, rows: int) -> Csr:
    """The first `rows` rows: a rectangular matrix."""
    end = int(csr.indptr[rows])
    return Csr(csr.indptr[:rows + 1].copy(), csr.indices[:end].copy(), csr.values[:end].copy(), (rows, csr.n))


MORE_RANDOM = [make_csr(48, 48, 0.1, seed=1), make_csr(37, 300, 0.2, seed=2, empty_rows=(0, 36), dense_rows=(5,)),
               make_csr(300, 9, 0.3, seed=3, shuffle=True, duplicates=20), make_csr(8, 8, 1.0, seed=4)]


# --------------------------------------------------------------------------- ELL and hyb


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_ell_and_hyb_rebuild_random_cases(case, idtype):
    csr = make_csr(**CSR_CASES[case], seed=len(case))
    for width in (longest_row(csr), longest_row(csr) + 3):
        check_ell(csr, idtype, width)
    for parts, max_width in HYB_PARAMS + ((csr.n + 5, 4),):  # the last: parts > columns
        check_hyb(csr, idtype, parts, max_width)


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("index", range(len(MORE_RANDOM)))
def test_ell_and_hyb_rebuild_more_random(index, idtype):
    csr = MORE_RANDOM[index]
    check_ell(csr, idtype, longest_row(csr) + 1)
    for parts, max_width in HYB_PARAMS + ((3, 16), (csr.n + 1, 1)):
        check_hyb(csr, idtype, parts, max_width)


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("name", HYB_DATASETS)
def test_ell_and_hyb_rebuild_datasets(dataset, name, idtype):
    csr = dataset(name)
    if name in ELL_DATASETS:
        check_ell(csr, idtype, longest_row(csr))
    for parts, max_width in ((1, 32), (4, 8)):
        check_hyb(csr, idtype, parts, max_width)
    wide = row_slice(csr, min(csr.m, 1000))  # arrow: the dense first row in a 1000 x 46,500 matrix
    check_hyb(wide, idtype, 3, 64)


def test_hyb_hand_computed():
    # 4 x 8, parts of 4 columns, max_width 2 (see tests/cpp/runtime/test_hyb_conversion.cc).
    indptr, indices = torch.tensor([0, 4, 4, 7, 9]), torch.tensor([0, 1, 2, 5, 3, 7, 6, 1, 3])
    info, row_map, ix, slot = ops._csr_to_hyb(indptr, indices, 8, 2, 2)
    assert info.tolist() == [[0, 1, 1], [0, 2, 3], [1, 1, 1], [1, 2, 1]]
    assert row_map.tolist() == [2, 0, 0, 3, 0, 2]
    assert ix.tolist() == [3, 0, 1, 2, 2, 1, 3, 5, 7, 6]
    assert slot.tolist() == [1, 2, 3, 7, 0, 8, 9, 5, 6]
    ell_ix, ell_slot = ops._csr_to_ell(indptr, indices, 4)
    assert ell_ix.tolist() == [[0, 1, 2, 5], [0, 0, 0, 0], [3, 7, 6, 6], [1, 3, 3, 3]]
    assert ell_slot.tolist() == [0, 1, 2, 3, 8, 9, 10, 12, 13]


def test_conversions_are_cached_per_graph():
    csr = make_csr(30, 20, density=0.2, seed=5)
    indptr, indices = csr.torch_structure("int64")
    for convert in (lambda ip, ix, k: ops._csr_to_ell(ip, ix, longest_row(csr) + k),
                    lambda ip, ix, k: ops._csr_to_hyb(ip, ix, 20, 2 + k, 4)):
        first, second = convert(indptr, indices, 0), convert(indptr, indices, 0)
        assert all(a is b for a, b in zip(first, second))
        assert not any(a is b for a, b in zip(first, convert(indptr, indices, 1)))
        copy = convert(indptr.clone(), indices.clone(), 0)
        assert all(torch.equal(a, b) and a is not b for a, b in zip(first, copy))
    first = ops._csr_to_hyb(indptr, indices, 20, 2, 4)
    indices[int(csr.indptr[1])] = 19  # an in-place change: a new, correct conversion
    changed = ops._csr_to_hyb(indptr, indices, 20, 2, 4)
    assert not any(a is b for a, b in zip(first, changed))
    csr.indices = indices.numpy().astype(np.int64).copy()
    check_hyb(csr, "int64", 2, 4)


# --------------------------------------------------------------------------- COO -> CSR


def random_coo(m, n, nnz, seed):
    rng = np.random.default_rng(seed)
    row, col = rng.integers(0, max(m, 1), nnz), rng.integers(0, max(n, 1), nnz)
    pick = rng.integers(0, max(nnz, 1), nnz // 3 if nnz else 0)  # repeated entries, anywhere
    return np.concatenate([row, row[pick]]), np.concatenate([col, col[pick]])


COO_SHAPES = [(1, 1, 1), (1, 1, 0), (12, 9, 0), (40, 30, 200), (200, 17, 900), (9, 150, 300), (0, 5, 0), (4, 0, 0)]


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("m,n,nnz", COO_SHAPES)
def test_coo_to_csr_matches_scipy(m, n, nnz, idtype):
    row, col = random_coo(m, n, nnz, seed=m + n + nnz)
    values = exact_values(row.size)
    itype = INDEX_DTYPES[idtype]
    r, c = torch.from_numpy(row).to(itype), torch.from_numpy(col).to(itype)
    indptr, indices, slot = ops._coo_to_csr(r, c, m, n)
    assert indptr.dtype == indices.dtype == itype and slot.dtype == torch.int64
    expected = scipy.sparse.coo_matrix((values, (row, col)), shape=(m, n)).tocsr()
    expected.sum_duplicates()  # canonical: sorted columns, duplicates summed
    assert np.array_equal(indptr.numpy(), expected.indptr) and np.array_equal(indices.numpy(), expected.indices)
    csr_values = torch.zeros(indices.shape[0], dtype=torch.float64).index_add_(0, slot, torch.from_numpy(values))
    assert np.array_equal(csr_values.numpy(), expected.data)
    # Kept duplicates: a stable sort by (row, col).
    indptr, indices, slot = ops._coo_to_csr(r, c, m, n, False)
    order = np.lexsort((col, row))
    assert np.array_equal(indices.numpy(), col[order]) and np.array_equal(np.diff(indptr.numpy()),
                                                                          np.bincount(row, minlength=m)[:m])
    assert np.array_equal(slot.numpy()[order], np.arange(row.size))


@pytest.mark.parametrize("idtype", IDTYPES)
def test_from_coo_and_formats_follow_values(idtype):
    row, col = random_coo(30, 25, 150, seed=7)
    itype = INDEX_DTYPES[idtype]
    values = torch.from_numpy(exact_values(row.size)).float()
    a = st.SparseMatrix.from_coo(torch.from_numpy(row).to(itype), torch.from_numpy(col).to(itype), values, (30, 25))
    expected = scipy.sparse.coo_matrix((values.double().numpy(), (row, col)), shape=(30, 25)).toarray()
    assert a.indptr.dtype == itype and a.dtype == torch.float32
    assert np.array_equal(a.to_dense().double().numpy(), expected)
    kept = st.SparseMatrix.from_coo(torch.from_numpy(row), torch.from_numpy(col), values, (30, 25), False)
    assert kept.nnz == row.size and np.array_equal(kept.to_dense().double().numpy(), expected)
    width = int((a.indptr[1:] - a.indptr[:-1]).max())
    for form in (a.ell(width), a.hyb(3, 4), a.hyb(1, 2)):
        assert form.values.dtype == torch.float32 and torch.equal(form.to_dense(), a.to_dense())
    # Other values, same structure: the cached structure tensors, the new values.
    b = a.with_values(a.values * 2)
    assert b.ell(width).indices is a.ell(width).indices
    assert torch.equal(b.hyb(3, 4).to_dense(), 2 * a.to_dense())
    for bucket in b.hyb(3, 4).buckets():
        assert bucket.indices.shape == bucket.values.shape == (bucket.row_map.shape[0], bucket.width)
    v = a.values.double().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: a.with_values(x).hyb(2, 4).values, (v,))
    assert torch.autograd.gradcheck(lambda x: st.SparseMatrix.from_coo(
        torch.from_numpy(row), torch.from_numpy(col), x, (30, 25)).values, (values.double().requires_grad_(),))


# --------------------------------------------------------------------------- errors and opcheck


def t(*values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


BAD_CALLS = [
    (lambda: ops._coo_to_csr(t(0, 1, 9), t(0, 0, 0), 5, 3),
     r"^sparsetir\._coo_to_csr: argument 'row' holds row\[2\] = 9, out of range for 5 rows"),
    (lambda: ops._coo_to_csr(t(0, 1), t(0, -2), 5, 3), r"^sparsetir\._coo_to_csr: argument 'col' holds col\[1\] = -2"),
    (lambda: ops._coo_to_csr(t(0, 1), t(0), 5, 3), r"^sparsetir\._coo_to_csr: .*'row' and 'col' must have the same "
                                                    r"length, got 2 and 1"),
    (lambda: ops._coo_to_csr(t(0), t(0, dtype=torch.int32), 5, 3), r"^sparsetir\._coo_to_csr: .*same dtype"),
    (lambda: ops._coo_to_csr(t(0).double(), t(0).double(), 5, 3), r"^sparsetir\._coo_to_csr: argument 'row' must "
                                                                  r"have dtype int32 or int64"),
    (lambda: ops._coo_to_csr(t(0), t(0), -1, 3), r"^sparsetir\._coo_to_csr: argument 'rows' must be non-negative"),
    (lambda: ops._csr_to_ell(t(0, 2, 1, 3), t(0, 1, 2), 3), r"^sparsetir\._csr_to_ell: indptr must be non-decreasing"),
    (lambda: ops._csr_to_ell(t(1, 2), t(0, 1), 3), r"^sparsetir\._csr_to_ell: indptr must start at 0"),
    (lambda: ops._csr_to_ell(t(0, 1, 4), t(0, 1, 2, 3), 2),
     r"^sparsetir\._csr_to_ell: row 1 has 3 non-zeros, more than the ELL width 2 \(argument 'width'\)"),
    (lambda: ops._csr_to_ell(t(0, 1), t(0), -1), r"^sparsetir\._csr_to_ell: argument 'width' must be non-negative"),
    (lambda: ops._csr_to_ell(t(0, 1), t(-3), 1), r"^sparsetir\._csr_to_ell: indices must be non-negative"),
    (lambda: ops._csr_to_hyb(t(0, 1, 2), t(0, 1), 4, 0, 4),
     r"^sparsetir\._csr_to_hyb: argument 'parts' must be positive, got 0"),
    (lambda: ops._csr_to_hyb(t(0, 1, 2), t(0, 1), 4, -1, 4), r"^sparsetir\._csr_to_hyb: argument 'parts' must be"),
    (lambda: ops._csr_to_hyb(t(0, 1, 2), t(0, 1), 4, 1, 6),
     r"^sparsetir\._csr_to_hyb: argument 'max_width' must be a positive power of two, got 6"),
    (lambda: ops._csr_to_hyb(t(0, 1, 2), t(0, 4), 4, 1, 4),
     r"^sparsetir\._csr_to_hyb: argument 'indices' holds column 4, out of range for 4 columns"),
    (lambda: ops._csr_to_hyb(t(0, 3, 2), t(0, 1, 2), 4, 1, 4), r"^sparsetir\._csr_to_hyb: indptr must be non-decr"),
    (lambda: st.SparseMatrix.from_coo(t(0, 1), t(0, 1), torch.ones(3), (2, 2)),
     r"^SparseMatrix\.from_coo: values must have one element per entry of row and col, got 3 values for 2"),
    (lambda: st.SparseMatrix(t(0, 1), t(0), torch.ones(1, 2, 2), (2, 2)).ell(1),
     r"^SparseMatrix\.ell: a block \(BSR\) matrix has no ell form"),
]


@pytest.mark.parametrize("call,pattern", BAD_CALLS, ids=[str(i) for i in range(len(BAD_CALLS))])
def test_bad_input_names_the_op_and_argument(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


@pytest.mark.parametrize("idtype", IDTYPES)
def test_opcheck(idtype):
    itype = INDEX_DTYPES[idtype]
    csr = make_csr(9, 7, density=0.4, seed=3, empty_rows=(2,), dense_rows=(5,))
    indptr, indices = csr.torch_structure(idtype)
    row, col = (torch.from_numpy(x).to(itype) for x in random_coo(6, 5, 12, seed=1))
    for op, args in [(ops._coo_to_csr.default, (row, col, 6, 5)),
                     (ops._coo_to_csr.default, (row, col, 6, 5, False)),
                     (ops._csr_to_ell.default, (indptr, indices, longest_row(csr) + 1)),
                     (ops._csr_to_hyb.default, (indptr, indices, 7, 2, 4))]:
        torch.library.opcheck(op, args)


def test_meta_inputs_run_the_fake_implementations():
    ip, ix = torch.tensor([0, 2, 3], device="meta"), torch.tensor([0, 1, 1], device="meta")
    ell_indices, slot = ops._csr_to_ell(ip, ix, 4)  # static output shapes
    assert ell_indices.device.type == "meta" and ell_indices.shape == (2, 4) and slot.dtype == torch.int64
    indptr, indices, slot = ops._coo_to_csr(ix, ix, 3, 3, False)  # no summing: as many entries as given
    assert indptr.shape == (4,) and indices.shape == (3,) and slot.shape == (3,)
    # Data-dependent sizes need a FakeTensorMode (torch.compile, opcheck), as for _csr_to_bsr.
    with pytest.raises(RuntimeError, match="data-dependent"):
        ops._csr_to_hyb(ip, ix, 3, 1, 4)
    with pytest.raises(ValueError, match=r"^sparsetir\._csr_to_ell: all tensor arguments must be on one device"):
        ops._csr_to_ell(ip, torch.tensor([0, 1, 1]), 4)
