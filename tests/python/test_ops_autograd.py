"""Autograd, torch.library and torch.compile tests of the operators
torch.ops.sparsetir.{spmm, sddmm, bsrmm, sparse_attention} (and the backward
helpers _csr_transpose, _sparse_attention_backward):

* torch.autograd.gradcheck in float64 for every op and differentiable input;
* torch.library.opcheck (schema, autograd registration, fake tensor, AOT dispatch);
* torch.compile(fullgraph=True) of a two-layer GCN and of a sparse-attention
  block, forward and backward, against eager, with no graph break and no
  unexpected recompilation;
* backward in float16 / bfloat16 against the float64 gradient within a
  rounding-error bound;
* concurrent calls from several Python threads (including the first-call
  kernel compilation of a new feature size racing in several threads).

Feature sizes are kept to a small set (3 for SpMM/SDDMM/BSR, D=3 / Dv=2 for
attention) because every (kernel, dtype, index dtype, size) is compiled once
per session (about 0.4 s each).
"""
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
import torch._dynamo
import torch._dynamo.testing
from torch.autograd.gradcheck import GradcheckError

import sparsetir_torch  # noqa: F401  (registers the fake / autograd implementations)
from conftest import UNIT_ROUNDOFF, assert_within_bound, make_csr, random_values

ops = torch.ops.sparsetir
F64 = torch.float64
IDTYPES = ("int32", "int64")
REDUCES = ("sum", "mean", "max", "min")
K = 3  # feature size of SpMM / SDDMM / BSR tests
D, DV = 3, 2  # attention head and value dims (Dv != D on purpose)


# --------------------------------------------------------------------------- structures and references


def structure(m, n, density, seed, idtype, **kw):
    """(Csr, indptr, indices) of a seeded random CSR matrix."""
    c = make_csr(m, n, density=density, seed=seed, **kw)
    ip, ix = c.torch_structure(idtype)
    return c, ip, ix


def randt(rng, shape, dtype=F64, requires_grad=False):
    """Values of magnitude in [0.25, 1] with a random sign."""
    t = torch.from_numpy(random_values(rng, shape)).to(dtype)
    return t.requires_grad_(requires_grad)


def row_ids(indptr):
    return torch.repeat_interleave(torch.arange(indptr.numel() - 1), torch.diff(indptr.long()))


def spmm_ref(indptr, indices, values, dense, reduce="sum"):
    """Pure-torch SpMM (differentiable): rows without non-zeros give 0."""
    rows = row_ids(indptr)
    prod = values.unsqueeze(1) * dense.index_select(0, indices.long())
    out = torch.zeros(indptr.numel() - 1, dense.shape[1], dtype=dense.dtype)
    if reduce == "sum":
        return out.index_add(0, rows, prod)
    how = {"mean": "mean", "max": "amax", "min": "amin"}[reduce]
    return out.scatter_reduce(0, rows.unsqueeze(1).expand_as(prod), prod, how, include_self=False)


def sddmm_ref(indptr, indices, values, x, y):
    out = (x.index_select(0, row_ids(indptr)) * y.index_select(0, indices.long())).sum(1)
    return out if values is None else out * values


def bsr_dense(indptr, indices, blocks, block_cols):
    """The dense matrix of a BSR structure (differentiable in blocks; duplicates add up)."""
    nnzb, bh, bw = blocks.shape
    mb = indptr.numel() - 1
    grid = torch.zeros(mb, block_cols, bh, bw, dtype=blocks.dtype)
    grid = grid.index_put((row_ids(indptr), indices.long()), blocks, accumulate=True)
    return grid.permute(0, 2, 1, 3).reshape(mb * bh, block_cols * bw)


