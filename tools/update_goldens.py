#!/usr/bin/env python3
"""Regenerates tests/golden/: the IR before and after every compiler pass, for
every stage-I script in tests/scripts/.

    python tools/update_goldens.py            # rewrite tests/golden/ from the compiler
    python tools/update_goldens.py --check    # exit 1 and print a unified diff if stale

Layout: tests/golden/<pass>/<script stem>.before.py and .after.py, where <pass>
is each pass of the C++ pipeline in order (PASSES). The files hold exactly the
printer's text (st.PrimFunc.script()), so each one parses back with st.parse.

How the text is obtained: the real pipeline (csrc/compiler/lower.cc,
LowerToStageIII) dumps the IR after every pass when SPARSETIR_DUMP_IR=<dir> is
set, as <func>.00_input.py, <func>.01_lower_sparse_iter.py, ... The variable is
read at every st.compile, and lowering runs on every st.compile even when the
binary comes from the memory or disk kernel cache, so a compile always dumps.
Each script gets its own fresh temporary directory (two scripts both define a
function named "bsr", and stale files must never be picked up).

Fallback: if st.compile raises (say a codegen or C++ build failure) the steps
already dumped are kept (the dump happens before code generation) and any that
are missing are recomputed with the Python entry points st.lower_sparse_iter /
st.lower_sparse_buffer. "simplify" has no Python entry point, so if its dump is
missing the script cannot be recorded and the tool fails, naming the error.
"""
from __future__ import annotations

import argparse
import difflib
import glob
import os
import re
import sys
import tempfile
from typing import Dict, List, Optional, Tuple

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SCRIPTS_DIR = os.path.join(REPO_ROOT, "tests", "scripts")
GOLDEN_DIR = os.path.join(REPO_ROOT, "tests", "golden")


def _pipeline_passes() -> Tuple[str, ...]:
    """The pipeline of a stage-I function, in order, as the compiler declares
    it (csrc/compiler/lower.cc, Pipeline): a pass added to or removed from the
    pipeline shows as goldens missing or stale."""
    from sparsetir_torch import _C

    return tuple(_C.pipeline_passes())


PASSES = _pipeline_passes()
INPUT_STEP = "input"
SIDES = ("before", "after")

_DUMP_NAME = re.compile(r"^(?P<func>.+)\.(?P<step>\d{2})_(?P<name>[A-Za-z0-9_]+)\.py$")


class GoldenError(Exception):
    """A script could not be run through the pipeline."""


def script_paths() -> List[str]:
    """Every tests/scripts/*.py, sorted by name."""
    return sorted(glob.glob(os.path.join(SCRIPTS_DIR, "*.py")))


def script_stems() -> List[str]:
    return [os.path.splitext(os.path.basename(p))[0] for p in script_paths()]


def golden_path(pass_name: str, stem: str, side: str) -> str:
    return os.path.join(GOLDEN_DIR, pass_name, f"{stem}.{side}.py")


def _read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def _read_dump(directory: str, func_name: str) -> Dict[str, str]:
    """{step name: text} from a SPARSETIR_DUMP_IR directory, checked to be
    numbered 00, 01, ... in order."""
    found: List[Tuple[int, str, str]] = []
    for entry in os.listdir(directory):
        m = _DUMP_NAME.match(entry)
        if not m or m.group("func") != func_name:
            raise GoldenError(f"unexpected file {entry!r} in the IR dump of {func_name!r}")
        found.append((int(m.group("step")), m.group("name"), _read(os.path.join(directory, entry))))
    found.sort()
    if [s for s, _, _ in found] != list(range(len(found))):
        raise GoldenError(f"IR dump steps of {func_name!r} are not numbered 00, 01, ...: {sorted(os.listdir(directory))}")
    return {name: text for _, name, text in found}


