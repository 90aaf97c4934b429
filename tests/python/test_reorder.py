"""st.reorder: reverse Cuthill-McKee relabelling (torch.ops.sparsetir._csr_rcm).

- The result is P A P^T for the returned order: equal to A[order][:, order]
  from scipy in float64 (duplicates summed; also densely for small matrices), `order` a permutation, columns sorted within
  rows, on the shared square cases (1x1, zero nnz, empty rows, a dense row,
  unsorted columns with duplicates) and unsymmetric, disconnected and
  dataset graphs, int32 and int64.
- It does what it is for: a banded mesh whose vertices were shuffled gets its
  bandwidth back (within 2x of the original band, like scipy's RCM), and
  spmm(R, X[order]) == spmm(A, X)[order].
- Gradients reach A's values; bad input raises a ValueError naming the op.
"""
import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.csgraph
import torch

import sparsetir_torch as st
from conftest import CSR_CASES, INDEX_DTYPES, make_csr

SQUARE_CASES = {name: kw for name, kw in CSR_CASES.items() if kw["m"] == kw["n"]}


def bandwidth(indptr, indices) -> int:
    rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    return int(np.abs(rows - indices).max(initial=0))


def matrix(csr, idtype):
    indptr, indices = csr.torch_structure(idtype)
    return st.SparseMatrix(indptr, indices, torch.from_numpy(csr.values), csr.shape)


def check_relabelled(csr, idtype, what):
    A = matrix(csr, idtype)
    R, order = st.reorder(A)
    n = csr.shape[0]
    assert order.dtype == INDEX_DTYPES[idtype] and R.indptr.dtype == R.indices.dtype == INDEX_DTYPES[idtype]
    assert sorted(order.tolist()) == list(range(n)), f"{what}: order is not a permutation"
    o = order.long().numpy()
    expected = csr.scipy()[o][:, o].tocsr()  # duplicates summed
    got = scipy.sparse.csr_matrix((R.values.numpy(), R.indices.numpy(), R.indptr.numpy()), shape=R.shape)
    diff = abs(got - expected)
    assert diff.nnz == 0 or diff.max() == 0, f"{what}: R is not A[order][:, order]"
    if n <= 300:
        assert np.array_equal(got.toarray(), csr.scipy().toarray()[o][:, o]), f"{what}: dense check"
    for i in range(n):
        row = R.indices[R.indptr[i]:R.indptr[i + 1]]
        assert bool((row[1:] >= row[:-1]).all()), f"{what}: row {i} is not sorted"
    return R, order


@pytest.mark.parametrize("idtype", INDEX_DTYPES)
@pytest.mark.parametrize("case", SQUARE_CASES)
def test_shared_cases(case, idtype):
    check_relabelled(make_csr(**SQUARE_CASES[case], seed=5), idtype, case)


@pytest.mark.parametrize("idtype", INDEX_DTYPES)
def test_unsymmetric_and_disconnected(idtype):
    # Upper triangular (A + A^T gives the neighbours), plus isolated vertices.
    csr = make_csr(60, 60, density=0.05, seed=3, empty_rows=(0, 17, 59))
    upper = scipy.sparse.triu(csr.scipy(), format="csr")
    from conftest import Csr
    check_relabelled(Csr(upper.indptr.astype(np.int64), upper.indices.astype(np.int64), upper.data,
                         upper.shape), idtype, "upper triangular")
    blocks = scipy.sparse.block_diag([scipy.sparse.random(20, 20, 0.2, random_state=s) for s in range(3)],
                                     format="csr")
    check_relabelled(Csr(blocks.indptr.astype(np.int64), blocks.indices.astype(np.int64), blocks.data,
                         blocks.shape), idtype, "three components")


def shuffled_mesh(n=900, seed=0):
    """A 30 x 30 grid graph (bandwidth 30) with its vertices shuffled."""
    side = int(np.sqrt(n))
    grid = scipy.sparse.kronsum(scipy.sparse.diags([1.0, 1.0], [-1, 1], (side, side)),
                                scipy.sparse.diags([1.0, 1.0], [-1, 1], (side, side))).tocsr()
    p = np.random.default_rng(seed).permutation(n)
    return grid, grid[p][:, p].tocsr()


@pytest.mark.parametrize("idtype", INDEX_DTYPES)
def test_a_shuffled_mesh_gets_its_band_back(idtype):
    grid, shuffled = shuffled_mesh()
    shuffled.sort_indices()
    from conftest import Csr
    csr = Csr(shuffled.indptr.astype(np.int64), shuffled.indices.astype(np.int64),
              np.random.default_rng(1).uniform(0.25, 1, shuffled.nnz), shuffled.shape)
    R, order = check_relabelled(csr, idtype, "shuffled mesh")
    ours = bandwidth(R.indptr.numpy(), R.indices.numpy())
    perm = scipy.sparse.csgraph.reverse_cuthill_mckee(shuffled, symmetric_mode=True)
    reference = shuffled[perm][:, perm].tocsr()
    assert bandwidth(shuffled.indptr, shuffled.indices) > 500
    assert ours <= 2 * bandwidth(grid.indptr, grid.indices), ours
    assert ours <= 1.5 * bandwidth(reference.indptr, reference.indices), ours
    # The product in the new order is the old product in the new order.
    A = matrix(csr, idtype)
    X = torch.randn(csr.shape[0], 16, dtype=torch.float64)
    torch.testing.assert_close(st.spmm(R, X[order.long()]), st.spmm(A, X)[order.long()])


def test_dataset_graph(dataset):
    csr = dataset("horse-laplacian.mtx.gz")
    R, _ = check_relabelled(csr, "int32", "horse-laplacian")
    assert bandwidth(R.indptr.numpy(), R.indices.numpy()) < bandwidth(csr.indptr, csr.indices)


def test_gradient_reaches_the_values():
    csr = make_csr(12, 12, density=0.3, seed=4, shuffle=True, duplicates=5)
    indptr, indices = csr.torch_structure("int64")
    values = torch.from_numpy(csr.values).requires_grad_()
    X = torch.randn(12, 3, dtype=torch.float64)

    def f(v):
        R, order = st.reorder(st.SparseMatrix(indptr, indices, v, csr.shape))
        return st.spmm(R, X[order])

    assert torch.autograd.gradcheck(f, (values,))


def test_opcheck():
    csr = make_csr(15, 15, density=0.2, seed=6, empty_rows=(3,), duplicates=4)
    for idtype in INDEX_DTYPES:
        torch.library.opcheck(torch.ops.sparsetir._csr_rcm.default, csr.torch_structure(idtype))


@pytest.mark.parametrize("call,pattern", [
    (lambda: st.reorder(st.SparseMatrix(torch.tensor([0, 1]), torch.tensor([0]), torch.ones(1), (1, 2))),
     r"^st\.reorder: A must be square .* got shape \(1, 2\)"),
    (lambda: torch.ops.sparsetir._csr_rcm(torch.tensor([0, 1, 2]), torch.tensor([0, 2])),
     r"^sparsetir\._csr_rcm: argument 'indices' holds column 2, out of range for 2 columns \(a square matrix"),
    (lambda: torch.ops.sparsetir._csr_rcm(torch.tensor([0, 2, 1]), torch.tensor([0, 1])),
     r"^sparsetir\._csr_rcm: indptr must be non-decreasing"),
    (lambda: st.reorder(torch.ones(2, 2)), r"^st\.reorder: argument 'A'"),
])
def test_bad_input_names_the_op(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()
