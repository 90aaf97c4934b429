"""Shared caches on the cuda target: sch.cache_read(loop, buffer, "shared").

A shared cache holds what all the threads of a block read in one iteration of
its loop: the loops bound to threadIdx around it vary over it like the loops
inside. The block's threads fill it together (each copies every n-th element,
neighbours neighbouring elements) between two __syncthreads
(transforms/lower_shared_caches.h). The kernels run under the SIMT emulator
against float64 references and in every thread order of the race check (a
missing barrier changes what the threads read); the schedules whose threads
could miss a barrier are refused with the cache named.
"""
import os

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import REPO_ROOT, TORCH_DTYPES, assert_within_bound
from test_cuda_backend import bsr_dense, random_bsr

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

DTYPES = ("float32", "float64", "float16", "bfloat16")

with open(os.path.join(REPO_ROOT, "kernels", "bsrmm.py"), encoding="utf-8") as f:
    BSRMM = f.read()

# Each thread t of a block reads the element that thread width - 1 - t
# copied into the cache: the threads exchange every value.
REVERSE = '''
@T.prim_func
def reverse(a: T.handle, b: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, WIDTH), "DTYPE")
    B = T.match_buffer(b, (n, WIDTH), "DTYPE")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        for t in T.thread_binding(THREADS, thread="threadIdx.x"):
            A_shared = T.alloc_buffer((WIDTH,), "DTYPE", scope="shared")
            for ax in T.serial(WIDTH):
                A_shared[ax] = A[i, ax]
            for k in T.serial(ROUNDS):
                if k * THREADS + t < WIDTH:
                    B[i, k * THREADS + t] = A_shared[WIDTH - 1 - (k * THREADS + t)]
'''


def reverse_script(dtype="float32", width=64, threads=64):
    rounds = (width + threads - 1) // threads
    return (REVERSE.replace("DTYPE", dtype).replace("WIDTH", str(width)).replace("THREADS", str(threads))
            .replace("ROUNDS", str(rounds)))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,width,threads",
                         [(1, 1, 1), (3, 64, 64), (5, 96, 32), (2, 40, 8), (2, 70, 32), (2, 1000, 32), (1, 512, 32)])
def test_threads_read_what_other_threads_copied(dtype, rows, width, threads):
    kernel = st.compile(reverse_script(dtype, width, threads), target="cuda")
    a = torch.from_numpy(np.random.default_rng(rows).uniform(-4, 4, (rows, width))).to(TORCH_DTYPES[dtype])
    b = torch.full_like(a, float("nan"))
    kernel(a=a, b=b, n=rows)
    assert torch.equal(b, a.flip(1))


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_the_fill_is_complete_in_every_thread_order(monkeypatch, order):
    kernel = st.compile(reverse_script("float32", 200, 64), target="cuda")  # 4 rounds, the last one partial
    a = torch.arange(3 * 200, dtype=torch.float32).reshape(3, 200)
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    b = torch.zeros_like(a)
    kernel(a=a, b=b, n=3)
    assert torch.equal(b, a.flip(1))


def test_the_fill_is_spread_over_the_block_between_two_barriers():
    source = st.compile(reverse_script("float16", 200, 64), target="cuda").source
    # 16-bit elements stay 16-bit in shared memory and are copied as bits.
    assert "__shared__ __align__(16) uint16_t A_shared[200];" in source
    fill = source[source.index("__shared__ __align__"):source.index("the tiles are filled")]
    assert fill.count("__syncthreads()") == 2
    assert "fill_round < fill_round_end" in fill and "fill_round_end = 4" in fill
    assert "((fill_round * 64) + t)" in fill
    assert "if ((fill_element < 200))" in fill or "if (fill_element < 200)" in fill
    assert "sparsetir_half_to_float" not in fill


def test_a_long_fill_is_a_loop_over_groups_of_rounds():
    """Four rounds' loads in flight per group; the loop over the groups stays
    a loop (nvcc would unroll it whole, and the registers with it)."""
    source = st.compile(reverse_script("float32", 1000, 32), target="cuda").source
    fill = source[source.index("__shared__ __align__"):source.index("the tiles are filled")]
    assert "#pragma unroll 1\n" in fill and "fill_group_end = 8;" in fill and "fill_round_end = 4;" in fill
    assert "(((fill_group * 128) + (fill_round * 32)) + t)" in fill
    assert "fill_element < 1000" in fill  # 8 groups of 128 elements cover 1024


# --------------------------------------------------------------------------- a schedule of the public primitives


def shared_bsrmm(dtype, idtype, block, feat, shared=("A", "B"), local=True):
    """bsrmm with a block row per blockIdx.x, a thread per (row of the block,
    feature), and the block j's values and B's rows it multiplies in shared
    memory: every thread reads values other threads copied."""
    sch = st.Schedule(BSRMM.replace('"float32"', f'"{dtype}"').replace('"int32"', f'"{idtype}"'))
    sch.specialize(block_h=block[0], block_w=block[1], feat_size=feat)
    i, j, bi, bj, f = sch.get_loops("bsrmm")
    sch.reorder(bi, f, j, bj)
    _, ibi, ifeat = sch.get_loops("bsrmm_init")
    rows = sch.merge(ibi, bi)
    features = sch.merge(ifeat, f)
    sch.bind(i, "blockIdx.x")
    sch.bind(rows, "threadIdx.y")
    sch.bind(features, "threadIdx.x")
    if local:
        sch.cache_write(features, "C", "local")
    for buffer in shared:
        sch.cache_read(j, buffer, "shared")
    return sch


