"""The CPU SpMM recipe (sparsetir_torch.recipes.spmm_cpu) keeps results exact
for every feature width: powers of two, odd widths, widths the vector does not
divide, and very wide rows that skip the register cache."""
import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch.recipes import spmm_cpu


def random_csr(m, n, seed):
    g = torch.Generator().manual_seed(seed)
    dense = torch.rand(m, n, generator=g, dtype=torch.float64) * 2 - 1
    dense[torch.rand(m, n, generator=g) < 0.8] = 0
    dense[1] = 0  # an empty row
    dense[2] = torch.rand(n, generator=g, dtype=torch.float64) + 0.5  # a dense row
    return dense


@pytest.mark.parametrize("feat", [1, 3, 16, 20, 48, 128, 256, 600])
@pytest.mark.parametrize("parallel", [True, False])
def test_spmm_recipe_matches_dense_float64(feat, parallel):
    dense = random_csr(37, 29, seed=feat)
    A = dense.float().to_sparse_csr()
    B = torch.randn(29, feat, dtype=torch.float64)
    C = torch.full((37, feat), float("nan"))
    kernel = st.compile(spmm_cpu(feat, parallel=parallel))
    kernel(a=A.values(), b=B.float(), c=C, indptr=A.crow_indices().int(), indices=A.col_indices().int(),
           m=37, n=29, feat_size=feat, nnz=A.values().numel())
    expected = dense.float().double() @ B.float().double()
    torch.testing.assert_close(C.double(), expected, rtol=1e-5, atol=1e-5)
    assert torch.all(C[1] == 0)


def test_spmm_recipe_rejects_another_width():
    kernel = st.compile(spmm_cpu(32))
    A = random_csr(5, 4, seed=0).float().to_sparse_csr()
    with pytest.raises(ValueError, match="feat_size"):
        kernel(a=A.values(), b=torch.randn(4, 16), c=torch.empty(5, 16), indptr=A.crow_indices().int(),
               indices=A.col_indices().int(), m=5, n=4, feat_size=16, nnz=A.values().numel())


# ---- one source of scheduling knowledge: Python replays the C++ recipe


@pytest.mark.parametrize("feat", [1, 3, 20, 64, 256, 600, 10000])
def test_spmm_cpu_is_the_operators_kernel(feat):
    """spmm_cpu replays the C++ recipe's trace: the kernel it compiles is, byte
    for byte, the one the operators build for the same request."""
    from sparsetir_torch import _C

    ours = st.compile(spmm_cpu(feat)).source
    assert ours == _C.op_kernel_source("csrmm", "csrmm", "float32", "int32", {"feat_size": feat}, "cpu")


def test_spmm_cpu_without_prefetch_or_parallel_asks_the_recipe():
    from sparsetir_torch import _C
    from sparsetir_torch.recipes import csrmm_plan

    plain = spmm_cpu(64, prefetch=False, parallel=False).trace
    assert "sch.prefetch(" not in plain and "sch.parallel(" not in plain
    full = _C.recipe_trace("csrmm", "csrmm", "float32", "int32", {"feat_size": 64}, "cpu", True)
    assert "sch.prefetch(" in full and "sch.parallel(" in full
    into_l2 = spmm_cpu(64, prefetch=2).trace
    assert 'sch.prefetch("j' in into_l2 and "cache_level=2)" in into_l2
    assert into_l2 == _C.recipe_trace("csrmm", "csrmm", "float32", "int32", {"feat_size": 64}, "cpu", 2)
    assert into_l2.replace(", cache_level=2)", ")") == full  # the level is the only difference
    with pytest.raises(ValueError, match=r"spmm_cpu: prefetch is True / 1 \(into L1\), 2 .* got 3"):
        spmm_cpu(64, prefetch=3)
    with pytest.raises(ValueError, match=r"recipe_trace: prefetch is 0 \(none\), 1 \(into L1\) or 2 .* got 5"):
        _C.recipe_trace("csrmm", "csrmm", "float32", "int32", {"feat_size": 64}, "cpu", 5)
    with pytest.raises(ValueError, match=r"csrmm_plan: prefetch is 0 \(none\), 1 \(into L1\) or 2 .* got -1"):
        csrmm_plan(64, prefetch=-1)


