"""The Python API of the operators: st.spmm, st.sddmm, st.bsrmm, st.sparse_attention, st.edge_softmax.

Sparse arguments may be torch sparse CSR, COO (coalesced as needed) or BSR
tensors, or st.SparseMatrix handles; they are unpacked into the component
tensors the torch.ops.sparsetir operators take. Non-contiguous dense inputs
are made contiguous by the operators.
"""
from __future__ import annotations

import torch

from . import _C, tuning
from .ops import ops
from .sparse_matrix import SparseMatrix, as_sparse_matrix
from .torch_warnings import quiet_sparse_warnings


def _check_dense(name: str, what: str, t, dim: int) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{name}: argument '{what}' must be a tensor, got {type(t).__name__}")
    if t.layout != torch.strided:
        raise ValueError(f"{name}: argument '{what}' must be a dense tensor, got layout {t.layout}")
    if dim >= 0 and t.dim() != dim:
        raise ValueError(f"{name}: argument '{what}' must be {dim}-D, got shape {tuple(t.shape)}")


def spmm(A, B: torch.Tensor, reduce: str = "sum") -> torch.Tensor:
    """A @ B for sparse A (m x n) and dense B (n x K); reduce in {"sum", "mean",
    "max", "min"} combines the products of each row (rows without non-zeros
    give 0). A block-sparse A (BSR) runs the BSR kernel (sum only).

    Heads: B (n, heads, D) gives (m, heads, D). A's values are shared by the
    heads, or, for a multi-head A (values (nnz, heads), e.g.
    ``A.with_values(st.edge_softmax(A, scores))``), each head has its own and
    one kernel runs them all (sum and mean)."""
    A = as_sparse_matrix(A, "st.spmm: argument 'A'")
    _check_dense("st.spmm", "B", B, -1)
    if B.dim() not in (2, 3) or (A.heads is not None and B.dim() != 3):
        expected = "3-D (n, heads, D) for a multi-head A" if A.heads is not None else "2-D (n, K) or 3-D (n, heads, D)"
        raise ValueError(f"st.spmm: argument 'B' must be {expected}, got shape {tuple(B.shape)}")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"st.spmm: A {A.shape} and B {tuple(B.shape)} cannot be multiplied "
                         f"(A has {A.shape[1]} columns, B {B.shape[0]} rows)")
    if A.is_block:
        if reduce != "sum":
            raise ValueError(f"st.spmm: a block-sparse A supports reduce='sum' only, got {reduce!r}")
        if B.dim() != 2:
            raise ValueError(f"st.spmm: a block-sparse A takes a 2-D B, got shape {tuple(B.shape)}")
        return ops.bsrmm(A.indptr, A.indices, A.values, B)
    if B.dim() == 3:
        if A.heads is None:
            # Shared values: the heads' features side by side are one 2-D SpMM.
            n, heads, d = B.shape
            return spmm(A, B.reshape(n, heads * d), reduce).view(A.shape[0], heads, d)
        return ops.spmm(A.indptr, A.indices, A.values, B, reduce)
    if reduce == "sum":
        # The format chosen for this graph (tuning.py); inside torch.compile
        # only a choice made earlier in eager mode is used. Every format runs
        # through a torch.ops operator, so each is traceable.
        # Formats are chosen among CPU kernels; tensors elsewhere (CUDA, meta) run CSR.
        if A.values.dtype == B.dtype and B.device.type == "cpu" and not torch.compiler.is_compiling():
            choice = tuning.choose(A, "spmm", B.shape[1], B.dtype)  # made once per graph, K and dtype
        else:
            choice = A._derived.get(("choice", "spmm", B.shape[1], B.dtype))
        if choice is not None:
            return tuning.run_choice(A, B, choice)
    return ops.spmm(A.indptr, A.indices, A.values, B, reduce)


