"""The CPU target knows its instruction-set level: detection, the
$SPARSETIR_CPU_ISA override, vectors sized to the level's registers, the
level in the kernel cache key (a cache shared by two machines of different
levels never loads the other's object), and clear errors for bad levels."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch

import sparsetir_torch as st
from sparsetir_torch import _C
from sparsetir_torch.kernels import kernel_script
from sparsetir_torch.recipes import cpu_target, csrmm_plan, runnable_levels, spmm_cpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The levels this CPU executes, best first.
DETECTED = _C.cpu_target("")["detected"].split("+")[0].split(":")[1]
RUNNABLE = runnable_levels()


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, cwd=REPO, timeout=600)


def test_detected_level_matches_cpuinfo():
    with open("/proc/cpuinfo") as f:
        flags = set(next(line for line in f if line.startswith("flags")).split(":")[1].split())
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"} <= flags:
        expected = "avx512"
    elif {"avx2", "fma", "f16c", "bmi2"} <= flags:
        expected = "avx2"
    else:
        expected = "generic"
    assert DETECTED == expected


def test_target_describes_the_level():
    t = cpu_target("x86-64-v3")
    assert t["isa"] == "avx2" and t["vector_bytes"] == 32 and t["vector_registers"] == 16
    assert "-march=x86-64-v3" in t["compiler_flags"]
    t = cpu_target("avx512")
    assert t["vector_bytes"] == 64 and t["vector_registers"] == 32 and "-march=x86-64-v4" in t["compiler_flags"]
    assert cpu_target("neon")["vector_bytes"] == 16


@pytest.mark.parametrize("isa,lanes", [("generic", 4), ("avx2", 8), ("avx512", 16), ("neon", 4)])
def test_recipes_use_one_register_of_lanes(isa, lanes):
    assert csrmm_plan(64, 4, isa)["vector_lanes"] == lanes
    assert csrmm_plan(64, 8, isa)["vector_lanes"] == lanes // 2  # float64 lanes are twice as wide


def kernel_vector_bytes(source: str) -> set:
    """The byte widths of the vector types the kernel's loops declare (the
    prelude's own typedefs are named differently)."""
    return {int(b) for b in re.findall(r"typedef \w+ sparsetir_\w+x\d+ __attribute__\(\(vector_size\((\d+)\)", source)}


@pytest.mark.parametrize("isa,width", [("generic", 16), ("avx2", 32), ("avx512", 64), ("neon", 16), ("sve", 16)])
@pytest.mark.parametrize("script,recipe,sizes", [
    ("csrmm", "csrmm", {"feat_size": 64}),
    ("sddmm_dot", "sddmm", {"feat_size": 64}),
    ("bsrmm", "bsrmm", {"block_h": 4, "block_w": 4, "feat_size": 64}),
    ("sparse_attention", "sparse_attention", {"head_dim": 64, "value_dim": 64}),
    ("csrmm_heads", "csrmm_heads", {"heads": 2, "feat_size": 64}),
    ("sddmm_heads", "sddmm_heads", {"heads": 2, "feat_size": 64}),
    ("sddmm_mul", "sddmm_mul", {"feat_size": 64}),
    ("gat_attention", "gat_attention", {"heads": 2, "feat_size": 64}),
])
def test_generated_source_has_vectors_of_the_level(isa, width, script, recipe, sizes):
    for dtype in ("float32", "float64"):
        source = _C.op_kernel_source(script, recipe, dtype, "int32", sizes, f"cpu:{isa}")
        # one register wide; a reduction tree's last levels are narrower
        assert max(kernel_vector_bytes(source)) == width, (dtype, kernel_vector_bytes(source))
    # 16-bit loops are left to the C++ compiler's vectorizer (no explicit vector types).
    source = _C.op_kernel_source(script, recipe, "bfloat16", "int32", sizes, f"cpu:{isa}")
    assert all(b <= width for b in kernel_vector_bytes(source))


def test_op_kernel_names_its_target():
    kernel = _C.op_kernel("csrmm", "csrmm", "float32", "int32", {"feat_size": 64}, "cpu:generic")
    assert kernel.target == "cpu:generic"


@pytest.mark.parametrize("isa", RUNNABLE)
@pytest.mark.parametrize("feat", [8, 32, 64, 100, 256])
def test_spmm_recipe_at_each_runnable_level(isa, feat):
    g = torch.Generator().manual_seed(feat)
    dense = torch.rand(41, 37, generator=g, dtype=torch.float64)
    dense[torch.rand(41, 37, generator=g) < 0.8] = 0
    dense[3] = 0
    A = dense.float().to_sparse_csr()
    B = torch.randn(37, feat, generator=g)
    C = torch.full((41, feat), float("nan"))
    kernel = st.compile(spmm_cpu(feat, isa=isa), target=f"cpu:{isa}")
    kernel(a=A.values(), b=B, c=C, indptr=A.crow_indices().int(), indices=A.col_indices().int(),
           m=41, n=37, feat_size=feat, nnz=A.values().numel())
    torch.testing.assert_close(C.double(), dense.float().double() @ B.double(), rtol=1e-5, atol=1e-5)


