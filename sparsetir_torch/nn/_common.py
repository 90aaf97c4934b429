"""What the layers share: argument checks and PyG's weight initializers."""
from __future__ import annotations

import math

import torch


def check_features(layer: str, x, in_channels: int) -> None:
    if isinstance(x, (tuple, list)):
        raise ValueError(f"st.nn.{layer}: bipartite (source, target) feature pairs are not supported; "
                         f"pass one (num_nodes, {in_channels}) tensor")
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"st.nn.{layer}: argument 'x' must be a 2-D (num_nodes, in_channels) tensor, got "
                         f"{tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__}")
    if in_channels > 0 and x.shape[1] != in_channels:
        raise ValueError(f"st.nn.{layer}: argument 'x' has {x.shape[1]} features, the layer expects "
                         f"in_channels={in_channels}")


def glorot_(t: torch.Tensor) -> None:
    """PyG's glorot: uniform in +-sqrt(6 / (fan_in + fan_out)) over the last two dimensions."""
    bound = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
    with torch.no_grad():
        t.uniform_(-bound, bound)