def bsrmm_ref(indptr, indices, blocks, dense):
    return bsr_dense(indptr, indices, blocks, dense.shape[0] // blocks.shape[2]) @ dense


def pattern_mask(indptr, indices, columns):
    mask = torch.zeros(indptr.numel() - 1, columns, dtype=torch.bool)
    mask[row_ids(indptr), indices.long()] = True
    return mask


def attention_probs_ref(mask, q, k, scale):
    """softmax over the allowed j of scale * q k^T; rows with no allowed j are 0."""
    s = (q @ k.transpose(-1, -2)) * scale
    empty = ~mask.any(-1, keepdim=True)
    s = torch.where(mask | empty, s, torch.tensor(float("-inf"), dtype=s.dtype))
    return torch.softmax(s, -1) * (~empty).to(s.dtype)


def attention_ref(mask, q, k, v, scale=None):
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    return attention_probs_ref(mask, q, k, scale) @ v


def attention_pattern(idtype):
    """L = 5 query rows (row 2 has no allowed key), S = 4 keys."""
    c = make_csr(5, 4, density=0.5, seed=11, empty_rows=(2,), dense_rows=(4,))
    ip, ix = c.torch_structure(idtype)
    return c, ip, ix


def bsr_structure(idtype):
    """3 block rows (block row 1 empty) x 4 block columns."""
    c = make_csr(3, 4, density=0.5, seed=5, empty_rows=(1,), dense_rows=(2,))
    ip, ix = c.torch_structure(idtype)
    return c, ip, ix


# --------------------------------------------------------------------------- 1. gradcheck (float64)


def _tie_free(rng, c, k):
    """values / dense for max|min SpMM with no two products of a (row, column) within 1e-3
    of each other, so the arg-max is unique and stable under gradcheck's perturbation."""
    for _ in range(100):
        values = random_values(rng, c.nnz)
        dense = random_values(rng, (c.n, k))
        prod = values[:, None] * dense[c.indices]
        ok = True
        for r in range(c.m):
            seg = np.sort(prod[c.indptr[r]:c.indptr[r + 1]], axis=0)
            if seg.shape[0] > 1 and np.diff(seg, axis=0).min() < 1e-3:
                ok = False
                break
        if ok:
            return torch.from_numpy(values), torch.from_numpy(dense)
    raise AssertionError("could not draw tie-free inputs")


@pytest.mark.parametrize("wrt", ["values", "dense", "both"])
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck_spmm(reduce, idtype, wrt):
    c, ip, ix = structure(7, 5, 0.45, seed=1, idtype=idtype, empty_rows=(0, 4))
    rng = np.random.default_rng(2)
    values, dense = _tie_free(rng, c, K)
    values.requires_grad_(wrt in ("values", "both"))
    dense.requires_grad_(wrt in ("dense", "both"))
    assert torch.autograd.gradcheck(lambda v, d: ops.spmm(ip, ix, v, d, reduce), (values, dense))
    # The analytic gradient also matches the pure-torch reference's.
    g = randt(rng, (c.m, K))
    inputs = [t for t in (values, dense) if t.requires_grad]
    got = torch.autograd.grad(ops.spmm(ip, ix, values, dense, reduce), inputs, g)
    ref = torch.autograd.grad(spmm_ref(ip, ix, values, dense, reduce), inputs, g)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("idtype", IDTYPES)
def test_gradcheck_spmm_unsorted_duplicates(idtype):
    c, ip, ix = structure(9, 6, 0.3, seed=3, idtype=idtype, empty_rows=(2,), shuffle=True, duplicates=6)
    rng = np.random.default_rng(3)
    values, dense = randt(rng, c.nnz, requires_grad=True), randt(rng, (c.n, K), requires_grad=True)
    for reduce in ("sum", "mean"):
        assert torch.autograd.gradcheck(lambda v, d: ops.spmm(ip, ix, v, d, reduce), (values, dense))


@pytest.mark.parametrize("with_values,wrt", [(True, w) for w in ("values", "x", "y", "all")] +
                         [(False, w) for w in ("x", "y", "all")],
                         ids=[f"values-{w}" for w in ("values", "x", "y", "all")] + [f"None-{w}" for w in "xy"] +
                         ["None-all"])
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gradcheck_sddmm(idtype, with_values, wrt):
    c, ip, ix = structure(6, 5, 0.45, seed=4, idtype=idtype, empty_rows=(1, 5))
    rng = np.random.default_rng(4)
    values = randt(rng, c.nnz, requires_grad=wrt in ("values", "all")) if with_values else None
    x = randt(rng, (c.m, K), requires_grad=wrt in ("x", "all"))
    y = randt(rng, (c.n, K), requires_grad=wrt in ("y", "all"))
    if with_values:
        assert torch.autograd.gradcheck(lambda v, a, b: ops.sddmm(ip, ix, v, a, b), (values, x, y))
    else:
        assert torch.autograd.gradcheck(lambda a, b: ops.sddmm(ip, ix, None, a, b), (x, y))
    g = randt(rng, c.nnz)
    inputs = [t for t in (values, x, y) if t is not None and t.requires_grad]
    got = torch.autograd.grad(ops.sddmm(ip, ix, values, x, y), inputs, g)
    ref = torch.autograd.grad(sddmm_ref(ip, ix, values, x, y), inputs, g)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("wrt", ["blocks", "dense", "both"])
@pytest.mark.parametrize("idtype", IDTYPES)
def test_gradcheck_bsrmm_rectangular_blocks(idtype, wrt):
    c, ip, ix = bsr_structure(idtype)
    bh, bw = 2, 3
    rng = np.random.default_rng(5)
    blocks = randt(rng, (c.nnz, bh, bw), requires_grad=wrt in ("blocks", "both"))
    dense = randt(rng, (c.n * bw, K), requires_grad=wrt in ("dense", "both"))
    out = ops.bsrmm(ip, ix, blocks, dense)
    assert out.shape == (c.m * bh, K)
    torch.testing.assert_close(out, bsrmm_ref(ip, ix, blocks, dense), rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda b, d: ops.bsrmm(ip, ix, b, d), (blocks, dense))


# int32 with an explicit scale, int64 with the default one (each case compiles
# its own attention kernels: the other two combinations would add no path).
@pytest.mark.parametrize("idtype,scale", [("int32", 0.7), ("int64", None)],
                         ids=["int32-scale0.7", "int64-default_scale"])
def test_gradcheck_sparse_attention(idtype, scale):
    c, ip, ix = attention_pattern(idtype)
    assert (np.diff(c.indptr) == 0).any(), "the pattern must have a row with no allowed key"
    rng = np.random.default_rng(6)
    q = randt(rng, (2, 2, c.m, D), requires_grad=True)
    k = randt(rng, (2, 2, c.n, D), requires_grad=True)
    v = randt(rng, (2, 2, c.n, DV), requires_grad=True)
    out = ops.sparse_attention(ip, ix, q, k, v, scale)
    assert out.shape == (2, 2, c.m, DV)
    torch.testing.assert_close(out, attention_ref(pattern_mask(ip, ix, c.n), q, k, v, scale), rtol=1e-12, atol=1e-12)
    assert torch.all(out[..., 2, :] == 0)
    assert torch.autograd.gradcheck(lambda a, b, e: ops.sparse_attention(ip, ix, a, b, e, scale), (q, k, v))
    # Each input alone (the other two constants).
    g = randt(rng, out.shape)
    for i, name in enumerate("qkv"):
        args = [t.detach().requires_grad_(j == i) for j, t in enumerate((q, k, v))]
        (got,) = torch.autograd.grad(ops.sparse_attention(ip, ix, *args, scale), args[i], g)
        (ref,) = torch.autograd.grad(attention_ref(pattern_mask(ip, ix, c.n), *args, scale), args[i], g)
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-12, msg=f"d{name}")


def test_gradgradcheck_linear_ops():
    """The backward formulas of spmm (sum/mean), sddmm and bsrmm are built from
    differentiable operators, so second derivatives are right too."""
    c, ip, ix = structure(6, 5, 0.45, seed=7, idtype="int64", empty_rows=(3,))
    rng = np.random.default_rng(7)
    v, d = randt(rng, c.nnz, requires_grad=True), randt(rng, (c.n, K), requires_grad=True)
    for reduce in ("sum", "mean"):
        assert torch.autograd.gradgradcheck(lambda a, b: ops.spmm(ip, ix, a, b, reduce), (v, d))
    x, y = randt(rng, (c.m, K), requires_grad=True), randt(rng, (c.n, K), requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b, e: ops.sddmm(ip, ix, a, b, e), (v, x, y))
    bc, bip, bix = bsr_structure("int64")
    blocks = randt(rng, (bc.nnz, 2, 3), requires_grad=True)
    bd = randt(rng, (bc.n * 3, K), requires_grad=True)
    assert torch.autograd.gradgradcheck(lambda a, b: ops.bsrmm(bip, bix, a, b), (blocks, bd))


def test_gradgradcheck_sparse_attention():
    c, ip, ix = attention_pattern("int64")
    rng = np.random.default_rng(8)
    q = randt(rng, (c.m, D), requires_grad=True)
    k = randt(rng, (c.n, D), requires_grad=True)
    v = randt(rng, (c.n, DV), requires_grad=True)
    try:
        ok = torch.autograd.gradgradcheck(lambda a, b, e: ops.sparse_attention(ip, ix, a, b, e), (q, k, v))
    except GradcheckError:
        raise  # a wrong second derivative
    except RuntimeError:
        return  # an explicit "not differentiable twice" error is acceptable
    assert ok


