"""Reductions across lanes: a reduction loop bound to threadIdx.x.

Each lane sums its part of the reduction in a register; after the loop the
lanes of a group combine their parts with a butterfly of warp shuffles
(transforms/lower_lane_reductions.h), and every lane holds the result. The
kernels run under the SIMT emulator, whose threads are fibers that meet at
each shuffle: against float64 references for every dtype, both index dtypes
and the edge-case structures, in every thread order of the race check. The
schedules a lane reduction cannot lower are refused with the loop named.
"""
import os

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import CSR_CASES, REPO_ROOT, TORCH_DTYPES, assert_within_bound, make_csr, read_script, to_tensor

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = ("float32", "float64", "float16", "bfloat16")
CASES = sorted(c for c in CSR_CASES if c not in ("no_rows", "no_columns"))

# out[i, j] = max over k of X[i, k] * Y[j, k] on the non-zeros (a max across
# lanes): kernels/sddmm_dot.py with its sum made a max from INIT.
with open(os.path.join(REPO_ROOT, "kernels", "sddmm_dot.py"), encoding="utf-8") as f:
    SDDMM_DOT = f.read()
MAX_DOT = SDDMM_DOT.replace("O[i, j] = O[i, j] + X[i, k] * Y[j, k]", "O[i, j] = T.max(O[i, j], X[i, k] * Y[j, k])")
MAX_DOT = MAX_DOT.replace("O[i, j] = 0.0", "O[i, j] = INIT")
assert "T.max" in MAX_DOT and "INIT" in MAX_DOT


def lane_schedule(text, feat, lanes=32, rows=4, output="Y", cache=True):
    """A warp (or `lanes` of one) per non-zero: the sddmm recipe's mapping,
    written with the public primitives."""
    sch = st.Schedule(text)
    sch.specialize(feat_size=feat)
    sch.sparse_fuse("sddmm", ["I", "J"])
    ij, k = sch.get_loops("sddmm")
    ij0, ij1 = sch.split(ij, factors=[None, rows])
    sch.bind(ij0, "blockIdx.x")
    sch.bind(ij1, "threadIdx.y")
    k0, k1 = sch.split(k, factors=[None, lanes])
    sch.bind(k1, "threadIdx.x")
    if cache:
        sch.cache_write(ij1, output, "local")
    return sch


def sddmm_reference(a, a64, b64, x64):
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    products = a64[rows] * b64[a.indices]
    return (products.sum(1) * x64, (np.abs(products).sum(1) * np.abs(x64)))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
