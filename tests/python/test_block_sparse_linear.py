"""sparsetir.bsr_linear (x @ W^T for a BSR weight) and st.nn.BlockSparseLinear:
values and gradients against the dense masked weight in float64, every value
and index dtype, shapes at the edges, opcheck, torch.compile, pruning, and
the argument errors."""
import pytest
import torch
import torch.nn.functional as F
from torch.library import opcheck

import sparsetir_torch as st

ops = torch.ops.sparsetir
pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = {"float32": (torch.float32, 1e-5), "float64": (torch.float64, 1e-12), "float16": (torch.float16, 2e-2),
          "bfloat16": (torch.bfloat16, 1e-1)}


def block_sparse_weight(out_f, in_f, bh, bw, density, seed=0, dtype=torch.float64, empty_rows=()):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(out_f // bh, in_f // bw, generator=g) < density
    for r in empty_rows:
        mask[r] = False
    w = torch.randn(out_f, in_f, generator=g, dtype=torch.float64)
    w = w * mask.repeat_interleave(bh, 0).repeat_interleave(bw, 1)
    return w.to(dtype), w.to(dtype).to_sparse_bsr((bh, bw))


@pytest.mark.parametrize("idtype", (torch.int32, torch.int64))
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(64, 96, 8, 16, 0.4, 5), (32, 32, 32, 32, 1.0, 3), (16, 8, 1, 1, 0.3, 7),
                                   (48, 64, 16, 8, 0.5, 1), (8, 16, 4, 4, 0.0, 2)],
                         ids=["8x16", "one-block", "1x1", "batch1", "no-blocks"])