def sddmm(A, X: torch.Tensor, Y: torch.Tensor, op: str = "dot") -> torch.Tensor:
    """A value per non-zero (i, j) of A from row i of X and row j of Y, times
    A[i, j]; a sparse CSR tensor with A's pattern:

    - op="dot": the sampled product A * (X @ Y^T), dot(X[i], Y[j]); with X
      (m, heads, D) and Y (n, heads, D), one dot product per head (a hybrid
      CSR tensor of shape (m, n, heads));
    - op="add" / "mul": X[i] + Y[j] / X[i] * Y[j] element-wise, X (m, *F) and
      Y (n, *F) (a hybrid CSR tensor of shape (m, n, *F) when F is not empty),
      e.g. a GAT layer's scores a_dst[i] + a_src[j] per head."""
    A = as_sparse_matrix(A, "st.sddmm: argument 'A'")
    if op not in ("dot", "add", "mul"):
        raise ValueError(f"st.sddmm: argument 'op' must be one of 'dot', 'add', 'mul', got {op!r}")
    _check_dense("st.sddmm", "X", X, -1)
    _check_dense("st.sddmm", "Y", Y, -1)
    if A.is_block:
        raise ValueError("st.sddmm: A must be CSR or COO, not block-sparse")
    if X.dim() == 0 or Y.dim() == 0 or X.shape[0] != A.shape[0] or Y.shape[0] != A.shape[1]:
        raise ValueError(f"st.sddmm: X {tuple(X.shape)} and Y {tuple(Y.shape)} must have A's rows ({A.shape[0]}) "
                         f"and columns ({A.shape[1]}) as their rows")
    values = ops.sddmm(A.indptr, A.indices, A.values, X, Y, op)
    with quiet_sparse_warnings():
        return torch.sparse_csr_tensor(A.indptr, A.indices, values, A.shape + tuple(values.shape[1:]))


def bsrmm(A, B: torch.Tensor) -> torch.Tensor:
    """A @ B for a block-sparse A (torch BSR tensor or a block SparseMatrix)."""
    A = as_sparse_matrix(A, "st.bsrmm: argument 'A'")
    _check_dense("st.bsrmm", "B", B, 2)
    if not A.is_block:
        raise ValueError("st.bsrmm: A must be block-sparse (torch.sparse_bsr or a SparseMatrix with 3-D values)")
    if A.shape[1] != B.shape[0]:
        raise ValueError(f"st.bsrmm: A {A.shape} and B {tuple(B.shape)} cannot be multiplied")
    return ops.bsrmm(A.indptr, A.indices, A.values, B)


def edge_softmax(A, scores: torch.Tensor) -> torch.Tensor:
    """The softmax of per-edge scores over each row's non-zeros of A: for the
    non-zero e = (i, j), exp(scores[e]) / sum of exp(scores[e']) over row i's
    non-zeros e' (a GAT layer's attention coefficients, with rows as the
    destination nodes). scores is (nnz,) or (nnz, heads), in the order of A's
    CSR non-zeros (``A.indices``); the result has its shape. Differentiable
    (twice) with respect to scores.

    ``torch.sparse.softmax(A, 1)`` of a CSR matrix A is
    ``st.edge_softmax(A, A.values())`` on A's pattern."""
    A = as_sparse_matrix(A, "st.edge_softmax: argument 'A'")
    _check_dense("st.edge_softmax", "scores", scores, -1)
    if A.is_block:
        raise ValueError("st.edge_softmax: A must be CSR or COO, not block-sparse")
    if not torch.compiler.is_compiling():
        # The operator reads no column, so it cannot check them; a column out of
        # A's range is a malformed A all the same (cached per graph).
        _C.check_csr("st.edge_softmax", A.indptr, A.indices, A.shape[1], f"the columns of A's shape {A.shape}")
    return ops.edge_softmax(A.indptr, A.indices, scores)


def gat_attention(A, a_dst: torch.Tensor, a_src: torch.Tensor, x: torch.Tensor,
                  negative_slope: float = 0.2) -> torch.Tensor:
    """A GAT layer's attention and aggregation in one kernel, every head at
    once: for each non-zero (i, j) of A and head h, the score
    leaky_relu(a_dst[i, h] + a_src[j, h]) is softmaxed over row i's non-zeros
    and weighs x[j, h, :] in row i's sum. a_dst (m, heads), a_src (n, heads),
    x (n, heads, C); returns (m, heads, C). Rows are the destination nodes;
    A's values are not used (its pattern is the graph). Differentiable with
    respect to a_dst, a_src and x.

    The same as ``st.spmm(A.with_values(st.edge_softmax(A, F.leaky_relu(
    st.sddmm(A1, a_dst, a_src, op="add").values(), negative_slope))), x)``
    with A1 A's pattern with ones, in one pass over the graph."""
    A = as_sparse_matrix(A, "st.gat_attention: argument 'A'")
    for name, t in (("a_dst", a_dst), ("a_src", a_src), ("x", x)):
        _check_dense("st.gat_attention", name, t, 3 if name == "x" else 2)
    if A.is_block:
        raise ValueError("st.gat_attention: A must be CSR or COO, not block-sparse")
    if a_dst.shape[0] != A.shape[0] or a_src.shape[0] != A.shape[1] or x.shape[0] != A.shape[1]:
        raise ValueError(f"st.gat_attention: a_dst {tuple(a_dst.shape)} must have A's rows ({A.shape[0]}) and "
                         f"a_src {tuple(a_src.shape)}, x {tuple(x.shape)} A's columns ({A.shape[1]}) as their rows")
    return ops.gat_attention(A.indptr, A.indices, a_dst, a_src, x, float(negative_slope))


