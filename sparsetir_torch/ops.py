"""The operator library: torch.ops.sparsetir.{spmm, sddmm, bsrmm, sparse_attention, ...}.

The schemas and CPU kernels are registered in C++ (csrc/ops/op_registry.cc);
this module adds what torch.compile needs: a fake (meta) implementation of
every operator. Their autograd kernels are C++ too (csrc/ops/autograd_*.cc,
see "autograd" below), built from the same operators (SpMM backward = SpMM on
the cached transpose + SDDMM).
"""
from __future__ import annotations

import torch

from . import _C
from .kernels import KERNELS_DIR

_C.set_kernel_directory(KERNELS_DIR)

ops = torch.ops.sparsetir


# --------------------------------------------------------------------------- fake implementations
# They also run when a meta tensor is mixed with CPU tensors (the dispatcher
# then picks the meta kernel), so they check that all inputs share a device.


def _check_devices(op: str, **tensors) -> None:
    devices = {name: t.device for name, t in tensors.items() if t is not None}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"'{name}' on {device}" for name, device in devices.items())
        raise ValueError(f"{op}: all tensor arguments must be on one device, got {listing}")


@torch.library.register_fake("sparsetir::spmm")
def _spmm_fake(indptr, indices, values, dense, reduce="sum"):
    _check_devices("sparsetir.spmm", indptr=indptr, indices=indices, values=values, dense=dense)
    torch._check(dense.dim() in (2, 3),
                 lambda: "sparsetir.spmm: argument 'dense' must be 2-D (n, K) or 3-D (n, heads, D)")
    return dense.new_empty((indptr.shape[0] - 1,) + tuple(dense.shape[1:]))


@torch.library.register_fake("sparsetir::_spmm_hyb")
def _spmm_hyb_fake(indptr, indices, values, dense, parts, max_width):
    _check_devices("sparsetir._spmm_hyb", indptr=indptr, indices=indices, values=values, dense=dense)
    torch._check(dense.dim() == 2, lambda: "sparsetir._spmm_hyb: argument 'dense' must be 2-D")
    return dense.new_empty((indptr.shape[0] - 1, dense.shape[1]))


@torch.library.register_fake("sparsetir::sddmm")
def _sddmm_fake(indptr, indices, values, x, y, op="dot"):
    _check_devices("sparsetir.sddmm", indptr=indptr, indices=indices, values=values, x=x, y=y)
    nnz = indices.shape[0]
    if op == "dot":
        # (nnz,) for x (m, D); (nnz, heads) for x (m, heads, D).
        return x.new_empty((nnz,) + tuple(x.shape[1:-1]))
    return x.new_empty((nnz,) + tuple(x.shape[1:]))


@torch.library.register_fake("sparsetir::gat_attention")
def _gat_attention_fake(indptr, indices, a_dst, a_src, x, negative_slope=0.2):
    _check_devices("sparsetir.gat_attention", indptr=indptr, indices=indices, a_dst=a_dst, a_src=a_src, x=x)
    torch._check(x.dim() == 3, lambda: "sparsetir.gat_attention: argument 'x' must be 3-D (n, heads, C)")
    return x.new_empty((indptr.shape[0] - 1,) + tuple(x.shape[1:]))


def _compute_dtype(dtype):
    return torch.float64 if dtype == torch.float64 else torch.float32


@torch.library.register_fake("sparsetir::_gat_attention_forward")
def _gat_attention_forward_fake(indptr, indices, a_dst, a_src, x, negative_slope):
    out = _gat_attention_fake(indptr, indices, a_dst, a_src, x, negative_slope)
    return out, x.new_empty((indices.shape[0], x.shape[1]), dtype=_compute_dtype(x.dtype))


@torch.library.register_fake("sparsetir::_gat_attention_backward")
def _gat_attention_backward_fake(indptr, indices, a_dst, a_src, x, probs, grad_out, negative_slope):
    _check_devices("sparsetir._gat_attention_backward", indptr=indptr, indices=indices, a_dst=a_dst, a_src=a_src,
                   x=x, probs=probs, grad_out=grad_out)
    return a_dst.new_empty(a_dst.shape), a_src.new_empty(a_src.shape), x.new_empty(x.shape)


@torch.library.register_fake("sparsetir::bsrmm")
def _bsrmm_fake(indptr, indices, blocks, dense):
    _check_devices("sparsetir.bsrmm", indptr=indptr, indices=indices, blocks=blocks, dense=dense)
    return dense.new_empty(((indptr.shape[0] - 1) * blocks.shape[1], dense.shape[1]))


@torch.library.register_fake("sparsetir::sparse_attention")
def _sparse_attention_fake(indptr, indices, q, k, v, scale=None):
    _check_devices("sparsetir.sparse_attention", indptr=indptr, indices=indices, q=q, k=k, v=v)
    return q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],))


