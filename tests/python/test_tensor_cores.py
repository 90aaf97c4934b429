"""Tensor cores: sch.tensorize and the mma fragments of a warp.

A nest of three loops that multiply-accumulates a 16 x 8 x 16 tile becomes
T.sp.mma_sync (schedule/tensorize.cc); on cuda its accumulator becomes a
fragment spread over the warp's 32 lanes in the PTX ISA's layout
(transforms/lower_mma_fragments.h) and the instruction is mma.sync from
sm_80 on. Under the SIMT emulator (and on GPUs before sm_80) the same product
runs as warp shuffles over the same fragments, so the emulated kernels check
the fragment layout of every load and store. bsrmm's cuda recipe takes this
path for float16 / bfloat16 blocks whose sides are multiples of 16 with
features a multiple of 8: checked here against float64 references, exactly
on integer data, rounded once, with gradients, in every thread order; NVRTC
and ptxas compile it for sm_80 and sm_90.
"""
import os
import re
import shutil

import numpy as np
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from conftest import REPO_ROOT, TORCH_DTYPES, needs_nvrtc, run_emulated_cuda_benchmark, to_tensor
from test_cuda_backend import bsr_dense, random_bsr

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning")

ops = torch.ops.sparsetir
LOW = ("float16", "bfloat16")
UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8}
MMA_CALL = "sparsetir_mma_m16n8k16<"

with open(os.path.join(REPO_ROOT, "kernels", "bsrmm.py"), encoding="utf-8") as f:
    BSRMM = f.read()


@pytest.fixture
def emulate(monkeypatch):
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "1")
    yield


def bsrmm_source(dtype, block, feat, idtype="int32"):
    sizes = {"block_h": block[0], "block_w": block[1], "feat_size": feat}
    return _C.op_kernel_source("bsrmm", "bsrmm", dtype, idtype, sizes, "cuda")


def rounded_once_bound(out, ref, magnitude, terms, dtype):
    """|out - ref| <= u |ref| + 2 terms u32 magnitude (+ float16's subnormal
    spacing): the error of float32 sums rounded once to the 16-bit output.
    Sums rounded to 16 bits along the way exceed it."""
    got = out.detach().double().numpy()
    assert np.all(np.isfinite(got))
    tol = UNIT_ROUNDOFF[dtype] * np.abs(ref) + 2.0 * terms * 2.0**-24 * magnitude
    if dtype == "float16":
        tol = tol + 2.0**-24
    err = np.abs(got - ref)
    assert np.all(err <= tol), f"max excess {(err - tol).max():.3g} at {np.unravel_index((err - tol).argmax(), err.shape)}"


# (block, features): a 16 x 16 block, taller, wider, and both; one 8-feature
# tile a warp (8, 24), two (48) and four (64).
SHAPES = [((16, 16), 24), ((32, 16), 64), ((16, 48), 8), ((32, 32), 48)]


@pytest.mark.parametrize("block,feat", SHAPES)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
def test_emulated_tensor_core_bsrmm_matches_float64(emulate, block, feat, dtype, idtype):
    assert MMA_CALL in bsrmm_source(dtype, block, feat, idtype)
    bh, bw = block
    indptr, indices, blocks = random_bsr(5, 4, bh, bw, 0.5, seed=bh + bw + feat, idtype=idtype, empty_rows=(1,))
    blocks_t = to_tensor(blocks, dtype)
    b = to_tensor(np.random.default_rng(feat).uniform(-1, 1, (4 * bw, feat)), dtype)
    before = _C.emulated_runs()
    out = ops.bsrmm(indptr, indices, blocks_t, b)
    assert _C.emulated_runs() == before + 1, "the CUDA path did not run"
    assert out.dtype == TORCH_DTYPES[dtype] and out.shape == (5 * bh, feat)
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), 5, 4)
    bd = b.double().numpy()
    rounded_once_bound(out, wd @ bd, np.abs(wd) @ np.abs(bd), 4 * bw, dtype)
    assert torch.all(out[bh:2 * bh] == 0), "an empty block row is not zero"


