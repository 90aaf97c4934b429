"""sparsetir._spmm_dense_backward: spmm's gradient with respect to dense
(A^T grad, the mean's row lengths folded into the values), which keeps the
transposed values of constant values per graph. Values against float64 NumPy
references on every CSR edge case, dtype and index dtype; the cache's
invalidation (in-place edits, a new tensor, trained values); its own
gradients (gradcheck, gradgradcheck of spmm through it); opcheck; the
argument errors."""
import gc

import numpy as np
import pytest
import torch
from torch.library import opcheck

import sparsetir_torch as st
from conftest import CSR_CASES, assert_within_bound, make_csr

ops = torch.ops.sparsetir
DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16}
IDTYPES = ("int32", "int64")
# (values shape after nnz, grad shape after rows): a plain matrix, heads
# sharing the values, and one value per head.
SHAPES = {"2d": ((), (7,)), "shared_heads": ((), (3, 4)), "per_head": ((3,), (3, 4))}


def tensor(rng, shape, dtype):
    return torch.from_numpy(rng.uniform(-1, 1, shape)).to(DTYPES[dtype])


def reference(csr, values, grad, reduce):
    """A^T grad in float64 (values / row length for the mean) and the sum of |terms|."""
    rows = csr.rows()
    scale = values / np.maximum(csr.row_lengths(), 1)[rows].reshape((-1,) + (1,) * (values.ndim - 1))
    if reduce == "sum":
        scale = values
    scale = scale.reshape(scale.shape + (1,) * (grad.ndim - scale.ndim))
    terms = scale * grad[rows]
    out = np.zeros((csr.n,) + grad.shape[1:])
    magnitude = np.zeros_like(out)
    np.add.at(out, csr.indices, terms)
    np.add.at(magnitude, csr.indices, np.abs(terms))
    return out, magnitude


def column_counts(csr, shape):
    counts = np.bincount(csr.indices, minlength=csr.n) if csr.nnz else np.zeros(csr.n, dtype=np.int64)
    return np.maximum(counts, 1).reshape((-1,) + (1,) * (len(shape) - 1))


@pytest.mark.parametrize("cache", (False, True), ids=("uncached", "cached"))
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", sorted(CSR_CASES))
def test_values_match_float64(case, dtype, idtype, reduce, shape, cache):
    csr = make_csr(seed=3, **CSR_CASES[case])
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(8)
    value_tail, grad_tail = SHAPES[shape]
    values, grad = tensor(rng, (csr.nnz, *value_tail), dtype), tensor(rng, (csr.m, *grad_tail), dtype)
    for _ in range(2):  # the second call of the cached case reads the cache
        out = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, reduce, cache)
        assert out.shape == (csr.n, *grad_tail) and out.dtype == grad.dtype
        ref, magnitude = reference(csr, values.double().numpy(), grad.double().numpy(), reduce)
        # The mean's folded value 1 / length is one more rounding per term.
        terms = column_counts(csr, ref.shape) + (1 if reduce == "mean" else 0)
        assert_within_bound(out, ref, magnitude, terms, dtype, f"{case} {reduce} {shape}")


@pytest.mark.parametrize("reduce", ("sum", "mean"))
def test_an_in_place_edit_of_cached_values_is_seen(reduce):
    csr = make_csr(40, 30, 0.2, seed=1, empty_rows=(2, 9))
    indptr, indices = csr.torch_structure("int64")
    rng = np.random.default_rng(0)
    values, grad = tensor(rng, (csr.nnz,), "float64"), tensor(rng, (csr.m, 5), "float64")
    before = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, reduce, True)
    values.mul_(-3.0)  # bumps the version
    after = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, reduce, True)
    torch.testing.assert_close(after, -3.0 * before)
    ref, _ = reference(csr, values.numpy(), grad.numpy(), reduce)
    np.testing.assert_allclose(after.numpy(), ref, rtol=1e-12, atol=1e-12)