def test_values_match_the_dense_masked_weight(shape, dtype, idtype):
    out_f, in_f, bh, bw, density, batch = shape
    torch_dtype, tol = DTYPES[dtype]
    w, bsr = block_sparse_weight(out_f, in_f, bh, bw, density, empty_rows=(0,) if out_f // bh > 1 else ())
    x = torch.randn(batch, in_f, dtype=torch.float64)
    y = ops.bsr_linear(x.to(torch_dtype), bsr.crow_indices().to(idtype), bsr.col_indices().to(idtype),
                       bsr.values().to(torch_dtype))
    assert y.shape == (batch, out_f) and y.dtype == torch_dtype
    ref = x.to(torch_dtype).double() @ w.to(torch_dtype).double().T
    scale = 1.0 + ref.abs().max().item()
    torch.testing.assert_close(y.double(), ref, rtol=tol, atol=tol * scale)


def test_leading_batch_dimensions_and_non_contiguous_inputs():
    w, bsr = block_sparse_weight(32, 48, 8, 8, 0.5, seed=1)
    x = torch.randn(48, 2, 3, dtype=torch.float64).permute(1, 2, 0)  # (2, 3, 48), not contiguous
    blocks = bsr.values().transpose(1, 2).contiguous().transpose(1, 2)  # the layout BlockSparseLinear keeps
    y = ops.bsr_linear(x, bsr.crow_indices(), bsr.col_indices(), blocks)
    torch.testing.assert_close(y, x @ w.T)


def test_gradients_match_the_dense_masked_weight():
    w, bsr = block_sparse_weight(32, 64, 8, 16, 0.5, seed=2)
    blocks = bsr.values().clone().requires_grad_()
    x = torch.randn(4, 64, dtype=torch.float64, requires_grad=True)
    f = lambda a, b: ops.bsr_linear(a, bsr.crow_indices(), bsr.col_indices(), b)  # noqa: E731
    assert torch.autograd.gradcheck(f, (x, blocks))
    g = torch.randn(4, 32, dtype=torch.float64)
    gx, gb = torch.autograd.grad(f(x, blocks), (x, blocks), g)
    torch.testing.assert_close(gx, g @ w)
    mask = torch.zeros(4, 4, dtype=torch.bool)
    rows = torch.repeat_interleave(torch.arange(4), bsr.crow_indices().diff())
    mask[rows, bsr.col_indices()] = True
    expected = (g.T @ x).reshape(4, 8, 4, 16).permute(0, 2, 1, 3)[mask]
    torch.testing.assert_close(gb, expected)


@pytest.mark.parametrize("idtype", (torch.int32, torch.int64))
def test_second_derivatives(idtype):
    """_bsr_linear_grad_blocks is differentiable in x and in the incoming
    gradient, so bsr_linear has second derivatives: gradgradcheck, and the
    derivative of the blocks' gradient against the dense formula. A block row
    is empty and x has two batch dimensions."""
    w, bsr = block_sparse_weight(12, 12, 2, 3, 0.5, seed=9, empty_rows=(1,))
    ip, ix = bsr.crow_indices().to(idtype), bsr.col_indices().to(idtype)
    blocks = bsr.values().clone().requires_grad_()
    x = torch.randn(2, 3, 12, dtype=torch.float64, requires_grad=True)
    f = lambda a, b: ops.bsr_linear(a, ip, ix, b)  # noqa: E731
    assert torch.autograd.gradgradcheck(f, (x, blocks))
    # d/dx of sum(grad_blocks * c) with grad_blocks = g^T x on the kept blocks:
    # sum over the kept blocks of g[:, rows] c_e, the dense g @ C for the BSR
    # matrix C of the blocks c.
    g = torch.randn(2, 3, 12, dtype=torch.float64)
    (gb,) = torch.autograd.grad(f(x, blocks), blocks, g, create_graph=True)
    c = torch.randn_like(gb)
    (gx,) = torch.autograd.grad((gb * c).sum(), x)
    dense_c = torch.sparse_bsr_tensor(bsr.crow_indices(), bsr.col_indices(), c, w.shape).to_dense()
    torch.testing.assert_close(gx, g @ dense_c)


def test_opcheck_and_torch_compile():
    w, bsr = block_sparse_weight(32, 64, 16, 16, 0.5, seed=3, dtype=torch.float32)
    ip, ix = bsr.crow_indices().int(), bsr.col_indices().int()
    blocks = bsr.values().clone().requires_grad_()
    x = torch.randn(6, 64, requires_grad=True)
    opcheck(ops.bsr_linear, (x, ip, ix, blocks))
    opcheck(ops._bsr_linear_grad_blocks, (x.detach(), torch.randn(6, 32), ip, ix, 16, 16))
    f = lambda a, b: F.relu(ops.bsr_linear(a, ip, ix, b)).sum()  # noqa: E731
    compiled = torch.compile(f, fullgraph=True)
    torch.testing.assert_close(compiled(x, blocks), f(x, blocks))


def test_bad_arguments_name_the_argument():
    _, bsr = block_sparse_weight(32, 64, 16, 16, 0.5, seed=4, dtype=torch.float32)
    ip, ix, blocks = bsr.crow_indices(), bsr.col_indices(), bsr.values()
    with pytest.raises(ValueError, match="bsr_linear: argument 'x' has 60 features, not a multiple of the block width 16"):
        ops.bsr_linear(torch.randn(2, 60), ip, ix, blocks)
    with pytest.raises(ValueError, match="bsr_linear: argument 'blocks' must be 3-D"):
        ops.bsr_linear(torch.randn(2, 64), ip, ix, blocks[0])
    with pytest.raises(ValueError, match="bsr_linear: argument 'blocks' must have the dtype of 'x'"):
        ops.bsr_linear(torch.randn(2, 64), ip, ix, blocks.double())
    with pytest.raises(ValueError, match="bsr_linear: argument 'indices' holds column"):
        ops.bsr_linear(torch.randn(2, 32), ip, ix, blocks)
    with pytest.raises(ValueError, match="bsr_linear: argument 'blocks' must hold one block per non-zero block"):
        ops.bsr_linear(torch.randn(2, 64), ip, ix, blocks[:1])
    with pytest.raises(ValueError, match="_bsr_linear_grad_blocks: argument 'grad' .* must have the batch of 'x'"):
        ops._bsr_linear_grad_blocks(torch.randn(2, 64), torch.randn(3, 32), ip, ix, 16, 16)


# --------------------------------------------------------------------------- the module


def test_from_dense_keeps_the_largest_blocks_and_matches_the_masked_layer():
    torch.manual_seed(0)
    lin = torch.nn.Linear(128, 64).double()
    with torch.no_grad():
        lin.weight[16:32, 32:64] *= 100.0  # the block (1, 1) of 16 x 32 blocks is the largest
    layer = st.nn.BlockSparseLinear.from_dense(lin, block_shape=(16, 32), density=0.25)
    assert layer.indices.shape[0] == 4 and layer.density == 0.25
    dense = layer.to_dense()
    assert torch.equal(dense[16:32, 32:64], lin.weight[16:32, 32:64].detach())
    kept = dense.reshape(4, 16, 4, 32).permute(0, 2, 1, 3).abs().sum((2, 3)) > 0
    norms = lin.weight.detach().reshape(4, 16, 4, 32).permute(0, 2, 1, 3).pow(2).sum((2, 3))
    assert norms[kept].min() >= norms[~kept].max()
    x = torch.randn(7, 128, dtype=torch.float64)
    torch.testing.assert_close(layer(x), F.linear(x, dense, lin.bias))


def test_training_updates_only_the_kept_blocks():
    torch.manual_seed(1)
    layer = st.nn.BlockSparseLinear(64, 32, block_shape=(8, 8), density=0.3)
    before = layer.to_dense().detach().clone()
    zero = before == 0
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x, target = torch.randn(16, 64), torch.randn(16, 32)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(layer(x), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    after = layer.to_dense().detach()
    assert losses[-1] < losses[0]
    assert torch.all(after[zero] == 0) and not torch.equal(after, before)


def test_prune_state_dict_and_errors():
    layer = st.nn.BlockSparseLinear(64, 64, block_shape=(16, 16), density=0.5)
    layer.prune(0.25)
    assert layer.indices.shape[0] == 4 and layer.blocks_t.shape == (4, 16, 16)
    copy = st.nn.BlockSparseLinear(64, 64, block_shape=(16, 16), density=0.25)
    copy.load_state_dict(layer.state_dict())
    x = torch.randn(3, 64)
    torch.testing.assert_close(copy(x), layer(x))
    with pytest.raises(ValueError, match="out_features \\(60\\) must be a multiple of the block size \\(16\\)"):
        st.nn.BlockSparseLinear(64, 60, block_shape=(16, 16))
    with pytest.raises(ValueError, match="density must be in \\(0, 1\\]"):
        st.nn.BlockSparseLinear(64, 64, block_shape=(16, 16), density=1.5)
    # x with other than in_features features: the operator alone would read
    # the first 64 of 80 (W's width comes from x), so the layer refuses it.
    for shape in ((3, 80), (3, 48), ()):
        with pytest.raises(ValueError, match="BlockSparseLinear: argument 'x' of shape .* must have in_features = 64"):
            layer(torch.randn(shape))
