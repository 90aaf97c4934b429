"""SparseMultiheadAttention: torch.nn.MultiheadAttention restricted to a
sparse pattern of allowed (query, key) pairs, shared by the batch and heads
(st.sparse_attention: one pass over the pattern per head, no L x S scores)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..api import sparse_attention


class SparseMultiheadAttention(torch.nn.Module):
    """Multi-head attention over a sparse pattern.

    The parameters are torch.nn.MultiheadAttention's (``in_proj_weight``,
    ``in_proj_bias``, ``out_proj.weight``, ``out_proj.bias``), so its
    state_dict loads into this layer. ``forward(query, key, value, pattern)``
    takes (batch, L, E) tensors with ``batch_first=True`` (else (L, batch,
    E)) and a pattern: an L x S st.SparseMatrix or torch sparse tensor (see
    st.nn.attention_patterns), or a bool (L, S) mask where True means
    *allowed*. It returns ``(output, None)`` like torch's layer (the
    attention weights are not materialized)."""

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True, batch_first: bool = True,
                 pattern=None, device=None, dtype=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"st.nn.SparseMultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.batch_first = embed_dim, num_heads, batch_first
        self.head_dim = embed_dim // num_heads
        self.pattern = pattern
        factory = {"device": device, "dtype": dtype}
        self.in_proj_weight = torch.nn.Parameter(torch.empty(3 * embed_dim, embed_dim, **factory))
        self.in_proj_bias = torch.nn.Parameter(torch.empty(3 * embed_dim, **factory)) if bias else None
        self.out_proj = torch.nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        torch.nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            torch.nn.init.zeros_(self.in_proj_bias)
            torch.nn.init.zeros_(self.out_proj.bias)

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        batch, length, _ = t.shape
        return t.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (batch, heads, L, D)

    def forward(self, query: torch.Tensor, key: torch.Tensor | None = None, value: torch.Tensor | None = None,
                pattern=None):
        key = query if key is None else key
        value = key if value is None else value
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.dim() != 3 or t.shape[-1] != self.embed_dim:
                raise ValueError(f"st.nn.SparseMultiheadAttention: argument '{name}' must be 3-D with "
                                 f"{self.embed_dim} features, got shape {tuple(t.shape)}")
        if not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        pattern = self.pattern if pattern is None else pattern
        if pattern is None:
            raise ValueError("st.nn.SparseMultiheadAttention: no pattern: pass one to the constructor or to forward")
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3) if self.in_proj_bias is not None else (None, None, None)
        q = self._heads(F.linear(query, w_q, b_q))
        k = self._heads(F.linear(key, w_k, b_k))
        v = self._heads(F.linear(value, w_v, b_v))
        out = sparse_attention(q, k, v, pattern)  # (batch, heads, L, D)
        out = self.out_proj(out.transpose(1, 2).reshape(query.shape[0], query.shape[1], self.embed_dim))
        return (out if self.batch_first else out.transpose(0, 1)), None