@torch.library.register_fake("sparsetir::_sparse_attention_forward")
def _sparse_attention_forward_fake(indptr, indices, q, k, v, scale=None):
    _check_devices("sparsetir.sparse_attention", indptr=indptr, indices=indices, q=q, k=k, v=v)
    compute = torch.float64 if q.dtype == torch.float64 else torch.float32
    return q.new_empty(tuple(q.shape[:-1]) + (v.shape[-1],)), q.new_empty(tuple(q.shape[:-1]), dtype=compute)


@torch.library.register_fake("sparsetir::bsr_linear")
def _bsr_linear_fake(x, indptr, indices, blocks):
    _check_devices("sparsetir.bsr_linear", x=x, indptr=indptr, indices=indices, blocks=blocks)
    return x.new_empty(tuple(x.shape[:-1]) + ((indptr.shape[0] - 1) * blocks.shape[1],))


@torch.library.register_fake("sparsetir::dropout")
def _dropout_fake(input, p, seed):
    torch._check(0.0 <= p <= 1.0, lambda: f"sparsetir.dropout: argument 'p' must be a probability in [0, 1], got {p}")
    return input.new_empty(input.shape)


@torch.library.register_fake("sparsetir::_bsr_linear_grad_blocks")
def _bsr_linear_grad_blocks_fake(x, grad, indptr, indices, block_h, block_w):
    _check_devices("sparsetir._bsr_linear_grad_blocks", x=x, grad=grad, indptr=indptr, indices=indices)
    return x.new_empty((indices.shape[0], block_h, block_w))


@torch.library.register_fake("sparsetir::edge_softmax")
def _edge_softmax_fake(indptr, indices, scores):
    _check_devices("sparsetir.edge_softmax", indptr=indptr, indices=indices, scores=scores)
    torch._check(scores.dim() in (1, 2), lambda: "sparsetir.edge_softmax: argument 'scores' must be (nnz,) or (nnz, heads)")
    return scores.new_empty(scores.shape)


@torch.library.register_fake("sparsetir::_edge_softmax_backward")
def _edge_softmax_backward_fake(indptr, indices, out, grad):
    _check_devices("sparsetir._edge_softmax_backward", indptr=indptr, indices=indices, out=out, grad=grad)
    return out.new_empty(out.shape)


@torch.library.register_fake("sparsetir::_csr_transpose")
def _csr_transpose_fake(indptr, indices, columns):
    _check_devices("sparsetir._csr_transpose", indptr=indptr, indices=indices)
    nnz = indices.shape[0]
    return indptr.new_empty((columns + 1,)), indices.new_empty((nnz,)), indices.new_empty((nnz,))


@torch.library.register_fake("sparsetir::_spmm_dense_backward")
def _spmm_dense_backward_fake(indptr, indices, values, grad, columns, reduce, cache_values=False):
    _check_devices("sparsetir._spmm_dense_backward", indptr=indptr, indices=indices, values=values, grad=grad)
    return grad.new_empty((columns, *grad.shape[1:]))


@torch.library.register_fake("sparsetir::_spmm_extremum_backward")
def _spmm_extremum_backward_fake(indptr, indices, values, dense, out, grad, values_grad=True):
    return values.new_empty(values.shape), dense.new_empty(dense.shape)


@torch.library.register_fake("sparsetir::_sparse_attention_backward")
def _sparse_attention_backward_fake(indptr, indices, q, k, v, out, grad_out, scale=None, lse=None):
    _check_devices("sparsetir._sparse_attention_backward", indptr=indptr, indices=indices, q=q, k=k, v=v,
                   out=out, grad_out=grad_out, lse=lse)
    # The kernel returns contiguous gradients whatever the inputs' strides.
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


