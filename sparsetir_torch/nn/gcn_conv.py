"""GCNConv: x' = D^-1/2 (A + I) D^-1/2 X W + b (Kipf and Welling)."""
from __future__ import annotations

import torch

from ..api import spmm
from ..graph import adjacency_weights, as_graph, gcn_norm
from ._common import check_features, glorot_


class GCNConv(torch.nn.Module):
    """PyG's GCNConv (parameters ``lin.weight`` (out, in) and ``bias``).

    ``cached`` is accepted for compatibility: the normalization of a graph
    without edge weights is always cached with the graph. With
    ``edge_weight`` (in edge_index order), or a weighted adjacency (values
    other than ones), it is recomputed per call and gradients reach the
    weights."""

    def __init__(self, in_channels: int, out_channels: int, improved: bool = False, cached: bool = False,
                 add_self_loops: bool = True, normalize: bool = True, bias: bool = True):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.improved, self.cached = improved, cached
        self.add_self_loops, self.normalize = add_self_loops, normalize
        self.lin = torch.nn.Linear(in_channels, out_channels, bias=False)
        self.bias = torch.nn.Parameter(torch.empty(out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        glorot_(self.lin.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, edge_index, edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        check_features("GCNConv", x, self.in_channels)
        graph = as_graph(edge_index, x.shape[0])
        if edge_weight is None:
            edge_weight = adjacency_weights(edge_index)  # a weighted adjacency's values (CSR order)
        elif not isinstance(edge_weight, torch.Tensor) or edge_weight.dim() != 1:
            got = f"shape {tuple(edge_weight.shape)}" if isinstance(edge_weight, torch.Tensor) else \
                type(edge_weight).__name__
            raise ValueError(f"st.nn.GCNConv: edge_weight must be 1-D, one weight per edge, got {got}")
        if self.normalize:
            graph, values = gcn_norm(graph, edge_weight, improved=self.improved,
                                     add_self_loops=self.add_self_loops, dtype=x.dtype)
        elif edge_weight is not None:
            values = graph.edge_values(edge_weight)
        else:
            values = graph.ones(x.dtype)
        h = self.lin(x)
        out = spmm(graph.with_values(values.to(h.dtype)), h)
        return out + self.bias if self.bias is not None else out

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels})"
