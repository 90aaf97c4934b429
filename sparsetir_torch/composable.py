"""SpMM on a hyb decomposition, compiled by format_decompose.

The kernels are not written by hand: each ELL bucket's kernel is the compute
part of ``format_decompose(kernels/csrmm.py, [kernels/formats/ell_rows.py])``,
specialized on the feature width and the bucket width and scheduled here. The
preprocess part is replaced by the runtime's conversion (SparseMatrix.hyb:
structure once per graph, values through their slots), as the design lifts
data movement out of the kernel. The buckets add into one output in turn
(ordered accumulation across buckets and column parts), or, when the
buckets partition the rows, each writes its own rows (format_decompose's
disjoint form). Within a bucket the ELL rows run in parallel; a bucket whose
rows repeat (a long row split in pieces) uses the atomic kernel lower_atomic
makes.
"""
from __future__ import annotations

import threading

import torch

from .compiler import Kernel, compile, parse
from .decompose import FormatRewriteRule, compute_part, format_decompose
from .kernels import kernel_script
from .ops import ops
from .recipes import PREFETCH_DISTANCE, csrmm_plan, vectorize_features
from .schedule import Schedule

_KERNELS: dict = {}
_LOCK = threading.Lock()


class Mode:
    """How a bucket's kernel writes the output."""
    OVERWRITE = "overwrite"  # the buckets partition the rows: each ELL row initializes and writes its row
    ADD = "add"              # column parts share rows: each adds into an output zeroed before
    ATOMIC_ADD = "atomic"    # split long rows share rows within the bucket too: atomic adds


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")  # torch.float32 -> "float32", as scripts spell it


def _bucket_function(dtype: str, idtype: str, mode: str):
    replace = {"float32": dtype, "int32": idtype}
    rule = FormatRewriteRule("ell", kernel_script("formats/ell_rows", **replace))
    csrmm = parse(kernel_script("csrmm", **replace))
    return compute_part(format_decompose(csrmm, [rule], disjoint=mode == Mode.OVERWRITE), with_init=False)


# Buckets up to this width get a kernel specialized (and fully unrolled) on
# their width; wider ones share one kernel with the width as an argument, so a
# graph with many bucket widths compiles few kernels.
SPECIALIZED_WIDTH = 8


def _schedule(dtype: str, idtype: str, feat_size: int, width, mode: str) -> Schedule:
    sch = Schedule(_bucket_function(dtype, idtype, mode))
    if mode == Mode.ADD:
        # The runtime knows this bucket's rows are distinct: no two ELL rows add
        # into one output row, so the accumulation needs no atomics.
        sch.annotate("csrmm_ell", "atomic", False)
    sch.specialize(feat_size=feat_size)
    if width is not None:
        sch.specialize(width_ell=width)
    sch.lower_sparse_iter()
    o, i, j, k = sch.get_loops("csrmm_ell")
    element_bytes = 8 if dtype == "float64" else 4  # 16-bit values accumulate in float32
    vectorize_features(sch, k, feat_size, element_bytes)
    if csrmm_plan(feat_size, element_bytes)["output_row_in_registers"]:
        # The ELL row's output row in registers; for an atomic bucket it sums
        # privately and is published with one atomic add per element.
        sch.cache_write(i, "C", "local")
    if width is not None:
        sch.unroll(j)
    sch.prefetch(j, "B", PREFETCH_DISTANCE)  # the slots ahead run on into the next ELL rows
    sch.parallel(o)
    return sch


def bucket_kernel(dtype: torch.dtype, index_dtype: torch.dtype, feat_size: int, width: int, mode: str) -> Kernel:
    """The compiled kernel of one ELL bucket (cached per process; on disk by content)."""
    width = width if width <= SPECIALIZED_WIDTH else None
    key = (dtype, index_dtype, feat_size, width, mode)
    with _LOCK:
        kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = compile(_schedule(_dtype_name(dtype), _dtype_name(index_dtype), feat_size, width, mode))
        with _LOCK:
            _KERNELS[key] = kernel
    return kernel