@torch.library.register_fake("sparsetir::_csr_to_bsr")
def _csr_to_bsr_fake(indptr, indices, columns, block_h, block_w):
    _check_devices("sparsetir._csr_to_bsr", indptr=indptr, indices=indices)
    rows = indptr.shape[0] - 1
    blocks = torch.library.get_ctx().new_dynamic_size()  # how many blocks depends on the structure
    return (indptr.new_empty(((rows + block_h - 1) // block_h + 1,)), indices.new_empty((blocks,)),
            indices.new_empty((indices.shape[0],), dtype=torch.int64))


@torch.library.register_fake("sparsetir::_coo_to_csr")
def _coo_to_csr_fake(row, col, rows, columns, sum_duplicates=True):
    _check_devices("sparsetir._coo_to_csr", row=row, col=col)
    nnz = row.shape[0]
    # Summing duplicates leaves as many entries as distinct (row, col) pairs.
    stored = torch.library.get_ctx().new_dynamic_size() if sum_duplicates else nnz
    return row.new_empty((rows + 1,)), row.new_empty((stored,)), row.new_empty((nnz,), dtype=torch.int64)


@torch.library.register_fake("sparsetir::_csr_to_ell")
def _csr_to_ell_fake(indptr, indices, width):
    _check_devices("sparsetir._csr_to_ell", indptr=indptr, indices=indices)
    rows = indptr.shape[0] - 1
    return indices.new_empty((rows, width)), indices.new_empty((indices.shape[0],), dtype=torch.int64)


@torch.library.register_fake("sparsetir::_csr_to_hyb")
def _csr_to_hyb_fake(indptr, indices, columns, parts, max_width):
    _check_devices("sparsetir._csr_to_hyb", indptr=indptr, indices=indices)
    # The bucket count, ELL rows and slots all depend on the structure.
    ctx = torch.library.get_ctx()
    buckets, ell_rows, slots = ctx.new_dynamic_size(), ctx.new_dynamic_size(), ctx.new_dynamic_size()
    return (indptr.new_empty((buckets, 3), dtype=torch.int64), indices.new_empty((ell_rows,)),
            indices.new_empty((slots,)), indices.new_empty((indices.shape[0],), dtype=torch.int64))


@torch.library.register_fake("sparsetir::_csr_rcm")
def _csr_rcm_fake(indptr, indices):
    _check_devices("sparsetir._csr_rcm", indptr=indptr, indices=indices)
    rows, nnz = indptr.shape[0] - 1, indices.shape[0]
    return (indptr.new_empty((rows,)), indptr.new_empty((rows + 1,)), indices.new_empty((nnz,)),
            indices.new_empty((nnz,), dtype=torch.int64))


@torch.library.register_fake("sparsetir::_scatter_by_slot")
def _scatter_by_slot_fake(values, slot, indptr, size, group_rows):
    _check_devices("sparsetir._scatter_by_slot", values=values, slot=slot, indptr=indptr)
    return values.new_empty((size,))


# --------------------------------------------------------------------------- autograd
#
# Autograd has one home, and it is C++: every operator's autograd kernel is a
# torch::autograd::Function registered for the Autograd dispatch keys in
# csrc/ops/autograd_<op>.cc (spmm with _spmm_extremum_backward, sddmm, bsrmm,
# bsr_linear, sparse_attention with _sparse_attention_backward, edge_softmax
# with _edge_softmax_backward, _scatter_by_slot). These operators run on every
# training step, often on inputs small enough for the call to cost more than
# the arithmetic; a Python autograd kernel (torch.library.register_autograd)
# adds microseconds to every call, and is entered on every call, also when no
# gradient is needed. One mechanism also means one way to save tensors, to
# compute only the gradients that are needed and to refuse a second
# derivative. The backward passes call the operators through the dispatcher,
# so they stay differentiable where the formulas allow and traceable by
# torch.compile.


# --------------------------------------------------------------------------- structure helpers


def _row_ids(indptr: torch.Tensor, nnz: int) -> torch.Tensor:
    """The row of every non-zero of a CSR structure."""
    rows = indptr.shape[0] - 1
    lengths = indptr[1:] - indptr[:-1]
    return torch.repeat_interleave(torch.arange(rows, device=indptr.device), lengths, output_size=nnz)


def graph_cache_info() -> dict:
    """Hits, misses and entries of the per-graph structure cache."""
    return _C.graph_cache_info()


def clear_graph_cache() -> None:
    _C.clear_graph_cache()


# --------------------------------------------------------------------------- autocast
#
# Inside torch.autocast, the public operators run in the region's low-precision
# dtype (float16 or bfloat16, whichever the region names: read at each call,
# which torch.library.register_autocast's fixed dtype cannot do): every
# floating-point tensor argument is cast to it, and the kernels accumulate in
# float32 as they always do for 16-bit values. Without this, a float32 sparse
# matrix times an activation that autocast made bfloat16 is a dtype mismatch.
# Outside autocast regions the Autocast dispatch keys are not active, so this
# costs nothing there.
_AUTOCAST_OPS = ("spmm", "sddmm", "bsrmm", "sparse_attention", "edge_softmax", "gat_attention", "bsr_linear")
_autocast_lib = torch.library.Library("sparsetir", "IMPL")


def _register_autocast(name: str, device_type: str) -> None:
    op = getattr(torch.ops.sparsetir, name).default
    key_name = "Autocast" + torch._C._dispatch_key_for_device(device_type)
    dispatch_key = getattr(torch._C.DispatchKey, key_name)

    def run(*args):
        dtype = torch.get_autocast_dtype(device_type)
        cast = [a.to(dtype) if isinstance(a, torch.Tensor) and a.is_floating_point() and a.dtype != dtype
                and a.device.type == device_type else a for a in args]
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(dispatch_key)):
            return op(*cast)

    if op.has_kernel_for_dispatch_key(dispatch_key):
        op.py_kernels.pop(dispatch_key)
    op.py_impl(dispatch_key)(run)  # what torch.compile traces
    _autocast_lib.impl(name, lambda _keyset, *args: run(*args), key_name, with_keyset=True)  # eager calls


for _name in _AUTOCAST_OPS:
    for _device in ("cpu", "cuda"):
        if torch._C._is_autocast_available(_device):
            _register_autocast(_name, _device)
