"""ELL and hyb forms of a CSR SparseMatrix (SparseMatrix.ell / SparseMatrix.hyb).

The structure comes from the C++ runtime (torch.ops.sparsetir._csr_to_ell /
_csr_to_hyb, cached per graph; layout documented in
csrc/compiler/runtime/ell_conversion.h). Values move with one scatter through
`slot` (each CSR non-zero's flat position in the padded value array), so a
matrix whose values change (SparseMatrix.with_values, training) reuses the
structure and pays O(nnz) per call. Padding values are 0; padding indices
repeat the last real column of their ELL row (0 in an empty ELL row).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import torch


def scatter_values(values: torch.Tensor, slot: torch.Tensor, size: int, indptr: torch.Tensor,
                   group_rows: int = 1) -> torch.Tensor:
    """A flat array of `size` zeros with values[e] added at slot[e]: a CSR
    matrix's values (row pointer `indptr`) moved into a converted form, in
    parallel over groups of `group_rows` rows, the rows whose non-zeros may
    share a slot (duplicates; BSR's block rows). Differentiable with respect
    to `values`."""
    return torch.ops.sparsetir._scatter_by_slot(values, slot, indptr, size, group_rows)


@dataclass(frozen=True)
class EllMatrix:
    """A matrix in ELL form: every row in `width` slots."""

    indices: torch.Tensor  # (rows, width), the index dtype: the column of each slot
    values: torch.Tensor  # (rows, width), the matrix's dtype: 0 in padding
    slot: torch.Tensor  # (nnz,) int64: each CSR non-zero's position in indices.view(-1)
    shape: Tuple[int, int]

    @property
    def width(self) -> int:
        return self.indices.shape[1]

    def to_dense(self) -> torch.Tensor:
        rows = torch.arange(self.shape[0], device=self.indices.device).repeat_interleave(self.width)
        dense = self.values.new_zeros(self.shape)
        return dense.index_put_((rows, self.indices.reshape(-1).long()), self.values.reshape(-1), accumulate=True)


@dataclass(frozen=True)
class HybBucket:
    """One ELL bucket of a hyb matrix: `rows` ELL rows of `width` slots, all
    with columns in part `part`; views into the HybMatrix's flat arrays."""

    part: int
    width: int
    row_map: torch.Tensor  # (rows,): the matrix row of each ELL row
    indices: torch.Tensor  # (rows, width)
    values: torch.Tensor  # (rows, width)


@dataclass(frozen=True)
class HybMatrix:
    """A matrix in hyb(parts, max_width) form: columns split into `parts`
    ranges of ceil(columns / parts); within each, every row in the ELL bucket
    of the smallest power-of-two width holding its entries there, rows longer
    than max_width split into max_width pieces. Buckets are ordered by (part,
    width); the flat arrays concatenate them."""

    bucket_info: torch.Tensor  # (buckets, 3) int64: (part, width, ELL rows)
    row_map: torch.Tensor  # (ELL rows,), the index dtype: the matrix row of each ELL row
    indices: torch.Tensor  # (slots,), the index dtype: the column of each slot
    values: torch.Tensor  # (slots,), the matrix's dtype: 0 in padding
    slot: torch.Tensor  # (nnz,) int64: each CSR non-zero's position in indices
    shape: Tuple[int, int]
    parts: int
    max_width: int

    def buckets(self) -> List[HybBucket]:
        out, row, flat = [], 0, 0
        for part, width, rows in self.bucket_info.tolist():
            size = rows * width
            out.append(HybBucket(part, width, self.row_map[row:row + rows],
                                 self.indices[flat:flat + size].view(rows, width),
                                 self.values[flat:flat + size].view(rows, width)))
            row, flat = row + rows, flat + size
        return out

    def to_dense(self) -> torch.Tensor:
        widths = self.bucket_info[:, 1].repeat_interleave(self.bucket_info[:, 2])
        rows = self.row_map.long().repeat_interleave(widths, output_size=self.indices.shape[0])
        dense = self.values.new_zeros(self.shape)
        return dense.index_put_((rows, self.indices.long()), self.values, accumulate=True)
