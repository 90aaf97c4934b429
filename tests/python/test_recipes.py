"""The CPU SpMM recipe (sparsetir_torch.recipes.spmm_cpu) keeps results exact
for every feature width: powers of two, odd widths, widths the vector does not
divide, and very wide rows that skip the register cache."""
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.recipes import spmm_cpu


def random_csr(m, n, seed):
    g = torch.Generator().manual_seed(seed)
    dense = torch.rand(m, n, generator=g, dtype=torch.float64) * 2 - 1
    dense[torch.rand(m, n, generator=g) < 0.8] = 0
    dense[1] = 0  # an empty row
    dense[2] = torch.rand(n, generator=g, dtype=torch.float64) + 0.5  # a dense row
    return dense


@pytest.mark.parametrize("feat", [1, 3, 16, 20, 48, 128, 256, 600])
@pytest.mark.parametrize("parallel", [True, False])
def test_spmm_recipe_matches_dense_float64(feat, parallel):
    dense = random_csr(37, 29, seed=feat)
    A = dense.float().to_sparse_csr()
    B = torch.randn(29, feat, dtype=torch.float64)
    C = torch.full((37, feat), float("nan"))
    kernel = st.compile(spmm_cpu(feat, parallel=parallel))
    kernel(a=A.values(), b=B.float(), c=C, indptr=A.crow_indices().int(), indices=A.col_indices().int(),
           m=37, n=29, feat_size=feat, nnz=A.values().numel())
    expected = dense.float().double() @ B.float().double()
    torch.testing.assert_close(C.double(), expected, rtol=1e-5, atol=1e-5)
    assert torch.all(C[1] == 0)


def test_spmm_recipe_rejects_another_width():
    kernel = st.compile(spmm_cpu(32))
    A = random_csr(5, 4, seed=0).float().to_sparse_csr()
    with pytest.raises(ValueError, match="feat_size"):
        kernel(a=A.values(), b=torch.randn(4, 16), c=torch.empty(5, 16), indptr=A.crow_indices().int(),
               indices=A.col_indices().int(), m=5, n=4, feat_size=16, nnz=A.values().numel())
