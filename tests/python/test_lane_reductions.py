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
from conftest import (CSR_CASES, REPO_ROOT, TORCH_DTYPES, assert_within_bound, make_csr, needs_nvrtc, read_script,
                      to_tensor)

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


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle", "check"])
@pytest.mark.parametrize("feat,lanes,rows", [(96, 32, 4), (300, 128, 1)])
def test_lanes_combine_to_the_same_bits_in_every_thread_order(monkeypatch, order, feat, lanes, rows):
    """A warp's lanes, and a block's warps (128 lanes: every thread reads the
    warps' parts after the first barrier and before the second), whatever
    order the threads run in; the check mode compares three orders itself."""
    a = make_csr(seed=2, **CSR_CASES["dense_row"])
    kernel = st.compile(lane_schedule(read_script("sddmm"), feat, lanes=lanes, rows=rows), target="cuda")
    rng = np.random.default_rng(3)
    A, B = torch.from_numpy(rng.standard_normal((a.m, feat), np.float32)), torch.from_numpy(
        rng.standard_normal((a.n, feat), np.float32))
    X = torch.ones(a.nnz)
    indptr, indices = a.torch_structure("int32")

    def run():
        Y = torch.empty(a.nnz)
        kernel(a=A, b=B, x=X, y=Y, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=feat, nnz=a.nnz)
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
                                               "lanes, which must be a power of two of at most 32 \\(one warp\\) "
                                               "or, for a block of threads that reduces together, of at most 1024"):
        st.compile(lane_schedule(read_script("sddmm"), 96, lanes=48), target="cuda")
    with pytest.raises(st.ScheduleError, match="power of two of at most 32"):
        st.compile(lane_schedule(read_script("sddmm"), 4096, lanes=2048, rows=1), target="cuda")


