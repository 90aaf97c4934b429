"""SAGEConv: x'_i = W_l aggr_j x_j + W_r x_i (Hamilton et al.)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..api import spmm
from ..graph import as_graph
from ._common import check_features

_AGGREGATIONS = ("mean", "max", "sum", "min")


class SAGEConv(torch.nn.Module):
    """PyG's SAGEConv (parameters ``lin_l.weight``, ``lin_l.bias``,
    ``lin_r.weight``, and ``lin.*`` with ``project``). ``aggr`` is "mean",
    "max", "min" or "sum"; a node without incoming edges aggregates zeros."""

    def __init__(self, in_channels: int, out_channels: int, aggr: str = "mean", normalize: bool = False,
                 root_weight: bool = True, project: bool = False, bias: bool = True):
        super().__init__()
        if aggr not in _AGGREGATIONS:
            raise ValueError(f"st.nn.SAGEConv: aggr must be one of {_AGGREGATIONS}, got {aggr!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.aggr, self.normalize, self.root_weight, self.project = aggr, normalize, root_weight, project
        if project:
            self.lin = torch.nn.Linear(in_channels, in_channels, bias=True)
        self.lin_l = torch.nn.Linear(in_channels, out_channels, bias=bias)
        if root_weight:
            self.lin_r = torch.nn.Linear(in_channels, out_channels, bias=False)

    def reset_parameters(self) -> None:
        for name in ("lin", "lin_l", "lin_r"):
            if hasattr(self, name):
                getattr(self, name).reset_parameters()

    def forward(self, x: torch.Tensor, edge_index) -> torch.Tensor:
        check_features("SAGEConv", x, self.in_channels)
        graph = as_graph(edge_index, x.shape[0])
        source = F.relu(self.lin(x)) if self.project else x
        adj = graph.with_values(graph.ones(source.dtype))
        if self.aggr in ("mean", "sum") and self.out_channels < source.shape[1]:
            # A mean or sum commutes with the linear map (a row's mean weights
            # add up to 1, and a node without neighbours gets the bias either
            # way), so the narrower side is aggregated: fewer columns to gather.
            out = spmm(adj, F.linear(source, self.lin_l.weight), reduce=self.aggr)
            if self.lin_l.bias is not None:
                out = out + self.lin_l.bias
        else:
            out = self.lin_l(spmm(adj, source, reduce=self.aggr))
        if self.root_weight:
            out = out + self.lin_r(x)
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, aggr={self.aggr})"
