"""The operators' autograd kernels, all in C++ (csrc/ops/autograd_<op>.cc),
for the ops whose gradients test_ops_autograd.py checks less closely: bsrmm,
bsr_linear (and _bsr_linear_grad_blocks), sparse_attention (and _sparse_attention_backward), edge_softmax
(and _edge_softmax_backward), _scatter_by_slot and _spmm_extremum_backward.

* Every sparsetir op with an Autograd kernel has a C++ one (the dispatcher
  names the file that registered it): no Python autograd kernel is entered
  on a call.
* gradcheck in float64 with int32 and int64 indices on structures with an
  empty row, and the gradients against a dense float64 torch reference.
* Each differentiable input alone: the others get no gradient, and the
  backward calls only the operators the needed gradient uses.
* edge_softmax's double backward: gradgradcheck, the derivatives of
  _edge_softmax_backward against its formula's, and a Hessian-vector product
  against the reference's.
* The refusals of second derivatives, with their exact messages.
* torch.compile(fullgraph=True) of forward + backward against eager.
"""
import re

import numpy as np
import pytest
import torch
import torch._dynamo
from torch.utils._python_dispatch import TorchDispatchMode

import sparsetir_torch  # noqa: F401  (registers the fake implementations)
from conftest import make_csr, random_values

make_random_csr = make_csr

ops = torch.ops.sparsetir
F64 = torch.float64
IDTYPES = ("int32", "int64")
BH, BW, K = 2, 3, 3  # block shape (rectangular on purpose) and feature width
D, DV, SCALE = 3, 2, 0.7  # attention head dims and scale


# --------------------------------------------------------------------------- references (dense float64 torch)


def row_ids(indptr):
    return torch.repeat_interleave(torch.arange(indptr.numel() - 1), torch.diff(indptr.long()))


def bsr_dense(indptr, indices, blocks, block_cols):
    """The dense matrix of a BSR structure (differentiable in blocks)."""
    mb = indptr.numel() - 1
    grid = torch.zeros(mb, block_cols, BH, BW, dtype=blocks.dtype)
    grid = grid.index_put((row_ids(indptr), indices.long()), blocks, accumulate=True)
    return grid.permute(0, 2, 1, 3).reshape(mb * BH, block_cols * BW)


def edge_softmax_ref(indptr, scores):
    rows = [torch.softmax(scores[a:b], 0) for a, b in zip(indptr[:-1].tolist(), indptr[1:].tolist())]
    return torch.cat(rows) if rows else scores.clone()


def attention_ref(indptr, indices, columns, q, k, v):
    mask = torch.zeros(indptr.numel() - 1, columns, dtype=torch.bool)
    mask[row_ids(indptr), indices.long()] = True
    s = (q @ k.T) * SCALE
    empty = ~mask.any(-1, keepdim=True)
    s = torch.where(mask | empty, s, torch.tensor(float("-inf"), dtype=s.dtype))
    return (torch.softmax(s, -1) * (~empty).to(s.dtype)) @ v


# --------------------------------------------------------------------------- cases


def randt(rng, *shape):
    return torch.from_numpy(random_values(rng, shape)).to(F64)


