"""BlockSparseLinear: a Linear layer whose weight keeps only some blocks.

y = x W^T + b with W (out_features x in_features) stored in BSR form: the
kept block_h x block_w blocks and their positions. Only the kept blocks are
parameters, so training updates them and the pruned ones stay zero. The
forward pass and both gradients run on x as it is (sparsetir.bsr_linear, no
transposed activations).
"""
from __future__ import annotations

import math

import torch

from ..ops import ops
from ..torch_warnings import quiet_sparse_warnings


def _block_grid(features: int, block: int, what: str) -> int:
    if block <= 0 or features % block:
        raise ValueError(f"st.nn.BlockSparseLinear: {what} ({features}) must be a multiple of the block size "
                         f"({block})")
    return features // block


def _check_density(density: float) -> None:
    if not 0.0 < density <= 1.0:
        raise ValueError(f"st.nn.BlockSparseLinear: density must be in (0, 1], got {density}")


class BlockSparseLinear(torch.nn.Module):
    """A Linear layer with a block-sparse weight.

    ``BlockSparseLinear(in_features, out_features, block_shape=(32, 32),
    density=0.1)`` keeps a random ``density`` fraction of the blocks;
    ``BlockSparseLinear.from_dense(linear, block_shape, density)`` keeps the
    blocks of a trained ``torch.nn.Linear`` with the largest norms (magnitude
    block pruning). ``prune(density)`` prunes further the same way; it makes
    new parameters, so create the optimizer after it.

    Parameters: ``blocks_t`` (nnzb, block_w, block_h), the kept blocks of W
    each stored transposed (the layout the kernel reads; ``blocks`` is the
    (nnzb, block_h, block_w) view), and ``bias``. Buffers: ``indptr``,
    ``indices`` (int32), the BSR structure over W's block rows."""

    def __init__(self, in_features: int, out_features: int, block_shape=(32, 32), density: float = 0.1,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        block_h, block_w = (int(b) for b in block_shape)
        rows = _block_grid(out_features, block_h, "out_features")
        columns = _block_grid(in_features, block_w, "in_features")
        _check_density(density)
        self.in_features, self.out_features, self.block_shape = in_features, out_features, (block_h, block_w)
        keep = max(1, round(density * rows * columns))
        mask = torch.zeros(rows * columns, dtype=torch.bool)
        mask[torch.randperm(rows * columns)[:keep]] = True
        self._set_structure(mask.view(rows, columns), device)
        self.blocks_t = torch.nn.Parameter(torch.empty(self.indices.shape[0], block_w, block_h, device=device,
                                                       dtype=dtype))
        self.bias = torch.nn.Parameter(torch.empty(out_features, device=device, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # torch.nn.Linear's initialization, from the dense layer's fan-in.
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
        with torch.no_grad():
            self.blocks_t.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def _set_structure(self, mask: torch.Tensor, device) -> None:
        rows, columns = torch.nonzero(mask, as_tuple=True)  # row-major: CSR order
        indptr = torch.zeros(mask.shape[0] + 1, dtype=torch.int64)
        indptr[1:] = torch.bincount(rows, minlength=mask.shape[0]).cumsum(0)
        for name, value in (("indptr", indptr.to(torch.int32)), ("indices", columns.to(torch.int32))):
            if name in self._buffers:
                self._buffers[name] = value.to(device)
            else:
                self.register_buffer(name, value.to(device))

    @classmethod
    def from_dense(cls, linear: torch.nn.Linear, block_shape=(32, 32), density: float = 0.1) -> "BlockSparseLinear":
        """The blocks of ``linear.weight`` with the largest Frobenius norms, a
        ``density`` fraction of them (at least one), and its bias."""
        weight = linear.weight.detach()
        layer = cls(linear.in_features, linear.out_features, block_shape, 1.0, linear.bias is not None,
                    weight.device, weight.dtype)
        layer._keep_largest(weight, density)
        if linear.bias is not None:
            with torch.no_grad():
                layer.bias.copy_(linear.bias)
        return layer

    def prune(self, density: float) -> "BlockSparseLinear":
        """Keeps the ``density`` fraction (of all blocks of W) with the
        largest norms among the kept ones; returns self."""
        self._keep_largest(self.to_dense().detach(), density)
        return self

    def _keep_largest(self, weight: torch.Tensor, density: float) -> None:
        _check_density(density)
        (block_h, block_w), out, inp = self.block_shape, self.out_features, self.in_features
        rows, columns = out // block_h, inp // block_w
        grid = weight.reshape(rows, block_h, columns, block_w).permute(0, 2, 1, 3)  # (rows, columns, bh, bw)
        norms = grid.pow(2).sum((2, 3)).flatten()
        keep = min(max(1, round(density * rows * columns)), int((norms > 0).sum()) or 1)
        mask = torch.zeros(rows * columns, dtype=torch.bool, device=weight.device)
        mask[torch.topk(norms, keep).indices] = True
        mask = mask.view(rows, columns)
        self._set_structure(mask.cpu(), weight.device)
        kept = grid[mask]  # (nnzb, bh, bw), row-major like the structure
        self.blocks_t = torch.nn.Parameter(kept.transpose(1, 2).contiguous())

    @property
    def blocks(self) -> torch.Tensor:
        """The kept blocks of W, (nnzb, block_h, block_w) (a view of blocks_t)."""
        return self.blocks_t.transpose(1, 2)

    @property
    def density(self) -> float:
        (block_h, block_w) = self.block_shape
        return self.indices.shape[0] / ((self.out_features // block_h) * (self.in_features // block_w))

    def to_dense(self) -> torch.Tensor:
        """W as a dense (out_features, in_features) tensor (pruned blocks zero)."""
        (block_h, block_w) = self.block_shape
        rows = self.out_features // block_h
        if not rows:
            return self.blocks_t.new_zeros(self.out_features, self.in_features)
        with quiet_sparse_warnings():
            return torch.sparse_bsr_tensor(self.indptr.long(), self.indices.long(), self.blocks,
                                           (self.out_features, self.in_features)).to_dense()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The operator reads W's width from x, so a wider x would pass it with
        # its extra features ignored: the layer knows in_features.
        if x.dim() == 0 or x.shape[-1] != self.in_features:
            raise ValueError(f"st.nn.BlockSparseLinear: argument 'x' of shape {tuple(x.shape)} must have "
                             f"in_features = {self.in_features} features in its last dimension")
        y = ops.bsr_linear(x, self.indptr, self.indices, self.blocks)
        # Under autocast y has autocast's dtype; the bias follows it, as torch.nn.Linear's does.
        return y + self.bias.to(y.dtype) if self.bias is not None else y

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"block_shape={self.block_shape}, density={self.density:.3f}, bias={self.bias is not None}")
