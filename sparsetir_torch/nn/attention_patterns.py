"""Sparse attention patterns: which keys j each query i may attend to, as an
L x S st.SparseMatrix (CSR, columns sorted) for st.sparse_attention and
st.nn.SparseMultiheadAttention. Patterns combine with `union`. Each builder
caches its result per arguments, so a model builds its pattern once."""
from __future__ import annotations

import functools

import torch

from ..ops import _row_ids
from ..sparse_matrix import SparseMatrix, as_sparse_matrix


def _from_mask_rows(rows: torch.Tensor, cols: torch.Tensor, L: int, S: int) -> SparseMatrix:
    """The pattern of the allowed (row, col) pairs: those outside the L x S
    matrix (a window past the ends) are dropped, repeated pairs merged."""
    keep = (cols >= 0) & (cols < S)
    rows, cols = rows[keep].to(torch.int32), cols[keep].to(torch.int32)
    merged = SparseMatrix.from_coo(rows, cols, torch.ones(rows.shape[0]), (L, S), sum_duplicates=True)
    return SparseMatrix(merged.indptr, merged.indices, torch.ones(merged.nnz), (L, S))


def _check(L: int, what: str, **sizes) -> None:
    for name, value in {"the sequence length": L, **sizes}.items():
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise ValueError(f"{what}: {name} must be an int, got {value!r}")
        if value < 0:
            raise ValueError(f"{what}: {name} must be >= 0, got {value}")


@functools.lru_cache(maxsize=64)
def sliding_window(L: int, window: int, causal: bool = False) -> SparseMatrix:
    """Query i attends to keys i - window .. i + window (.. i when causal)."""
    _check(L, "sliding_window", window=window)
    offsets = torch.arange(-window, 1 if causal else window + 1)
    rows = torch.arange(L).repeat_interleave(offsets.numel())
    return _from_mask_rows(rows, rows + offsets.repeat(L), L, L)


@functools.lru_cache(maxsize=64)
def dilated(L: int, window: int, dilation: int) -> SparseMatrix:
    """Query i attends to keys i + d * k for |k| <= window (d = dilation >= 1)."""
    _check(L, "dilated", window=window)
    if dilation < 1:
        raise ValueError(f"dilated: dilation must be >= 1, got {dilation}")
    offsets = torch.arange(-window, window + 1) * dilation
    rows = torch.arange(L).repeat_interleave(offsets.numel())
    return _from_mask_rows(rows, rows + offsets.repeat(L), L, L)


@functools.lru_cache(maxsize=64)
def global_tokens(L: int, tokens: tuple) -> SparseMatrix:
    """The given token positions attend to every key and every query attends
    to them (Longformer's global attention); combine with a local pattern."""
    tokens = torch.tensor(sorted(set(int(t) for t in tokens)), dtype=torch.int64)
    _check(L, "global_tokens")
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= L):
        raise ValueError(f"global_tokens: token positions must be in [0, {L}), got {tokens.tolist()}")
    all_ = torch.arange(L)
    rows = torch.cat([tokens.repeat_interleave(L), all_.repeat_interleave(tokens.numel())])
    cols = torch.cat([all_.repeat(tokens.numel()), tokens.repeat(L)])
    return _from_mask_rows(rows, cols, L, L)


@functools.lru_cache(maxsize=64)
def block_sparse(L: int, block: int, density: float = 0.25, seed: int = 0, diagonal: bool = True) -> SparseMatrix:
    """Blocks of block x block positions, a random `density` fraction of the
    block grid kept (with the diagonal blocks when `diagonal`), as in
    BigBird's and the Sparse Transformer's block layouts."""
    _check(L, "block_sparse", block=block)
    if block < 1:
        raise ValueError(f"block_sparse: the block size must be >= 1, got {block}")
    if L % block:
        raise ValueError(f"block_sparse: L ({L}) must be a multiple of the block size ({block})")
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"block_sparse: density must be in [0, 1], got {density}")
    nb = L // block
    g = torch.Generator().manual_seed(seed)
    layout = torch.rand(nb, nb, generator=g) < density
    if diagonal:
        layout |= torch.eye(nb, dtype=torch.bool)
    br, bc = torch.nonzero(layout, as_tuple=True)
    inner = torch.arange(block)
    rows = (br[:, None, None] * block + inner[None, :, None]).expand(-1, block, block).reshape(-1)
    cols = (bc[:, None, None] * block + inner[None, None, :]).expand(-1, block, block).reshape(-1)
    return _from_mask_rows(rows, cols, L, L)


@functools.lru_cache(maxsize=64)
def random(L: int, per_row: int, seed: int = 0, S: int | None = None) -> SparseMatrix:
    """Each query attends to `per_row` keys drawn at random (fixed by seed)."""
    S = L if S is None else S
    _check(L, "random", per_row=per_row)
    g = torch.Generator().manual_seed(seed)
    cols = torch.randint(0, max(S, 1), (L, per_row), generator=g).reshape(-1) if S else torch.zeros(0, dtype=torch.int64)
    rows = torch.arange(L).repeat_interleave(per_row) if S else torch.zeros(0, dtype=torch.int64)
    return _from_mask_rows(rows, cols, L, S)


def union(*patterns: SparseMatrix) -> SparseMatrix:
    """The positions allowed by any of the patterns (all of one shape):
    st.SparseMatrix objects or torch sparse tensors."""
    if not patterns:
        raise ValueError("union: give at least one pattern")
    patterns = [as_sparse_matrix(p, f"union: pattern {k}") for k, p in enumerate(patterns)]
    shape = patterns[0].shape
    if any(p.shape != shape for p in patterns):
        raise ValueError(f"union: patterns must have one shape, got {[p.shape for p in patterns]}")
    rows = torch.cat([_row_ids(p.indptr, p.nnz) for p in patterns])
    cols = torch.cat([p.indices.long() for p in patterns])
    return _from_mask_rows(rows, cols, shape[0], shape[1])
