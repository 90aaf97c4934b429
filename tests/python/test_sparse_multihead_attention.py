"""st.nn.SparseMultiheadAttention against torch.nn.MultiheadAttention with the
same weights and the pattern as a dense mask (outputs and gradients, both
layouts), and the pattern builders against their dense definitions."""
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.nn import attention_patterns as ap

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")


def dense(p) -> torch.Tensor:
    return p.to_dense() > 0


def test_patterns_match_their_definitions():
    L = 24
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    assert torch.equal(dense(ap.sliding_window(L, 3)), (i - j).abs() <= 3)
    assert torch.equal(dense(ap.sliding_window(L, 3, causal=True)), (i - j >= 0) & (i - j <= 3))
    assert torch.equal(dense(ap.dilated(L, 2, 3)), ((i - j).abs() <= 6) & ((i - j) % 3 == 0))
    g = dense(ap.global_tokens(L, (0, 5)))
    assert g[[0, 5]].all() and g[:, [0, 5]].all() and g.sum() == 2 * L * 2 - 4
    b = dense(ap.block_sparse(L, 4, density=0.3, seed=1))
    grid = b.reshape(6, 4, 6, 4).permute(0, 2, 1, 3)
    assert torch.all(grid.all((2, 3)) == grid.any((2, 3))) and torch.all(torch.diagonal(grid.all((2, 3))))
    r = ap.random(L, 3, seed=2)
    assert torch.all((r.indptr[1:] - r.indptr[:-1]) <= 3) and torch.all((r.indptr[1:] - r.indptr[:-1]) >= 1)
    u = dense(ap.union(ap.sliding_window(L, 1), ap.global_tokens(L, (7,))))
    assert torch.equal(u, dense(ap.sliding_window(L, 1)) | dense(ap.global_tokens(L, (7,))))
    assert ap.sliding_window(L, 3) is ap.sliding_window(L, 3)  # built once


@pytest.mark.parametrize("batch_first", (True, False))
def test_matches_torch_multihead_attention_with_the_pattern_as_mask(batch_first):
    torch.manual_seed(0)
    L, E, H = 32, 48, 6
    pattern = ap.union(ap.sliding_window(L, 4), ap.global_tokens(L, (0, 17)), ap.random(L, 2, seed=3))
    ref = torch.nn.MultiheadAttention(E, H, batch_first=batch_first).double()
    ours = st.nn.SparseMultiheadAttention(E, H, batch_first=batch_first, pattern=pattern).double()
    ours.load_state_dict(ref.state_dict())
    shape = (3, L, E) if batch_first else (L, 3, E)
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    out, weights = ours(x)
    expected, _ = ref(x, x, x, attn_mask=~dense(pattern), need_weights=False)
    assert weights is None
    torch.testing.assert_close(out, expected)
    seed = torch.randn_like(out)
    grads = torch.autograd.grad((out * seed).sum(), [x] + list(ours.parameters()))
    grads_ref = torch.autograd.grad((expected * seed).sum(), [x] + list(ref.parameters()))
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref)


def test_cross_attention_and_bool_masks():
    torch.manual_seed(1)
    L, S, E = 8, 12, 16
    mask = torch.rand(L, S) < 0.4
    mask[:, 0] = True
    ref = torch.nn.MultiheadAttention(E, 2, batch_first=True)
    ours = st.nn.SparseMultiheadAttention(E, 2)
    ours.load_state_dict(ref.state_dict())
    q, kv = torch.randn(2, L, E), torch.randn(2, S, E)
    out, _ = ours(q, kv, kv, pattern=mask)
    expected, _ = ref(q, kv, kv, attn_mask=~mask, need_weights=False)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="embed_dim \\(10\\) must be divisible by num_heads \\(3\\)"):
        st.nn.SparseMultiheadAttention(10, 3)
    layer = st.nn.SparseMultiheadAttention(8, 2)
    with pytest.raises(ValueError, match="no pattern"):
        layer(torch.randn(1, 4, 8))
    with pytest.raises(ValueError, match="argument 'query' must be 3-D with 8 features"):
        layer(torch.randn(4, 8), pattern=ap.sliding_window(4, 1))
    with pytest.raises(ValueError, match="block_sparse: L \\(10\\) must be a multiple of the block size \\(4\\)"):
        ap.block_sparse(10, 4)
    with pytest.raises(ValueError, match="block_sparse: the block size must be >= 1, got 0"):
        ap.block_sparse(6, 0)
    for density in (-0.5, 2.0):
        with pytest.raises(ValueError, match=f"block_sparse: density must be in \\[0, 1\\], got {density}"):
            ap.block_sparse(8, 4, density=density)
    with pytest.raises(ValueError, match="sliding_window: window must be an int, got 1.5"):
        ap.sliding_window(8, 1.5)
    with pytest.raises(ValueError, match="dilated: the sequence length must be an int, got '8'"):
        ap.dilated("8", 1, 2)
    with pytest.raises(ValueError, match="union: pattern 1: expected a sparse tensor"):
        ap.union(ap.sliding_window(4, 1), torch.eye(4))


def test_union_takes_torch_sparse_tensors():
    """Patterns may be torch sparse tensors too (CSR or COO), as the operators take them."""
    L = 12
    window = ap.sliding_window(L, 1)
    extra = torch.zeros(L, L)
    extra[3, 9] = extra[0, 11] = 1.0
    for t in (extra.to_sparse_csr(), extra.to_sparse()):
        u = ap.union(window, t)
        assert torch.equal(dense(u), dense(window) | extra.bool())