def run_bsrmm(kernel, indptr, indices, blocks, dense, mb, nb, dtype):
    bh, bw = blocks.shape[1:]
    feat = dense.shape[1]
    out = torch.full((mb, bh, feat), float("nan"), dtype=TORCH_DTYPES[dtype], device=blocks.device)
    kernel(a=blocks, b=dense.reshape(nb, bw, feat), c=out, indptr=indptr, indices=indices, mb=mb, nb=nb,
           nnzb=len(indices), block_h=bh, block_w=bw, feat_size=feat)
    return out.reshape(mb * bh, feat)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
@pytest.mark.parametrize("block,feat,empty_rows", [((4, 8), 16, (1,)), ((3, 5), 20, ()), ((1, 1), 1, (0,))])
def test_bsrmm_with_shared_tiles_matches_float64(dtype, idtype, block, feat, empty_rows):
    mb, nb = 4, 3
    sch = shared_bsrmm(dtype, idtype, block, feat)
    script = sch.mod.script()
    # The cache holds every row of the block (the rows are threads), not one.
    assert f'A_shared = T.alloc_buffer(({block[0]}, {block[1]}), "{dtype}", scope="shared")' in script
    assert f'B_shared = T.alloc_buffer(({block[1]}, {feat}), "{dtype}", scope="shared")' in script
    kernel = st.compile(sch, target="cuda")
    indptr, indices, blocks = random_bsr(mb, nb, *block, 0.5, seed=block[0], idtype=idtype, empty_rows=empty_rows)
    dense = np.random.default_rng(4).uniform(-1, 1, (nb * block[1], feat))
    t = TORCH_DTYPES[dtype]
    blocks_t, dense_t = torch.from_numpy(blocks).to(t), torch.from_numpy(dense).to(t)
    out = run_bsrmm(kernel, indptr, indices, blocks_t, dense_t, mb, nb, dtype)
    a64 = bsr_dense(indptr, indices, blocks_t.double().numpy(), mb, nb)
    b64 = dense_t.double().numpy()
    assert_within_bound(out, a64 @ b64, np.abs(a64) @ np.abs(b64), max(nb * block[1], 1), dtype, "shared bsrmm")


def test_bsrmm_with_no_blocks():
    kernel = st.compile(shared_bsrmm("float32", "int32", (4, 8), 16), target="cuda")
    indptr, indices = torch.zeros(3, dtype=torch.int32), torch.zeros(0, dtype=torch.int32)
    out = run_bsrmm(kernel, indptr, indices, torch.zeros(0, 4, 8), torch.ones(16, 16), 2, 2, "float32")
    assert torch.equal(out, torch.zeros(8, 16))


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
def test_bsrmm_with_shared_tiles_in_every_thread_order(monkeypatch, order):
    kernel = st.compile(shared_bsrmm("float32", "int32", (4, 8), 16), target="cuda")
    indptr, indices, blocks = random_bsr(5, 4, 4, 8, 0.7, seed=3, idtype="int32")
    blocks, dense = torch.from_numpy(blocks).float(), torch.randn(32, 16, generator=torch.Generator().manual_seed(1))
    forward = run_bsrmm(kernel, indptr, indices, blocks, dense, 5, 4, "float32")
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    assert torch.equal(run_bsrmm(kernel, indptr, indices, blocks, dense, 5, 4, "float32"), forward)


# --------------------------------------------------------------------------- the recipes


def op_source(op, dtype, sizes):
    return _C.op_kernel_source(op, op, dtype, "int32", sizes, "cuda")


def test_tensor_core_recipes_stage_their_tiles_in_shared_memory():
    bsrmm = op_source("bsrmm", "float16", {"block_h": 32, "block_w": 16, "feat_size": 64})
    assert "uint16_t A_shared[512]" in bsrmm and "uint16_t B_shared[512]" in bsrmm
    linear = op_source("bsr_linear_tiles", "bfloat16", {"block_h": 32, "block_w": 16, "tile_rows": 16})
    assert "uint16_t X_shared[256]" in linear and "uint16_t WT_shared[512]" in linear
    grad = op_source("bsr_linear_grad_blocks_tiles", "float16", {"block_h": 16, "block_w": 32, "tile_rows": 16})
    assert "uint16_t DY_shared[256]" in grad and "uint16_t X_shared[512]" in grad
    # Tiles past the budget stay in global memory (a 128 x 128 block: 32 KiB).
    big = op_source("bsrmm", "float16", {"block_h": 128, "block_w": 128, "feat_size": 64})
    assert "A_shared" not in big and "B_shared" not in big and "sparsetir_mma_m16n8k16(" in big


