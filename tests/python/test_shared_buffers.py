"""A stage-III script's own shared buffers and its T.sp.sync_threads().

A script may allocate a buffer in shared scope (one per block of threads)
and place the block's barriers itself: each thread writes its part of a
tile, every thread waits at T.sp.sync_threads() (__syncthreads), then reads
the others' parts. The example is a CSR SpMV whose blocks walk x in tiles of
64 elements held in shared memory, each thread taking its row's non-zeros
that fall in the tile (rows sorted by column). It runs under the SIMT
emulator against float64 references on the edge-case structures, in every
thread order of the race check; without its second barrier the race check
reports the race. The barriers that some threads could skip are refused, as
are the other misuses.
"""
import shutil

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import CSR_CASES, assert_within_bound, make_csr, needs_nvrtc, to_tensor

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

SPMV_TILES = '''
@T.prim_func
def spmv_tiles(
    a: T.handle,
    x: T.handle,
    y: T.handle,
    indptr: T.handle,
    indices: T.handle,
    m: T.int32,
    n: T.int32,
    nnz: T.int32,
) -> None:
    # y = A x: a thread per row, 64 rows a block; the block copies x into
    # shared memory a tile of 64 elements at a time, and each thread adds its
    # row's non-zeros whose columns fall in the tile (found by binary search:
    # the row's columns are sorted).
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (nnz,), "DTYPE")
    X = T.match_buffer(x, (n,), "DTYPE")
    Y = T.match_buffer(y, (m,), "DTYPE")
    J_indptr = T.match_buffer(indptr, (m + 1,), "ITYPE")
    J_indices = T.match_buffer(indices, (nnz,), "ITYPE")
    T.assume_buffer_domain(J_indptr, [0, nnz])
    T.assume_buffer_domain(J_indices, [0, n - 1])
    for row_block in T.thread_binding((m + 63) // 64, thread="blockIdx.x"):
        for t in T.thread_binding(64, thread="threadIdx.x"):
            XS = T.alloc_buffer((64,), "DTYPE", scope="shared")
            ACC = T.alloc_buffer((1,), "DTYPE", scope="local")
            POS = T.alloc_buffer((1,), "ITYPE", scope="local")
            i: T.int32 = T.min(row_block * 64 + t, m - 1)
            end: T.ITYPE = J_indptr[i + 1]
            ACC[0] = T.DTYPE(0.0)
            POS[0] = J_indptr[i]
            for tile in T.serial((n + 63) // 64):
                if tile * 64 + t < n:
                    XS[t] = X[tile * 64 + t]
                T.sp.sync_threads()
                stop: T.ITYPE = T.sp.lower_bound(indices, POS[0], end, tile * 64 + 64)
                for j in T.serial(stop - POS[0]):
                    ACC[0] = ACC[0] + A[POS[0] + j] * XS[J_indices[POS[0] + j] - tile * 64]
                POS[0] = stop
                T.sp.sync_threads()
            if row_block * 64 + t < m:
                Y[row_block * 64 + t] = ACC[0]
'''
LAST_BARRIER = "                POS[0] = stop\n                T.sp.sync_threads()\n"
assert LAST_BARRIER in SPMV_TILES

# The kernel's contract: each row's columns sorted (its binary search).
CASES = sorted(c for c in CSR_CASES if c != "unsorted_with_duplicates")
TORCH = {"float32": torch.float32, "float64": torch.float64}


def spmv_script(dtype="float32", idtype="int32"):
    return SPMV_TILES.replace("DTYPE", dtype).replace("ITYPE", idtype)


def run_spmv(kernel, a, dtype="float32", idtype="int32", seed=1):
    rng = np.random.default_rng(seed)
    values = to_tensor(rng.uniform(-1, 1, a.nnz), dtype)
    x = to_tensor(rng.uniform(-1, 1, a.n), dtype)
    y = torch.full((a.m,), float("nan"), dtype=TORCH[dtype])
    indptr, indices = a.torch_structure(idtype)
    kernel(a=values, x=x, y=y, indptr=indptr, indices=indices, m=a.m, n=a.n, nnz=a.nnz)
    return y, values.double().numpy(), x.double().numpy()


def spmv_reference(a, values, x):
    rows = np.repeat(np.arange(a.m), np.diff(a.indptr))
    ref, magnitude = np.zeros(a.m), np.zeros(a.m)
    np.add.at(ref, rows, values * x[a.indices])
    np.add.at(magnitude, rows, np.abs(values * x[a.indices]))
    return ref, magnitude


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("idtype", ["int32", "int64"])
def test_shared_tiles_match_float64(case, dtype, idtype):
    a = make_csr(seed=7, **CSR_CASES[case])
    kernel = st.compile(spmv_script(dtype, idtype), target="cuda")
    before = _C.emulated_runs()
    y, values, x = run_spmv(kernel, a, dtype, idtype)
    assert _C.emulated_runs() == before + 1
    ref, magnitude = spmv_reference(a, values, x)
    assert_within_bound(y, ref, magnitude, max(a.n, 1), dtype, f"spmv tiles {case}")