# --------------------------------------------------------------------------- more lanes than a warp
# A group of 64..1024 lanes is the whole block: each warp combines its lanes
# with shuffles, then the warps' parts meet in shared memory between two
# __syncthreads (the prelude's sparsetir_block_reduce).


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
@pytest.mark.parametrize("feat,lanes", [(300, 128), (64, 64)])
def test_block_lane_sum_matches_float64(case, dtype, idtype, feat, lanes):
    a = make_csr(seed=6, **CSR_CASES[case])
    kernel = st.compile(lane_schedule(read_script("sddmm", dtype, idtype), feat, lanes, rows=1), target="cuda")
    assert f"sparsetir_block_reduce<SparsetirSum>(Y_local[0], {lanes})" in kernel.source
    rng = np.random.default_rng(2)
    A = to_tensor(rng.uniform(-1, 1, (a.m, feat)), dtype)
    B = to_tensor(rng.uniform(-1, 1, (a.n, feat)), dtype)
    X = to_tensor(rng.uniform(-1, 1, a.nnz), dtype)
    Y = torch.full((a.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = a.torch_structure(idtype)
    kernel(a=A, b=B, x=X, y=Y, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=feat, nnz=a.nnz)
    ref, magnitude = sddmm_reference(a, A.double().numpy(), B.double().numpy(), X.double().numpy())
    assert_within_bound(Y, ref, magnitude, feat, dtype, f"block lane sddmm {case}")


def test_a_block_of_1024_lanes_sums_a_row():
    """The largest block: 32 warps' parts combined in shared memory."""
    a = make_csr(seed=7, **CSR_CASES["dense_row"])
    kernel = st.compile(lane_schedule(read_script("sddmm"), 1500, 1024, rows=1), target="cuda")
    rng = np.random.default_rng(4)
    A = torch.from_numpy(rng.uniform(-1, 1, (a.m, 1500)))
    B = torch.from_numpy(rng.uniform(-1, 1, (a.n, 1500)))
    X = torch.from_numpy(rng.uniform(-1, 1, a.nnz))
    Y = torch.full((a.nnz,), float("nan"))
    indptr, indices = a.torch_structure("int32")
    kernel(a=A.float(), b=B.float(), x=X.float(), y=Y, indptr=indptr, indices=indices, m=a.m, n=a.n,
           feat_size=1500, nnz=a.nnz)
    ref, magnitude = sddmm_reference(a, A.float().double().numpy(), B.float().double().numpy(),
                                     X.float().double().numpy())
    assert_within_bound(Y, ref, magnitude, 1500, "float32", "1024-lane sddmm")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_block_lane_max_matches_float64(dtype):
    a = make_csr(seed=8, **CSR_CASES["dense_row"])
    text = MAX_DOT.replace("INIT", f"T.{dtype}(-T.inf)").replace('"float32"', f'"{dtype}"')
    kernel = st.compile(lane_schedule(text, 200, lanes=256, rows=1, output="O"), target="cuda")
    assert "sparsetir_block_reduce<SparsetirMax>(O_local[0], 256)" in kernel.source
    rng = np.random.default_rng(5)
    X = to_tensor(rng.uniform(-1, 1, (a.m, 200)), dtype)
    Y = to_tensor(rng.uniform(-1, 1, (a.n, 200)), dtype)
    O = torch.full((a.nnz,), float("nan"), dtype=TORCH_DTYPES[dtype])
    indptr, indices = a.torch_structure("int32")
    kernel(x=X, y=Y, out=O, indptr=indptr, indices=indices, m=a.m, n=a.n, feat_size=200, nnz=a.nnz)
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    ref = (X.double().numpy()[rows] * Y.double().numpy()[a.indices]).max(1)
    # A max of rounded products: exact up to the product's rounding.
    tol = 2 * np.finfo(np.float32 if dtype == "float32" else np.float64).eps
    np.testing.assert_allclose(O.double().numpy(), ref, rtol=tol, atol=tol)


def block_stage3(lanes):
    """The recipe's stage-III kernel with a block of `lanes` lanes per
    non-zero, every lane storing the combined dot product into its own
    element of Z[nnz, lanes]: a lane that combined before the other warps had
    published their parts leaves a wrong element (where a store of one
    element by every lane would hide it behind the last writer)."""
    text = STAGE3.replace("    indices: T.handle,\n", "    indices: T.handle,\n    z: T.handle,\n").replace(
        '    O = T.match_buffer(out, (nnz,), "float32")\n',
        f'    O = T.match_buffer(out, (nnz,), "float32")\n    Z = T.match_buffer(z, (nnz, {lanes}), "float32")\n')
    text = text.replace("(nnz + 3) // 4", "nnz").replace('T.thread_binding(4, thread="threadIdx.y")',
                                                         'T.thread_binding(1, thread="threadIdx.y")')
    text = text.replace("ij_0 * 4 + ij_1", "ij_0 + ij_1").replace("T.serial(2)", f"T.serial({64 // lanes})")
    text = text.replace('T.thread_binding(32, thread="threadIdx.x")', f'T.thread_binding({lanes}, thread="threadIdx.x")')
    text = text.replace("k_0 * 32 + k_1", f"k_0 * {lanes} + k_1")
    store = "                O[J_indptr[i] + j] = O_local[0]\n"
    assert store in text
    text = text.replace(store, f'                for w in T.thread_binding({lanes}, thread="threadIdx.x"):\n'
                               "                    Z[J_indptr[i] + j, w] = O_local[0]\n")
    assert text.count(f'T.thread_binding({lanes}, thread="threadIdx.x")') == 2
    return text


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
def test_every_lane_of_a_block_holds_the_whole_sum(monkeypatch, order):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    a = make_csr(seed=9, **CSR_CASES["dense_row"])
    kernel = st.compile(block_stage3(64), target="cuda")
    assert "sparsetir_block_reduce<SparsetirSum>(O_local[0], 64)" in kernel.source
    rng = np.random.default_rng(6)
    X = torch.from_numpy(rng.uniform(-1, 1, (a.m, 64)).astype(np.float32))
    Y = torch.from_numpy(rng.uniform(-1, 1, (a.n, 64)).astype(np.float32))
    Z = torch.full((a.nnz, 64), float("nan"))
    indptr, indices = a.torch_structure("int32")
    kernel(x=X, y=Y, out=torch.empty(a.nnz), indptr=indptr, indices=indices, z=Z, m=a.m, n=a.n, feat_size=64,
           nnz=a.nnz)
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    products = X.double().numpy()[rows] * Y.double().numpy()[a.indices]
    assert torch.equal(Z, Z[:, :1].expand(-1, 64)), "the lanes of a block hold different sums"
    assert_within_bound(Z[:, 0], products.sum(1), np.abs(products).sum(1), 64, "float32", "block lanes")


def test_block_lanes_beside_another_thread_axis_are_refused():
    with pytest.raises(st.ScheduleError, match="loop 'k_1' reduces into 'Y_local' across 64 lanes, more than a warp: "
                                               ".* so the block must be those lanes alone, but loop 'ij_1' is bound "
                                               "to threadIdx.y"):
        st.compile(lane_schedule(read_script("sddmm"), 96, lanes=64, rows=4), target="cuda")


def test_block_lanes_combined_under_a_thread_loop_are_refused():
    """The combination's barriers inside a loop bound to threads: threads
    outside that loop's extent would never reach them."""
    nested = STAGE3.replace("(nnz + 3) // 4", "(nnz + 63) // 64").replace(
        'for ij_1 in T.thread_binding(4, thread="threadIdx.y")', 'for ij_1 in T.thread_binding(64, thread="threadIdx.x")')
    nested = nested.replace("ij_0 * 4 + ij_1", "ij_0 * 64 + ij_1").replace("T.serial(2)", "T.serial(1)").replace(
        "T.thread_binding(32, thread=\"threadIdx.x\")", "T.thread_binding(64, thread=\"threadIdx.x\")").replace(
        "k_0 * 32 + k_1", "k_0 * 64 + k_1")
    assert nested.count('T.thread_binding(64, thread="threadIdx.x")') == 2
    with pytest.raises(st.ScheduleError, match="across 64 lanes, more than a warp: .* but 'O_local' is allocated "
                                               "inside loop 'ij_1', bound to threadIdx.x"):
        st.compile(nested, target="cuda")


@needs_nvrtc
def test_block_lane_kernel_compiles_for_sm80_and_sm90():
    """NVRTC (no GPU needed) compiles the block reduction; its PTX has the
    two barriers, and ptxas, where installed, accepts it."""
    import shutil

    from sparsetir_torch.cuda_check import ptxas_report

    kernel = st.compile(lane_schedule(read_script("sddmm", "bfloat16", "int64"), 300, lanes=128, rows=1),
                        target="cuda")
    for arch in (80, 90):
        ptx = kernel.ptx(f"sm_{arch}")
        assert "bar.sync" in ptx and "shfl.sync.bfly" in ptx, ptx[-2000:]
        ptxas = shutil.which("ptxas")
        if ptxas:  # raises with ptxas's log if it refuses the PTX
            report = ptxas_report(ptxas, ptx.encode(), arch)
            assert report["spills"] == 0 and report["shared"] == 128, report


def test_ptx_of_a_cpu_kernel_is_refused():
    with pytest.raises(ValueError, match="sddmm.ptx\\(\\): the kernel was built for 'cpu"):
        st.compile(read_script("sddmm")).ptx("sm_90")


def test_reduction_into_global_memory_across_lanes_is_refused():
    with pytest.raises(st.ScheduleError, match="loop 'k_1' is bound to threadIdx.x but reduces into 'Y' \\(global "
                                               "memory\\), which its lanes would race on: cache_write"):
        st.compile(lane_schedule(read_script("sddmm"), 64, cache=False), target="cuda")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("feat,lanes,rows", [(64, 32, 4), (20, 32, 4), (100, 16, 4), (300, 128, 1), (1500, 1024, 1)])
def test_gpu_lane_sum_matches_float64(dtype, feat, lanes, rows):
    """The same kernels on a GPU, where the lanes' shuffles (and beyond a
    warp, the block's shared memory) run for real."""
    a = make_csr(seed=5, **CSR_CASES["dense_row"])
    kernel = st.compile(lane_schedule(read_script("sddmm", dtype, "int32"), feat, lanes, rows=rows), target="cuda")
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


# A stage-III kernel as a script: a warp per non-zero, two rounds of 32
# lanes, each lane one feature a round (the sddmm recipe before its lanes
# read vectors).
STAGE3 = '''
@T.prim_func
def sddmm_dot(
    x: T.handle,
    y: T.handle,
    out: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    feat_size: T.int32,
    nnz: T.int32,
) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "specialized": {"feat_size": 64}, "sparse_tir_level": 0})
    X = T.match_buffer(x, (m, 64), "float32")
    Y = T.match_buffer(y, (n, 64), "float32")
    O = T.match_buffer(out, (nnz,), "float32")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    J_indices = T.match_buffer(indices, (nnz,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for ij_0 in T.thread_binding((nnz + 3) // 4, thread="blockIdx.x"):
        for ij_1 in T.thread_binding(4, thread="threadIdx.y"):
            if ij_0 * 4 + ij_1 < nnz:
                i_flat: T.int32 = T.sp.lower_bound(indptr, 0, m + 1, ij_0 * 4 + ij_1 + 1) - 1
                i: T.int32 = i_flat
                j: T.int32 = ij_0 * 4 + ij_1 - J_indptr[i]
                O_local = T.alloc_buffer((1,), "float32", scope="local")
                with T.block("sddmm_init"):
                    O_local[0] = T.float32(0.0)
                v1: T.int32 = J_indices[J_indptr[i] + j]
                for k_0 in T.serial(2):
                    for k_1 in T.thread_binding(32, thread="threadIdx.x"):
                        with T.block("sddmm"):
                            O_local[0] = O_local[0] + X[i, k_0 * 32 + k_1] * Y[v1, k_0 * 32 + k_1]
                O[J_indptr[i] + j] = O_local[0]
'''
UPDATE = "                            O_local[0] = O_local[0] + X[i, k_0 * 32 + k_1] * Y[v1, k_0 * 32 + k_1]\n"
assert UPDATE in STAGE3


def test_stage3_lane_kernels_compile_as_the_recipe():
    assert "sparsetir_lane_reduce<SparsetirSum>(O_local[0], 32)" in st.compile(STAGE3, target="cuda").source
    # The recipe's own kernel (a lane sums a vector of features a round), as a script.
    with open(os.path.join(REPO_ROOT, "tests", "golden", "kernels", "cuda",
                           "sddmm_dot_float32_int32_feat_size64.stage3.py"), encoding="utf-8") as f:
        recipe = st.compile(f.read(), target="cuda").source
    assert "sparsetir_lane_reduce<SparsetirSum>(O_local[0], 32)" in recipe
    assert "sparsetir_vload<float, 2>(&X[" in recipe and "sparsetir_vload<float, 2>(&Y[" in recipe


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


# A warp per row: its lanes sum the row's values, each every 32nd, combine
# their parts, and one lane stores the sum: `if lane == 0:` lets a store into
# global memory that does not name the lane.
ROW_SUMS = '''
@T.prim_func
def row_sums(a: T.handle, out: T.handle, indptr: T.handle, m: T.int32, nnz: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "float64")
    OUT = T.match_buffer(out, (m,), "float64")
    J_indptr = T.match_buffer(indptr, (m + 1,), "int32")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    for row_block in T.thread_binding((m + 3) // 4, thread="blockIdx.x"):
        for warp in T.thread_binding(4, thread="threadIdx.y"):
            i: T.int32 = row_block * 4 + warp
            if i < m:
                for lane in T.thread_binding(32, thread="threadIdx.x"):
                    ACC = T.alloc_buffer((1,), "float64", scope="local")
                    ACC[0] = T.float64(0.0)
                    start: T.int32 = J_indptr[i]
                    for j in T.serial((J_indptr[i + 1] - start + 31 - lane) // 32):
                        ACC[0] = ACC[0] + A[start + j * 32 + lane]
                    total: T.float64 = T.sp.lane_sum(ACC[0], 32)
                    if lane == 0:
                        OUT[i] = total
'''
ONE_LANE = "                    if lane == 0:\n"
assert ONE_LANE in ROW_SUMS


@pytest.mark.parametrize("order", ["forward", "reverse", "shuffle"])
@pytest.mark.parametrize("guard", ["lane == 0", "0 == lane", "i < m and lane == 31", "lane == i % 32"])
def test_a_store_under_a_condition_that_picks_one_lane_needs_no_lane_in_its_index(monkeypatch, order, guard):
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    kernel = st.compile(ROW_SUMS.replace(ONE_LANE, f"                    if {guard}:\n"), target="cuda")
    a = make_csr(m=11, n=100, density=0.3, empty_rows=(3,), dense_rows=(7,), seed=5)
    values = torch.from_numpy(np.random.default_rng(5).uniform(-1, 1, a.nnz))
    out = torch.full((a.m,), float("nan"), dtype=torch.float64)
    kernel(a=values, out=out, indptr=a.torch_structure("int32")[0], m=a.m, nnz=a.nnz)
    ref = np.add.reduceat(np.append(values.numpy(), 0.0), a.indptr[:-1]) * (np.diff(a.indptr) > 0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("guard", ["lane < 1", "lane // 2 == 0", "lane == 0 or i < m", "lane == lane * 1"])
def test_a_condition_that_may_let_several_lanes_store_is_refused(guard):
    with pytest.raises(st.ScheduleError, match="loop 'lane' is bound to threadIdx.x but reduces into 'OUT' "
                                               "\\(global memory\\), which its lanes would race on"):
        st.compile(ROW_SUMS.replace(ONE_LANE, f"                    if {guard}:\n"), target="cuda")


def test_the_else_of_a_one_lane_condition_is_every_other_lane():
    script = ROW_SUMS.replace("                        OUT[i] = total\n",
                              "                        OUT[i] = total\n                    else:\n"
                              "                        OUT[i] = T.float64(0.0)\n")
    with pytest.raises(st.ScheduleError, match="reduces into 'OUT' \\(global memory\\)"):
        st.compile(script, target="cuda")