@pytest.mark.parametrize("isa,feat,element_bytes,expected", [
    ("generic", 32, 4, (4, 8, 32)),     # 8 vectors: the row whole, unrolled
    ("generic", 64, 4, (4, 8, 32)),     # 16 vectors for 16 registers: tiles of 8
    ("generic", 256, 8, (2, 8, 16)),    # float64: 2 lanes, 128 vectors
    ("generic", 44, 4, (4, 1, 44)),     # 11 vectors (prime): the row whole, its loop rolled
    ("generic", 100, 4, (4, 5, 20)),    # 25 vectors: tiles of 5
    ("generic", 7, 4, (1, 1, 7)),       # no vector divides 7: scalar
    ("avx2", 64, 4, (8, 8, 64)),
    ("avx2", 256, 4, (8, 8, 64)),
    ("avx512", 256, 4, (16, 16, 256)),  # 16 vectors for 32 registers: whole
    ("avx512", 512, 4, (16, 16, 256)),
    ("avx512", 100, 4, (4, 1, 100)),    # 25 vectors: tiles of 5 would idle 11 of the 16 kept for the row
])
def test_bsrmm_plan_per_level(isa, feat, element_bytes, expected):
    """bsrmm keeps each output row's feature tile in registers while a block's
    columns pass; a row of more vectors than half the level's registers runs
    in tiles of the largest divisor at most that many (when at least half of
    them). The trace says so: the tile loop before the block's rows."""
    from sparsetir_torch import _C
    from sparsetir_torch.recipes import bsrmm_plan

    plan = bsrmm_plan(4, feat, element_bytes, isa)
    assert (plan["vector_lanes"], plan["unrolled_vectors"], plan["feature_tile"]) == expected, plan
    assert plan["output_tile_local"]
    assert not bsrmm_plan(32, 512, 4, isa)["output_tile_local"]  # 16384 elements: accumulated in the output
    dtype = "float64" if element_bytes == 8 else "float32"
    trace = _C.recipe_trace("bsrmm", "bsrmm", dtype, "int32", {"block_h": 4, "block_w": 4, "feat_size": feat},
                            f"cpu:{isa}")
    tiled = expected[2] < feat
    assert ('sch.reorder(["f_0", "bi", "bj"' in trace) == tiled, trace
    assert ("sch.unroll(" in trace) == (expected[1] > 1), trace
    assert ("sch.vectorize(" in trace) == (expected[0] > 1), trace
    assert not plan["b_tile_packed"] and "sch.cache_read(" not in trace  # 4-row blocks: the copy would not pay


@pytest.mark.parametrize("isa", ["generic", "avx2", "avx512"])
def test_bsrmm_packs_the_b_slice_of_a_tile_whose_rows_alias(isa):
    """A tile's slice of the B block is packed when 32 or more block rows
    reuse it and B's rows lie 1 KiB or more apart (power-of-two strides that
    map the slice to a few L1 sets)."""
    from sparsetir_torch import _C
    from sparsetir_torch.recipes import bsrmm_plan

    for block_h, feat, element_bytes in [(32, 256, 4), (32, 512, 4), (16, 256, 4), (32, 128, 4), (32, 128, 8),
                                         (64, 64, 4)]:
        plan = bsrmm_plan(block_h, feat, element_bytes, isa)
        tiled = plan["feature_tile"] < feat
        assert plan["b_tile_packed"] == (tiled and block_h >= 32 and feat * element_bytes >= 1024), plan
        dtype = "float64" if element_bytes == 8 else "float32"
        trace = _C.recipe_trace("bsrmm", "bsrmm", dtype, "int32",
                                {"block_h": block_h, "block_w": 8, "feat_size": feat}, f"cpu:{isa}")
        assert ('B_local = sch.cache_read("f_0", "B", "local")' in trace) == plan["b_tile_packed"], trace
    assert bsrmm_plan(32, 256, 4, isa)["b_tile_packed"] == (isa != "avx512")  # AVX-512 keeps 16 vectors whole


@pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta:UserWarning")
@pytest.mark.parametrize("feat", (3, 64))
def test_spmm_mean_divides_each_row_before_it_is_stored(feat):
    """csrmm_mean's recipe merges the division's row loop into the SpMM's, so
    the division runs on the row in the local cache; the kernel it schedules
    gives the row sums divided by the lengths."""
    from sparsetir_torch import _C
    from sparsetir_torch.kernels import kernel_script

    trace = _C.recipe_trace("csrmm_mean", "csrmm_mean", "float32", "int32", {"feat_size": feat}, "cpu", True)
    assert "sch.merge(" in trace and "sch.cache_write(" in trace
    kernel = st.compile(st.Schedule.replay(trace, st.parse(kernel_script("csrmm_mean"))))
    A = random_csr(40, 30, seed=feat).float().to_sparse_csr()
    indptr, indices = A.crow_indices().int(), A.col_indices().int()
    lengths = (indptr[1:] - indptr[:-1]).clamp_min(1).float()
    B = torch.randn(30, feat)
    C = torch.full((40, feat), float("nan"))
    kernel(a=A.values(), b=B, c=C, lengths=lengths, indptr=indptr, indices=indices, m=40, n=30, feat_size=feat,
           nnz=indices.numel())
    expected = (A.to_dense().double() @ B.double()) / lengths.double()[:, None]
    torch.testing.assert_close(C.double(), expected, rtol=1e-5, atol=1e-6)


def test_explain_prints_the_recipe_trace_and_it_replays(monkeypatch):
    from sparsetir_torch import _C
    from sparsetir_torch.kernels import kernel_script

    monkeypatch.setenv("SPARSETIR_TUNE", "0")  # CSR: the kernel whose schedule explain prints
    dense = random_csr(40, 30, seed=3)
    A = dense.to_sparse_csr()
    schedule = st.explain(A, k=48)["schedule"]
    trace = schedule["trace"]
    level = {None: 0, "L1": 1, "L2": 2}[schedule["prefetch_into"]]
    assert trace == _C.recipe_trace("csrmm", "csrmm", "float64", "int64", {"feat_size": 48}, "cpu", level)
    script = kernel_script("csrmm", float32="float64", int32="int64")
    kernel = st.compile(st.Schedule.replay(trace, st.parse(script)))
    B = torch.randn(30, 48, dtype=torch.float64)
    C = torch.full((40, 48), float("nan"), dtype=torch.float64)
    kernel(a=A.values(), b=B, c=C, indptr=A.crow_indices(), indices=A.col_indices(), m=40, n=30, feat_size=48,
           nnz=A.values().numel())
    torch.testing.assert_close(C, dense @ B)


@pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta:UserWarning")
def test_explain_of_a_bsr_matrix_prints_the_bsrmm_schedule_and_it_replays():
    from sparsetir_torch import _C
    from sparsetir_torch.kernels import kernel_script
    from sparsetir_torch.recipes import bsrmm_plan, cpu_target

    g = torch.Generator().manual_seed(8)
    dense = torch.rand(24, 16, generator=g) * (torch.rand(24, 16, generator=g) < 0.5)
    dense[8:12] = 0  # an empty block row
    A = dense.to_sparse_bsr((4, 4))
    schedule = st.explain(A, k=256)["schedule"]
    assert schedule["isa"] == cpu_target()["target"]
    plan = bsrmm_plan(4, 256, 4)
    assert {k: schedule[k] for k in plan} == plan
    assert schedule["trace"] == _C.recipe_trace("bsrmm", "bsrmm", "float32", "int64",
                                                {"block_h": 4, "block_w": 4, "feat_size": 256}, "cpu")
    kernel = st.compile(st.Schedule.replay(schedule["trace"], st.parse(kernel_script("bsrmm", int32="int64"))))
    B = torch.randn(16, 256)
    C = torch.full((6, 4, 256), float("nan"))
    kernel(a=A.values(), b=B.view(4, 4, 256), c=C, indptr=A.crow_indices(), indices=A.col_indices(), mb=6, nb=4,
           nnzb=A.values().shape[0], block_h=4, block_w=4, feat_size=256)
    torch.testing.assert_close(C.view(24, 256).double(), dense.double() @ B.double(), rtol=1e-5, atol=1e-5)