# --------------------------------------------------------------------------- 2. opcheck


def _opcheck_cases(dtype, idtype, requires_grad, contiguous=True):
    """name -> (op overload, args) for every operator."""
    rng = np.random.default_rng(9)

    def r(*shape, grad=True):
        t = randt(rng, shape, dtype)
        return t.requires_grad_(requires_grad and grad)

    def nc(t):
        """The same values in a transposed (non-contiguous) layout when asked."""
        if contiguous or t.dim() < 2:
            return t
        return t.detach().transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_(t.requires_grad)

    c, ip, ix = structure(6, 5, 0.45, seed=10, idtype=idtype, empty_rows=(0, 3))
    bc, bip, bix = bsr_structure(idtype)
    ac, aip, aix = attention_pattern(idtype)
    q, k, v = nc(r(2, 2, ac.m, D)), nc(r(2, 2, ac.n, D)), nc(r(2, 2, ac.n, DV))
    out = ops.sparse_attention(aip, aix, q.detach(), k.detach(), v.detach(), 0.5)
    cases = {f"spmm_{red}": (ops.spmm.default, (ip, ix, r(c.nnz), nc(r(c.n, K)), red)) for red in REDUCES}
    ev, ed = r(c.nnz), nc(r(c.n, K))
    eout = ops.spmm(ip, ix, ev.detach(), ed.detach(), "max")
    cases.update({
        "sddmm": (ops.sddmm.default, (ip, ix, r(c.nnz), nc(r(c.m, K)), nc(r(c.n, K)))),
        "sddmm_none": (ops.sddmm.default, (ip, ix, None, nc(r(c.m, K)), nc(r(c.n, K)))),
        "bsrmm": (ops.bsrmm.default, (bip, bix, nc(r(bc.nnz, 2, 3)), nc(r(bc.n * 3, K)))),
        "sparse_attention": (ops.sparse_attention.default, (aip, aix, q, k, v, 0.5)),
        "sparse_attention_default_scale": (ops.sparse_attention.default, (aip, aix, q, k, v)),
        "_csr_transpose": (ops._csr_transpose.default, (ip, ix, c.n)),
        "_csr_to_bsr": (getattr(getattr(ops, "_csr_to_bsr", None), "default", None), (ip, ix, c.n + 1, 2, 3)),
        "_sparse_attention_backward": (
            ops._sparse_attention_backward.default,
            (aip, aix, q, k, v, out.requires_grad_(requires_grad), nc(r(*out.shape)), 0.5)),
        "_sparse_attention_backward_lse": (
            ops._sparse_attention_backward.default,
            (aip, aix, q, k, v, out, nc(r(*out.shape)), 0.5,
             ops._sparse_attention_forward(aip, aix, q.detach(), k.detach(), v.detach(), 0.5)[1])),
        "_sparse_attention_forward": (ops._sparse_attention_forward.default, (aip, aix, q, k, v, 0.5)),
        "_spmm_extremum_backward": (
            ops._spmm_extremum_backward.default,
            (ip, ix, ev, ed, eout, nc(r(c.m, K)))),
    })
    return cases


OPCHECK_NAMES = [f"spmm_{red}" for red in REDUCES] + [
    "sddmm", "sddmm_none", "bsrmm", "sparse_attention", "sparse_attention_default_scale", "_csr_transpose",
    "_csr_to_bsr", "_sparse_attention_backward", "_sparse_attention_backward_lse", "_sparse_attention_forward",
    "_spmm_extremum_backward"]
INT_ONLY_OPS = ("_csr_transpose", "_csr_to_bsr")  # integer inputs only: one dtype, no requires_grad
OPCHECK_XFAIL = {}
# The backward helpers of sparse_attention and of spmm max/min raise if
# differentiated (their second derivatives are not supported, and say so), so opcheck's
# autograd checks, which backpropagate through it, do not apply to it; nor
# to _sparse_attention_forward, which sparse_attention's autograd kernel calls
# below autograd (the log-sum-exp it returns is saved, not differentiated).
NO_BACKWARD_OPS = ("_sparse_attention_backward", "_sparse_attention_backward_lse", "_sparse_attention_forward",
                   "_spmm_extremum_backward")

# Every op is checked in float32 and float64, with int32 and int64 indices,
# with and without requires_grad. test_aot_dispatch_dynamic (AOT tracing of
# forward + backward with dynamic shapes: ~90% of opcheck's time) does not
# depend on the kernels' dtypes, so it runs for two of the four dtype pairs.
FULL_OPCHECK = {(torch.float64, "int64"), (torch.float32, "int32")}
OPCHECK_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor")


def _opcheck_params():
    for name in OPCHECK_NAMES:
        for dtype in (torch.float32, torch.float64):
            for idtype in IDTYPES:
                for requires_grad in (False, True):
                    if name in INT_ONLY_OPS and (requires_grad or dtype != torch.float64):
                        continue
                    if name in NO_BACKWARD_OPS and requires_grad:
                        continue
                    ident = f"{name}-{str(dtype)[6:]}-{idtype}-{'requires_grad' if requires_grad else 'no_grad'}"
                    yield pytest.param(name, dtype, idtype, requires_grad, id=ident,
                                       marks=[OPCHECK_XFAIL[name]] if name in OPCHECK_XFAIL else [])


@pytest.mark.parametrize("name,dtype,idtype,requires_grad", list(_opcheck_params()))
def test_opcheck(name, dtype, idtype, requires_grad):
    op, args = _opcheck_cases(dtype, idtype, requires_grad)[name]
    if op is None:
        pytest.skip(f"no operator {name} in this build")
    if (dtype, idtype) in FULL_OPCHECK:
        torch.library.opcheck(op, args)
    else:
        torch.library.opcheck(op, args, test_utils=OPCHECK_UTILS)


@pytest.mark.parametrize("name", [
    n for n in ("spmm_sum", "spmm_max", "sddmm", "bsrmm", "sparse_attention", "_sparse_attention_backward",
                "_spmm_extremum_backward")])
def test_opcheck_non_contiguous_inputs(name):
    """Dense inputs in a transposed layout (e.g. heads split off by view + transpose)."""
    op, args = _opcheck_cases(torch.float64, "int64", name not in NO_BACKWARD_OPS, contiguous=False)[name]
    assert any(isinstance(a, torch.Tensor) and a.dim() >= 2 and not a.is_contiguous() for a in args)
    torch.library.opcheck(op, args)