def test_rows_longer_than_a_tile_span_several_tiles():
    """200 columns: four tiles, the last one partial; a dense row and rows of
    several tiles each, 130 rows over three blocks."""
    a = make_csr(m=130, n=200, density=0.3, dense_rows=(0, 129), seed=3)
    kernel = st.compile(spmv_script(), target="cuda")
    y, values, x = run_spmv(kernel, a)
    ref, magnitude = spmv_reference(a, values, x)
    assert_within_bound(y, ref, magnitude, a.n, "float32", "spmv tiles, long rows")


def test_the_script_declares_its_buffer_and_barriers_as_written():
    kernel = st.compile(spmv_script(), target="cuda")
    assert "__shared__ __align__(16) float XS[64];" in kernel.source, kernel.source
    body = kernel.source[kernel.source.index("__global__"):]  # past the prelude's own barriers
    assert body.count("__syncthreads();") == 2, body
    # Printed and parsed again, the kernel is the same.
    printed = st.parse(spmv_script()).script()
    assert printed.count("T.sp.sync_threads()") == 2
    assert st.compile(printed, target="cuda").source == kernel.source


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_tiles_give_the_same_bits_in_every_thread_order(monkeypatch, order):
    a = make_csr(m=130, n=200, density=0.3, dense_rows=(5,), seed=4)
    kernel = st.compile(spmv_script(), target="cuda")
    forward, _, _ = run_spmv(kernel, a)
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    again, _, _ = run_spmv(kernel, a)
    assert torch.equal(again, forward)


def test_the_race_check_finds_the_missing_barrier(monkeypatch):
    """Without the barrier after the tile's reads, a thread may copy the next
    tile over elements another thread still reads: another thread order
    changes the output, and the check mode says so."""
    racy = spmv_script().replace(LAST_BARRIER, "                POS[0] = stop\n")
    assert racy.count("T.sp.sync_threads()") == 1
    a = make_csr(m=64, n=256, density=0.5, seed=5)
    kernel = st.compile(racy, target="cuda")
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", "check")
    with pytest.raises(RuntimeError, match="spmv_tiles"):
        run_spmv(kernel, a)


@needs_nvrtc
def test_shared_tiles_compile_for_sm80_and_sm90():
    from sparsetir_torch.cuda_check import ptxas_report

    kernel = st.compile(spmv_script("float32", "int64"), target="cuda")
    for arch in (80, 90):
        ptx = kernel.ptx(f"sm_{arch}")
        assert ptx.count("bar.sync") == 2, ptx[-2000:]
        ptxas = shutil.which("ptxas")
        if ptxas:  # raises with ptxas's log if it refuses the PTX
            report = ptxas_report(ptxas, ptx.encode(), arch)
            assert report["spills"] == 0 and report["shared"] == 256, report


def test_a_barrier_under_the_threads_condition_is_refused():
    bad = spmv_script().replace("                if tile * 64 + t < n:\n                    XS[t] = X[tile * 64 + t]\n"
                                "                T.sp.sync_threads()\n",
                                "                if tile * 64 + t < n:\n                    XS[t] = X[tile * 64 + t]\n"
                                "                    T.sp.sync_threads()\n")
    assert bad != spmv_script()
    with pytest.raises(st.ScheduleError, match=r"T.sp.sync_threads\(\) waits for every thread of the block, but it "
                                               r"lies under the condition 'tile \* 64 \+ t < n', which depends on "
                                               r"the thread"):
        st.compile(bad, target="cuda")


def test_a_barrier_in_a_loop_of_the_threads_own_length_is_refused():
    update = "                    ACC[0] = ACC[0] + A[POS[0] + j] * XS[J_indices[POS[0] + j] - tile * 64]\n"
    bad = spmv_script().replace(update, update + "                    T.sp.sync_threads()\n")
    assert bad != spmv_script()
    with pytest.raises(st.ScheduleError, match="lies under loop 'j', whose bounds depend on the thread"):
        st.compile(bad, target="cuda")


BARRIER_IN_HALF_THE_THREADS = '''
@T.prim_func
def halves(y: T.handle, m: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Y = T.match_buffer(y, (m,), "float32")
    for b in T.thread_binding(m, thread="blockIdx.x"):
        S = T.alloc_buffer((64,), "float32", scope="shared")
        for t in T.thread_binding(64, thread="threadIdx.x"):
            S[t] = T.float32(1.0)
        for t in T.thread_binding(32, thread="threadIdx.x"):
            T.sp.sync_threads()
            Y[b] = S[t + 32]
'''


def test_a_barrier_in_part_of_the_block_is_refused():
    with pytest.raises(st.ScheduleError, match=r"T.sp.sync_threads\(\) lies inside loop 't', bound to threadIdx.x "
                                               r"over 32 of the block's 64 threads"):
        st.compile(BARRIER_IN_HALF_THE_THREADS, target="cuda")