def case(name, idtype, no_nonzeros=False):
    """(op on the differentiable inputs, those inputs, the reference on them),
    on a structure with an empty row, or with no non-zeros at all."""
    rng = np.random.default_rng(1)

    def make_csr(m, n, density, seed, empty_rows=(), dense_rows=(), **kw):
        if no_nonzeros:
            density, empty_rows, dense_rows = 0.0, (), ()
        return make_random_csr(m, n, density=density, seed=seed, empty_rows=empty_rows, dense_rows=dense_rows, **kw)

    if name in ("bsrmm", "bsr_linear"):
        c = make_csr(3, 4, density=0.5, seed=5, empty_rows=(1,), dense_rows=(2,))  # 3 x 4 blocks
        ip, ix = c.torch_structure(idtype)
        blocks = randt(rng, c.nnz, BH, BW)
        if name == "bsrmm":
            return (lambda b, d: ops.bsrmm(ip, ix, b, d), [blocks, randt(rng, c.n * BW, K)],
                    lambda b, d: bsr_dense(ip, ix, b, c.n) @ d)
        # x with two leading batch dimensions: y = x @ W^T.
        return (lambda x, b: ops.bsr_linear(x, ip, ix, b), [randt(rng, 2, 2, c.n * BW), blocks],
                lambda x, b: x @ bsr_dense(ip, ix, b, c.n).T)
    if name == "sparse_attention":
        c = make_csr(5, 4, density=0.5, seed=11, empty_rows=(2,), dense_rows=(4,))
        ip, ix = c.torch_structure(idtype)
        return (lambda q, k, v: ops.sparse_attention(ip, ix, q, k, v, SCALE),
                [randt(rng, c.m, D), randt(rng, c.n, D), randt(rng, c.n, DV)],
                lambda q, k, v: attention_ref(ip, ix, c.n, q, k, v))
    if name == "edge_softmax":
        c = make_csr(6, 5, density=0.5, seed=3, empty_rows=(1,), dense_rows=(4,))
        ip, ix = c.torch_structure(idtype)
        return (lambda s: ops.edge_softmax(ip, ix, s), [randt(rng, c.nnz, 2)], lambda s: edge_softmax_ref(ip, s))
    if name == "_scatter_by_slot":
        # Duplicates share a slot: their gradients are the slot's.
        c = make_csr(6, 6, density=0.4, seed=2, empty_rows=(3,), shuffle=True, duplicates=4)
        ip, ix = c.torch_structure(idtype)
        _, block_indices, slot = ops._csr_to_bsr(ip, ix, c.n, 2, 2)
        size = block_indices.numel() * 4
        return (lambda v: ops._scatter_by_slot(v, slot, ip, size, 2), [randt(rng, c.nnz)],
                lambda v: torch.zeros(size, dtype=F64).index_add(0, slot, v))
    raise KeyError(name)


MOVED_OPS = ("bsrmm", "bsr_linear", "sparse_attention", "edge_softmax", "_scatter_by_slot")


def grad_reference(ref, inputs, g):
    args = [t.detach().requires_grad_(t.requires_grad) for t in inputs]
    wanted = [a for a in args if a.requires_grad]
    return torch.autograd.grad(ref(*args), wanted, g)


# --------------------------------------------------------------------------- one home: C++


def _autograd_registration(op: str) -> str:
    lines = [line for line in torch._C._dispatch_dump(op).splitlines() if line.startswith("Autograd")]
    return "\n".join(lines)


def _ops_with_autograd():
    names = [n for n in torch._C._dispatch_get_all_op_names() if n.startswith("sparsetir::")]
    return sorted(n for n in names if _autograd_registration(n))


def test_every_autograd_kernel_is_registered_in_cpp():
    with_autograd = _ops_with_autograd()
    expected = {"spmm", "_spmm_extremum_backward", "_spmm_hyb", "sddmm", "bsrmm", "bsr_linear",
                "_bsr_linear_grad_blocks", "sparse_attention",
                "_sparse_attention_backward", "edge_softmax", "_edge_softmax_backward", "_scatter_by_slot",
                "gat_attention", "_gat_attention_backward", "_spmm_dense_backward", "dropout"}
    assert {n.split("::")[1] for n in with_autograd} == expected
    for name in with_autograd:
        registration = _autograd_registration(name)
        short = name.split("::")[1]
        file = {"_spmm_extremum_backward": "spmm", "_spmm_dense_backward": "spmm",
                "_sparse_attention_backward": "sparse_attention", "_edge_softmax_backward": "edge_softmax", "_scatter_by_slot": "scatter_by_slot",
                "_spmm_hyb": "spmm_hyb", "_gat_attention_backward": "gat_attention",
                "_bsr_linear_grad_blocks": "bsr_linear"}.get(short, short)
        assert re.fullmatch(rf"Autograd\[alias\]: registered at \S*csrc/ops/autograd_{file}\.cc:\d+ .*",
                            registration), f"{name}: {registration}"