# --------------------------------------------------------------------------- refusals


def test_a_shared_cache_the_loop_writes_is_refused():
    sch = shared_bsrmm("float32", "int32", (4, 8), 16, shared=(), local=False)
    j = sch.get_loops("bsrmm")[3]
    assert j == "j"
    sch.cache_write(j, "C", "shared")
    with pytest.raises(st.ScheduleError, match="shared cache 'C_shared' is written by the loop it serves; on "
                                               "cuda a shared cache is filled from memory once per iteration"):
        st.compile(sch, target="cuda")


def reverse_under(header):
    """The reverse kernel with its cache and what reads it under `header`."""
    lines = reverse_script().splitlines()
    at = next(k for k, line in enumerate(lines) if "A_shared = T.alloc_buffer" in line)
    return "\n".join(lines[:at] + [" " * 12 + header] + ["    " + line for line in lines[at:]]) + "\n"


def test_a_shared_cache_under_a_condition_of_the_thread_is_refused():
    with pytest.raises(st.ScheduleError, match="shared cache 'A_shared' is filled by all the threads of its block "
                                               "between two __syncthreads, but it lies under the condition 't < 32'"):
        st.compile(reverse_under("if t < 32:"), target="cuda")


def test_a_shared_cache_under_a_loop_of_the_threads_bounds_is_refused():
    with pytest.raises(st.ScheduleError, match="lies under loop 'w', whose bounds depend on the thread"):
        st.compile(reverse_under("for w in T.serial(t):"), target="cuda")


def test_a_shared_cache_under_a_condition_the_block_shares_is_accepted():
    kernel = st.compile(reverse_under("if i < n:"), target="cuda")
    a = torch.arange(128, dtype=torch.float32).reshape(2, 64)
    b = torch.zeros_like(a)
    kernel(a=a, b=b, n=2)
    assert torch.equal(b, a.flip(1))


def test_a_shared_cache_some_threads_skip_is_refused():
    # Another loop binds 128 threads: the cache's 64 leave the other 64 out.
    text = reverse_script().replace(
        "    for i in T.thread_binding(n, thread=\"blockIdx.x\"):\n",
        "    for i in T.thread_binding(n, thread=\"blockIdx.x\"):\n"
        "        for u in T.thread_binding(128, thread=\"threadIdx.x\"):\n"
        "            B[i, 0] = A[i, 0]\n")
    with pytest.raises(st.ScheduleError, match="shared cache 'A_shared' lies inside loop 't', bound to threadIdx.x "
                                               "over 64 of the block's 128 threads"):
        st.compile(text, target="cuda")


def test_a_shared_cache_outside_the_threads_is_refused():
    text = '''
@T.prim_func
def outside(a: T.handle, b: T.handle, n: T.int32) -> None:
    T.func_attr({"global_symbol": "main", "tir.noalias": True, "sparse_tir_level": 0})
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 64), "float32")
    for i in T.thread_binding(n, thread="blockIdx.x"):
        A_shared = T.alloc_buffer((64,), "float32", scope="shared")
        for ax in T.serial(64):
            A_shared[ax] = A[i, ax]
        for t in T.thread_binding(64, thread="threadIdx.x"):
            B[i, t] = A_shared[63 - t]
'''
    with pytest.raises(st.ScheduleError, match="no loop bound to threadIdx.x encloses it"):
        st.compile(text, target="cuda")


def test_shared_caches_past_the_static_limit_are_refused():
    with pytest.raises(st.ScheduleError, match="the shared caches of this kernel take 65536 bytes with 'A_shared', "
                                               "more than the 49152 a block may declare"):
        st.compile(reverse_script("float32", 16384, 64), target="cuda")


# --------------------------------------------------------------------------- on a GPU


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
@pytest.mark.parametrize("dtype", ("float32", "float16"))
def test_gpu_shared_caches(dtype):
    kernel = st.compile(reverse_script(dtype, 1000, 32), target="cuda")
    a = torch.randn(5, 1000, device="cuda").to(TORCH_DTYPES[dtype])
    b = torch.empty_like(a)
    kernel(a=a, b=b, n=5)
    assert torch.equal(b, a.flip(1))
    bsrmm = st.compile(shared_bsrmm(dtype, "int32", (4, 8), 16), target="cuda")
    indptr, indices, blocks = random_bsr(5, 4, 4, 8, 0.6, seed=1, idtype="int32", empty_rows=(2,))
    blocks_t = torch.from_numpy(blocks).to(TORCH_DTYPES[dtype])
    dense = torch.randn(32, 16).to(TORCH_DTYPES[dtype])
    cpu = run_bsrmm(st.compile(shared_bsrmm(dtype, "int32", (4, 8), 16), target="cuda"), indptr, indices, blocks_t,
                    dense, 5, 4, dtype)  # emulated
    gpu = run_bsrmm(bsrmm, indptr.cuda(), indices.cuda(), blocks_t.cuda(), dense.cuda(), 5, 4, dtype)
    torch.testing.assert_close(gpu.cpu(), cpu)