def test_a_barrier_on_the_cpu_is_refused():
    serial = '''
@T.prim_func
def serial(y: T.handle, m: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    Y = T.match_buffer(y, (m,), "float32")
    for i in T.serial(m):
        Y[i] = T.float32(1.0)
        T.sp.sync_threads()
'''
    with pytest.raises(st.ScheduleError, match=r"T.sp.sync_threads\(\) waits for the threads of a cuda block; the "
                                               r"cpu target has no block of threads"):
        st.compile(serial)


def test_a_barrier_before_stage_three_or_with_arguments_is_refused():
    stage1 = '''
@T.prim_func
def f(y: T.handle, m: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 2})
    I = T.sp.dense_fixed(m)
    Y = T.sp.match_buffer(y, (I,), "float32")
    T.sp.sync_threads()
    with T.sp.iteration([I], "S", "ones") as [i]:
        Y[i] = T.float32(1.0)
'''
    assert st.Schedule(stage1.replace("    T.sp.sync_threads()\n", ""))
    with pytest.raises(st.ScriptError, match=r"T.sp.sync_threads belongs to stage III"):
        st.Schedule(stage1)
    with pytest.raises(st.ScriptError, match=r"T.sp.sync_threads\(\) takes no arguments"):
        st.Schedule(spmv_script().replace("T.sp.sync_threads()", "T.sp.sync_threads(1)", 1))
    with pytest.raises(st.ScriptError, match=r"T.sp.sync_threads\(\) is a statement of its own \(the block's "
                                             r"barrier\); it has no value"):
        st.Schedule(spmv_script().replace("XS[t] = X[tile * 64 + t]", "XS[t] = T.sp.sync_threads()"))


def test_a_shared_cache_beside_the_scripts_barriers_is_refused():
    sch = st.Schedule(spmv_script())
    with pytest.raises(st.ScheduleError, match=r"cache_read: 'spmv_tiles' synchronizes its own shared buffers "
                                               r"\(T.sp.sync_threads\(\)\)"):
        sch.cache_read("j", "A", "shared")


def test_shared_buffers_past_the_static_limit_are_refused():
    big = spmv_script().replace('XS = T.alloc_buffer((64,), "float32", scope="shared")',
                                'XS = T.alloc_buffer((16384,), "float32", scope="shared")')
    with pytest.raises(st.ScheduleError, match="the shared buffers of this kernel take 65536 bytes with 'XS', more "
                                               "than the 49152 a block may declare; allocate smaller tiles"):
        st.compile(big, target="cuda")


GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("case", ["dense_row", "empty_rows", "tall", "wide"])
def test_gpu_shared_tiles_match_float64(case):
    """The same kernel on a GPU, where the block's threads run together."""
    a = make_csr(seed=7, **CSR_CASES[case])
    kernel = st.compile(spmv_script(), target="cuda")
    rng = np.random.default_rng(1)
    values = to_tensor(rng.uniform(-1, 1, a.nnz), "float32")
    x = to_tensor(rng.uniform(-1, 1, a.n), "float32")
    y = torch.full((a.m,), float("nan"), device="cuda")
    indptr, indices = a.torch_structure("int32")
    kernel(a=values.cuda(), x=x.cuda(), y=y, indptr=indptr.cuda(), indices=indices.cuda(), m=a.m, n=a.n, nnz=a.nnz)
    ref, magnitude = spmv_reference(a, values.double().numpy(), x.double().numpy())
    assert_within_bound(y.cpu(), ref, magnitude, a.n, "float32", f"gpu spmv tiles {case}")


def test_a_shared_buffer_of_a_runtime_extent_is_refused():
    runtime = spmv_script().replace('XS = T.alloc_buffer((64,), "float32", scope="shared")',
                                    'XS = T.alloc_buffer((n,), "float32", scope="shared")')
    assert runtime != spmv_script()
    with pytest.raises(st.ScheduleError, match="shared buffer 'XS' has the extent n, not a constant: a block declares "
                                               "its shared memory when the kernel is built"):
        st.compile(runtime, target="cuda")


def test_blocks_of_1024_threads_bound_their_registers():
    """A block of 1024 threads may take 64 registers each: the kernel says so
    (__launch_bounds__), and ptxas keeps to it, where it may take up to 255
    and the launch would fail. Blocks of up to 512 go without one (128
    registers each, more than any built-in kernel takes)."""
    wide = spmv_script().replace("63", "1023").replace("64", "1024")
    assert "T.thread_binding(1024" in wide
    kernel = st.compile(wide, target="cuda")
    assert 'extern "C" __global__ void __launch_bounds__(1024) sparsetir_kernel_' in kernel.source
    half = spmv_script().replace("63", "511").replace("64", "512")
    assert "__launch_bounds__" not in st.compile(half, target="cuda").source
    a = make_csr(m=1100, n=2100, density=0.02, dense_rows=(1,), seed=6)
    y, values, x = run_spmv(kernel, a)
    ref, magnitude = spmv_reference(a, values, x)
    assert_within_bound(y, ref, magnitude, a.n, "float32", "spmv tiles of 1024")