@pytest.mark.parametrize("dtype", LOW)
def test_integer_tiles_are_exact(emulate, dtype):
    """Small integers multiply and sum exactly in float32 and the results fit
    the 16-bit output: every element must equal the exact product, so a lane
    that loads or stores a wrong element of its fragment cannot hide."""
    bh, bw, feat = 32, 32, 64
    indptr, indices, _ = random_bsr(4, 3, bh, bw, 0.7, seed=11, idtype="int32", empty_rows=(2,))
    rng = np.random.default_rng(12)
    blocks = torch.from_numpy(rng.integers(-3, 4, (len(indices), bh, bw)).astype(np.float64))
    b = torch.from_numpy(rng.integers(-3, 4, (3 * bw, feat)).astype(np.float64))
    out = ops.bsrmm(indptr, indices, blocks.to(TORCH_DTYPES[dtype]), b.to(TORCH_DTYPES[dtype]))
    ref = bsr_dense(indptr, indices, blocks.numpy(), 4, 3) @ b.numpy()
    assert np.abs(ref).max() <= 256  # exact in bfloat16 too
    np.testing.assert_array_equal(out.double().numpy(), ref)


def test_no_blocks_and_one_block(emulate):
    empty = ops.bsrmm(torch.zeros(3, dtype=torch.int32), torch.zeros(0, dtype=torch.int32),
                      torch.zeros(0, 16, 16, dtype=torch.float16), torch.ones(32, 8, dtype=torch.float16))
    assert empty.shape == (32, 8) and torch.all(empty == 0)
    one = torch.full((1, 16, 16), 0.5, dtype=torch.bfloat16)
    out = ops.bsrmm(torch.tensor([0, 1]), torch.tensor([0]), one, torch.ones(16, 8, dtype=torch.bfloat16))
    assert torch.all(out == 8)


def test_tensor_core_sums_round_once(emulate):
    """2051 ones: float32 sums give 2051, rounded once to float16 (spacing 2
    there, ties to even) 2052. Sums rounded to float16 along the way stop at
    2048 (2048 + 1 rounds back to 2048)."""
    bw = 16
    nb = 129  # 2064 columns: 2049 ones and two more ones make 2051
    values = np.zeros((nb * bw,))
    values[:2051] = 1.0
    blocks = torch.from_numpy(values.reshape(1, nb, 1, bw).repeat(16, axis=2).reshape(nb, 16, bw).copy())
    indptr = torch.tensor([0, nb], dtype=torch.int32)
    indices = torch.arange(nb, dtype=torch.int32)
    out = ops.bsrmm(indptr, indices, blocks.half(), torch.ones(nb * bw, 8, dtype=torch.float16))
    assert torch.all(out.double() == 2052.0), out[0]


@pytest.mark.parametrize("order", ["reverse", "shuffle", "check"])
@pytest.mark.parametrize("op", ["bsrmm", "bsr_linear", "grad_blocks"])
def test_tensor_cores_in_every_thread_order(emulate, monkeypatch, order, op):
    indptr, indices, blocks = random_bsr(3, 3, 32, 16, 0.6, seed=5, idtype="int64")
    blocks_t = torch.from_numpy(blocks).half()
    dense = torch.from_numpy(np.random.default_rng(6).uniform(-1, 1, (48, 48))).half()

    def run():
        if op == "bsrmm":
            return ops.bsrmm(indptr, indices, blocks_t, dense[:, :40])
        if op == "grad_blocks":
            return ops._bsr_linear_grad_blocks(dense[:32], dense[:32, :96 - 48].repeat(1, 2), indptr, indices, 32, 16)
        return ops.bsr_linear(dense[:32], indptr, indices, blocks_t)

    forward = run()
    monkeypatch.setenv("SPARSETIR_EMULATE_ORDER", order)
    assert torch.equal(run(), forward)