GPU_REASON = sparsetir_torch.cuda_unavailable_reason()
gpu = pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")


def _on_cuda(arg):
    """arg moved to the GPU, a leaf that keeps requires_grad."""
    if not isinstance(arg, torch.Tensor):
        return arg
    return arg.detach().cuda().requires_grad_(arg.requires_grad)


@gpu
@pytest.mark.parametrize("name", OPCHECK_NAMES)
def test_gpu_opcheck(name):
    """The fake (meta) implementations and the autograd registrations hold for CUDA tensors too."""
    requires_grad = name not in NO_BACKWARD_OPS + INT_ONLY_OPS
    op, args = _opcheck_cases(torch.float32, "int32", requires_grad)[name]
    if op is None:
        pytest.skip(f"no operator {name} in this build")
    torch.library.opcheck(op, tuple(_on_cuda(a) for a in args))


# --------------------------------------------------------------------------- 3. torch.compile
#
# The sparse structure is passed as plain tensors (csr.crow_indices().clone(),
# ...), never as views of a torch sparse tensor: dynamo cannot trace a view
# whose base is a sparse tensor (a known torch limitation), and a real model
# holds its graph as plain index tensors anyway.


@pytest.fixture
def dynamo_reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def random_graph(n, p, seed, empty_rows=()):
    g = torch.Generator().manual_seed(seed)
    adj = torch.rand(n, n, generator=g) < p
    for r in empty_rows:
        adj[r] = False
    csr = adj.to(torch.float32).to_sparse_csr()
    ip, ix = csr.crow_indices().clone(), csr.col_indices().clone()
    w = torch.rand(ix.numel(), generator=g) + 0.5
    return ip, ix, w


class GCN(torch.nn.Module):
    def __init__(self, fin=5, hidden=K, fout=K):
        super().__init__()
        self.l1 = torch.nn.Linear(fin, hidden)
        self.l2 = torch.nn.Linear(hidden, fout)

    def forward(self, indptr, indices, weights, x):
        h = torch.relu(ops.spmm(indptr, indices, weights, self.l1(x)))
        return ops.spmm(indptr, indices, weights, self.l2(h))


def _fwd_bwd(model, args, grad):
    model.zero_grad(set_to_none=True)
    out = model(*args)
    out.backward(grad)
    return out.detach(), {n.removeprefix("_orig_mod."): p.grad.clone() for n, p in model.named_parameters()}


def _compare(compiled, eager, args, grad, what):
    out_c, grads_c = _fwd_bwd(compiled, args, grad)
    out_e, grads_e = _fwd_bwd(eager, args, grad)
    torch.testing.assert_close(out_c, out_e, rtol=1e-5, atol=1e-5, msg=f"{what}: output")
    assert grads_c.keys() == grads_e.keys()
    for n in grads_e:
        torch.testing.assert_close(grads_c[n], grads_e[n], rtol=1e-5, atol=1e-5, msg=f"{what}: grad of {n}")


def test_compile_gcn_forward_backward(dynamo_reset):
    torch.manual_seed(0)
    n = 16
    model = GCN()
    ip, ix, w = random_graph(n, 0.25, seed=1, empty_rows=(3,))
    x = torch.randn(n, 5)
    # inductor, the default backend. fullgraph=True raises at any graph break;
    # the counter counts the frames compiled (one graph each).
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    _compare(compiled, model, (ip, ix, w, x), torch.randn(n, K), "first call")
    assert counter.frame_count == 1
    # New values (features, edge weights, upstream gradient), same shapes: no recompilation.
    _compare(compiled, model, (ip, ix, w * 2 - 1, torch.randn(n, 5)), torch.randn(n, K), "new values")
    assert counter.frame_count == 1
    # A different graph (another nnz): at most one recompilation, with dynamic nnz...
    ip2, ix2, w2 = random_graph(n, 0.4, seed=2)
    assert ix2.numel() != ix.numel()
    _compare(compiled, model, (ip2, ix2, w2, x), torch.randn(n, K), "second graph")
    assert counter.frame_count == 2
    # ... after which further graphs reuse the dynamic one.
    ip3, ix3, w3 = random_graph(n, 0.55, seed=3)
    assert ix3.numel() not in (ix.numel(), ix2.numel())
    _compare(compiled, model, (ip3, ix3, w3, torch.randn(n, 5)), torch.randn(n, K), "third graph")
    assert counter.frame_count == 2


@gpu
def test_gpu_compile_gcn_forward_backward(dynamo_reset):
    torch.manual_seed(0)
    n = 16
    model = GCN().cuda()
    ip, ix, w = (t.cuda() for t in random_graph(n, 0.25, seed=1, empty_rows=(3,)))
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    _compare(compiled, model, (ip, ix, w, torch.randn(n, 5, device="cuda")), torch.randn(n, K, device="cuda"),
             "first call")
    _compare(compiled, model, (ip, ix, w * 2 - 1, torch.randn(n, 5, device="cuda")),
             torch.randn(n, K, device="cuda"), "new values")
    assert counter.frame_count == 1


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_compile_dynamic_spmm_every_gradient(dynamo_reset, reduce):
    """spmm's C++ autograd kernel under dynamic shapes: gradients for the edge
    weights and the features, graphs of different sizes, one compiled frame."""
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")

    def layer(indptr, indices, weights, x):
        return torch.ops.sparsetir.spmm(indptr, indices, weights, x * 2, reduce).sum(1)

    compiled = torch.compile(layer, backend=counter, fullgraph=True, dynamic=True)
    for n, p, seed in ((12, 0.3, 1), (20, 0.25, 2), (31, 0.2, 3)):
        ip, ix, w = random_graph(n, p, seed, empty_rows=(1,))
        x = torch.randn(n, 7)
        got_inputs = (w.clone().requires_grad_(), x.clone().requires_grad_())
        ref_inputs = (w.clone().requires_grad_(), x.clone().requires_grad_())
        g = torch.randn(n)
        got = compiled(ip, ix, *got_inputs)
        got.backward(g)
        ref = layer(ip, ix, *ref_inputs)
        ref.backward(g)
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
        for a, b in zip(got_inputs, ref_inputs):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-5)
    assert counter.frame_count == 1