def test_a_new_values_tensor_is_not_mistaken_for_the_cached_one():
    csr = make_csr(30, 30, 0.2, seed=2)
    indptr, indices = csr.torch_structure("int32")
    rng = np.random.default_rng(1)
    grad = tensor(rng, (csr.m, 4), "float64")
    for scale in (1.0, 2.0, -5.0, 0.5):
        # Each values tensor dies before the next is made: the allocator may
        # hand out the same address, which must not match the dead entry.
        values = torch.full((csr.nnz,), scale, dtype=torch.float64)
        out = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, "mean", True)
        ref, _ = reference(csr, values.numpy(), grad.numpy(), "mean")
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)
        del values, out
        gc.collect()


def test_values_that_require_grad_are_never_cached():
    # gradcheck and optimizers may edit trained values through .data, which
    # leaves the version alone: such values must be read afresh every call.
    csr = make_csr(20, 20, 0.3, seed=4)
    indptr, indices = csr.torch_structure("int64")
    rng = np.random.default_rng(2)
    values = tensor(rng, (csr.nnz,), "float64").requires_grad_()
    grad = tensor(rng, (csr.m, 3), "float64")
    first = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, "sum", True)
    values.data.mul_(2.0)
    second = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, "sum", True)
    torch.testing.assert_close(second, 2.0 * first)


def test_outputs_are_fresh_tensors():
    # The cache must stay inside: an output written to must not change the next call's result.
    csr = make_csr(25, 25, 0.2, seed=5)
    indptr, indices = csr.torch_structure("int64")
    rng = np.random.default_rng(3)
    values, grad = tensor(rng, (csr.nnz,), "float64"), tensor(rng, (csr.m, 6), "float64")
    first = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, "mean", True)
    expected = first.clone()
    first.fill_(123.0)
    second = ops._spmm_dense_backward(indptr, indices, values, grad, csr.n, "mean", True)
    assert second.data_ptr() != first.data_ptr()
    torch.testing.assert_close(second, expected)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("idtype", IDTYPES)
def test_spmm_gradients_through_it_match_dense_and_differentiate_twice(idtype, reduce, shape):
    csr = make_csr(12, 10, 0.3, seed=6, empty_rows=(0, 7))
    indptr, indices = csr.torch_structure(idtype)
    rng = np.random.default_rng(4)
    value_tail, grad_tail = SHAPES[shape]
    values = tensor(rng, (csr.nnz, *value_tail), "float64")
    dense = tensor(rng, (csr.n, *grad_tail), "float64").requires_grad_()
    constant = values.clone()  # requires no grad: the cached path

    def spmm_const(d):
        return ops.spmm(indptr, indices, constant, d, reduce)

    assert torch.autograd.gradcheck(spmm_const, (dense,))
    assert torch.autograd.gradgradcheck(lambda d: spmm_const(d).square(), (dense,))
    # Trained values: both gradients, and their second derivatives.
    trained = values.clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda v, d: ops.spmm(indptr, indices, v, d, reduce), (trained, dense))
    assert torch.autograd.gradgradcheck(lambda v, d: ops.spmm(indptr, indices, v, d, reduce).square(),
                                        (trained, dense))
    # Against the dense product (rows divided by their lengths for the mean).
    g = tensor(rng, (csr.m, *grad_tail), "float64")
    (got,) = torch.autograd.grad(spmm_const(dense), dense, g)
    ref, _ = reference(csr, values.numpy(), g.numpy(), reduce)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("wrt", ("values", "grad"))
def test_gradcheck_of_the_operator_itself(reduce, wrt):
    csr = make_csr(9, 11, 0.35, seed=7, empty_rows=(4,))
    indptr, indices = csr.torch_structure("int32")
    rng = np.random.default_rng(5)
    values, grad = tensor(rng, (csr.nnz,), "float64"), tensor(rng, (csr.m, 3), "float64")
    (values if wrt == "values" else grad).requires_grad_()
    fn = lambda v, g: ops._spmm_dense_backward(indptr, indices, v, g, csr.n, reduce, True)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (values, grad))
    assert torch.autograd.gradgradcheck(fn, (values, grad))