def test_tensor_core_bsrmm_gradients(emulate, monkeypatch):
    """The backward's products (the transposed blocks times the output's
    gradient, and the blocks' gradient) against the CPU kernels in float32."""
    indptr, indices, blocks = random_bsr(3, 2, 16, 32, 0.7, seed=8, idtype="int32", empty_rows=(1,))
    gen = torch.Generator().manual_seed(9)
    w = torch.from_numpy(blocks).bfloat16().requires_grad_()
    d = torch.randn(64, 16, generator=gen).bfloat16().requires_grad_()
    grad = torch.randn(48, 16, generator=gen).bfloat16()
    emulated = torch.autograd.grad(ops.bsrmm(indptr, indices, w, d), (w, d), grad)
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    wf, df = w.detach().float().requires_grad_(), d.detach().float().requires_grad_()
    cpu = torch.autograd.grad(ops.bsrmm(indptr, indices, wf, df), (wf, df), grad.float())
    for e, c in zip(emulated, cpu):
        torch.testing.assert_close(e.float(), c, rtol=2**-7, atol=2**-6)


# --------------------------------------------------------------------------- bsr_linear in batch tiles
# x @ W^T for a BSR weight (st.nn.BlockSparseLinear): with a batch that is a
# multiple of 16 and 16-bit blocks of a multiple of 8 rows and 16 columns, the
# operator runs kernels/bsr_linear_tiles.py (x seen as tiles of 16 rows) on
# tensor cores; other batches take the SIMT kernel.

# (block, batch): blocks of 1, 4 and 5 output tiles of 8; batches of one, three
# and two tiles of 16 rows, and 20 rows (not tiles: the SIMT kernel).
LINEAR_SHAPES = [((32, 16), 48), ((8, 16), 16), ((40, 48), 32), ((16, 32), 20)]


def bsr_linear_source(dtype, block, idtype="int32"):
    sizes = {"block_h": block[0], "block_w": block[1], "tile_rows": 16}
    return _C.op_kernel_source("bsr_linear_tiles", "bsr_linear_tiles", dtype, idtype, sizes, "cuda")


