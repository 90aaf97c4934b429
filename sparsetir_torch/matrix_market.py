"""A strict Matrix Market reader (coordinate format, optionally gzip-compressed).

Returns CSR component tensors; rejects malformed files (bad header, indices out
of range, wrong entry count) with a ValueError naming the file and the line.
"""
from __future__ import annotations

import gzip
import io
from dataclasses import dataclass

import numpy as np
import torch

from .torch_warnings import quiet_sparse_warnings


@dataclass
class CsrMatrix:
    """A CSR matrix as torch tensors (indptr, indices int64; values float64)."""

    indptr: torch.Tensor
    indices: torch.Tensor
    values: torch.Tensor
    shape: tuple

    @property
    def nnz(self) -> int:
        return int(self.indices.numel())

    def to_torch(self, dtype=torch.float32, index_dtype=torch.int64) -> torch.Tensor:
        with quiet_sparse_warnings():
            return torch.sparse_csr_tensor(
                self.indptr.to(index_dtype), self.indices.to(index_dtype), self.values.to(dtype), self.shape
            )


def read_matrix_market(path: str) -> CsrMatrix:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    if not lines or not lines[0].lower().startswith("%%matrixmarket"):
        raise ValueError(f"{path}:1: not a Matrix Market file (missing '%%MatrixMarket' header)")
    header = lines[0].lower().split()
    if len(header) < 5 or header[1] != "matrix" or header[2] != "coordinate":
        raise ValueError(f"{path}:1: only 'matrix coordinate' files are supported, got {lines[0]!r}")
    field, symmetry = header[3], header[4]
    if field not in ("real", "integer", "pattern"):
        raise ValueError(f"{path}:1: unsupported field {field!r}")
    if symmetry != "general":
        raise ValueError(f"{path}:1: unsupported symmetry {symmetry!r} (expected 'general')")
    line_no = 1
    while line_no < len(lines) and (lines[line_no].startswith("%") or not lines[line_no].strip()):
        line_no += 1
    if line_no >= len(lines):
        raise ValueError(f"{path}: missing the size line")
    try:
        rows, cols, nnz = (int(x) for x in lines[line_no].split())
    except ValueError:
        raise ValueError(f"{path}:{line_no + 1}: malformed size line {lines[line_no]!r}") from None
    body = "\n".join(lines[line_no + 1:])
    width = 2 if field == "pattern" else 3
    data = np.loadtxt(io.StringIO(body), dtype=np.float64, ndmin=2) if nnz else np.zeros((0, width))
    if data.shape[0] != nnz or (nnz and data.shape[1] != width):
        raise ValueError(f"{path}: expected {nnz} entries of {width} numbers, found {data.shape[0]} lines")
    r = data[:, 0].astype(np.int64) - 1
    c = data[:, 1].astype(np.int64) - 1
    bad = np.nonzero((r < 0) | (r >= rows) | (c < 0) | (c >= cols))[0]
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{path}:{line_no + 2 + k}: index out of range in entry {k + 1}: ({r[k] + 1}, {c[k] + 1}) "
            f"for a {rows} x {cols} matrix (indices are 1-based)"
        )
    values = np.ones(nnz) if field == "pattern" else data[:, 2]
    order = np.lexsort((c, r))
    r, c, values = r[order], c[order], values[order]
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.add.at(indptr, r + 1, 1)
    indptr = np.cumsum(indptr)
    return CsrMatrix(torch.from_numpy(indptr), torch.from_numpy(c.copy()), torch.from_numpy(values.copy()), (rows, cols))
