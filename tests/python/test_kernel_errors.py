"""A bad kernel call raises ValueError naming the offending parameter, has no
side effect on the output, and leaves the process able to run correct calls."""
import re
import warnings

import numpy as np
import pytest
import torch

from conftest import make_csr, read_script

M, N, F = 4, 5, 3
INDPTR = [0, 2, 2, 3, 5]
INDICES = [0, 4, 1, 2, 3]
NNZ = 5


def good_args(dtype=torch.float32, idtype=torch.int32):
    g = torch.Generator().manual_seed(0)
    return dict(
        a=torch.rand(NNZ, generator=g, dtype=torch.float64).to(dtype),
        b=torch.rand(N, F, generator=g, dtype=torch.float64).to(dtype),
        c=torch.full((M, F), -7.0, dtype=dtype),
        indptr=torch.tensor(INDPTR, dtype=idtype),
        indices=torch.tensor(INDICES, dtype=idtype),
        m=M,
        n=N,
        feat_size=F,
        nnz=NNZ,
    )


def reference(args):
    dense = torch.zeros(M, N, dtype=torch.float64)
    for r in range(M):
        for e in range(INDPTR[r], INDPTR[r + 1]):
            dense[r, INDICES[e]] += args["a"][e].double()
    return dense @ args["b"].double()


def i32(values):
    return torch.tensor(values, dtype=torch.int32)


def _sparse_csr(dense):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Sparse CSR tensor support is in beta state"
        return dense.to_sparse_csr()


# name -> (replacements for good_args(); None removes the argument, parameter named in the message)
BAD_CALLS = {
    "int64_indptr_for_int32_kernel": (dict(indptr=torch.tensor(INDPTR, dtype=torch.int64)), "indptr"),
    "int64_indices_for_int32_kernel": (dict(indices=torch.tensor(INDICES, dtype=torch.int64)), "indices"),
    "float64_values": (dict(a=torch.rand(NNZ, dtype=torch.float64)), "a"),
    "float16_dense": (dict(b=torch.rand(N, F).half()), "b"),
    "int_output": (dict(c=torch.zeros(M, F, dtype=torch.int32)), "c"),
    "meta_device": (dict(b=torch.empty(N, F, device="meta")), "b"),
    "missing_argument": (dict(c=None), "c"),
    "unexpected_argument": (dict(bogus=1), "bogus"),
    "values_shorter_than_nnz": (dict(a=torch.rand(NNZ - 2)), "a"),
    "values_longer_than_nnz": (dict(a=torch.rand(NNZ + 1)), "a"),
    "values_2d": (dict(a=torch.rand(NNZ, 1)), "a"),
    "indptr_too_short": (dict(indptr=i32([0, 2, 3, 5])), "indptr"),
    "indptr_too_long": (dict(indptr=i32([0, 2, 2, 3, 5, 5])), "indptr"),
    "dense_wrong_rows": (dict(b=torch.rand(N + 1, F)), "b"),
    "dense_wrong_cols": (dict(b=torch.rand(N, F + 1)), "b"),
    "dense_transposed": (dict(b=torch.rand(F, N)), "b"),
    "output_wrong_shape": (dict(c=torch.zeros(M, F + 1)), "c"),
    "indptr_not_monotone": (dict(indptr=i32([0, 3, 2, 3, 5])), "indptr"),
    "indptr_not_starting_at_0": (dict(indptr=i32([1, 2, 2, 3, 5])), "indptr"),
    "indptr_not_ending_at_nnz": (dict(indptr=i32([0, 2, 2, 3, 4])), "indptr"),
    "index_negative": (dict(indices=i32([0, -1, 1, 2, 3])), "indices"),
    "index_equal_to_n": (dict(indices=i32([0, 4, 1, 2, N])), "indices"),
    "index_far_out_of_range": (dict(indices=i32([0, 4, 1, 2**30, 3])), "indices"),
    "non_contiguous_dense": (dict(b=torch.rand(F, N).t()), "b"),
    "non_contiguous_indices": (dict(indices=i32([x for v in INDICES for x in (v, 0)])[::2]), "indices"),
    "float_for_int_scalar": (dict(m=float(M)), "m"),
    "bool_for_int_scalar": (dict(feat_size=True), "feat_size"),
    "str_for_int_scalar": (dict(n="5"), "n"),
    "tensor_for_int_scalar": (dict(nnz=torch.tensor(NNZ)), "nnz"),
    "scalar_overflows_int32": (dict(m=2**40), "m"),
    "scalar_overflows_int64": (dict(m=2**70), "m"),
    "negative_extent": (dict(feat_size=-3), "b"),  # the scalar gives 'b' a negative shape
    "sparse_coo_tensor_as_handle": (dict(b=torch.rand(N, F).to_sparse()), "b"),
    "sparse_csr_tensor_as_handle": (dict(b=_sparse_csr(torch.rand(N, F))), "b"),
    "int_for_handle": (dict(a=3), "a"),
    "none_for_handle": (dict(a=None, _keep_none=True), "a"),
    "list_for_handle": (dict(a=[0.0] * NNZ), "a"),
}


