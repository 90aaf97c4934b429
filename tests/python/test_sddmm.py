"""Numeric tests of the SDDMM kernel (tests/scripts/sddmm.py):
y[e] = sum_k a[i, k] * b[j, k] * x[e] for every stored entry e = (i, j),
against a per-nonzero dot product in float64 (numpy gather)."""
import numpy as np
import pytest
import torch

from conftest import CSR_CASES, TORCH_DTYPES, Csr, assert_within_bound, dataset_files, make_csr, random_values, to_tensor

VARIANTS = [(d, i) for d in ("float32", "float64", "float16", "bfloat16") for i in ("int32", "int64")]
FEAT_SIZES = (1, 7, 32)


def run_sddmm(kernel, csr: Csr, feat: int, dtype: str, idtype: str, seed: int = 0, positional: bool = False):
    k = kernel("sddmm", dtype, idtype)
    rng = np.random.default_rng(seed + 2000)
    a = to_tensor(random_values(rng, (csr.m, feat)), dtype)
    b = to_tensor(random_values(rng, (csr.n, feat)), dtype)
    x = to_tensor(csr.values, dtype)
    y = torch.full((csr.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])  # every element must be written
    indptr, indices = csr.torch_structure(idtype)
    before = [t.clone() for t in (a, b, x, indptr, indices)]
    args = dict(a=a, b=b, x=x, y=y, indptr=indptr, indices=indices, m=csr.m, n=csr.n, feat_size=feat, nnz=csr.nnz)
    if positional:
        k(*[args[p] for p in k.params])
    else:
        k(**args)
    for old, new in zip(before, (a, b, x, indptr, indices)):
        assert torch.equal(old, new), "the kernel modified an input"

    a64, b64, x64 = a.double().numpy(), b.double().numpy(), x.double().numpy()
    rows, cols = csr.rows(), csr.indices
    products = a64[rows] * b64[cols] * x64[:, None]  # (nnz, feat)
    ref = products.sum(axis=1)
    magnitude = np.abs(products).sum(axis=1)
    assert_within_bound(y, ref, magnitude, feat, dtype, f"sddmm {csr.shape} feat={feat}")
    if feat == 0:
        assert torch.all(y == 0)
    if csr.nnz and feat:
        assert np.abs(ref).max() > 0  # the comparison is not vacuous
    return y


@pytest.mark.parametrize("dtype,idtype", VARIANTS, ids=[f"{d}-{i}" for d, i in VARIANTS])
@pytest.mark.parametrize("feat", FEAT_SIZES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_sddmm_random(kernel, case, feat, dtype, idtype):
    csr = make_csr(seed=100 + sorted(CSR_CASES).index(case), **CSR_CASES[case])
    run_sddmm(kernel, csr, feat, dtype, idtype, seed=feat)


def test_sddmm_positional_call(kernel):
    csr = make_csr(13, 21, density=0.3, seed=6, empty_rows=(0, 12))
    run_sddmm(kernel, csr, 3, "float32", "int32", positional=True)


def test_sddmm_repeated_calls_overwrite_output(kernel):
    """Y is initialised per entry by the kernel (T.init), not accumulated across calls."""
    csr = make_csr(20, 20, density=0.2, seed=4)
    y1 = run_sddmm(kernel, csr, 5, "float64", "int64")
    y2 = run_sddmm(kernel, csr, 5, "float64", "int64")
    assert torch.equal(y1, y2)


def test_sddmm_matches_dense_formula(kernel):
    """A second, structurally different reference: (A @ B^T) * X_dense sampled at the pattern."""
    csr = make_csr(15, 12, density=0.4, seed=8)
    k = kernel("sddmm", "float64", "int64")
    rng = np.random.default_rng(9)
    a = torch.from_numpy(random_values(rng, (15, 6)))
    b = torch.from_numpy(random_values(rng, (12, 6)))
    x = torch.from_numpy(csr.values.copy())
    y = torch.empty(csr.nnz, dtype=torch.float64)
    indptr, indices = csr.torch_structure("int64")
    k(a=a, b=b, x=x, y=y, indptr=indptr, indices=indices, m=15, n=12, feat_size=6, nnz=csr.nnz)
    dense = (a @ b.T) * torch.from_numpy(csr.scipy().toarray())
    expected = dense[torch.from_numpy(csr.rows()), torch.from_numpy(csr.indices)]
    torch.testing.assert_close(y, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype,idtype", [("float32", "int32"), ("float64", "int64")])
@pytest.mark.parametrize("name", dataset_files())
def test_sddmm_dataset(kernel, dataset, name, dtype, idtype):
    csr = dataset(name)
    assert csr.nnz > 0
    run_sddmm(kernel, csr, 8, dtype, idtype, seed=5)
