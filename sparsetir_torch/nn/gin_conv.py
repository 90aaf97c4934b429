"""GINConv: x'_i = nn((1 + eps) x_i + sum_j x_j) (Xu et al.)."""
from __future__ import annotations

import torch

from ..api import spmm
from ..graph import adjacency_weights, as_graph
from ._common import check_features


class GINConv(torch.nn.Module):
    """PyG's GINConv (parameters ``eps`` and ``nn.*``): ``nn`` is any module
    mapping the summed features; ``eps`` is trained with ``train_eps``."""

    def __init__(self, nn: torch.nn.Module, eps: float = 0.0, train_eps: bool = False):
        super().__init__()
        self.nn = nn
        self.initial_eps = eps
        if train_eps:
            self.eps = torch.nn.Parameter(torch.tensor([float(eps)]))
        else:
            self.register_buffer("eps", torch.tensor([float(eps)]))

    def reset_parameters(self) -> None:
        if hasattr(self.nn, "reset_parameters"):
            self.nn.reset_parameters()
        with torch.no_grad():
            self.eps.fill_(self.initial_eps)

    def forward(self, x: torch.Tensor, edge_index) -> torch.Tensor:
        check_features("GINConv", x, -1)
        graph = as_graph(edge_index, x.shape[0])
        weights = adjacency_weights(edge_index)
        values = graph.ones(x.dtype) if weights is None else weights.to(x.dtype)
        return self.nn(spmm(graph.with_values(values), x) + (1 + self.eps.to(x.dtype)) * x)

    def __repr__(self):
        return f"{type(self).__name__}(nn={self.nn})"