class SparseAttentionBlock(torch.nn.Module):
    def __init__(self, embed=6, heads=2, contiguous_heads=False):
        super().__init__()
        self.heads, self.contiguous_heads = heads, contiguous_heads
        self.q = torch.nn.Linear(embed, heads * D)
        self.k = torch.nn.Linear(embed, heads * D)
        self.v = torch.nn.Linear(embed, heads * DV)
        self.o = torch.nn.Linear(heads * DV, embed)

    def split(self, t):
        b, length, _ = t.shape
        t = t.view(b, length, self.heads, -1).transpose(1, 2)  # (B, H, L, d)
        return t.contiguous() if self.contiguous_heads else t

    def forward(self, indptr, indices, x):
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        o = ops.sparse_attention(indptr, indices, q, k, v)
        b, _, length, _ = o.shape
        return self.o(o.transpose(1, 2).reshape(b, length, -1))


@pytest.mark.parametrize("contiguous_heads", [
    True,
    False,
], ids=["contiguous_heads", "transposed_heads"])
def test_compile_sparse_attention_block(dynamo_reset, contiguous_heads):
    torch.manual_seed(0)
    length, embed = 10, 6
    model = SparseAttentionBlock(embed, contiguous_heads=contiguous_heads)
    ip, ix, _ = random_graph(length, 0.35, seed=4, empty_rows=(2,))
    x = torch.randn(2, length, embed)
    # aot_eager: AOT autograd traces forward and backward through the fake
    # implementations (what inductor would see) without inductor's C++ build time.
    counter = torch._dynamo.testing.CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(model, backend=counter, fullgraph=True)
    _compare(compiled, model, (ip, ix, x), torch.randn(2, length, embed), "first call")
    assert counter.frame_count == 1
    _compare(compiled, model, (ip, ix, torch.randn(2, length, embed)), torch.randn(2, length, embed), "new values")
    assert counter.frame_count == 1
    # Other patterns (other nnz): one recompilation with a dynamic nnz, then none.
    for seed, p in ((5, 0.5), (6, 0.65)):
        ip2, ix2, _ = random_graph(length, p, seed=seed)
        assert ix2.numel() != ix.numel()
        _compare(compiled, model, (ip2, ix2, x), torch.randn(2, length, embed), f"pattern {seed}")
        assert counter.frame_count == 2


# --------------------------------------------------------------------------- 4. 16-bit autograd

HALF_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def _abs_grads(fn, inputs, grad):
    """The gradients of a multilinear fn at |inputs| with |grad|: for each gradient
    element, the sum of the absolute values of the summed products."""
    abs_inputs = [None if t is None else t.detach().abs().requires_grad_(t.requires_grad) for t in inputs]
    out = fn(*abs_inputs)
    diff = [t for t in abs_inputs if t is not None and t.requires_grad]
    return torch.autograd.grad(out, diff, grad.abs())


def _check_half_grads(dtype_name, fn_op, fn_ref, inputs64, grad64, terms, what, magnitudes=None):
    """Runs fn_op backward on the 16-bit rounding of inputs64 and compares each
    gradient with the float64 gradient of fn_ref at the rounded inputs."""
    dtype = HALF_DTYPES[dtype_name]
    rounded = [None if t is None else t.to(dtype).to(F64) for t in inputs64]
    g = grad64.to(dtype)
    half = [None if t is None else t.to(dtype).requires_grad_() for t in rounded]
    out = fn_op(*half)
    assert out.dtype == dtype
    out.backward(g)
    ref_in = [None if t is None else t.clone().requires_grad_() for t in rounded]
    ref = torch.autograd.grad(fn_ref(*ref_in), [t for t in ref_in if t is not None], g.to(F64))
    if magnitudes is None:
        magnitudes = _abs_grads(fn_ref, ref_in, g.to(F64))
    got = [t.grad for t in half if t is not None]
    for i, (a, r, mag, n) in enumerate(zip(got, ref, magnitudes, terms)):
        assert a is not None and a.dtype == dtype, (what, i)
        assert_within_bound(a, r.numpy(), mag.numpy(), n, dtype_name, f"{what}: gradient of input {i}")
        assert r.abs().max() > 0


def _exact_tie_free(rng, c, k):
    """Values and dense entries that are multiples of 1/8 up to 2 in magnitude:
    exact in float16 and bfloat16 together with their products, with no tie
    among the products of a (row, column): max/min select the same entry in
    every dtype."""
    for _ in range(200):
        values = rng.integers(1, 17, c.nnz) * rng.choice([-1.0, 1.0], c.nnz) / 8
        dense = rng.integers(1, 17, (c.n, k)) * rng.choice([-1.0, 1.0], (c.n, k)) / 8
        prod = values[:, None] * dense[c.indices]
        if all(len(np.unique(prod[c.indptr[r]:c.indptr[r + 1], j])) == c.indptr[r + 1] - c.indptr[r]
               for r in range(c.m) for j in range(k)):
            return torch.from_numpy(values), torch.from_numpy(dense)
    raise AssertionError("could not draw tie-free inputs")


@pytest.mark.parametrize("dtype_name", list(HALF_DTYPES))
@pytest.mark.parametrize("reduce", REDUCES)
def test_half_autograd_spmm(dtype_name, reduce):
    c, ip, ix = structure(24, 16, 0.3, seed=12, idtype="int32", empty_rows=(0, 7))
    rng = np.random.default_rng(12)
    col_count = int(np.bincount(c.indices, minlength=c.n).max())
    grad = randt(rng, (c.m, K))
    if reduce in ("sum", "mean"):
        values, dense = randt(rng, c.nnz), randt(rng, (c.n, K))
        magnitudes = None
    else:
        values, dense = _exact_tie_free(rng, c, K)
        # The selected products: hit[e, k] = 1 where entry e attains the row's max|min.
        rows = row_ids(ip)
        prod = values[:, None] * dense[ix.long()]
        out = spmm_ref(ip, ix, values, dense, reduce)
        hit = (prod == out[rows]).to(F64)
        nonempty = torch.from_numpy(c.row_lengths() > 0)
        assert torch.all(torch.zeros(c.m, K, dtype=F64).index_add_(0, rows, hit)[nonempty] == 1)
        g16 = grad.to(HALF_DTYPES[dtype_name]).to(F64).abs()
        magnitudes = [(hit * g16[rows] * dense[ix.long()].abs()).sum(1),
                      torch.zeros(c.n, K, dtype=F64).index_add_(0, ix.long(), hit * g16[rows] * values.abs()[:, None])]
    _check_half_grads(dtype_name, lambda v, d: ops.spmm(ip, ix, v, d, reduce),
                      lambda v, d: spmm_ref(ip, ix, v, d, reduce),
                      [values, dense], grad, [K, col_count], f"spmm {reduce}", magnitudes)


