"""The code that ships: every built-in operator kernel's scheduled stage-III IR
and generated source (cpu:avx512, cpu:avx2, cuda) equals its snapshot in
tests/golden/kernels/. A change to a recipe, a pass or a code generator must
come with regenerated snapshots (python3 tools/update_kernel_snapshots.py),
so that the diff of the generated code is reviewed with it."""
import importlib.util
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_tool():
    spec = importlib.util.spec_from_file_location("update_kernel_snapshots",
                                                  os.path.join(REPO, "tools", "update_kernel_snapshots.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


def test_every_operator_kernel_matches_its_snapshot():
    tool = load_tool()
    expected, actual = tool.generate(), tool.on_disk()
    text = tool.diff(expected, actual)
    assert not text, ("kernel snapshots are stale: run python3 tools/update_kernel_snapshots.py and review "
                      "the diff\n" + text)


def test_snapshots_cover_every_recipe_and_target():
    tool = load_tool()
    names = tool.on_disk().keys()
    for target in ("cpu_avx512", "cpu_avx2", "cuda"):
        assert f"{target}/prelude.src" in names
    for script in ("csrmm", "csrmm_mean", "csrmm_max", "csrmm_min", "sddmm_dot", "sddmm_dot_groups", "bsrmm",
                   "sparse_attention",
                   "attention_probs", "attention_grad_scores", "csrmm_ell_overwrite", "csrmm_ell_add",
                   "csrmm_ell_atomic", "csrmm_heads", "sddmm_heads", "sddmm_add", "sddmm_mul", "gat_attention"):
        assert any(n.startswith(f"cpu_avx2/{script}_") and n.endswith(".src") for n in names), script
    # every CPU kernel has both files
    stems = {n[:-len(".src")] for n in names if n.endswith(".src") and not n.endswith("prelude.src")}
    assert all(f"{stem}.stage3.py" in names for stem in stems)


def test_a_changed_kernel_is_reported(tmp_path, monkeypatch):
    tool = load_tool()
    expected = tool.generate()
    some = next(k for k in expected if k.endswith(".src") and "csrmm_float32" in k)
    changed = dict(expected, **{some: expected[some].replace("+", "-", 1)})
    text = tool.diff(expected, changed)
    assert some in text and text.count("\n-") >= 1