def _mask_matrix(mask, L: int, S: int, device: torch.device) -> SparseMatrix:
    if isinstance(mask, torch.Tensor) and mask.layout == torch.strided:
        if mask.dtype != torch.bool or mask.shape != (L, S):
            raise ValueError(f"st.sparse_attention: a dense mask must be a bool tensor of shape ({L}, {S}), "
                             f"got {mask.dtype} {tuple(mask.shape)}")
        # Moved like a sparse pattern: a dense mask is a pattern too.
        return SparseMatrix.from_dense(mask.to(torch.float32)).to(device)
    m = as_sparse_matrix(mask, "st.sparse_attention: argument 'mask'")
    if m.shape != (L, S):
        raise ValueError(f"st.sparse_attention: mask has shape {m.shape}, expected (L, S) = ({L}, {S})")
    if m.is_block:
        m = _element_pattern(m)
    if m.shape != (L, S):
        raise ValueError(f"st.sparse_attention: mask has shape {m.shape}, expected (L, S) = ({L}, {S})")
    # A pattern built on the CPU serves inputs on a GPU too (moved once, kept with the pattern).
    return m.to(device)


def _element_pattern(m: SparseMatrix) -> SparseMatrix:
    """The element-level CSR pattern of a block-sparse mask: every position of
    a stored block is allowed (built once, cached on the matrix)."""
    cached = m._derived.get("element_pattern")
    if cached is not None:
        return cached
    nnzb, bh, bw = m.values.shape
    device = m.indptr.device
    block_rows = torch.repeat_interleave(torch.arange(m.indptr.shape[0] - 1, device=device),
                                         (m.indptr[1:] - m.indptr[:-1]).long(), output_size=nnzb)
    r = torch.arange(bh, device=device).view(1, bh, 1).expand(nnzb, bh, bw)
    c = torch.arange(bw, device=device).view(1, 1, bw).expand(nnzb, bh, bw)
    rows = (block_rows.view(nnzb, 1, 1) * bh + r).reshape(-1)
    cols = (m.indices.long().view(nnzb, 1, 1) * bw + c).reshape(-1)
    order = torch.argsort(rows * m.shape[1] + cols)
    rows, cols = rows[order], cols[order]
    indptr = torch.zeros(m.shape[0] + 1, dtype=torch.int64, device=device)
    indptr[1:] = torch.bincount(rows, minlength=m.shape[0]).cumsum(0)
    pattern = SparseMatrix(indptr.to(m.indptr.dtype), cols.to(m.indices.dtype),
                           torch.ones(cols.shape[0], device=device), m.shape)
    m._derived["element_pattern"] = pattern
    return pattern


def sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask, scale: float | None = None) -> torch.Tensor:
    """Attention restricted to a sparse pattern: for each query row i, softmax of
    scale * q_i . k_j over the allowed j (the non-zeros of row i of `mask`),
    times v. q is (..., L, D), k and v (..., S, D); leading dimensions are batch
    and heads. scale defaults to 1/sqrt(D); a row with no allowed j gives zeros."""
    for what, t in (("q", q), ("k", k), ("v", v)):
        _check_dense("st.sparse_attention", what, t, -1)
    if q.dim() < 2 or k.dim() < 2:
        raise ValueError("st.sparse_attention: q, k and v must be at least 2-D (..., L, D)")
    m = _mask_matrix(mask, q.shape[-2], k.shape[-2], q.device)
    return ops.sparse_attention(m.indptr, m.indices, q, k, v, scale)


def reorder(A):
    """A relabelled in reverse Cuthill-McKee order: (R, order) with
    R = P A P^T, R[i, j] = A[order[i], order[j]] (order[new] = old).

    For graphs stored in an arbitrary vertex order (meshes, road networks),
    each row's columns then lie near the row, and SpMM gathers dense rows its
    neighbouring rows have just loaded: relabel once, permute the features
    once (X[order]), and work in the new order, since
    spmm(R, X[order]) == spmm(A, X)[order]. Neighbours are those of A + A^T.
    The values follow through index_select, so gradients reach A's values."""
    A = as_sparse_matrix(A, "st.reorder: argument 'A'")
    if A.is_block:
        raise ValueError("st.reorder: a block-sparse (BSR) A cannot be relabelled; pass its CSR form")
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"st.reorder: A must be square (its rows and columns are relabelled alike), "
                         f"got shape {A.shape}")
    order, indptr, indices, source = ops._csr_rcm(A.indptr, A.indices)
    return SparseMatrix(indptr, indices, A.values.index_select(0, source), A.shape), order