# --------------------------------------------------------------------------- gradcheck and values


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("name", MOVED_OPS)
def test_gradcheck_and_reference_gradients(name, idtype):
    fn, inputs, ref = case(name, idtype)
    inputs = [t.requires_grad_() for t in inputs]
    out = fn(*inputs)
    torch.testing.assert_close(out, ref(*inputs), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(fn, inputs)
    g = randt(np.random.default_rng(2), *out.shape)
    for got, want in zip(torch.autograd.grad(fn(*inputs), inputs, g), grad_reference(ref, inputs, g)):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("name", MOVED_OPS)
def test_gradients_without_non_zeros(name, idtype):
    fn, inputs, ref = case(name, idtype, no_nonzeros=True)
    inputs = [t.requires_grad_() for t in inputs]
    out = fn(*inputs)
    torch.testing.assert_close(out, ref(*inputs), rtol=0, atol=0)
    g = torch.ones_like(out)
    for got, want, t in zip(torch.autograd.grad(out, inputs, g), grad_reference(ref, inputs, g), inputs):
        assert got.shape == t.shape
        torch.testing.assert_close(got, want, rtol=0, atol=0)


# --------------------------------------------------------------------------- only the needed gradients


class OpLog(TorchDispatchMode):
    """The operators called while active (by schema name)."""

    def __init__(self):
        super().__init__()
        self.names = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func._schema.name)
        return func(*args, **(kwargs or {}))


# (op, differentiable input alone) -> operators its backward must not call:
# those that only the other inputs' gradients need.
NOT_CALLED = {
    ("bsrmm", 0): {"sparsetir::_csr_transpose", "sparsetir::bsrmm"},
    ("bsrmm", 1): {"aten::bmm", "aten::repeat_interleave"},
    ("bsr_linear", 0): {"sparsetir::_bsr_linear_grad_blocks"},
    ("bsr_linear", 1): {"sparsetir::_csr_transpose", "sparsetir::bsr_linear"},
}
ALONE = [(n, i) for n in MOVED_OPS for i in range({"bsrmm": 2, "bsr_linear": 2, "sparse_attention": 3}.get(n, 1))]


@pytest.mark.parametrize("name,wrt", ALONE, ids=[f"{n}-input{i}" for n, i in ALONE])
def test_only_the_needed_gradient_is_computed(name, wrt):
    fn, inputs, ref = case(name, "int64")
    inputs[wrt].requires_grad_()
    out = fn(*inputs)
    g = randt(np.random.default_rng(3), *out.shape)
    with OpLog() as log:
        out.backward(g)
    for i, t in enumerate(inputs):
        assert (t.grad is None) == (i != wrt), f"input {i}"
    (want,) = grad_reference(ref, inputs, g)
    torch.testing.assert_close(inputs[wrt].grad, want, rtol=1e-10, atol=1e-12)
    called_needlessly = NOT_CALLED.get((name, wrt), set()) & log.names
    assert not called_needlessly, f"the backward called {called_needlessly}"


# --------------------------------------------------------------------------- edge_softmax's double backward


