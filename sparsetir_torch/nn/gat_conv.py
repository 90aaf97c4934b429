"""GATConv: attention over each node's incoming edges (Velickovic et al.).

alpha_ij = softmax_j(leaky_relu(a_dst . W x_i + a_src . W x_j)) per head, then
x'_i = sum_j alpha_ij W x_j, heads concatenated or averaged. The scores, the
softmax over each node's incoming edges and the weighted sum are one kernel
for all heads (sparsetir::gat_attention). With attention dropout in training
the coefficients are dropped between the softmax and the sum, so that path
runs three kernels, each for all heads: an element-wise SDDMM (the scores),
st.edge_softmax and a multi-head SpMM. CUDA tensors take that path too: the
fused kernel's CUDA recipe runs a whole row in one thread, where the three
kernels spread a row's features over a group of lanes.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..graph import as_graph
from ..ops import ops
from ._common import check_features, glorot_
from .functional import dropout


class GATConv(torch.nn.Module):
    """PyG's GATConv (parameters ``lin.weight`` (heads * out, in),
    ``att_src`` and ``att_dst`` (1, heads, out), ``bias``, ``res.weight`` with
    ``residual``). Self loops: existing ones are removed and one is added per
    node, as in PyG. Edge features (``edge_dim``) are not supported."""

    def __init__(self, in_channels: int, out_channels: int, heads: int = 1, concat: bool = True,
                 negative_slope: float = 0.2, dropout: float = 0.0, add_self_loops: bool = True,
                 edge_dim: int | None = None, fill_value="mean", bias: bool = True, residual: bool = False):
        super().__init__()
        if edge_dim is not None:
            raise ValueError("st.nn.GATConv: edge features (edge_dim) are not supported")
        if isinstance(in_channels, (tuple, list)):
            raise ValueError("st.nn.GATConv: bipartite in_channels (source, target) are not supported")
        if heads < 1:
            raise ValueError(f"st.nn.GATConv: heads must be >= 1, got {heads}")
        self.in_channels, self.out_channels, self.heads, self.concat = in_channels, out_channels, heads, concat
        self.negative_slope, self.dropout, self.add_self_loops = negative_slope, dropout, add_self_loops
        self.fill_value = fill_value
        total = heads * out_channels if concat else out_channels
        self.lin = torch.nn.Linear(in_channels, heads * out_channels, bias=False)
        self.att_src = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.att_dst = torch.nn.Parameter(torch.empty(1, heads, out_channels))
        self.res = torch.nn.Linear(in_channels, total, bias=False) if residual else None
        self.bias = torch.nn.Parameter(torch.empty(total)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        glorot_(self.lin.weight)
        glorot_(self.att_src)
        glorot_(self.att_dst)
        if self.res is not None:
            glorot_(self.res.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, edge_index) -> torch.Tensor:
        check_features("GATConv", x, self.in_channels)
        graph = as_graph(edge_index, x.shape[0])
        if self.add_self_loops:
            graph = graph.with_self_loops(remaining=False).graph
        H, C = self.heads, self.out_channels
        h = self.lin(x).view(-1, H, C)
        alpha_src = (h * self.att_src).sum(-1)  # (N, H)
        alpha_dst = (h * self.att_dst).sum(-1)
        # On a GPU the three kernels, whose recipes spread a row over lanes, run.
        if (self.dropout > 0 and self.training) or h.is_cuda:
            scores = ops.sddmm(graph.indptr, graph.indices, None, alpha_dst, alpha_src, "add")  # (nnz, H)
            alpha = ops.edge_softmax(graph.indptr, graph.indices, F.leaky_relu(scores, self.negative_slope))
            alpha = dropout(alpha, p=self.dropout, training=True)  # torch's on a GPU
            out = ops.spmm(graph.indptr, graph.indices, alpha, h, "sum")  # (N, H, C)
        else:
            out = ops.gat_attention(graph.indptr, graph.indices, alpha_dst, alpha_src, h, self.negative_slope)
        out = out.reshape(-1, H * C) if self.concat else out.mean(dim=1)
        if self.res is not None:
            out = out + self.res(x)
        return out + self.bias if self.bias is not None else out

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, heads={self.heads})"

