"""Numeric tests of the CSR SpMM kernel (tests/scripts/csrmm.py) against scipy in float64."""
import os

import numpy as np
import pytest
import torch

from conftest import (
    CSR_CASES,
    DATASETS_DIR,
    TORCH_DTYPES,
    Csr,
    assert_within_bound,
    dataset_files,
    make_csr,
    random_values,
    to_tensor,
)

VARIANTS = [(d, i) for d in ("float32", "float64", "float16", "bfloat16") for i in ("int32", "int64")]
FEAT_SIZES = (1, 7, 32)


def run_csrmm(kernel, csr: Csr, feat: int, dtype: str, idtype: str, seed: int = 0, positional: bool = False):
    """Runs the kernel and checks it against scipy (csr @ dense in float64)."""
    k = kernel("csrmm", dtype, idtype)
    rng = np.random.default_rng(seed + 1000)
    a = to_tensor(csr.values, dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    c = torch.full((csr.m, feat), float("nan"), dtype=TORCH_DTYPES[dtype])  # every element must be written
    indptr, indices = csr.torch_structure(idtype)
    before = [t.clone() for t in (a, b, indptr, indices)]
    args = dict(a=a, b=b, c=c, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz)
    if positional:
        k(*[args[p] for p in k.params])
    else:
        k(**args)
    for old, new in zip(before, (a, b, indptr, indices)):
        assert torch.equal(old, new), "the kernel modified an input"

    a64, b64 = a.double().numpy(), b.double().numpy()
    ref = csr.scipy(a64) @ b64
    magnitude = csr.scipy(np.abs(a64)) @ np.abs(b64)
    terms = csr.row_lengths()[:, None]
    assert_within_bound(c, np.asarray(ref), np.asarray(magnitude), terms, dtype, f"csrmm {csr.shape} feat={feat}")
    empty = csr.row_lengths() == 0
    if empty.any():
        assert torch.all(c[torch.from_numpy(empty)] == 0), "empty rows must be exactly zero"
    if csr.nnz and feat:
        assert np.abs(ref).max() > 0  # the comparison is not vacuous
    return c


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=[f"{d}-{i}" for d, i in VARIANTS])
@pytest.mark.parametrize("feat", FEAT_SIZES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_csrmm_random(kernel, case, feat, dtype, idtype):
    csr = make_csr(seed=sorted(CSR_CASES).index(case), **CSR_CASES[case])
    run_csrmm(kernel, csr, feat, dtype, idtype, seed=feat)


def test_csrmm_positional_call(kernel):
    csr = make_csr(17, 11, density=0.3, seed=5, empty_rows=(2,))
    run_csrmm(kernel, csr, 4, "float32", "int32", positional=True)


def test_csrmm_cases_have_the_advertised_structure():
    """Guards the generator: the named cases really contain what they claim."""
    assert make_csr(**CSR_CASES["zero_nnz"]).nnz == 0
    assert make_csr(**CSR_CASES["1x1"]).nnz == 1
    er = make_csr(**CSR_CASES["empty_rows"])
    assert all(er.row_lengths()[r] == 0 for r in (0, 5, 6, 7, 39)) and er.nnz > 0
    dr = make_csr(**CSR_CASES["dense_row"])
    assert dr.row_lengths()[3] == dr.n
    ud = make_csr(**CSR_CASES["unsorted_with_duplicates"])
    pairs = set(zip(ud.rows().tolist(), ud.indices.tolist()))
    assert len(pairs) < ud.nnz  # duplicates present
    assert any(np.any(np.diff(ud.indices[ud.indptr[r]:ud.indptr[r + 1]]) < 0) for r in range(ud.m))  # unsorted


def test_csrmm_repeated_calls_overwrite_output(kernel):
    """C is initialised by the kernel (T.init), not accumulated across calls."""
    csr = make_csr(20, 20, density=0.2, seed=3)
    c1 = run_csrmm(kernel, csr, 5, "float64", "int64")
    c2 = run_csrmm(kernel, csr, 5, "float64", "int64")
    assert torch.equal(c1, c2)


def test_csrmm_bsr_block_kernel(kernel):
    """The RFC's block-sparse SpMM (bsrmm_stage_i.py) against scipy's BSR matrix."""
    import scipy.sparse

    k = kernel("bsrmm_stage_i")
    nb, mb, blk, feat = 7, 5, 3, 6
    block = make_csr(nb, mb, density=0.4, seed=11, empty_rows=(1,))
    rng = np.random.default_rng(12)
    a = to_tensor(random_values(rng, (block.nnz, blk, blk)), "float32")
    b = to_tensor(random_values(rng, (mb, blk, feat)), "float32")
    c = torch.full((nb, blk, feat), float("nan"), dtype=torch.float32)
    indptr, indices = block.torch_structure("int32")
    k(a=a, b=b, c=c, indptr=indptr, indices=indices, nb=nb, mb=mb, nnzb=block.nnz, blk=blk, feat_size=feat)
    a64, b64 = a.double().numpy(), b.double().numpy()
    shape = (nb * blk, mb * blk)
    ref = scipy.sparse.bsr_matrix((a64, block.indices, block.indptr), shape=shape) @ b64.reshape(mb * blk, feat)
    mag = scipy.sparse.bsr_matrix((np.abs(a64), block.indices, block.indptr), shape=shape) @ np.abs(b64).reshape(mb * blk, feat)
    terms = np.repeat(block.row_lengths() * blk, blk)[:, None]
    assert_within_bound(c.reshape(nb * blk, feat), ref, mag, terms, "float32", "bsrmm")
    assert torch.all(c[1] == 0)


# --------------------------------------------------------------------------- datasets


@pytest.mark.parametrize("dtype,idtype", [("float32", "int32"), ("float64", "int64")])
@pytest.mark.parametrize("name", dataset_files())
def test_csrmm_dataset(kernel, dataset, name, dtype, idtype):
    csr = dataset(name)
    assert csr.nnz > 0
    run_csrmm(kernel, csr, 8, dtype, idtype, seed=3)


def test_matrix_market_reader_matches_file_header(dataset):
    """The reader returns a well-formed CSR whose shape and nnz match each file's size line."""
    import gzip

    names = [n for n in dataset_files() if isinstance(n, str)]
    if not names:
        pytest.skip(f"no datasets in {DATASETS_DIR}")
    for name in names:
        with gzip.open(os.path.join(DATASETS_DIR, name), "rt", encoding="utf-8") as f:
            line = f.readline()
            while line.startswith("%"):
                line = f.readline()
        rows, cols, nnz = (int(x) for x in line.split())
        csr = dataset(name)
        assert csr.shape == (rows, cols), name
        assert csr.nnz == nnz and csr.indptr[-1] == nnz and csr.indptr[0] == 0, name
        assert np.all(np.diff(csr.indptr) >= 0), name
        assert csr.indices.min() >= 0 and csr.indices.max() < cols, name


def test_matrix_market_rejects_wrong_mtx():
    from sparsetir_torch.matrix_market import read_matrix_market

    path = os.path.join(DATASETS_DIR, "wrong.mtx")
    if not os.path.isfile(path):
        pytest.skip(f"{path} is missing")
    with pytest.raises(ValueError, match="wrong.mtx"):
        read_matrix_market(path)