@pytest.mark.parametrize("heads", (None, 3))
@pytest.mark.parametrize("idtype", IDTYPES)
def test_edge_softmax_gradgradcheck(idtype, heads):
    c = make_csr(7, 6, density=0.4, seed=9, empty_rows=(0, 5), dense_rows=(3,))
    ip, ix = c.torch_structure(idtype)
    rng = np.random.default_rng(4)
    scores = (randt(rng, c.nnz) if heads is None else randt(rng, c.nnz, heads)).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda s: ops.edge_softmax(ip, ix, s), (scores,))
    # A Hessian-vector product against the reference's.
    g, u = randt(rng, *scores.shape), randt(rng, *scores.shape)
    hvp = []
    for f in (lambda s: ops.edge_softmax(ip, ix, s), lambda s: edge_softmax_ref(ip, s)):
        (gs,) = torch.autograd.grad(f(scores), scores, g, create_graph=True)
        hvp.append(torch.autograd.grad(gs, scores, u)[0])
    torch.testing.assert_close(hvp[0], hvp[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("idtype", IDTYPES)
def test_edge_softmax_backward_derivatives_match_its_formula(idtype):
    """_edge_softmax_backward(P, G) = P * (G - rowsum(P * G)), differentiated
    in P and G as independent inputs (each alone, then both)."""
    c = make_csr(6, 5, density=0.5, seed=3, empty_rows=(1,), dense_rows=(4,))
    ip, ix = c.torch_structure(idtype)
    rows = row_ids(ip)
    rng = np.random.default_rng(5)
    p, g, gg = randt(rng, c.nnz, 2), randt(rng, c.nnz, 2), randt(rng, c.nnz, 2)

    def formula(p, g):
        d = torch.zeros(c.m, 2, dtype=F64).index_add(0, rows, p * g).index_select(0, rows)
        return p * (g - d)

    op = lambda a, b: ops._edge_softmax_backward(ip, ix, a, b)  # noqa: E731
    assert torch.autograd.gradcheck(op, (p.requires_grad_(), g.requires_grad_()))
    for wanted in ((True, False), (False, True), (True, True)):
        a, b = (t.detach().requires_grad_(w) for t, w in zip((p, g), wanted))
        inputs = [t for t in (a, b) if t.requires_grad]
        got = torch.autograd.grad(op(a, b), inputs, gg)
        want = torch.autograd.grad(formula(a, b), inputs, gg)
        for x, y in zip(got, want):
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- refused second derivatives


def test_sparse_attention_refuses_a_second_derivative():
    fn, (q, k, v), _ = case("sparse_attention", "int64")
    q.requires_grad_()
    out = fn(q, k, v)
    (dq,) = torch.autograd.grad(out, q, torch.ones_like(out), create_graph=True)
    message = ("sparsetir.sparse_attention: second derivatives are not supported "
               "(sparsetir._sparse_attention_backward has no backward)")
    with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
        dq.sum().backward()


@pytest.mark.parametrize("reduce", ("max", "min"))
def test_spmm_extremum_refuses_a_second_derivative(reduce):
    c = make_csr(5, 4, density=0.5, seed=6, empty_rows=(2,))
    ip, ix = c.torch_structure("int32")
    rng = np.random.default_rng(6)
    values, dense = randt(rng, c.nnz).requires_grad_(), randt(rng, c.n, K).requires_grad_()
    out = ops.spmm(ip, ix, values, dense, reduce)
    dv, dd = torch.autograd.grad(out, (values, dense), torch.ones_like(out), create_graph=True)
    message = ("sparsetir.spmm: second derivatives of reduce='max' / 'min' are not supported "
               "(sparsetir._spmm_extremum_backward has no backward)")
    with pytest.raises(RuntimeError, match="^" + re.escape(message) + "$"):
        (dv.sum() + dd.sum()).backward()


# --------------------------------------------------------------------------- torch.compile


@pytest.mark.parametrize("name", MOVED_OPS)
def test_compile_fullgraph_forward_and_backward_match_eager(name):
    torch._dynamo.reset()
    try:
        fn, inputs, _ = case(name, "int32")
        inputs = [t.requires_grad_() for t in inputs]
        compiled = torch.compile(lambda *a: torch.tanh(fn(*a)), fullgraph=True)
        out = compiled(*inputs)
        expected = torch.tanh(fn(*inputs))
        torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)
        g = randt(np.random.default_rng(7), *out.shape)
        for got, want in zip(torch.autograd.grad(out, inputs, g), torch.autograd.grad(expected, inputs, g)):
            torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    finally:
        torch._dynamo.reset()