@pytest.mark.parametrize("cache", (False, True))
@pytest.mark.parametrize("reduce", ("sum", "mean"))
@pytest.mark.parametrize("idtype", IDTYPES)
@pytest.mark.parametrize("dtype", (torch.float32, torch.float64))
def test_opcheck(dtype, idtype, reduce, cache):
    csr = make_csr(14, 9, 0.3, seed=8, empty_rows=(1,))
    indptr, indices = csr.torch_structure(idtype)
    values = torch.randn(csr.nnz, dtype=dtype, generator=torch.Generator().manual_seed(0))
    grad = torch.randn(csr.m, 5, dtype=dtype, generator=torch.Generator().manual_seed(1)).requires_grad_()
    opcheck(ops._spmm_dense_backward.default, (indptr, indices, values, grad, csr.n, reduce, cache))


def test_sage_mean_training_steps_match_torch_with_a_reused_graph():
    # Several steps on one graph with new features each time: the cached
    # weights serve every backward, and the outputs and gradients equal those
    # of a dense float64 reference (a repeated edge counts twice, as in PyG).
    n = 40
    gen = torch.Generator().manual_seed(3)
    edge_index = torch.randint(0, n, (2, 200), generator=gen)
    conv = st.nn.SAGEConv(6, 3, aggr="mean").double()
    x = torch.randn(n, 6, dtype=torch.float64, generator=gen)
    adj = torch.zeros(n, n, dtype=torch.float64).index_put_((edge_index[1], edge_index[0]),
                                                            torch.ones(200, dtype=torch.float64), accumulate=True)
    mean = adj / adj.sum(1, keepdim=True).clamp(min=1)
    for step in range(3):
        xi = x.clone().requires_grad_()
        out = conv(xi, edge_index)
        out.square().sum().backward()
        xr = x.clone().requires_grad_()
        ref = (mean @ xr) @ conv.lin_l.weight.t() + conv.lin_l.bias + xr @ conv.lin_r.weight.t()
        ref.square().sum().backward()
        torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(xi.grad, xr.grad, rtol=1e-12, atol=1e-12)
        x = x * 0.5 + step  # new features, same graph


@pytest.mark.parametrize("args,message", [
    (dict(reduce="max"), r"_spmm_dense_backward: argument 'reduce' must be \"sum\" or \"mean\", got \"max\""),
    (dict(grad_rows=5), r"_spmm_dense_backward: argument 'grad' must have one row per row of the matrix \(6\)"),
    (dict(values_len=3), r"_spmm_dense_backward: argument 'values' must have one row per non-zero"),
    (dict(grad_dtype=torch.float32), r"_spmm_dense_backward: argument 'grad' must have the dtype of 'values'"),
    (dict(grad_dims=1), r"_spmm_dense_backward: argument 'grad' must be 2-D \(m, K\) or 3-D"),
    (dict(columns=2), r"_spmm_dense_backward: .*columns"),
    (dict(values_dtype=torch.int64), r"_spmm_dense_backward: argument 'values'"),
])
def test_bad_arguments_name_the_argument(args, message):
    csr = make_csr(6, 8, 0.5, seed=9)
    indptr, indices = csr.torch_structure("int64")
    values = torch.ones(args.get("values_len", csr.nnz), dtype=args.get("values_dtype", torch.float64))
    shape = (args.get("grad_rows", csr.m),) + ((4,) if args.get("grad_dims", 2) == 2 else ())
    grad = torch.ones(shape, dtype=args.get("grad_dtype", torch.float64))
    with pytest.raises(ValueError, match=message):
        ops._spmm_dense_backward(indptr, indices, values, grad, args.get("columns", csr.n),
                                 args.get("reduce", "sum"), True)
