"""README.md is the user guide, so what it shows must work as written.

- Every ```python block runs in a fresh interpreter (`sys.executable -c`), in
  an empty temporary directory (a user's script does not run from the
  checkout), with its own kernel cache. A block must therefore be
  self-contained: a name defined in another block is a NameError here, as it
  would be for a reader who copies one block. Any exception or non-zero exit
  fails the block's test.
- A block that cannot run here (GPU-only code) carries the HTML comment
  `<!-- not-tested: reason -->` on the line right before its fence; only
  those are skipped, with that reason. Shell commands go in ```bash blocks.
- The first screen's set-up block holds exactly the two documented commands,
  commands call `python3` (never a bare `python`), and every relative link
  (README and docs/) points into the repository at an existing file, and at
  an existing heading when it names one.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README = os.path.join(REPO_ROOT, "README.md")
DOCS_DIR = os.path.join(REPO_ROOT, "docs")

# The set-up commands of the first screen, exactly as a newcomer copies them.
FIRST_SCREEN_COMMANDS = [
    "bash tools/install.sh && tools/python -m sparsetir_torch.demo    # install everything, run the demo",
    "bash tools/test.sh                                                # the whole test suite (ctest + pytest)",
]
# Seconds one block may take: a snippet compiles a few kernels into an empty
# cache, which takes seconds; minutes mean it hangs.
SNIPPET_TIMEOUT_S = 180
PYTHON_LANGS = {"python", "py", "python3"}
NOT_TESTED = re.compile(r"^<!--\s*not-tested:\s*(.+?)\s*-->$")


@dataclass
class Block:
    lang: str
    code: str
    line: int                 # 1-based line of the opening fence
    section: str              # the heading above it
    not_tested: str | None    # the reason, when the line before the fence marks it


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def fenced_blocks(text: str) -> list:
    """The fenced code blocks of a Markdown text, in order."""
    blocks, lines = [], text.splitlines()
    section, i = "top", 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^#{1,6}\s+(.*)", line)
        if heading:
            section = heading.group(1).strip()
        fence = re.match(r"^(```+)\s*(\S*)", line)
        if fence:
            marker = NOT_TESTED.match(lines[i - 1].strip()) if i > 0 else None
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1))), None)
            assert end is not None, f"README line {i + 1}: the code block opened here is never closed"
            blocks.append(Block(fence.group(2).lower(), "\n".join(lines[i + 1:end]) + "\n", i + 1, section,
                                marker.group(1) if marker else None))
            i = end
        i += 1
    return blocks


def prose(text: str) -> str:
    """The text outside fenced blocks (links and headings live there)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]*>", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: str) -> set:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.*)$", prose(read(path)), flags=re.M)}


README_TEXT = read(README)
BLOCKS = fenced_blocks(README_TEXT)


def snippet_params():
    params, per_section = [], {}
    for block in BLOCKS:
        if block.lang not in PYTHON_LANGS:
            continue
        name = slug(block.section) or "top"
        per_section[name] = per_section.get(name, 0) + 1
        marks = [pytest.mark.skip(reason=f"README line {block.line}: {block.not_tested}")] if block.not_tested else []
        params.append(pytest.param(block, id=f"{name}-{per_section[name]}", marks=marks))
    return params


@pytest.mark.parametrize("block", snippet_params())
def test_readme_python_block_runs(block, tmp_path):
    env = dict(os.environ)
    env["SPARSETIR_CACHE_DIR"] = str(tmp_path / "kernel-cache")
    work = tmp_path / "work"
    work.mkdir()
    try:
        result = subprocess.run([sys.executable, "-c", block.code], cwd=work, env=env, capture_output=True,
                                text=True, timeout=SNIPPET_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"README line {block.line} ({block.section}): the block ran past {SNIPPET_TIMEOUT_S} s")
    if result.returncode != 0:
        pytest.fail(f"README line {block.line} ({block.section}): the block exited with {result.returncode}\n"
                    f"--- stdout (end) ---\n{result.stdout[-3000:]}\n--- stderr (end) ---\n{result.stderr[-6000:]}",
                    pytrace=False)


def test_python_blocks_exist_and_most_run():
    python = [b for b in BLOCKS if b.lang in PYTHON_LANGS]
    assert len(python) >= 4, "the README's examples are ```python blocks"
    assert sum(1 for b in python if b.not_tested is None) > len(python) // 2, "most examples must be tested"


def test_not_tested_markers_sit_on_python_blocks():
    """A marker before anything but a Python fence is a mistake: it would
    silently stop marking the block it was meant for."""
    lines = README_TEXT.splitlines()
    marked = {b.line - 1 for b in BLOCKS if b.not_tested and b.lang in PYTHON_LANGS}
    for n, line in enumerate(lines, start=1):
        if NOT_TESTED.match(line.strip()):
            assert n in marked, f"README line {n}: a not-tested marker must be the line right before a ```python fence"
        elif "not-tested" in line:
            assert False, f"README line {n}: malformed marker; write <!-- not-tested: reason -->"


def test_first_screen_has_exactly_the_two_setup_commands():
    first_block = BLOCKS[0]
    first_section = next((n for n, line in enumerate(README_TEXT.splitlines(), start=1) if line.startswith("## ")),
                         None)
    assert first_section is None or first_block.line < first_section, \
        "the set-up block belongs to the first screen, before the first section"
    assert first_block.lang == "bash", f"the first block is ```{first_block.lang}, expected ```bash"
    lines = [line.rstrip() for line in first_block.code.splitlines() if line.strip()]
    assert lines == FIRST_SCREEN_COMMANDS


def test_commands_call_python3():
    """`python` is not on a stock Debian/Ubuntu PATH; `python3` is."""
    outside_python = prose(README_TEXT) + "".join(b.code for b in BLOCKS if b.lang not in PYTHON_LANGS)
    bare = re.findall(r"(?<![\w/.-])python\s+(?:-[mc]\b|\S+\.py\b)", outside_python)
    assert not bare, f"use python3 in commands: {bare}"


def markdown_files():
    files = [README]
    if os.path.isdir(DOCS_DIR):
        files += sorted(os.path.join(DOCS_DIR, f) for f in os.listdir(DOCS_DIR) if f.endswith(".md"))
    return files


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: os.path.relpath(p, REPO_ROOT))
def test_relative_links_point_to_existing_files(path):
    text = prose(read(path))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link
    targets = re.findall(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", text)
    targets += re.findall(r"^\s*\[[^\]]+\]:\s*(\S+)", text, flags=re.M)
    assert targets or path != README, "the README links to its details"
    here = os.path.dirname(path)
    problems = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, flags=re.I):
            continue  # http(s):, mailto: ...
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(here, file_part)) if file_part else path
        if not (resolved + os.sep).startswith(REPO_ROOT + os.sep) and resolved != REPO_ROOT:
            problems.append(f"{target}: outside the repository")
        elif not os.path.exists(resolved):
            problems.append(f"{target}: no such file")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            problems.append(f"{target}: no heading #{anchor} in {os.path.relpath(resolved, REPO_ROOT)}")
    assert not problems, f"{os.path.relpath(path, REPO_ROOT)}: broken links:\n" + "\n".join(problems)