def run_sddmm_trace(schedule, A, K, dtype):
    """sddmm's dot product from the kernel explain names, rebuilt from its
    trace; against float64 and the operator."""
    from sparsetir_torch.kernels import kernel_script

    name = str(dtype).removeprefix("torch.")
    script = kernel_script(schedule["kernel"], float32=name, int32="int64")
    kernel = st.compile(st.Schedule.replay(schedule["trace"], st.parse(script)))
    (m, n), nnz = A.shape, A.values().numel()
    g = torch.Generator().manual_seed(K)
    X, Y = torch.randn(m, K, generator=g).to(dtype), torch.randn(n, K, generator=g).to(dtype)
    out = torch.full((nnz,), float("nan"), dtype=dtype)
    sizes = {"lanes": schedule["group_lanes"]} if schedule["group_lanes"] else {}
    kernel(x=X, y=Y, out=out, indptr=A.crow_indices(), indices=A.col_indices(), m=m, n=n, feat_size=K, nnz=nnz,
           **sizes)
    rows = torch.repeat_interleave(torch.arange(m), A.crow_indices().diff())
    expected = (X.double()[rows] * Y.double()[A.col_indices()]).sum(1)
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.ops.sparsetir.sddmm(A.crow_indices(), A.col_indices(), None, X, Y), out,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_explain_sddmm_on_a_cached_pattern_groups_four_dot_products(dtype):
    from sparsetir_torch import _C
    from sparsetir_torch.recipes import cpu_target

    A = random_csr(40, 30, seed=5).to(dtype).to_sparse_csr()
    explained = st.explain(A, op="sddmm", k=64)
    assert (explained["op"], explained["k"], explained["format"]) == ("sddmm", 64, "csr")
    schedule = explained["schedule"]
    lanes = _C.sddmm_group_lanes(64, 8 if dtype == torch.float64 else 4)
    assert lanes > 0 and schedule["isa"] == cpu_target()["target"]
    assert (schedule["kernel"], schedule["group_lanes"], schedule["prefetch_into"]) == ("sddmm_dot_groups", lanes, None)
    name = str(dtype).removeprefix("torch.")
    assert schedule["trace"] == _C.recipe_trace("sddmm_dot_groups", "sddmm_dot_groups", name, "int64",
                                                {"feat_size": 64, "lanes": lanes}, "cpu", 0)
    run_sddmm_trace(schedule, A, 64, dtype)


def test_explain_sddmm_on_a_scattered_pattern_prefetches_one_at_a_time():
    """y of 10 MiB gathered at random columns: one dot product at a time, the
    rows ahead prefetched (the rule spmm follows)."""
    from sparsetir_torch import _C

    m, n, per_row = 3000, 40000, 8
    g = torch.Generator().manual_seed(4)
    cols = torch.stack([torch.randperm(n, generator=g)[:per_row].sort()[0] for _ in range(m)])
    indptr = torch.arange(0, m * per_row + 1, per_row)
    A = torch.sparse_csr_tensor(indptr, cols.reshape(-1), torch.ones(m * per_row), (m, n))
    schedule = st.explain(A, op="sddmm", k=64)["schedule"]
    level = _C.spmm_prefetch_level(indptr, cols.reshape(-1), n, 64 * 4)
    assert level > 0
    assert (schedule["kernel"], schedule["group_lanes"], schedule["prefetch"]) == ("sddmm_dot", 0, True)
    assert schedule["prefetch_into"] == {1: "L1", 2: "L2"}[level]
    assert schedule["trace"] == _C.recipe_trace("sddmm_dot", "sddmm", "float32", "int64", {"feat_size": 64}, "cpu",
                                                level)
    assert "sch.prefetch(" in schedule["trace"]
    run_sddmm_trace(schedule, A, 64, torch.float32)