def sddmm_trace(feat: int, isa: str, dtype: str = "float32") -> str:
    return _C.recipe_trace("sddmm_dot", "sddmm", dtype, "int32", {"feat_size": feat}, f"cpu:{isa}", True)


@pytest.mark.parametrize("isa,dtype,feat,split", [
    ("avx2", "float32", 256, "[4, 8]"),      # 32 vectors: four partial sums
    ("generic", "float32", 128, "[4, 4]"),
    ("generic", "float64", 64, "[4, 2]"),
    ("avx512", "float32", 512, "[4, 16]"),
    ("avx2", "float32", 272, "[2, 8]"),      # 34 vectors: the sums divide them
    ("avx2", "float32", 264, None),          # 33 vectors: one sum
    ("avx2", "float32", 128, None),          # 16 vectors: one sum
    ("avx512", "float32", 256, None),
])
def test_long_dot_products_keep_several_partial_sums(isa, dtype, feat, split):
    trace = sddmm_trace(feat, isa, dtype)
    sum_splits = re.findall(r"sch\.split\(\"k_1\", factors=(\[\d+, \d+\])\)", trace)
    assert sum_splits == ([split] if split else []), trace


@pytest.mark.parametrize("isa", RUNNABLE)
@pytest.mark.parametrize("feat", [8, 100, 128, 256, 264, 272])
def test_sddmm_recipe_at_each_runnable_level(isa, feat):
    g = torch.Generator().manual_seed(feat)
    dense = torch.rand(23, 19, generator=g, dtype=torch.float64)
    dense[torch.rand(23, 19, generator=g) < 0.7] = 0
    dense[2] = 0      # an empty row
    dense[5] = 1.0    # a dense row
    A = dense.to_sparse_csr()
    X = torch.randn(23, feat, generator=g, dtype=torch.float64)
    Y = torch.randn(19, feat, generator=g, dtype=torch.float64)
    rows = torch.repeat_interleave(torch.arange(23), A.crow_indices().diff())
    expected = (X[rows] * Y[A.col_indices()]).sum(1)
    kernel = st.compile(st.Schedule.replay(sddmm_trace(feat, isa), st.parse(kernel_script("sddmm_dot"))),
                        target=f"cpu:{isa}")
    out = torch.full((A.values().numel(),), float("nan"))
    kernel(x=X.float(), y=Y.float(), out=out, indptr=A.crow_indices().int(), indices=A.col_indices().int(),
           m=23, n=19, feat_size=feat, nnz=A.values().numel())
    torch.testing.assert_close(out.double(), expected, rtol=1e-5, atol=1e-4)


def test_unknown_level_names_the_variable():
    r = run_python("""
        import torch, sparsetir_torch as st
        A = torch.eye(3).to_sparse_csr()
        st.spmm(A, torch.randn(3, 4))
    """, SPARSETIR_CPU_ISA="avx1024")
    assert r.returncode != 0
    assert "SPARSETIR_CPU_ISA" in r.stderr and "avx1024" in r.stderr and "avx2 (x86-64-v3)" in r.stderr


def test_level_this_cpu_cannot_run_is_refused():
    unrunnable = "neon" if DETECTED in ("generic", "avx2", "avx512") else "avx2"
    r = run_python("""
        import torch, sparsetir_torch as st
        st.spmm(torch.eye(3).to_sparse_csr(), torch.randn(3, 4))
    """, SPARSETIR_CPU_ISA=unrunnable)
    assert r.returncode != 0
    assert f"SPARSETIR_CPU_ISA={unrunnable}" in r.stderr and "cannot run" in r.stderr


_BUILD_ONE = """
    import json, torch, sparsetir_torch as st
    from sparsetir_torch import _C
    g = torch.Generator().manual_seed(0)
    A = (torch.rand(50, 40, generator=g) * (torch.rand(50, 40, generator=g) < 0.2)).to_sparse_csr()
    B = torch.randn(40, 32, generator=g)
    out = st.spmm(A, B)
    ok = torch.allclose(out.double(), A.to_dense().double() @ B.double(), atol=1e-5)
    print(json.dumps({"stats": _C.cache_stats(), "target": _C.cpu_target("")["target"], "ok": ok}))
"""