def apply(args, changes):
    args = dict(args)
    keep_none = changes.get("_keep_none", False)
    for key, value in changes.items():
        if key == "_keep_none":
            continue
        if value is None and not keep_none:
            args.pop(key)
        else:
            args[key] = value
    return args


def check_still_works(kernel):
    args = good_args()
    kernel("csrmm")(**args)
    torch.testing.assert_close(args["c"].double(), reference(args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_call_raises_value_error_naming_the_parameter(kernel, case):
    k = kernel("csrmm")
    changes, param = BAD_CALLS[case]
    args = apply(good_args(), changes)
    output = args.get("c")
    output_before = output.clone() if isinstance(output, torch.Tensor) and output.device.type == "cpu" else None
    with pytest.raises(ValueError) as info:
        k(**args)
    message = str(info.value)
    assert f"'{param}'" in message, f"parameter '{param}' is not named in: {message}"
    if output_before is not None and output.layout == torch.strided:
        assert torch.equal(output, output_before), "a rejected call wrote into the output"
    check_still_works(kernel)


def test_too_many_positional_arguments(kernel):
    k = kernel("csrmm")
    args = good_args()
    positional = [args[p] for p in k.params]
    with pytest.raises(ValueError) as info:
        k(*positional, 1)
    message = str(info.value)
    assert "csrmm" in message and str(len(k.params)) in message and str(len(k.params) + 1) in message, message
    check_still_works(kernel)


def test_argument_given_twice(kernel):
    k = kernel("csrmm")
    args = good_args()
    positional = [args[p] for p in k.params]
    with pytest.raises(ValueError, match="'a'"):
        k(*positional[:1], a=args["a"], **{p: args[p] for p in k.params[1:]})
    check_still_works(kernel)


def test_wrong_index_dtype_for_int64_kernel(kernel):
    """The int64 variant rejects int32 structure arrays, naming them."""
    k = kernel("csrmm", "float32", "int64")
    args = good_args(idtype=torch.int64)
    args["indices"] = args["indices"].to(torch.int32)
    with pytest.raises(ValueError, match="'indices'"):
        k(**args)
    args = good_args(idtype=torch.int64)
    k(**args)
    torch.testing.assert_close(args["c"].double(), reference(args), rtol=1e-5, atol=1e-6)


def test_sddmm_malformed_structure_names_parameter(kernel):
    k = kernel("sddmm")
    csr = make_csr(6, 7, density=0.4, seed=1)
    indptr, indices = csr.torch_structure("int32")
    args = dict(
        a=torch.rand(6, 2), b=torch.rand(7, 2), x=torch.rand(csr.nnz), y=torch.zeros(csr.nnz),
        indptr=indptr, indices=indices, m=6, n=7, feat_size=2, nnz=csr.nnz,
    )
    bad = dict(args, indices=indices.clone())
    bad["indices"][0] = 7
    with pytest.raises(ValueError, match="'indices'"):
        k(**bad)
    with pytest.raises(ValueError, match="'y'"):
        k(**dict(args, y=torch.zeros(csr.nnz + 1)))
    with pytest.raises(ValueError, match="'x'"):
        k(**dict(args, x=torch.zeros(csr.nnz, dtype=torch.float64)))
    k(**args)
    assert torch.isfinite(args["y"]).all()


def test_numpy_integer_scalar_is_accepted(kernel):
    args = good_args()
    args["m"] = np.int64(M)
    kernel("csrmm")(**args)
    torch.testing.assert_close(args["c"].double(), reference(args), rtol=1e-5, atol=1e-6)


def test_numpy_array_as_handle_names_parameter(kernel):
    args = good_args()
    args["a"] = args["a"].numpy()
    with pytest.raises(ValueError, match="'a'"):
        kernel("csrmm")(**args)


def test_many_bad_calls_then_good_call(kernel):
    """Hammering the checks does not corrupt the process."""
    k = kernel("csrmm")
    for _ in range(50):
        for changes, _param in BAD_CALLS.values():
            with pytest.raises(ValueError):
                k(**apply(good_args(), changes))
    check_still_works(kernel)


# ---- the validated-call memo: a structure that passed is not re-read on the next call with the same tensors, but
# ---- any change to them (in place, a new tensor, other scalars) is checked again.


def test_in_place_change_of_validated_indices_is_caught(kernel):
    k = kernel("csrmm")
    args = good_args()
    k(**args)  # validated and remembered
    k(**args)  # the memo hit
    args["indices"][3] = N  # in place: bumps the version counter
    with pytest.raises(ValueError, match=r"'indices'.*element 3 is 5, outside the valid range \[0, 4\]"):
        k(**args)
    args["indices"][3] = 2
    k(**args)
    torch.testing.assert_close(args["c"].double(), reference(args), rtol=1e-5, atol=1e-6)


def test_inference_tensors_are_checked_on_every_call(kernel):
    """Inference tensors have no version counter, so the memo cannot tell an
    in-place edit: every call checks them in full (and does not fail)."""
    k = kernel("csrmm")
    with torch.inference_mode():
        args = good_args()
        k(**args)
        k(**args)
        args["indices"][3] = N
        with pytest.raises(ValueError, match=r"'indices'.*element 3 is 5, outside the valid range \[0, 4\]"):
            k(**args)
        args["indices"][3] = 2
        k(**args)
        torch.testing.assert_close(args["c"].double(), reference(args), rtol=1e-5, atol=1e-6)


def test_in_place_change_of_validated_indptr_is_caught(kernel):
    k = kernel("csrmm")
    args = good_args()
    k(**args)
    args["indptr"][1] = 4  # 0, 4, 2, ...: decreasing
    with pytest.raises(ValueError, match=r"'indptr'.*must be non-decreasing"):
        k(**args)


def test_new_tensors_with_bad_contents_are_checked(kernel):
    """Fresh tensors (possibly at a freed tensor's address, with the same size and version) are checked."""
    k = kernel("csrmm")
    for trial in range(20):
        args = good_args()
        k(**args)
        del args
        bad = good_args()
        bad["indices"] = i32([0, 4, 1, 2, N + trial])
        with pytest.raises(ValueError, match=r"'indices'"):
            k(**bad)


def test_validated_indices_are_rechecked_for_other_scalars(kernel):
    """The range of an index depends on n: the same indices with a smaller n are checked again."""
    k = kernel("csrmm")
    args = good_args()
    k(**args)
    smaller = dict(args, n=N - 1, b=args["b"][: N - 1].contiguous())
    with pytest.raises(ValueError, match=r"'indices'.*outside the valid range \[0, 3\]"):
        k(**smaller)


def test_validated_structure_still_checks_shapes(kernel):
    k = kernel("csrmm")
    args = good_args()
    k(**args)
    with pytest.raises(ValueError, match=r"'b' must have shape"):
        k(**dict(args, b=torch.rand(N + 1, F)))


# --------------------------------------------------------------------------- integer division by zero

ELEMENTWISE = """
@T.prim_func
def ew(a: T.handle, b: T.handle, c: T.handle, n: T.int32) -> None:
    I = T.sp.dense_fixed(n)
    A = T.sp.match_buffer(a, (I,), "{dtype}")
    B = T.sp.match_buffer(b, (I,), "{dtype}")
    C = T.sp.match_buffer(c, (I,), "{dtype}")
    with T.sp.iteration([I], "S", "ew") as [i]:
        C[i] = {expr}
"""

DIVISIONS = {  # the script's expression and Python's value of it
    "floordiv": ("A[i] // B[i]", lambda a, b: a // b),
    "floormod": ("A[i] % B[i]", lambda a, b: a % b),
    "truncdiv": ("T.truncdiv(A[i], B[i])", lambda a, b: abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)),
}


def division_kernel(division, dtype, target):
    import sparsetir_torch as st

    f = st.parse(ELEMENTWISE.format(dtype=dtype, expr=DIVISIONS[division][0]))
    if target == "cpu":
        return st.compile(f)
    sch = st.Schedule(f)
    sch.bind(sch.get_loops("ew")[0], "threadIdx.x")
    return st.compile(sch, target="cuda")  # CPU tensors: run under the SIMT emulator


def wrapped(value, bits):
    """value as a signed integer of `bits` bits (two's complement wrap-around)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


@pytest.mark.parametrize("target", ["cpu", "cuda"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("division", sorted(DIVISIONS))
def test_integer_division_by_zero_raises_and_the_rest_is_exact(division, dtype, target):
    """A zero divisor would stop the process (SIGFPE on x86): the call raises,
    naming the kernel, and the process goes on. The smallest integer divided
    by -1 wraps (as on a GPU) instead of trapping; every other quotient and
    remainder is Python's."""
    bits = 32 if dtype == "int32" else 64
    smallest = -(1 << (bits - 1))
    kernel = division_kernel(division, dtype, target)
    tdtype = getattr(torch, dtype)
    a = [7, -7, 7, -7, 5, 0, smallest, smallest, 1 - (1 << (bits - 1))]
    b = [2, 2, -2, -2, 5, 3, -1, 3, -1]
    c = torch.zeros(len(a), dtype=tdtype)
    kernel(a=torch.tensor(a, dtype=tdtype), b=torch.tensor(b, dtype=tdtype), c=c, n=len(a))
    expected = [wrapped(DIVISIONS[division][1](x, y), bits) for x, y in zip(a, b)]
    assert c.tolist() == expected
    message = (r"ew\(\): an integer division or remainder by zero" if target == "cpu"
               else r"an integer division or remainder by zero")
    with pytest.raises((ValueError, RuntimeError), match=message):
        kernel(a=torch.tensor([4, 9, 1], dtype=tdtype), b=torch.tensor([2, 0, 1], dtype=tdtype),
               c=torch.zeros(3, dtype=tdtype), n=3)
    # The process and the kernel are fine afterwards.
    c = torch.zeros(2, dtype=tdtype)
    kernel(a=torch.tensor([9, -9], dtype=tdtype), b=torch.tensor([4, 4], dtype=tdtype), c=c, n=2)
    assert c.tolist() == [DIVISIONS[division][1](9, 4), DIVISIONS[division][1](-9, 4)]


@pytest.mark.parametrize("expr,what", [("A[i] // 0", "'//'"), ("A[i] % 0", "'%'"),
                                       ("T.truncdiv(A[i], 0)", "T.truncdiv"), ("T.floordiv(A[i], 0)", "T.floordiv")])
def test_a_constant_zero_divisor_is_a_script_error(expr, what):
    import sparsetir_torch as st

    with pytest.raises(st.ScriptError, match=f"{re.escape(what)} by zero"):
        st.parse(ELEMENTWISE.format(dtype="int32", expr=expr))


# --------------------------------------------------------------------------- lookups need sorted rows

TO_DENSE = """
@T.prim_func
def todense(a: T.handle, d: T.handle, indptr: T.handle, indices: T.handle, m: T.int32, n: T.int32,
            nnz: T.int32) -> None:
    I = T.sp.dense_fixed(m)
    J = T.sp.compressed_varied(I, (n, nnz), (indptr, indices), "int32")
    JD = T.sp.dense_fixed(n)
    A = T.sp.match_buffer(a, (I, J), "float32")
    D = T.sp.match_buffer(d, (I, JD), "float32")
    with T.sp.iteration([I, JD], "SS", "todense") as [i, jd]:
        D[i, jd] = A[i, jd]
"""


@pytest.mark.parametrize("idtype", [torch.int32, torch.int64])
def test_a_lookup_kernel_refuses_rows_out_of_order(idtype):
    """A[i, jd] over a dense jd looks jd up in row i's columns by binary search,
    which misses entries of an unsorted row: such indices are refused, naming
    the row; sorted rows (repeats included) give the dense matrix."""
    import sparsetir_torch as st

    script = TO_DENSE if idtype == torch.int32 else TO_DENSE.replace('"int32")', '"int64")')
    kernel = st.compile(st.parse(script))
    indptr = torch.tensor([0, 0, 3, 5], dtype=idtype)
    values = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])

    def run(indices):
        d = torch.zeros(3, 5)
        kernel(a=values, d=d, indptr=indptr, indices=torch.tensor(indices, dtype=idtype), m=3, n=5, nnz=5)
        return d

    expected = torch.zeros(3, 5)
    expected[1, [0, 2, 4]] = torch.tensor([1.0, 2.0, 3.0])
    expected[2, [1, 3]] = torch.tensor([4.0, 5.0])
    torch.testing.assert_close(run([0, 2, 4, 1, 3]), expected)  # sorted within rows, not across them
    with pytest.raises(ValueError, match=r"todense\(\): argument 'indices' must list each row's coordinates in "
                                         r"increasing order: .* row 1 has 0 after 4 \(element 1\)"):
        run([4, 0, 2, 1, 3])
    with pytest.raises(ValueError, match=r"row 2 has 1 after 3 \(element 4\)"):
        run([0, 2, 4, 3, 1])


def test_an_output_that_requires_grad_is_refused():
    """The kernel writes c in place where autograd does not see it (torch
    refuses in-place ops on a leaf that requires grad); under torch.no_grad()
    the write is the caller's to account for."""
    import sparsetir_torch as st

    kernel = st.compile(st.parse(read_script("csrmm")))
    args = good_args()
    expected = reference(args)
    for c in (torch.zeros(M, F, requires_grad=True), torch.zeros(M, F, requires_grad=True) * 1.0):
        with pytest.raises(ValueError,
                           match=r"csrmm\(\): argument 'c' requires grad, but the kernel writes it in place"):
            kernel(**{**args, "c": c})
    c = torch.zeros(M, F, requires_grad=True)
    with torch.no_grad():
        kernel(**{**args, "c": c})
    torch.testing.assert_close(c.detach().double(), expected, rtol=1e-5, atol=1e-6)
