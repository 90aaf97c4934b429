"""SAGEConv: x'_i = W_l aggr_j x_j + W_r x_i (Hamilton et al.)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..api import spmm
from ..graph import adjacency_weights, as_graph
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
        weights = adjacency_weights(edge_index)
        source = F.relu(self.lin(x)) if self.project else x
        bias = self.lin_l.bias
        if self.aggr in ("mean", "sum") and self.out_channels < source.shape[1]:
            # A mean or sum commutes with the linear map (a row's mean weights
            # add up to 1, and a node without neighbours gets the bias either
            # way), so the narrower side is aggregated: fewer columns to gather.
            if self.root_weight and source is x:
                # Both maps read x: one GEMM x [W_l; W_r]^T (its bias on the
                # root half), and one for each gradient in the backward. Two
                # GEMMs whose inner size is out_channels (8 for a classifier)
                # run at a fraction of the speed of one of twice that size.
                weight = torch.cat([self.lin_l.weight, self.lin_r.weight])
                if bias is not None:
                    bias = torch.cat([torch.zeros_like(bias), bias])
                left, root = F.linear(x, weight, bias).split(self.out_channels, dim=1)
                out = self._aggregate(graph, weights, left) + root
            else:
                out = self._aggregate(graph, weights, F.linear(source, self.lin_l.weight))
                if bias is not None:
                    out = out + bias
                if self.root_weight:
                    out = out + self.lin_r(x)
        else:
            out = self.lin_l(self._aggregate(graph, weights, source))
            if self.root_weight and torch.is_autocast_enabled(x.device.type):
                out = out + self.lin_r(x)  # autocast casts out-of-place products only
            elif self.root_weight:
                # The root term accumulates into the GEMM's output in place
                # (the linear map's backward does not read its output).
                out = out.addmm_(x, self.lin_r.weight.t())
        return F.normalize(out, p=2.0, dim=-1) if self.normalize else out

    def _aggregate(self, graph, weights, source: torch.Tensor) -> torch.Tensor:
        # Unweighted, the values are the graph's cached ones: constant, so the
        # backward keeps their transpose (and, for the mean, the 1 / in-degree
        # weights) per graph instead of rebuilding them at every step. A
        # weighted adjacency's values weight the messages (the mean: their
        # weighted sum over the in-degree, as PyG's).
        values = graph.ones(source.dtype) if weights is None else weights.to(source.dtype)
        return spmm(graph.with_values(values), source, reduce=self.aggr)

    def __repr__(self):
        return f"{type(self).__name__}({self.in_channels}, {self.out_channels}, aggr={self.aggr})"