@pytest.mark.parametrize("dtype_name", list(HALF_DTYPES))
@pytest.mark.parametrize("with_values", [True, False], ids=["values", "None"])
def test_half_autograd_sddmm(dtype_name, with_values):
    c, ip, ix = structure(20, 18, 0.3, seed=13, idtype="int32", empty_rows=(4,))
    rng = np.random.default_rng(13)
    values = randt(rng, c.nnz) if with_values else None
    x, y = randt(rng, (c.m, K)), randt(rng, (c.n, K))
    row_count = int(c.row_lengths().max())
    col_count = int(np.bincount(c.indices, minlength=c.n).max())
    terms = ([K] if with_values else []) + [row_count, col_count]
    _check_half_grads(dtype_name, lambda v, a, b: ops.sddmm(ip, ix, v, a, b),
                      lambda v, a, b: sddmm_ref(ip, ix, v, a, b),
                      [values, x, y], randt(rng, c.nnz), terms, "sddmm")


@pytest.mark.parametrize("dtype_name", list(HALF_DTYPES))
def test_half_autograd_bsrmm(dtype_name):
    c, ip, ix = bsr_structure("int32")
    bh, bw = 2, 3
    rng = np.random.default_rng(14)
    blocks, dense = randt(rng, (c.nnz, bh, bw)), randt(rng, (c.n * bw, K))
    col_count = int(np.bincount(c.indices, minlength=c.n).max())
    _check_half_grads(dtype_name, lambda b, d: ops.bsrmm(ip, ix, b, d),
                      lambda b, d: bsrmm_ref(ip, ix, b, d),
                      [blocks, dense], randt(rng, (c.m * bh, K)), [K, col_count * bh], "bsrmm")


@pytest.mark.parametrize("dtype_name", list(HALF_DTYPES))
def test_half_autograd_sparse_attention(dtype_name):
    """float16/bfloat16 attention runs in float32 and rounds its results: the
    gradients' errors are (a) the final rounding, u |g|, and (b) the use of the
    rounded forward output O in rowdot(dO, O), which moves dS_ij by at most
    P_ij u sum_d |dO_id O_id|, i.e. dq_i by scale sum_j P_ij |k_j| u rowabs_i and
    dk_j by scale sum_i P_ij |q_i| u rowabs_i (dv does not use O); plus float32
    arithmetic, far below either. The bound doubles these."""
    dtype = HALF_DTYPES[dtype_name]
    u = UNIT_ROUNDOFF[dtype_name]
    c = make_csr(12, 10, density=0.4, seed=15, empty_rows=(5,))
    ip, ix = c.torch_structure("int32")
    rng = np.random.default_rng(15)
    q, k, v = (randt(rng, (2, 2, n, d)).to(dtype) for n, d in ((c.m, D), (c.n, D), (c.n, DV)))
    grad = randt(rng, (2, 2, c.m, DV)).to(dtype)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    out = ops.sparse_attention(ip, ix, *leaves)
    assert out.dtype == dtype
    out.backward(grad)

    mask = pattern_mask(ip, ix, c.n)
    scale = D ** -0.5
    ref_in = [t.to(F64).requires_grad_() for t in (q, k, v)]
    ref_out = attention_ref(mask, *ref_in)
    ref = torch.autograd.grad(ref_out, ref_in, grad.to(F64))
    p = attention_probs_ref(mask, ref_in[0].detach(), ref_in[1].detach(), scale)
    rowabs = (grad.to(F64).abs() * ref_out.detach().abs()).sum(-1, keepdim=True)  # (..., L, 1)
    extra = [scale * (p @ ref_in[1].detach().abs()) * u * rowabs,
             scale * (p.transpose(-1, -2) @ (ref_in[0].detach().abs() * u * rowabs)),
             torch.zeros_like(ref[2])]
    for name, leaf, r, e in zip("qkv", leaves, ref, extra):
        got = leaf.grad.to(F64)
        tol = 2 * (u * r.abs() + e) + 2.0**-18 * (r.abs().max() + e.max())
        if dtype == torch.float16:
            tol = tol + 2.0**-24
        err = (got - r).abs()
        assert torch.all(err <= tol), f"d{name} ({dtype_name}): max error {err.max():.3g}, worst excess " \
                                      f"{(err - tol).max():.3g}"
        assert r.abs().max() > 0
    assert torch.all(leaves[0].grad[..., 5, :] == 0)  # the row with no allowed key


# --------------------------------------------------------------------------- 5. threads


def test_spmm_threads():
    """spmm (and its backward) from 4 threads at once on different graphs and
    feature sizes. Round 1 races the first call (the kernel compilation) of a
    new feature size in all four threads (one kernel: same dtypes), round 2
    two more new sizes in two threads each; round 3 mixes the compiled sizes,
    reductions and index dtypes, repeatedly, with backward passes sharing
    the cached transposes."""
    shapes = [(40, 30), (47, 35), (54, 40), (61, 45)]
    graphs = {(i, idtype): structure(m, n, 0.15, seed=20 + i, idtype=idtype, empty_rows=(1,))
              for i, (m, n) in enumerate(shapes) for idtype in IDTYPES}
    barrier = threading.Barrier(4, timeout=120)
    rng = np.random.default_rng(21)

    def task(data, reduce, repeats, backward):
        c, ip, ix, values, dense = data
        barrier.wait()  # all four threads start together
        results = []
        for _ in range(repeats):
            if backward:
                v, d = values.clone().requires_grad_(), dense.clone().requires_grad_()
                out = ops.spmm(ip, ix, v, d, reduce)
                gv, gd = torch.autograd.grad(out, (v, d), torch.ones_like(out))
                results.append((out.detach(), gv, gd))
            else:
                results.append((ops.spmm(ip, ix, values, dense, reduce),))
        return results

    # (graph, index dtype, K, reduce, repeats, backward)
    rounds = [
        [(i, "int32", 7, "sum", 1, False) for i in range(4)],
        [(0, "int64", 9, "sum", 2, True), (1, "int64", 9, "mean", 2, True),
         (2, "int64", 10, "max", 2, False), (3, "int64", 10, "max", 2, False)],
        [(0, "int64", 9, "sum", 10, True), (1, "int32", 7, "sum", 10, False),
         (2, "int64", 9, "mean", 10, True), (3, "int32", K, "max", 10, False)],
    ]
    with ThreadPoolExecutor(max_workers=4) as pool:
        for tasks in rounds:
            data = []
            for i, idtype, k, *_ in tasks:
                c, ip, ix = graphs[i, idtype]
                data.append((c, ip, ix, randt(rng, c.nnz), randt(rng, (c.n, k))))
            futures = [pool.submit(task, d, reduce, repeats, backward)
                       for d, (_, _, _, reduce, repeats, backward) in zip(data, tasks)]
            for (i, idtype, k, reduce, repeats, backward), d, f in zip(tasks, data, futures):
                results = f.result(timeout=300)
                c, ip, ix, values, dense = d
                v, dd = values.clone().requires_grad_(), dense.clone().requires_grad_()
                ref = spmm_ref(ip, ix, v, dd, reduce)
                ref_grads = torch.autograd.grad(ref, (v, dd), torch.ones_like(ref)) if backward else ()
                assert len(results) == repeats
                for res in results:
                    for got, want in zip(res, (ref.detach(),) + tuple(ref_grads), strict=True):
                        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12,
                                                   msg=f"graph {i} {idtype} K={k} {reduce}")


