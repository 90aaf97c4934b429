"""The pipeline order is declared once (csrc/compiler/lower.cc), and
SPARSETIR_DUMP_IR dumps every step of an operator kernel's build by name:
the stage-I script, lower_atomic, lower_sparse_iter, each schedule primitive
and the stage-III passes, numbered in the order they ran."""
import os
import re
import subprocess
import sys

import pytest

import sparsetir_torch as st
from sparsetir_torch import _C

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DUMP_NAME = re.compile(r"^(?P<func>.+)\.(?P<step>\d{2})_(?P<name>[A-Za-z0-9_]+)\.py$")


def dumped_steps(directory, func):
    """[(number, step name, text)] of `func`'s dump, in order."""
    steps = []
    for entry in os.listdir(directory):
        m = DUMP_NAME.match(entry)
        assert m, f"unexpected file {entry!r} in the dump"
        if m.group("func") == func:
            with open(os.path.join(directory, entry), encoding="utf-8") as f:
                steps.append((int(m.group("step")), m.group("name"), f.read()))
    return sorted(steps)


def test_the_pipeline_order_is_the_compilers():
    assert _C.pipeline_passes() == ["lower_atomic", "lower_sparse_iter", "lower_sparse_buffer", "simplify",
                                    "hoist_invariants", "lift_workspaces"]


def op_kernel_dump(tmp_path, monkeypatch, script, recipe, sizes, target="cpu:avx512"):
    monkeypatch.setenv("SPARSETIR_DUMP_IR", str(tmp_path))
    source = _C.op_kernel_source(script, recipe, "float32", "int32", sizes, target)
    return source, dumped_steps(tmp_path, script)


@pytest.mark.parametrize("target", ["cpu:avx512", "cpu:avx2", "cuda"])
def test_every_step_of_an_operator_kernel_is_dumped(tmp_path, monkeypatch, target):
    _, steps = op_kernel_dump(tmp_path, monkeypatch, "csrmm", "csrmm", {"feat_size": 64}, target)
    numbers = [n for n, _, _ in steps]
    names = [name for _, name, _ in steps]
    assert numbers == list(range(len(steps))), names
    # Stage I first: the script as parsed; the pipeline's two stage-I passes
    # run together, where the recipe leaves stage I.
    assert names[0] == "input"
    at = names.index("lower_atomic")
    assert names[at + 1] == "lower_sparse_iter"
    assert "T.sp.iteration(" in steps[0][2], steps[0][2]  # a sparse iteration: stage I
    assert "T.sp.iteration(" not in steps[at + 1][2]
    primitives = [name for name in names if name.startswith("sch_")]
    assert "sch_specialize" in names
    assert len(primitives) >= 3, names
    assert all(name.startswith("sch_") or name in _C.pipeline_passes() or name == "input" for name in names)
    # The stage-III passes close the build, in pipeline order.
    assert names[-3:] == ["simplify", "hoist_invariants", "lift_workspaces"]
    assert names.count("lower_sparse_buffer") == 1
    assert names.index("lower_sparse_buffer") < names.index("simplify")


def test_the_last_step_is_the_kernels_snapshot(tmp_path, monkeypatch):
    _, steps = op_kernel_dump(tmp_path, monkeypatch, "csrmm", "csrmm", {"feat_size": 64})
    snapshot = os.path.join(REPO_ROOT, "tests", "golden", "kernels", "cpu_avx512",
                            "csrmm_float32_int32_feat_size64.stage3.py")
    with open(snapshot, encoding="utf-8") as f:
        assert steps[-1][2] == f.read()


def test_each_primitive_step_changes_what_it_names(tmp_path, monkeypatch):
    _, steps = op_kernel_dump(tmp_path, monkeypatch, "csrmm", "csrmm", {"feat_size": 64})
    texts = {name: text for _, name, text in steps}
    assert "T.parallel" in texts["sch_parallel"] or "parallel" in texts["sch_parallel"]
    before_parallel = [text for _, name, text in steps][[n for _, n, _ in steps].index("sch_parallel") - 1]
    assert before_parallel != texts["sch_parallel"]


def test_no_dump_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARSETIR_DUMP_IR", raising=False)
    monkeypatch.chdir(tmp_path)
    _C.op_kernel_source("csrmm", "csrmm", "float32", "int32", {"feat_size": 8}, "cpu:avx512")
    assert os.listdir(tmp_path) == []


def test_a_real_operator_call_dumps_its_kernel_build(tmp_path):
    # A fresh process: the kernel library builds each kernel once per process.
    code = (
        "import torch, sparsetir_torch as st\n"
        "indptr = torch.tensor([0, 2, 2, 3], dtype=torch.int32)\n"
        "indices = torch.tensor([0, 2, 1], dtype=torch.int32)\n"
        "values = torch.ones(3)\n"
        "out = torch.ops.sparsetir.spmm(indptr, indices, values, torch.ones(3, 5), 'sum')\n"
        "assert out.tolist() == [[2.0] * 5, [0.0] * 5, [1.0] * 5], out\n"
    )
    env = dict(os.environ, SPARSETIR_DUMP_IR=str(tmp_path / "dump"), SPARSETIR_CACHE_DIR=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tmp_path)
    funcs = {DUMP_NAME.match(e).group("func") for e in os.listdir(tmp_path / "dump")}
    assert funcs, "nothing dumped"
    for func in funcs:
        names = [name for _, name, _ in dumped_steps(tmp_path / "dump", func)]
        assert names[0] == "input" and names[-1] == "lift_workspaces", (func, names)


def test_python_single_passes_follow_the_pipeline():
    # st.lower_sparse_iter runs lower_atomic first, as the pipeline does.
    with open(os.path.join(REPO_ROOT, "kernels", "csrmm.py"), encoding="utf-8") as f:
        func = st.parse(f.read())
    assert st.lower_sparse_iter(func).script() == st.lower_sparse_iter(_C.lower_atomic(func)).script()
    with pytest.raises(ValueError, match="lower_atomic expects a stage I function"):
        _C.lower_atomic(st.lower_sparse_iter(func))
