"""Golden IR for every compiler pass (tests/golden/, written by tools/update_goldens.py).

For every (pass, script) of tests/golden/<pass>/<script>.{before,after}.py:
  * the compiler's current pipeline output equals the golden text;
  * each golden file parses back with st.parse and re-prints identically;
  * the .after of one pass is the .before of the next;
  * the Python entry points (st.lower_sparse_iter / st.lower_sparse_buffer)
    applied to the parsed .before give the .after, i.e. the printed IR keeps
    everything the pass needs and the Python API matches the real pipeline.
"""
import functools
import importlib.util
import os

import pytest

import sparsetir_torch as st

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_TOOL_PATH = os.path.join(REPO_ROOT, "tools", "update_goldens.py")
_spec = importlib.util.spec_from_file_location("update_goldens", _TOOL_PATH)
goldens = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(goldens)

HINT = "run python tools/update_goldens.py and review the diff"
PASSES = goldens.PASSES
STEMS = goldens.script_stems()
CASES = [(p, s) for p in PASSES for s in STEMS]
CASE_IDS = [f"{p}-{s}" for p, s in CASES]
PYTHON_ENTRY_POINTS = {"lower_sparse_iter": st.lower_sparse_iter, "lower_sparse_buffer": st.lower_sparse_buffer}


@functools.lru_cache(maxsize=None)
def produced(stem):
    """{step: text} from the real pipeline (one st.compile per script per session)."""
    return dict(goldens.pipeline_steps(os.path.join(goldens.SCRIPTS_DIR, stem + ".py")))


def now(pass_name, stem, side):
    steps = [goldens.INPUT_STEP, *PASSES]
    i = PASSES.index(pass_name) + (1 if side == "after" else 0)
    return produced(stem)[steps[i]]


def read_golden(pass_name, stem, side):
    path = goldens.golden_path(pass_name, stem, side)
    if not os.path.isfile(path):
        pytest.fail(f"missing golden file {os.path.relpath(path, REPO_ROOT)}; {HINT}", pytrace=False)
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def test_every_script_and_pass_has_goldens():
    assert STEMS, f"no scripts in {goldens.SCRIPTS_DIR}"
    want = {os.path.join(p, f"{s}.{side}.py") for p, s in CASES for side in goldens.SIDES}
    have = set(goldens.goldens_on_disk())
    problems = [f"missing: tests/golden/{r}" for r in sorted(want - have)]
    problems += [f"stale (nothing produces it): tests/golden/{r}" for r in sorted(have - want)]
    if problems:
        pytest.fail("\n".join(problems) + f"\n{HINT}", pytrace=False)


@pytest.mark.parametrize("pass_name,stem", CASES, ids=CASE_IDS)
def test_compiler_output_matches_golden(pass_name, stem):
    diffs = []
    for side in goldens.SIDES:
        on_disk, current = read_golden(pass_name, stem, side), now(pass_name, stem, side)
        if on_disk != current:
            rel = os.path.join(pass_name, f"{stem}.{side}.py")
            diffs.append(goldens.unified_diff(rel, on_disk, current))
    if diffs:
        pytest.fail(
            f"the IR around pass '{pass_name}' for tests/scripts/{stem}.py changed "
            f"(- golden, + compiler now):\n" + "".join(diffs) + HINT,
            pytrace=False,
        )


@pytest.mark.parametrize("side", goldens.SIDES)
@pytest.mark.parametrize("pass_name,stem", CASES, ids=CASE_IDS)
def test_golden_round_trips(pass_name, stem, side):
    text = read_golden(pass_name, stem, side)
    func = st.parse(text, goldens.golden_path(pass_name, stem, side))
    reprinted = func.script()
    if reprinted != text:
        name = f"tests/golden/{pass_name}/{stem}.{side}.py"
        pytest.fail("st.parse + .script() changes the golden text:\n"
                    + goldens.text_diff(text, reprinted, name, "reprinted"), pytrace=False)
    assert st.parse(reprinted) == func, "the reprinted text parses to a structurally different function"


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("first,second", list(zip(PASSES, PASSES[1:])), ids=lambda p: p)
def test_after_of_a_pass_is_before_of_the_next(first, second, stem):
    after, before = read_golden(first, stem, "after"), read_golden(second, stem, "before")
    if after != before:
        a, b = f"tests/golden/{first}/{stem}.after.py", f"tests/golden/{second}/{stem}.before.py"
        pytest.fail(f"{a} and {b} differ:\n" + goldens.text_diff(after, before, a, b) + HINT, pytrace=False)


@pytest.mark.parametrize("stem", STEMS)
@pytest.mark.parametrize("pass_name", [p for p in PASSES if p in PYTHON_ENTRY_POINTS])
def test_python_entry_point_reproduces_golden(pass_name, stem):
    before = st.parse(read_golden(pass_name, stem, "before"))
    after_text = read_golden(pass_name, stem, "after")
    result = PYTHON_ENTRY_POINTS[pass_name](before)
    if result.script() != after_text:
        name = f"tests/golden/{pass_name}/{stem}.after.py"
        pytest.fail(f"st.{pass_name}(st.parse(<{stem}.before.py>)) differs from the golden:\n"
                    + goldens.text_diff(after_text, result.script(), name, f"st.{pass_name}"), pytrace=False)
    assert result == st.parse(after_text), "same text but structurally different functions"
