"""Autocast: inside torch.autocast the operators run in the region's dtype
(bfloat16 or float16), whatever mix of float32 and 16-bit operands they get,
with float32 accumulation; gradients reach the float32 leaves; outside a
region nothing changes."""
import pytest
import torch

import sparsetir_torch as st


def graph(m=40, n=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    dense = torch.rand(m, n, generator=g, dtype=torch.float64) * (torch.rand(m, n, generator=g) < 0.25)
    dense[3] = 0  # an empty row
    return dense


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_spmm_under_autocast_runs_in_the_region_dtype(dtype):
    dense = graph()
    A = dense.float().to_sparse_csr()
    B = torch.randn(30, 16, dtype=torch.float64)
    Bf = B.float().requires_grad_()
    with torch.autocast("cpu", dtype=dtype):
        x = Bf @ torch.eye(16)            # autocast makes this a 16-bit activation
        assert x.dtype == dtype
        out = st.spmm(A, x)               # float32 values, 16-bit dense: runs in `dtype`
    assert out.dtype == dtype
    ref = dense @ B
    tol = 2e-2 if dtype == torch.bfloat16 else 4e-3
    torch.testing.assert_close(out.double(), ref, rtol=tol, atol=tol * ref.abs().max().item())
    out.double().sum().backward()
    assert Bf.grad is not None and Bf.grad.dtype == torch.float32
    torch.testing.assert_close(Bf.grad.double(), dense.sum(0)[:, None].expand(30, 16), rtol=tol, atol=tol * 10)


def test_float32_operands_are_cast_too():
    dense = graph(seed=1)
    A = dense.float().to_sparse_csr()
    B = torch.randn(30, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.ops.sparsetir.spmm(A.crow_indices(), A.col_indices(), A.values(), B, "sum")
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), dense @ B.double(), rtol=2e-2, atol=2e-2 * (dense @ B.double()).abs().max().item())


def test_sddmm_and_attention_under_autocast():
    dense = graph(seed=2)
    A = dense.float().to_sparse_csr()
    X, Y = torch.randn(40, 8), torch.randn(30, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        S = st.sddmm(A, X, Y)
    assert S.values().dtype == torch.bfloat16
    ref = (dense * (X.double() @ Y.double().t())).to_sparse_csr().values()
    torch.testing.assert_close(S.values().double(), ref, rtol=3e-2, atol=3e-2 * ref.abs().max().item())
    mask = (torch.rand(16, 16, generator=torch.Generator().manual_seed(3)) < 0.5).to_sparse_csr()
    q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        o = st.sparse_attention(q, k, v, mask)
    assert o.dtype == torch.bfloat16
    ref = st.sparse_attention(q.double(), k.double(), v.double(), mask)
    torch.testing.assert_close(o.double(), ref, rtol=3e-2, atol=3e-2)


def test_outside_autocast_nothing_is_cast():
    dense = graph(seed=4)
    A = dense.float().to_sparse_csr()
    out = st.spmm(A, torch.randn(30, 4))
    assert out.dtype == torch.float32
    with pytest.raises(ValueError, match="dtype"):
        st.spmm(A, torch.randn(30, 4, dtype=torch.bfloat16))  # a mismatch outside autocast is still an error


def test_autocast_traces_under_torch_compile():
    dense = graph(seed=5)
    A = dense.float().to_sparse_csr()
    # component tensors, not views of a sparse tensor (README: torch.compile)
    indptr, indices, values = A.crow_indices().clone(), A.col_indices().clone(), A.values().clone()
    B = torch.randn(30, 8)

    def f(indptr, indices, values, B):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return torch.ops.sparsetir.spmm(indptr, indices, values, B, "sum")

    out = torch.compile(f, fullgraph=True)(indptr, indices, values, B)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), dense @ B.double(), rtol=2e-2, atol=2e-2 * (dense @ B.double()).abs().max().item())


def test_block_sparse_linear_under_autocast_returns_the_region_dtype():
    """As torch.nn.Linear does: the bias is added in the region's dtype, not
    promoted back to float32 (the layer's parameters stay float32)."""
    torch.manual_seed(4)
    layer = st.nn.BlockSparseLinear(32, 16, block_shape=(8, 8), density=0.5)
    x = torch.randn(5, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = layer(x)
        peer = torch.nn.functional.linear(x, layer.to_dense().detach(), layer.bias.detach())
    assert y.dtype == peer.dtype == torch.bfloat16
    ref = x.double() @ layer.to_dense().detach().double().t() + layer.bias.detach().double()
    torch.testing.assert_close(y.double(), ref, rtol=3e-2, atol=3e-2 * ref.abs().max().item())