def _bucket_plan(A, parts: int, max_width: int):
    """(buckets, empty rows or None): per bucket (slot offset, ELL rows, width,
    mode, row map, indices), cached with the structure. The same views every
    call: the kernels check a structure array once per tensor, not per call.
    Empty rows is set when the buckets partition the rows (one part, no row
    split): the buckets then overwrite their rows and only those are zeroed."""
    key = ("hyb_plan", parts, max_width)
    plan = A._derived.get(key)
    if plan is None:
        bucket_info, all_rows, all_indices, _ = A.hyb_structure(parts, max_width)
        buckets, flat, row, split = [], 0, 0, []
        for _, width, rows in bucket_info.tolist():
            row_map = all_rows[row:row + rows]
            split.append(bool(rows > 1 and (row_map[1:] == row_map[:-1]).any()))
            buckets.append([flat, rows, width, None, row_map, all_indices[flat:flat + rows * width]])
            flat, row = flat + rows * width, row + rows
        partition = parts == 1 and not any(split)
        for bucket, repeats in zip(buckets, split):
            bucket[3] = Mode.OVERWRITE if partition else Mode.ATOMIC_ADD if repeats else Mode.ADD
        empty = None
        if partition:
            empty = torch.nonzero(A.indptr[1:] == A.indptr[:-1]).view(-1)
        plan = ([tuple(b) for b in buckets], empty)
        A._derived[key] = plan
    return plan


def _hyb_values(A, parts: int, max_width: int) -> torch.Tensor:
    """The flat padded values of the hyb form, re-scattered only when A's values change."""
    return A.values_derived(("hyb_values", parts, max_width), lambda _: A.hyb(parts, max_width).values)


def _hyb_forward(A, flat_values: torch.Tensor, B: torch.Tensor, parts: int, max_width: int) -> torch.Tensor:
    m, n = A.shape
    K = B.shape[1]
    buckets, empty = _bucket_plan(A, parts, max_width)
    if empty is None:
        C = torch.zeros(m, K, dtype=B.dtype)  # the buckets add into it
    else:
        C = torch.empty(m, K, dtype=B.dtype)  # the buckets write their rows; the empty ones are 0
        C.index_fill_(0, empty, 0)
    B = B.contiguous()
    for flat, rows, width, mode, row_map, indices in buckets:
        kernel = bucket_kernel(B.dtype, A.indices.dtype, K, width, mode)
        kernel(b=B, c=C, m=m, n=n, feat_size=K, a_ell=flat_values[flat:flat + rows * width], row_map_ell=row_map,
               indices_ell=indices, rows_ell=rows, width_ell=width)
    return C


class _HybSpmm(torch.autograd.Function):
    """Forward on the hyb form; backward with the CSR operators (the
    transposed SpMM and the SDDMM of the op's own autograd)."""

    @staticmethod
    def forward(ctx, values, B, A, parts, max_width):
        flat = _hyb_values(A, parts, max_width)
        ctx.A = A
        ctx.save_for_backward(values, B)
        return _hyb_forward(A, flat, B, parts, max_width)

    @staticmethod
    def backward(ctx, grad):
        values, B = ctx.saved_tensors
        A = ctx.A
        grad = grad.contiguous()
        grad_values = grad_B = None
        if ctx.needs_input_grad[0]:
            grad_values = ops.sddmm(A.indptr, A.indices, None, grad, B)
        if ctx.needs_input_grad[1]:
            t_indptr, t_indices, perm = A.transpose_structure()
            grad_B = ops.spmm(t_indptr, t_indices, values.index_select(0, perm), grad, "sum")
        return grad_values, grad_B, None, None, None


def hyb_spmm(A, B: torch.Tensor, parts: int, max_width: int) -> torch.Tensor:
    """A @ B with A stored as hyb(parts, max_width) (see SparseMatrix.hyb)."""
    if B.dim() != 2 or B.shape[0] != A.shape[1]:
        raise ValueError(f"hyb_spmm: B must have shape ({A.shape[1]}, K), got {tuple(B.shape)}")
    if B.dtype != A.values.dtype:
        raise ValueError(f"hyb_spmm: B has dtype {B.dtype} but A's values are {A.values.dtype}")
    if A.values.requires_grad or B.requires_grad:
        return _HybSpmm.apply(A.values, B, A, parts, max_width)
    return _hyb_forward(A, _hyb_values(A, parts, max_width), B, parts, max_width)