@pytest.mark.parametrize("feat,lanes", [(64, 32), (20, 32), (100, 16), (3, 4)])
def test_lane_sum_matches_float64(case, dtype, idtype, feat, lanes):
    a = make_csr(seed=5, **CSR_CASES[case])
    kernel = st.compile(lane_schedule(read_script("sddmm", dtype, idtype), feat, lanes), target="cuda")
    assert f"sparsetir_lane_reduce<SparsetirSum>(Y_local[0], {lanes})" in kernel.source
    rng = np.random.default_rng(1)
    A = to_tensor(rng.uniform(-1, 1, (a.m, feat)), dtype)
    B = to_tensor(rng.uniform(-1, 1, (a.n, feat)), dtype)
    X = to_tensor(rng.uniform(-1, 1, a.nnz), dtype)
    Y = torch.full((a.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = a.torch_structure(idtype)
    before = _C.emulated_runs()
    kernel(a=A, b=B, x=X, y=Y, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=feat, nnz=a.nnz)
    assert _C.emulated_runs() == before + 1
    ref, magnitude = sddmm_reference(a, A.double().numpy(), B.double().numpy(), X.double().numpy())
    assert_within_bound(Y, ref, magnitude, feat, dtype, f"lane sddmm {case}")


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_lanes_combine_to_the_same_bits_in_every_thread_order(monkeypatch, order):
    a = make_csr(seed=2, **CSR_CASES["dense_row"])
    kernel = st.compile(lane_schedule(read_script("sddmm"), 96), target="cuda")
    rng = np.random.default_rng(3)
    A, B = torch.from_numpy(rng.standard_normal((a.m, 96), np.float32)), torch.from_numpy(
        rng.standard_normal((a.n, 96), np.float32))
    X = torch.ones(a.nnz)
    indptr, indices = a.torch_structure("int32")

    def run():
        Y = torch.empty(a.nnz)
        kernel(a=A, b=B, x=X, y=Y, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=96, nnz=a.nnz)
        return Y

    forward = run()
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    assert torch.equal(run(), forward)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("init", ["-T.inf", "0.0"])
def test_lane_max_matches_float64(dtype, init):
    """A max across lanes; from 0 (not the max's identity) the lanes combine
    their parts from the identity and join the initial value once."""
    a = make_csr(seed=7, **CSR_CASES["empty_rows"])
    text = MAX_DOT.replace("INIT", f"T.{dtype}({init})").replace('"float32"', f'"{dtype}"')
    kernel = st.compile(lane_schedule(text, 40, output="O"), target="cuda")
    assert "sparsetir_lane_reduce<SparsetirMax>(O_local[0], 32)" in kernel.source
    rng = np.random.default_rng(4)
    X64, Y64 = rng.uniform(0, 1, (a.m, 40)), rng.uniform(-1, 1, (a.n, 40))
    Y64[::2] = -np.abs(Y64[::2])  # every product negative in these columns' non-zeros
    out = torch.full((a.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = a.torch_structure("int32")
    kernel(x=to_tensor(X64, dtype), y=to_tensor(Y64, dtype), out=out, indptr=indptr, indices=indices,
           m=a.m, n=a.n, feat_size=40, nnz=a.nnz)
    X64, Y64 = to_tensor(X64, dtype).double().numpy(), to_tensor(Y64, dtype).double().numpy()
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    ref = (X64[rows] * Y64[a.indices]).max(1)
    if init == "0.0":
        ref = np.maximum(ref, 0.0)
        assert (ref == 0).any() and (ref > 0).any()
    # A max of rounded products: exact up to the product's rounding.
    tol = 2 * np.finfo(np.float32 if dtype == "float32" else np.float64).eps
    np.testing.assert_allclose(out.double().numpy(), ref, rtol=tol, atol=tol)


def test_lane_sum_joins_the_value_cached_before_it():
    """A reduction that adds into its output (cache_write loads it first):
    the lanes' parts are combined, then added to the loaded value once."""
    a = make_csr(seed=8, **CSR_CASES["dense_row"])
    text = read_script("sddmm", "float64").replace("        with T.init():\n            Y[i, j] = 0.0\n",
                                        '        T.sp.iteration_attr({"accumulate": True})\n')
    assert "T.init" not in text
    kernel = st.compile(lane_schedule(text, 64), target="cuda")
    rng = np.random.default_rng(6)
    A, B = rng.uniform(-1, 1, (a.m, 64)), rng.uniform(-1, 1, (a.n, 64))
    X, Y0 = rng.uniform(-1, 1, a.nnz), rng.uniform(-1, 1, a.nnz)
    Y = torch.from_numpy(Y0.copy())
    indptr, indices = a.torch_structure("int32")
    kernel(a=torch.from_numpy(A), b=torch.from_numpy(B), x=torch.from_numpy(X), y=Y, indptr=indptr,
           indices=indices, m=a.m, n=a.n, feat_size=64, nnz=a.nnz)
    ref, _ = sddmm_reference(a, A, B, X)
    np.testing.assert_allclose(Y.numpy(), Y0 + ref, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- refused schedules


@pytest.mark.parametrize("axis", ["blockIdx.x", "blockIdx.y", "threadIdx.y", "threadIdx.z"])
def test_reduction_bound_to_another_axis_is_refused(axis):
    sch = st.Schedule(read_script("sddmm"))
    sch.sparse_fuse("sddmm", ["I", "J"])
    ij, k = sch.get_loops("sddmm")
    with pytest.raises(st.ScheduleError, match=f"bind: loop 'k' carries a reduction into 'Y' .* so {axis} would race"):
        sch.bind(k, axis)


def test_lanes_that_are_not_a_power_of_two_are_refused():
    with pytest.raises(st.ScheduleError, match="loop 'k_1' bound to threadIdx.x reduces into 'Y_local' across its "
                                               "lanes, which must be a power of two of at most 32"):
        st.compile(lane_schedule(read_script("sddmm"), 96, lanes=48), target="cuda")
    with pytest.raises(st.ScheduleError, match="power of two of at most 32"):
        st.compile(lane_schedule(read_script("sddmm"), 96, lanes=64), target="cuda")


def test_reduction_into_global_memory_across_lanes_is_refused():
    with pytest.raises(st.ScheduleError, match="loop 'k_1' is bound to threadIdx.x but reduces into 'Y' \\(global "
                                               "memory\\), which its lanes would race on: cache_write"):
        st.compile(lane_schedule(read_script("sddmm"), 64, cache=False), target="cuda")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("feat,lanes", [(64, 32), (20, 32), (100, 16)])
def test_gpu_lane_sum_matches_float64(dtype, feat, lanes):
    """The same kernels on a GPU, where the lanes' shuffles run for real."""
    a = make_csr(seed=5, **CSR_CASES["dense_row"])
    kernel = st.compile(lane_schedule(read_script("sddmm", dtype, "int32"), feat, lanes), target="cuda")
    rng = np.random.default_rng(1)
    A = to_tensor(rng.uniform(-1, 1, (a.m, feat)), dtype)
    B = to_tensor(rng.uniform(-1, 1, (a.n, feat)), dtype)
    X = to_tensor(rng.uniform(-1, 1, a.nnz), dtype)
    Y = torch.full((a.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype], device="cuda")
    indptr, indices = a.torch_structure("int32")
    kernel(a=A.cuda(), b=B.cuda(), x=X.cuda(), y=Y, indptr=indptr.cuda(), indices=indices.cuda(), m=a.m, n=a.n,
           feat_size=feat, nnz=a.nnz)
    ref, magnitude = sddmm_reference(a, A.double().numpy(), B.double().numpy(), X.double().numpy())
    assert_within_bound(Y.cpu(), ref, magnitude, feat, dtype, "gpu lane sddmm")


# The recipe's stage-III kernel, as a script: a warp per non-zero, 2 x 32 lanes.
with open(os.path.join(REPO_ROOT, "tests", "golden", "kernels", "cuda", "sddmm_dot_float32_int32_feat_size64.stage3.py"),
          encoding="utf-8") as f:
    STAGE3 = f.read()
UPDATE = "                            O_local[0] = O_local[0] + X[i, k_0 * 32 + k_1] * Y[v1, k_0 * 32 + k_1]\n"
assert UPDATE in STAGE3


def test_stage3_lane_kernel_compiles_as_the_recipe():
    assert "sparsetir_lane_reduce<SparsetirSum>(O_local[0], 32)" in st.compile(STAGE3, target="cuda").source


def test_reading_the_reduced_buffer_inside_its_nest_is_refused():
    early = STAGE3.replace(UPDATE, UPDATE + "                    O[J_indptr[i] + j] = O_local[0]\n")
    with pytest.raises(st.ScheduleError, match="loop 'k_1' bound to threadIdx.x reduces into 'O_local', which the "
                                               "same loop nest also reads elsewhere"):
        st.compile(early, target="cuda")


def test_two_lane_loops_combining_differently_are_refused():
    second = UPDATE.replace("k_1", "k_2").replace("O_local[0] + X", "T.max(O_local[0], X").replace(
        "k_0 * 32 + k_2]\n", "k_0 * 32 + k_2])\n")
    loop = "                    for k_2 in T.thread_binding(32, thread=\"threadIdx.x\"):\n"
    two = STAGE3.replace(UPDATE, UPDATE + loop + "                        with T.block(\"sddmm_max\"):\n" + second)
    assert "T.max(O_local[0]" in two
    with pytest.raises(st.ScheduleError, match="loops 'k_1' and 'k_2' reduce into 'O_local' across lanes in "
                                               "different ways"):
        st.compile(two, target="cuda")


def test_lanes_of_another_extent_on_threadidx_x_are_refused():
    other = STAGE3.replace('for ij_1 in T.thread_binding(4, thread="threadIdx.y")',
                           'for ij_1 in T.thread_binding(4, thread="threadIdx.z")').replace(
        "                O_local = T.alloc_buffer", "                for w in T.thread_binding(16, thread=\"threadIdx.x\"):\n"
        "                    O[w] = O[w] * 1.0\n                O_local = T.alloc_buffer")
    with pytest.raises(st.ScheduleError, match="reduces across 32 lanes of threadIdx.x, but loop 'w' is bound to "
                                               "threadIdx.x with another extent"):
        st.compile(other, target="cuda")