def test_a_cache_shared_by_two_levels_builds_each_level(tmp_path):
    if len(RUNNABLE) < 2:
        pytest.skip(f"this CPU runs only {RUNNABLE}: no second level to share the cache with")
    env = {"SPARSETIR_CACHE_DIR": str(tmp_path / "cache"), "SPARSETIR_TUNE": "0"}
    low, high = RUNNABLE[-1], RUNNABLE[0]
    runs = []
    for isa in (low, high, low, high):
        r = run_python(_BUILD_ONE, SPARSETIR_CPU_ISA=isa, **env)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    assert all(run["ok"] for run in runs)
    assert runs[0]["target"].startswith(f"cpu:{low}") and runs[1]["target"].startswith(f"cpu:{high}")
    # The second level finds the first level's objects and builds its own ...
    assert runs[0]["stats"]["compiles"] >= 1 and runs[1]["stats"]["compiles"] == runs[0]["stats"]["compiles"]
    assert runs[1]["stats"]["disk_hits"] == 0
    # ... and each level then loads its own, compiling nothing.
    for run in runs[2:]:
        assert run["stats"]["compiles"] == 0 and run["stats"]["disk_hits"] >= 1


_EXTREMUM_GRADS = """
    import sys
    import torch
    from sparsetir_torch import _C
    ops = torch.ops.sparsetir
    g = torch.Generator().manual_seed(3)
    m, n = 70, 50
    mask = torch.rand(m, n, generator=g) < 0.15
    mask[4] = False                      # an empty row
    mask[9] = True                       # a dense row
    results = {"target": _C.cpu_target("")["target"]}
    dtypes = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
    for dtype, idtype in [(d, i) for d in dtypes for i in (torch.int32, torch.int64)]:
        A = mask.float().to_sparse_csr()
        ip, ix = A.crow_indices().to(idtype), A.col_indices().to(idtype)
        values = torch.randint(1, 3, (ix.numel(),), generator=g).to(dtype)
        for k in (3, 8, 24, 37, 64, 130):
            # Small integers, half of them zero: ties everywhere, as ReLU and dropout make.
            dense = torch.randint(0, 3, (n, k), generator=g).to(dtype) * (torch.rand(n, k, generator=g) < 0.5)
            grad = torch.randn(m, k, generator=g, dtype=dtype)
            # The forward's output, from torch: every product here is a small
            # integer, exact in each dtype, so these are the forward's bits, and
            # the subprocess compiles nothing (the op tests run the forward at
            # every level).
            products = values.double()[:, None] * dense.double()[ix.long()]
            rows = torch.repeat_interleave(torch.arange(m), ip.diff().long())[:, None].expand(-1, k)
            for reduce in ("max", "min"):
                out = torch.zeros(m, k, dtype=torch.float64).scatter_reduce(
                    0, rows, products, "amax" if reduce == "max" else "amin", include_self=False).to(dtype)
                gv, gd = ops._spmm_extremum_backward(ip, ix, values, dense, out, grad, True)
                results[f"{dtype}-{idtype}-{k}-{reduce}"] = (gv, gd)
    torch.save(results, sys.argv[1])
"""


def test_extremum_backward_gives_the_same_bits_at_every_level(tmp_path):
    """spmm max/min's backward runs vector loops of the level the kernels are
    built for (SSE2, AVX2 or AVX-512 lanes, whole and partial groups of
    columns; 16-bit products rounded in vectors where the generic level
    rounds them one by one); each level must send every gradient to the same
    non-zero and round every sum alike: equal bits, not close values."""
    outputs = {}
    for isa in RUNNABLE:
        path = tmp_path / f"{isa}.pt"
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(_EXTREMUM_GRADS), str(path)], capture_output=True,
                           text=True, env=dict(os.environ, SPARSETIR_CPU_ISA=isa), cwd=REPO, timeout=600)
        assert r.returncode == 0, r.stderr
        outputs[isa] = torch.load(path)
        assert outputs[isa].pop("target").startswith(f"cpu:{isa}")
    first = outputs[RUNNABLE[0]]
    assert len(first) == 4 * 2 * 6 * 2
    for isa in RUNNABLE[1:]:
        for case, (gv, gd) in first.items():
            other_v, other_d = outputs[isa][case]
            assert torch.equal(gv, other_v) and torch.equal(gd, other_d), f"{case}: {isa} differs from {RUNNABLE[0]}"


def test_benchmarks_hold_torchs_own_kernels_to_the_level():
    # bench --isa compares at one level: MKL and ATen's vectorized kernels
    # (sampled_addmm, torch.sparse.mm's reductions) are held to it as well.
    if "avx2" not in RUNNABLE:
        pytest.skip(f"this CPU runs {RUNNABLE}, not avx2")
    bench = os.path.join(REPO, "benchmarks")
    ok = run_python(f"""
        import os, sys
        sys.path.insert(0, {bench!r})
        from bench_common import apply_isa
        apply_isa("avx2")
        import torch
        print(os.environ["MKL_ENABLE_INSTRUCTIONS"], torch.backends.cpu.get_cpu_capability())
    """)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.split() == ["AVX2", "AVX2"]
    late = run_python(f"""
        import sys, torch
        sys.path.insert(0, {bench!r})
        torch.ones(3).sum()  # ATen picks its level at the first operator
        from bench_common import apply_isa
        apply_isa("generic")
    """, ATEN_CPU_CAPABILITY="avx2")
    assert late.returncode != 0
    assert "--isa generic: torch's kernels already run at" in late.stderr, late.stderr