def test_explain_sddmm_of_16_bit_values_runs_one_at_a_time():
    A = random_csr(40, 30, seed=6).to(torch.bfloat16).to_sparse_csr()
    schedule = st.explain(A, op="sddmm", k=64)["schedule"]
    assert (schedule["kernel"], schedule["group_lanes"]) == ("sddmm_dot", 0)


@pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta:UserWarning")
def test_explain_sddmm_errors():
    A = torch.eye(8).to_sparse_csr()
    with pytest.raises(ValueError, match="st.explain: on the cpu, op is 'spmm' .* or 'sddmm', got 'bsrmm'"):
        st.explain(A, op="bsrmm")
    with pytest.raises(ValueError, match=r"st.explain: op='sddmm' samples a CSR pattern; A is block-sparse \(BSR\)"):
        st.explain(torch.eye(8).to_sparse_bsr((4, 4)), op="sddmm")
    empty = torch.zeros(3, 5).to_sparse_csr()
    assert st.explain(empty, op="sddmm", k=16)["schedule"]["group_lanes"] == 0


@pytest.mark.parametrize("prefetch", [0, 1, 2])
def test_sddmm_groups_recipe_prefetches_as_asked(prefetch):
    """sddmm_dot_groups' recipe: its vector loops unrolled, rows in parallel,
    and prefetches (when asked) 32 non-zeros ahead, 8 groups of 4 in the
    group loop; the kernel the trace replays is the operators' own."""
    from sparsetir_torch import _C
    from sparsetir_torch.kernels import kernel_script

    sizes = {"feat_size": 64, "lanes": 4}
    trace = _C.recipe_trace("sddmm_dot_groups", "sddmm_dot_groups", "float32", "int32", sizes, "cpu:generic",
                            prefetch)
    assert 'sch.unroll("kg")' in trace and 'sch.unroll("kt")' in trace and 'sch.parallel("i")' in trace
    level = "" if prefetch == 1 else ", cache_level=2"
    assert ('sch.prefetch("g", "Y", 8' + level + ")" in trace) == (prefetch > 0), trace
    assert ('sch.prefetch("t", "Y", 32' + level + ")" in trace) == (prefetch > 0), trace
    replayed = st.Schedule.replay(trace, st.parse(kernel_script("sddmm_dot_groups")))
    assert st.compile(replayed, target="cpu:generic").source == _C.op_kernel_source(
        "sddmm_dot_groups", "sddmm_dot_groups", "float32", "int32", sizes, "cpu:generic") or prefetch != 1


@pytest.mark.filterwarnings("ignore:Sparse BSR tensor support is in beta:UserWarning")
@pytest.mark.parametrize("layout", ["csr", "bsr"])
def test_explain_rejects_a_negative_width(layout):
    dense = torch.eye(8)
    A = dense.to_sparse_csr() if layout == "csr" else dense.to_sparse_bsr((4, 4))
    with pytest.raises(ValueError, match=r"st.explain: k is a feature width, a number >= 0, got -1"):
        st.explain(A, k=-1)
    assert st.explain(A, k=0)["k"] == 0


def test_kernel_script_puts_in_the_dtypes_once():
    from sparsetir_torch.kernels import kernel_script

    text = kernel_script("csrmm", float32="float64", int32="int64")
    assert '"float32"' not in text and '"int32"' not in text
    assert '"float64"' in text and '"int64"' in text
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        kernel_script("csrmm", float32="float8")
    with pytest.raises(ValueError, match="no built-in kernel named 'nope'"):
        kernel_script("nope")