@pytest.mark.parametrize("block,batch", LINEAR_SHAPES)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
def test_emulated_tensor_core_bsr_linear_matches_float64(emulate, block, batch, dtype, idtype):
    assert MMA_CALL in bsr_linear_source(dtype, block, idtype)
    bh, bw = block
    indptr, indices, blocks = random_bsr(3, 4, bh, bw, 0.5, seed=bh + bw + batch, idtype=idtype, empty_rows=(1,))
    blocks_t = to_tensor(blocks, dtype)
    x = to_tensor(np.random.default_rng(batch).uniform(-1, 1, (2, batch // 2, 4 * bw)), dtype)
    before = _C.emulated_runs()
    y = ops.bsr_linear(x, indptr, indices, blocks_t)
    assert _C.emulated_runs() == before + 1, "the CUDA path did not run"
    assert y.shape == (2, batch // 2, 3 * bh) and y.dtype == TORCH_DTYPES[dtype]
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), 3, 4)
    xd = x.double().numpy().reshape(batch, 4 * bw)
    rounded_once_bound(y.reshape(batch, 3 * bh), xd @ wd.T, np.abs(xd) @ np.abs(wd.T), 4 * bw, dtype)
    assert torch.all(y[..., bh:2 * bh] == 0), "the outputs of an empty block row are not zero"


# (block, batch) of the blocks' gradient: 16 x 8 blocks (one tile a warp),
# 32 x 32 (two warps of four), 48 x 40 (three warps of five); 20 rows: the
# SIMT kernel.
GRAD_SHAPES = [((16, 8), 48), ((32, 32), 16), ((48, 40), 32), ((32, 16), 20)]


@pytest.mark.parametrize("block,batch", GRAD_SHAPES)
@pytest.mark.parametrize("dtype", LOW)
@pytest.mark.parametrize("idtype", ("int32", "int64"))
def test_emulated_tensor_core_block_gradients_match_float64(emulate, block, batch, dtype, idtype):
    """dW[e] = dY[:, block row]^T X[:, block column] for every stored block:
    dY's tiles are read transposed (their rows are the block's rows)."""
    sizes = {"block_h": block[0], "block_w": block[1], "tile_rows": 16}
    assert MMA_CALL in _C.op_kernel_source("bsr_linear_grad_blocks_tiles", "bsr_linear_grad_blocks_tiles", dtype,
                                           idtype, sizes, "cuda")
    bh, bw = block
    indptr, indices, _ = random_bsr(3, 4, bh, bw, 0.5, seed=bh + bw + batch, idtype=idtype, empty_rows=(1,))
    rng = np.random.default_rng(batch)
    x = to_tensor(rng.uniform(-1, 1, (batch, 4 * bw)), dtype)
    g = to_tensor(rng.uniform(-1, 1, (batch, 3 * bh)), dtype)
    before = _C.emulated_runs()
    dw = ops._bsr_linear_grad_blocks(x, g, indptr, indices, bh, bw)
    assert _C.emulated_runs() == before + 1, "the CUDA path did not run"
    rows = np.repeat(np.arange(3), np.diff(indptr.numpy()))
    xd, gd = x.double().numpy().reshape(batch, 4, bw), g.double().numpy().reshape(batch, 3, bh)
    ref = np.stack([gd[:, rows[p]].T @ xd[:, int(indices[p])] for p in range(len(indices))])
    mag = np.stack([np.abs(gd[:, rows[p]]).T @ np.abs(xd[:, int(indices[p])]) for p in range(len(indices))])
    rounded_once_bound(dw, ref, mag, batch, dtype)


@pytest.mark.parametrize("dtype", LOW)
def test_integer_bsr_linear_tiles_are_exact(emulate, dtype):
    indptr, indices, _ = random_bsr(2, 3, 32, 32, 0.7, seed=13, idtype="int64")
    rng = np.random.default_rng(14)
    blocks = torch.from_numpy(rng.integers(-3, 4, (len(indices), 32, 32)).astype(np.float64))
    x = torch.from_numpy(rng.integers(-3, 4, (64, 96)).astype(np.float64))
    y = ops.bsr_linear(x.to(TORCH_DTYPES[dtype]), indptr, indices, blocks.to(TORCH_DTYPES[dtype]))
    ref = x.numpy() @ bsr_dense(indptr, indices, blocks.numpy(), 2, 3).T
    assert np.abs(ref).max() <= 256
    np.testing.assert_array_equal(y.double().numpy(), ref)
    grad = torch.from_numpy(rng.integers(-3, 4, (64, 64)).astype(np.float64))
    dw = ops._bsr_linear_grad_blocks(x.to(TORCH_DTYPES[dtype]), grad.to(TORCH_DTYPES[dtype]), indptr, indices, 32, 32)
    rows = np.repeat(np.arange(2), np.diff(indptr.numpy()))
    want = np.stack([grad.numpy()[:, 32 * rows[p]:32 * rows[p] + 32].T @ x.numpy()[:, 32 * int(c):32 * int(c) + 32]
                     for p, c in enumerate(indices)])
    assert np.abs(want).max() <= 256
    np.testing.assert_array_equal(dw.double().numpy(), want)


def test_block_sparse_linear_trains_on_tensor_cores(emulate, monkeypatch):
    """A BlockSparseLinear step in bfloat16 (the input's gradient is
    bsr_linear on the transposed blocks, on tensor cores too) against the
    same step on the CPU kernels in float32."""
    gen = torch.Generator().manual_seed(15)
    dense = torch.nn.Linear(64, 48, bias=True)
    layer = st.nn.BlockSparseLinear.from_dense(dense, block_shape=(16, 16), density=0.5).bfloat16()
    x = torch.randn(32, 64, generator=gen).bfloat16().requires_grad_()
    grad = torch.randn(32, 48, generator=gen).bfloat16()
    before = _C.emulated_runs()
    y = layer(x)
    y.backward(grad)
    assert _C.emulated_runs() >= before + 3
    emulated = (y.detach(), x.grad, layer.blocks_t.grad)
    monkeypatch.setenv("SPARSETIR_EMULATE_CUDA", "0")
    ref_layer = st.nn.BlockSparseLinear.from_dense(dense, block_shape=(16, 16), density=0.5)
    with torch.no_grad():
        ref_layer.blocks_t.copy_(layer.blocks_t.float())
        ref_layer.bias.copy_(layer.bias.float())
    xf = x.detach().float().requires_grad_()
    yf = ref_layer(xf)
    yf.backward(grad.float())
    for got, want in zip(emulated, (yf.detach(), xf.grad, ref_layer.blocks_t.grad)):
        torch.testing.assert_close(got.float(), want, rtol=2**-7, atol=2**-5)


def test_bsr_linear_tiles_refuse_what_tensor_cores_cannot_run():
    with pytest.raises(st.ScheduleError, match="bsr_linear_tiles runs on tensor cores only"):
        bsr_linear_source("float32", (32, 16))
    with pytest.raises(st.ScheduleError, match="bsr_linear_tiles runs on tensor cores only"):
        bsr_linear_source("float16", (12, 16))
    with pytest.raises(st.ScheduleError, match="bsr_linear_grad_blocks_tiles runs on tensor cores only"):
        _C.op_kernel_source("bsr_linear_grad_blocks_tiles", "bsr_linear_grad_blocks_tiles", "bfloat16", "int32",
                            {"block_h": 8, "block_w": 16, "tile_rows": 16}, "cuda")


# --------------------------------------------------------------------------- the schedule


def mma_schedule(dtype="float16", block=(32, 16), feat=64, tiles=4, tensorize=True, cache=True, shared=True):
    """bsrmm's tensor-core recipe, written with the public primitives."""
    sch = st.Schedule(BSRMM.replace('"float32"', f'"{dtype}"'))
    sch.specialize(block_h=block[0], block_w=block[1], feat_size=feat)
    i, j, bi, bj, f = sch.get_loops("bsrmm")
    bi0, bi1 = sch.split(bi, factors=[None, 16])
    bj0, bj1 = sch.split(bj, factors=[None, 16])
    f0, fw = sch.split(f, factors=[None, 8 * tiles])
    ft, f1 = sch.split(fw, factors=[None, 8])
    sch.reorder(bi0, f0, j, bj0, ft, bi1, f1, bj1)
    _, ibi, ifeat = sch.get_loops("bsrmm_init")
    ibi0, ibi1 = sch.split(ibi, factors=[None, 16])
    if0, if1 = sch.split(ifeat, factors=[None, 8 * tiles])
    sch.reorder(ibi0, if0, ibi1, if1)
    sch.merge(ibi0, bi0)
    sch.merge(if0, f0)
    sch.bind(i, "blockIdx.x")
    sch.bind(ibi0, "threadIdx.y")
    sch.bind(if0, "blockIdx.y")
    if cache:
        sch.cache_write(if0, "C", "local")
    if shared:
        sch.cache_read(j, "A", "shared")
        sch.cache_read(j, "B", "shared")
    if tensorize:
        sch.tensorize(bi1, "mma_m16n8k16")
    return sch


def test_the_recipe_and_the_public_primitives_agree():
    sch = mma_schedule(block=(32, 16), feat=24, tiles=1)
    assert "sch.tensorize(\"bi_1\", \"mma_m16n8k16\")" in sch.trace
    assert 'T.sp.mma_sync("m16n8k16", C_local[0, ' in sch.mod.script()
    assert st.compile(sch, target="cuda").source == bsrmm_source("float16", (32, 16), 24)


def test_tensorize_refusals():
    sch = mma_schedule(tensorize=False)
    loops = sch.get_loops("bsrmm")  # ..., f_1_0, bi_1, f_1_1, bj_1
    with pytest.raises(st.ScheduleError, match="tensorize: unknown intrinsic 'wmma'; the one known is 'mma_m16n8k16'"):
        sch.tensorize(loops[-3], "wmma")
    with pytest.raises(st.ScheduleError, match="tensorize: loop 'f_1_1' is not a perfect nest of three loops"):
        sch.tensorize(loops[-2], "mma_m16n8k16")
    with pytest.raises(st.ScheduleError, match="tensorize: loop 'f_1_0' holds more than three nested loops"):
        sch.tensorize(loops[-4], "mma_m16n8k16")


def test_tensorize_refuses_wrong_extents_and_dtypes():
    sch = st.Schedule(BSRMM.replace('"float32"', '"float16"'))
    sch.specialize(block_h=16, block_w=32, feat_size=8)
    i, j, bi, bj, f = sch.get_loops("bsrmm")
    sch.reorder(bi, f, bj)
    sch.cache_write(j, "C", "local")
    with pytest.raises(st.ScheduleError, match="loop 'bj' runs the tile's depth over 32 iterations; mma_m16n8k16 "
                                               "needs 16 \\(split it by 16 first\\)"):
        sch.tensorize(bi, "mma_m16n8k16")
    single = st.Schedule(BSRMM)
    single.specialize(block_h=16, block_w=16, feat_size=8)
    i, j, bi, bj, f = single.get_loops("bsrmm")
    single.reorder(bi, f, bj)
    single.cache_write(j, "C", "local")
    with pytest.raises(st.ScheduleError, match="an mma multiplies float16 or bfloat16 tiles of one dtype"):
        single.tensorize(bi, "mma_m16n8k16")
    uncached = st.Schedule(BSRMM.replace('"float32"', '"float16"'))
    uncached.specialize(block_h=16, block_w=16, feat_size=8)
    i, j, bi, bj, f = uncached.get_loops("bsrmm")
    uncached.reorder(bi, f, bj)
    uncached.lower_sparse_buffer()
    with pytest.raises(st.ScheduleError, match="it accumulates into 'C' \\(float16, global\\); an mma sums in float32"):
        uncached.tensorize(bi, "mma_m16n8k16")


def test_an_mma_is_a_cuda_instruction():
    with pytest.raises(st.ScheduleError, match="loop 'i' is bound to blockIdx.x|T.sp.mma_sync .* is a tensor-core "
                                               "instruction of the cuda target"):
        st.compile(mma_schedule(), target="cpu")
    # float16 blocks and features summed into a float32 output.
    mixed = BSRMM.replace('"float32"', '"float16"').replace(
        'C = T.sp.match_buffer(c, (I, BI, F), "float16")', 'C = T.sp.match_buffer(c, (I, BI, F), "float32")').replace(
        "C[i, bi, f] + A[i, j, bi, bj] * B[j, bj, f]",
        'C[i, bi, f] + T.Cast("float32", A[i, j, bi, bj]) * T.Cast("float32", B[j, bj, f])')
    assert mixed.count("T.Cast") == 2
    f32 = st.Schedule(mixed)
    f32.specialize(block_h=16, block_w=16, feat_size=8)
    i, j, bi, bj, f = f32.get_loops("bsrmm")
    f32.reorder(bi, f, bj)
    f32.lower_sparse_buffer()
    f32.tensorize(bi, "mma_m16n8k16")  # a float32 accumulator in global memory: valid IR
    with pytest.raises(st.ScheduleError, match="is a tensor-core instruction of the cuda target"):
        st.compile(f32, target="cpu")
    with pytest.raises(st.ScheduleError, match="an mma accumulates into 'C' \\(global memory\\); on cuda its "
                                               "accumulator is a fragment of a local buffer"):
        st.compile(f32, target="cuda")


# --------------------------------------------------------------------------- stage III scripts

with open(os.path.join(REPO_ROOT, "tests", "golden", "kernels", "cuda",
                       "bsrmm_float16_int32_block_h32_block_w16_feat_size24.stage3.py"), encoding="utf-8") as f:
    STAGE3 = f.read()
MMA_LINE = next(line for line in STAGE3.splitlines(keepends=True) if "T.sp.mma_sync" in line)
INDENT = MMA_LINE[:len(MMA_LINE) - len(MMA_LINE.lstrip())]
# The block row's first block: a variable in scope at the mma, whatever the
# code generator numbered it.
FIRST = re.search(r"(v\d+): T.int32 = J_indptr\[i\]\n", STAGE3).group(1)


def test_stage3_script_round_trips_and_compiles():
    f = st.parse(STAGE3)
    assert f.script().strip() == STAGE3.strip()
    assert MMA_CALL in st.compile(STAGE3, target="cuda").source


def with_mma(args):
    """STAGE3 with its mma written T.sp.mma_sync(args)."""
    return STAGE3.replace(MMA_LINE, f"{INDENT}T.sp.mma_sync({args})\n")


def test_mma_sync_script_errors():
    with pytest.raises(st.ScriptError, match='T.sp.mma_sync knows the shape "m16n8k16"'):
        st.parse(STAGE3.replace('"m16n8k16"', '"m16n8k8"'))
    with pytest.raises(st.ScriptError, match="the mma's accumulator is an element of a buffer of two or more "
                                             "dimensions"):
        st.parse(with_mma(f'"m16n8k16", J_indices[{FIRST}], A[{FIRST}, 0, 0], B[{FIRST}, 0, 0], 16, 1, 24, 1'))
    with pytest.raises(st.ScriptError, match="a_rows, a_cols, b_rows, b_cols"):
        st.parse(with_mma(f'"m16n8k16", C_local[0, 0], A[{FIRST}, 0, 0], B[{FIRST}, 0, 0]'))
    with pytest.raises(st.ScriptError, match="the mma's accumulator 'A' is float16 in global scope; it accumulates "
                                             "in float32"):
        st.parse(with_mma(f'"m16n8k16", A[{FIRST}, 0, 0], C_local[0, 0], B[{FIRST}, 0, 0], 16, 1, 24, 1'))


def test_fragment_refusals():
    stray = STAGE3.replace(MMA_LINE, MMA_LINE + INDENT + "C_local[0, 0] = C_local[0, 0] + T.float16(1.0)\n")
    with pytest.raises(st.ScheduleError, match="mma accumulator 'C_local' is accessed outside its mmas and outside a "
                                               "loop nest that walks it element by element"):
        st.compile(stray, target="cuda")
    beside = STAGE3.replace(MMA_LINE, MMA_LINE + INDENT + "C[i, 0, 0] = T.float16(1.0)\n")
    with pytest.raises(st.ScheduleError, match="'C' is stored beside mma accumulator 'C_local', in code that every "
                                               "lane of the warp runs"):
        st.compile(beside, target="cuda")
    misaligned = STAGE3.replace("C_local[0, f_1_0 * 8]", "C_local[0, f_1_0 * 8 + 4]")
    assert misaligned != STAGE3
    with pytest.raises(st.ScheduleError, match="starts at column index that is not a multiple of 8"):
        st.compile(misaligned, target="cuda")


# --------------------------------------------------------------------------- NVRTC and ptxas



@needs_nvrtc
@pytest.mark.parametrize("dtype,ptx_type", [("float16", "f16"), ("bfloat16", "bf16")])
def test_mma_compiles_to_the_instruction_from_sm80(dtype, ptx_type):
    from sparsetir_torch.cuda_check import ptxas_report

    kernel = st.compile(mma_schedule(dtype), target="cuda")
    instruction = f"mma.sync.aligned.m16n8k16.row.col.f32.{ptx_type}.{ptx_type}.f32"
    for arch in (80, 90):
        ptx = kernel.ptx(f"sm_{arch}")
        assert instruction in ptx, arch
        ptxas = shutil.which("ptxas")
        if ptxas:  # raises with ptxas's log if it refuses the PTX
            assert ptxas_report(ptxas, ptx.encode(), arch)["spills"] == 0
    # Before sm_80 the instruction does not exist: the shuffles run instead.
    assert "mma.sync" not in kernel.ptx("sm_75") and "shfl.sync.idx" in kernel.ptx("sm_75")


# --------------------------------------------------------------------------- on a GPU

GPU_REASON = st.cuda_unavailable_reason()


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("block,feat", SHAPES)
@pytest.mark.parametrize("dtype", LOW)
def test_gpu_tensor_core_bsrmm_matches_float64(block, feat, dtype):
    bh, bw = block
    indptr, indices, blocks = random_bsr(5, 4, bh, bw, 0.5, seed=bh + bw + feat, idtype="int32", empty_rows=(1,))
    blocks_t = to_tensor(blocks, dtype)
    b = to_tensor(np.random.default_rng(feat).uniform(-1, 1, (4 * bw, feat)), dtype)
    out = ops.bsrmm(indptr.cuda(), indices.cuda(), blocks_t.cuda(), b.cuda())
    wd = bsr_dense(indptr, indices, blocks_t.double().numpy(), 5, 4)
    bd = b.double().numpy()
    # The hardware's float32 sums may group the products differently.
    rounded_once_bound(out.cpu(), wd @ bd, np.abs(wd) @ np.abs(bd), 4 * bw, dtype)


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
def test_gpu_integer_tiles_are_exact():
    indptr, indices, _ = random_bsr(4, 3, 32, 32, 0.7, seed=11, idtype="int32", empty_rows=(2,))
    rng = np.random.default_rng(12)
    blocks = torch.from_numpy(rng.integers(-3, 4, (len(indices), 32, 32)).astype(np.float64))
    b = torch.from_numpy(rng.integers(-3, 4, (96, 64)).astype(np.float64))
    out = ops.bsrmm(indptr.cuda(), indices.cuda(), blocks.half().cuda(), b.half().cuda())
    np.testing.assert_array_equal(out.double().cpu().numpy(), bsr_dense(indptr, indices, blocks.numpy(), 4, 3) @ b.numpy())


def test_explain_shows_the_tensor_core_recipe():
    a = torch.randn(64, 64).to_sparse_bsr((32, 16))
    low = st.explain(a, op="bsrmm", k=64, device="cuda", dtype=torch.float16)
    assert low["tensor_cores"] and low["block"] == (32, 16) and low["format"] == "bsr"
    assert 'sch.tensorize("bi_1", "mma_m16n8k16")' in low["schedule"]
    assert not st.explain(a, op="bsrmm", k=64, device="cuda")["tensor_cores"]  # float32 blocks
    assert not st.explain(a, op="bsrmm", k=60, device="cuda", dtype=torch.float16)["tensor_cores"]
    with pytest.raises(ValueError, match="op='bsrmm' needs A with blocks"):
        st.explain(None, op="bsrmm", k=64, device="cuda")


# --------------------------------------------------------------------------- the CUDA benchmark without a GPU


def test_cuda_benchmark_checks_under_the_emulator(tmp_path):
    """Without a GPU, benchmarks/bench_cuda.py runs our operators' CUDA path
    under the emulator on small cases (the tensor-core bsrmm and bsr_linear
    among them), checks them against float64 and times nothing."""
    stdout = run_emulated_cuda_benchmark("bsrmm,bsr_linear", tmp_path)
    assert "emulated: 4 cases checked, 0 wrong; nothing timed" in stdout, stdout
    assert "bsr_linear 256x256_b32_s90 K=32 float16: ok (emulated, not timed)" in stdout
    with open(tmp_path / "bench_cuda.csv", encoding="utf-8") as f:
        rows = f.read().splitlines()
    assert len(rows) == 5 and all("not timed (emulated)" in r for r in rows[1:])


@pytest.mark.skipif(bool(GPU_REASON), reason=f"no GPU: {GPU_REASON}")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_gpu_block_sparse_linear_step_matches_float32(dtype):
    """A BlockSparseLinear step on tensor cores (forward, input gradient and
    the blocks' gradient) against the same step in float32 on the CPU."""
    gen = torch.Generator().manual_seed(18)
    dense = torch.nn.Linear(256, 128)
    cpu = st.nn.BlockSparseLinear.from_dense(dense, block_shape=(32, 32), density=0.3)
    gpu = st.nn.BlockSparseLinear.from_dense(dense, block_shape=(32, 32), density=0.3).to("cuda", dtype)
    x = torch.randn(64, 256, generator=gen)
    grad = torch.randn(64, 128, generator=gen)
    xg = x.to("cuda", dtype).requires_grad_()
    yg = gpu(xg)
    yg.backward(grad.to("cuda", dtype))
    xc = x.to(dtype).float().requires_grad_()
    with torch.no_grad():
        cpu.blocks_t.copy_(gpu.blocks_t.float().cpu())
        cpu.bias.copy_(gpu.bias.float().cpu())
    yc = cpu(xc)
    yc.backward(grad.to(dtype).float())
    for got, want in ((yg, yc), (xg.grad, xc.grad), (gpu.blocks_t.grad, cpu.blocks_t.grad)):
        torch.testing.assert_close(got.float().cpu(), want, rtol=2**-6, atol=2**-4)