def _first_attaining_reference(ip, ix, values, dense, reduce, grad):
    """Gradients of max|min SpMM in float64 where each output element's
    gradient goes to the first non-zero of its row (storage order) whose
    product attains it."""
    v, d, g = values.double(), dense.double(), grad.double()
    rows, cols = row_ids(ip), ix.long()
    prod = v[:, None] * d[cols]
    out = spmm_ref(ip, ix, v, d, reduce)
    grad_v, grad_d = torch.zeros_like(v), torch.zeros_like(d)
    for i in range(ip.numel() - 1):
        lo, hi = int(ip[i]), int(ip[i + 1])
        for k in range(d.shape[1]):
            for e in range(lo, hi):
                if prod[e, k] == out[i, k]:
                    grad_v[e] += g[i, k] * d[cols[e], k]
                    grad_d[cols[e], k] += g[i, k] * v[e]
                    break
    return grad_v, grad_d


@pytest.mark.parametrize("k", (1, 5, 16, 24, 37, 64, 65, 128, 130))
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64, torch.bfloat16, torch.float16))
@pytest.mark.parametrize("reduce", ("max", "min"))
def test_extremum_backward_sends_ties_to_the_first_attaining_nonzero(reduce, dtype, idtype, k):
    """Small integers make many products of a (row, column) equal, as ReLU and
    dropout zeros do in a GNN: the gradient goes to the first attaining
    non-zero, as torch.sparse.mm(reduce="amax"|"amin") sends it (checked against
    both; 16-bit against the reference), for one block of columns (the passes
    take 64 at a time), exactly one, and several with a partial last one."""
    c, ip, ix = structure(40, 30, 0.2, seed=21, idtype=idtype, empty_rows=(0, 9), dense_rows=(5,))
    rng = np.random.default_rng(21)
    values = torch.from_numpy(rng.integers(1, 3, c.nnz).astype(np.float64)).to(dtype)
    dense = torch.from_numpy(rng.integers(0, 3, (c.n, k)).astype(np.float64)).to(dtype)
    grad = torch.from_numpy(rng.normal(size=(c.m, k))).to(dtype)
    vg, dg = values.clone().requires_grad_(), dense.clone().requires_grad_()
    ops.spmm(ip, ix, vg, dg, reduce).backward(grad)

    rows = row_ids(ip)
    prod = values.double()[:, None] * dense.double()[ix.long()]
    out = spmm_ref(ip, ix, values.double(), dense.double(), reduce)
    attaining = torch.zeros(c.m, k, dtype=F64).index_add_(0, rows, (prod == out[rows]).double())
    assert (attaining > 1).any(), "the inputs must hold ties"
    ref_v, ref_d = _first_attaining_reference(ip, ix, values, dense, reduce, grad)
    # 16-bit: the products of these small integers are exact, the gradient
    # sums round once from float32.
    tol = {torch.float64: 1e-12, torch.float32: 1e-5}.get(dtype, 1e-2)
    torch.testing.assert_close(vg.grad.double(), ref_v, rtol=tol, atol=tol)
    torch.testing.assert_close(dg.grad.double(), ref_d, rtol=tol, atol=tol)
    if dtype in (torch.bfloat16, torch.float16):
        return  # torch.sparse.mm(reduce=...) has no 16-bit CPU backward to compare with

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: sparse CSR support is in beta
        a = torch.sparse_csr_tensor(ip.long(), ix.long(), values.clone(), (c.m, c.n)).requires_grad_()
        b = dense.clone().requires_grad_()
        torch.sparse.mm(a, b, "amax" if reduce == "max" else "amin").backward(grad)
    torch.testing.assert_close(vg.grad, a.grad.values(), rtol=tol, atol=tol)
    torch.testing.assert_close(dg.grad, b.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("threads", (1, 2, 3))
def test_extremum_backward_splits_skewed_rows_into_tasks_of_equal_work(threads):
    """Enough work for many parallel tasks, cut by non-zeros: a few long rows,
    many short and empty ones, ties everywhere; the gradients must equal
    torch.sparse.mm(reduce="amax")'s whatever the thread count."""
    c, ip, ix = structure(3000, 400, 0.01, seed=22, idtype="int32", empty_rows=tuple(range(0, 3000, 7)),
                          dense_rows=(1, 2, 1500, 2999))
    rng = np.random.default_rng(22)
    values = torch.from_numpy(rng.integers(1, 3, c.nnz).astype(np.float32))
    dense = torch.from_numpy(rng.integers(0, 3, (c.n, 40)).astype(np.float32))
    grad = torch.from_numpy(rng.normal(size=(c.m, 40)).astype(np.float32))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        vg, dg = values.clone().requires_grad_(), dense.clone().requires_grad_()
        ops.spmm(ip, ix, vg, dg, "max").backward(grad)
    finally:
        torch.set_num_threads(before)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: sparse CSR support is in beta
        a = torch.sparse_csr_tensor(ip.long(), ix.long(), values.clone(), (c.m, c.n)).requires_grad_()
        b = dense.clone().requires_grad_()
        torch.sparse.mm(a, b, "amax").backward(grad)
    torch.testing.assert_close(vg.grad, a.grad.values(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(dg.grad, b.grad, rtol=1e-5, atol=1e-5)


def test_extremum_backward_refuses_bad_arguments():
    c, ip, ix = structure(6, 5, 0.45, seed=10, idtype="int64", empty_rows=(0, 3))
    v, d = torch.rand(c.nnz, dtype=torch.float64), torch.rand(c.n, K, dtype=torch.float64)
    out = ops.spmm(ip, ix, v, d, "max")
    op = ops._spmm_extremum_backward
    with pytest.raises(ValueError, match="_spmm_extremum_backward.*'grad'"):
        op(ip, ix, v, d, out, torch.rand(c.m + 1, K, dtype=torch.float64))
    with pytest.raises(ValueError, match="_spmm_extremum_backward.*'out'.*dtype"):
        op(ip, ix, v, d, out.float(), out)
    with pytest.raises(ValueError, match="_spmm_extremum_backward.*'values'"):
        op(ip, ix, v[:-1], d, out, out)
    bad = ix.clone()
    bad[0] = c.n
    with pytest.raises(ValueError, match="_spmm_extremum_backward.*indices"):
        op(ip, bad, v, d, out, out)
    with pytest.raises(RuntimeError, match="second derivatives"):
        vg, dg = v.clone().requires_grad_(), d.clone().requires_grad_()
        y = ops.spmm(ip, ix, vg, dg, "max")
        (g,) = torch.autograd.grad(y.sum(), dg, create_graph=True)
        g.sum().backward()


# --------------------------------------------------------------------------- calls without gradients


@pytest.mark.parametrize("reduce", ["sum", "mean", "max"])
def test_a_call_without_gradients_builds_no_node_and_gives_the_same_bits(reduce):
    # Inputs that need no gradient (or grad mode off) run the operator below
    # autograd directly; the result is the one the autograd path computes.
    a = make_csr(40, 30, density=0.2, seed=41, empty_rows=(3,), dense_rows=(7,))
    ip, ix = a.torch_structure("int32")
    gen = torch.Generator().manual_seed(41)
    v, d = torch.randn(a.nnz, generator=gen), torch.randn(30, 8, generator=gen)
    x, y = torch.randn(40, 8, generator=gen), torch.randn(30, 8, generator=gen)
    tracked_spmm = ops.spmm(ip, ix, v, d.clone().requires_grad_(), reduce)
    tracked_sddmm = ops.sddmm(ip, ix, v, x.clone().requires_grad_(), y, "dot")
    assert tracked_spmm.grad_fn is not None and tracked_sddmm.grad_fn is not None
    spmm, sddmm = ops.spmm(ip, ix, v, d, reduce), ops.sddmm(ip, ix, v, x, y, "dot")
    assert spmm.grad_fn is None and not spmm.requires_grad
    assert sddmm.grad_fn is None and not sddmm.requires_grad
    assert torch.equal(spmm, tracked_spmm.detach()) and torch.equal(sddmm, tracked_sddmm.detach())
    with torch.no_grad():
        spmm = ops.spmm(ip, ix, v.clone().requires_grad_(), d.clone().requires_grad_(), reduce)
        sddmm = ops.sddmm(ip, ix, v.clone().requires_grad_(), x.clone().requires_grad_(), y, "dot")
    assert spmm.grad_fn is None and sddmm.grad_fn is None
    assert torch.equal(spmm, tracked_spmm.detach()) and torch.equal(sddmm, tracked_sddmm.detach())
    # And against float64: the sampled product of the pattern.
    rows = np.repeat(np.arange(40), np.diff(a.indptr))
    ref = v.double().numpy() * np.einsum("ek,ek->e", x.double().numpy()[rows], y.double().numpy()[a.indices])
    np.testing.assert_allclose(sddmm.double().numpy(), ref, rtol=1e-5, atol=1e-5)


def _calls_of_every_other_op():
    """name -> (call, differentiable inputs) of the operators besides spmm / sddmm."""
    gen = torch.Generator().manual_seed(43)
    a = make_csr(12, 10, density=0.3, seed=43, empty_rows=(2,))
    ip, ix = a.torch_structure("int64")
    bip, bix = torch.tensor([0, 2, 2, 3]), torch.tensor([0, 2, 1])  # 3 x 3 blocks of 2 x 4
    heads = 2
    return {
        "bsrmm": (lambda b, d: ops.bsrmm(bip, bix, b, d),
                  [torch.randn(3, 2, 4, generator=gen), torch.randn(12, 5, generator=gen)]),
        "bsr_linear": (lambda x, b: ops.bsr_linear(x, bip, bix, b),
                       [torch.randn(7, 12, generator=gen), torch.randn(3, 2, 4, generator=gen)]),
        "edge_softmax": (lambda s: ops.edge_softmax(ip, ix, s), [torch.randn(a.nnz, heads, generator=gen)]),
        "gat_attention": (lambda d, s, x: ops.gat_attention(ip, ix, d, s, x, 0.2),
                          [torch.randn(12, heads, generator=gen), torch.randn(10, heads, generator=gen),
                           torch.randn(10, heads, 3, generator=gen)]),
        "sparse_attention": (lambda q, k, v: ops.sparse_attention(ip, ix, q, k, v),
                             [torch.randn(heads, 12, 4, generator=gen), torch.randn(heads, 10, 4, generator=gen),
                              torch.randn(heads, 10, 3, generator=gen)]),
        "dropout": (lambda x: ops.dropout(x, 0.5, torch.tensor(3)), [torch.randn(100, 3, generator=gen)]),
    }


@pytest.mark.parametrize("name", ["bsrmm", "bsr_linear", "edge_softmax", "gat_attention", "sparse_attention",
                                  "dropout"])
def test_every_op_without_gradients_builds_no_node_and_gives_the_same_bits(name):
    call, inputs = _calls_of_every_other_op()[name]
    tracked = call(*[t.clone().requires_grad_() for t in inputs])
    assert tracked.grad_fn is not None
    plain = call(*inputs)
    with torch.no_grad():
        no_grad = call(*[t.clone().requires_grad_() for t in inputs])
    for out in (plain, no_grad):
        assert out.grad_fn is None and not out.requires_grad
        assert torch.equal(out, tracked.detach())


def test_forward_mode_tangents_are_refused_not_dropped():
    # A tangent on an input that does not require grad still goes through the
    # autograd Function, which refuses forward mode: it is never silently lost.
    import torch.autograd.forward_ad as fwAD

    ip, ix = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    v, d = torch.tensor([1.0, 2.0, 3.0]), torch.randn(2, 4)
    with fwAD.dual_level():
        dual = fwAD.make_dual(d, torch.ones_like(d))
        with pytest.raises(RuntimeError, match="jvp"):
            ops.spmm(ip, ix, v, dual, "sum")
        with pytest.raises(RuntimeError, match="jvp"):
            ops.sddmm(ip, ix, None, torch.randn(2, 4), dual, "dot")
