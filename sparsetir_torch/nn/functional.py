"""st.nn.functional: the functional forms of st.nn's layers that are not
graph layers. For now, dropout.

torch's dropout on the CPU draws its mask with ``bernoulli_``, one element at
a time (about 13 ns each on the AMD host of the README's figures), then
divides and multiplies in two more passes and keeps the mask, of the input's
size, for the backward. In a two-layer GNN on a 36,692-node graph that is 28
ms of a 66 ms training epoch, more than the graph layers cost together.
``dropout`` here draws the mask from a counter-based generator (Philox4x32-10
keyed by a seed drawn from torch's generator, so ``torch.manual_seed`` makes
runs repeatable), vectorized for the CPU's instruction set and applied in the
same pass; the backward draws the same mask again from the seed, so nothing of
the input's size is kept. The masks differ from torch's (another generator);
their distribution is the same: each element kept with probability 1 - p,
independently, and scaled by 1 / (1 - p).
"""
from __future__ import annotations

import numbers

import torch
import torch.nn.functional as F

from ..ops import ops

_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _check_p(where: str, p) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{where}: argument 'p' must be a probability in [0, 1], got {p!r}")
    return float(p)


def dropout(input: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """``torch.nn.functional.dropout``'s contract (each element zeroed with
    probability p, the others scaled by 1 / (1 - p); the input itself when not
    training or p = 0), with one pass and no saved mask on the CPU
    (sparsetir::dropout). On other devices, torch's own fused dropout runs.

    ``generator`` draws the seed (torch's default CPU generator if None)."""
    p = _check_p("st.nn.functional.dropout", p)
    if not isinstance(input, torch.Tensor):
        raise TypeError(f"st.nn.functional.dropout: argument 'input' must be a tensor, got {type(input).__name__}")
    if not training or p == 0.0:
        return input
    if input.device.type != "cpu":
        if generator is not None:
            raise ValueError(f"st.nn.functional.dropout: argument 'generator' is supported for CPU tensors only; "
                             f"'input' is on {input.device}")
        return F.dropout(input, p, training=True, inplace=inplace)
    seed = torch.randint(_INT64_MIN, _INT64_MAX, (), dtype=torch.int64, generator=generator)
    out = ops.dropout(input, p, seed)
    return input.copy_(out) if inplace else out


class Dropout(torch.nn.Module):
    """``torch.nn.Dropout`` on st.nn.functional.dropout: the same arguments,
    attributes and behaviour in train and eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        self.p = _check_p("st.nn.Dropout", p)
        self.inplace = inplace

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