def pipeline_steps(path: str) -> List[Tuple[str, str]]:
    """[(step, text)]: the input and the output of every pass of PASSES, in
    pipeline order, for the script at ``path``, as the real pipeline dumps them."""
    import sparsetir_torch as st

    with open(path, encoding="utf-8") as f:
        func = st.parse(f.read(), os.path.relpath(path, REPO_ROOT))
    if func.stage != 1:
        raise GoldenError(f"{path}: expected a stage-I script, got stage {func.stage}")

    previous = os.environ.get("SPARSETIR_DUMP_IR")
    compile_error: Optional[BaseException] = None
    with tempfile.TemporaryDirectory(prefix="sparsetir_golden_") as dump_dir:
        os.environ["SPARSETIR_DUMP_IR"] = dump_dir
        try:
            st.compile(func)
        except Exception as e:  # noqa: BLE001 - any failure falls back below
            compile_error = e
        finally:
            if previous is None:
                os.environ.pop("SPARSETIR_DUMP_IR", None)
            else:
                os.environ["SPARSETIR_DUMP_IR"] = previous
        dumped = _read_dump(dump_dir, func.name) if os.path.isdir(dump_dir) else {}

    expected_order = [INPUT_STEP, *PASSES]
    complete = compile_error is None
    if list(dumped) != (expected_order if complete else expected_order[: len(dumped)]):
        raise GoldenError(
            f"{path}: the pipeline dumped steps {list(dumped)}, but tools/update_goldens.py expects "
            f"{expected_order}: the dump does not follow the compiler's own pipeline order"
        )

    # Fallback for a failed compile: recompute what the dump lacks.
    if compile_error is not None:
        stage_ii = None
        for step in expected_order:
            if step in dumped:
                continue
            try:
                if step == INPUT_STEP:
                    dumped[step] = func.script()
                elif step == "lower_sparse_iter":
                    stage_ii = st.lower_sparse_iter(func)
                    dumped[step] = stage_ii.script()
                elif step == "lower_sparse_buffer":
                    if stage_ii is None:
                        stage_ii = st.parse(dumped["lower_sparse_iter"])
                    dumped[step] = st.lower_sparse_buffer(stage_ii).script()
                else:
                    raise GoldenError(f"no Python entry point for pass {step!r}")
            except Exception as e:  # noqa: BLE001
                raise GoldenError(
                    f"{path}: st.compile failed ({type(compile_error).__name__}: {compile_error}) "
                    f"and step {step!r} could not be recomputed: {type(e).__name__}: {e}"
                ) from e
    return [(step, dumped[step]) for step in expected_order]


def expected_goldens(paths: Optional[List[str]] = None) -> Dict[str, str]:
    """{path relative to tests/golden: text} for every (pass, script, side)."""
    out: Dict[str, str] = {}
    for path in script_paths() if paths is None else paths:
        stem = os.path.splitext(os.path.basename(path))[0]
        steps = pipeline_steps(path)
        for i, pass_name in enumerate(PASSES):
            out[os.path.join(pass_name, f"{stem}.before.py")] = steps[i][1]
            out[os.path.join(pass_name, f"{stem}.after.py")] = steps[i + 1][1]
    return out


def goldens_on_disk() -> Dict[str, str]:
    """{path relative to tests/golden: text} for every *.before.py / *.after.py
    in a pass folder (README.md and other files are not goldens)."""
    out: Dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(GOLDEN_DIR, "*", "*.py"))):
        if path.endswith((".before.py", ".after.py")):
            out[os.path.relpath(path, GOLDEN_DIR)] = _read(path)
    return out


def text_diff(a: str, b: str, a_name: str, b_name: str) -> str:
    """A unified diff from text ``a`` to text ``b``."""
    lines = difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True), fromfile=a_name, tofile=b_name)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def unified_diff(rel: str, on_disk: Optional[str], now: Optional[str]) -> str:
    """The diff from the golden file on disk (a/) to the compiler's output (b/)."""
    name = "tests/golden/" + rel.replace(os.sep, "/")
    text = text_diff(on_disk or "", now or "", "/dev/null" if on_disk is None else "a/" + name,
                     "/dev/null" if now is None else "b/" + name)
    if on_disk is None:
        return f"missing golden file {name} (the compiler produces it)\n" + text
    if now is None:
        return f"stale golden file {name} (no script or pass produces it; the update removes it)\n" + text
    return text


def check() -> int:
    want, have = expected_goldens(), goldens_on_disk()
    diffs = [unified_diff(rel, have.get(rel), want.get(rel)) for rel in sorted(set(want) | set(have))
             if have.get(rel) != want.get(rel)]
    if not diffs:
        print(f"tests/golden is up to date ({len(want)} files)")
        return 0
    sys.stdout.write("".join(diffs))
    print(f"\n{len(diffs)} golden file(s) differ from the compiler's output; "
          "run python tools/update_goldens.py and review the diff", file=sys.stderr)
    return 1


def update() -> int:
    want, have = expected_goldens(), goldens_on_disk()
    written = removed = 0
    for rel, text in sorted(want.items()):
        if have.get(rel) == text:
            continue
        path = os.path.join(GOLDEN_DIR, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        written += 1
        print(("updated " if rel in have else "created ") + os.path.relpath(path, REPO_ROOT))
    for rel in sorted(set(have) - set(want)):
        os.remove(os.path.join(GOLDEN_DIR, rel))
        removed += 1
        print("removed " + os.path.join("tests", "golden", rel))
    for entry in sorted(os.listdir(GOLDEN_DIR)):
        folder = os.path.join(GOLDEN_DIR, entry)
        if os.path.isdir(folder) and not os.listdir(folder):
            os.rmdir(folder)
    print(f"{len(want)} golden files: {written} written, {removed} removed, {len(want) - written} unchanged")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 and print a unified diff if tests/golden is stale")
    args = parser.parse_args(argv)
    try:
        return check() if args.check else update()
    except GoldenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
