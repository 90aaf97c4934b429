"""benchmarks/run_all.py, the one report command: it reads what the benchmarks print, writes a CSV, a chart and a
Markdown summary that agree, and does not overwrite results tracked by git unless --force is given.

The report run uses the hidden --tiny setting (one shipped matrix, a small MLP; about 20 s) and the matrices
shipped in tests/data/matrices, never the larger collection beside the checkout."""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO_ROOT

BENCHMARKS = os.path.join(REPO_ROOT, "benchmarks")
RUN_ALL = os.path.join(BENCHMARKS, "run_all.py")
SHIPPED = os.path.join(REPO_ROOT, "tests", "data", "matrices")
RECORDED = os.path.join(BENCHMARKS, "results", "training", "zen3_avx2_examples.txt")
sys.path.insert(0, BENCHMARKS)
import run_all  # noqa: E402


def run(args, tmp_path, **kw):
    datasets = tmp_path / "datasets"  # only the matrix the tiny setting uses: the run does not load the others
    datasets.mkdir(exist_ok=True)
    if not (datasets / "lund_a.mtx.gz").exists():
        shutil.copy(os.path.join(SHIPPED, "lund_a.mtx.gz"), datasets)
    env = dict(os.environ, SPARSETIR_DATASETS=str(datasets),
               PYTHONPATH=os.pathsep.join([REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, RUN_ALL, *args], capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=600, **kw)


def md_tables(text):
    """{section heading: (header cells, [row cells])} of a Markdown text's tables."""
    tables, section = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("|") and section is not None:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if section not in tables:
                tables[section] = (cells, [])
            elif not set(line) <= set("|-: "):
                tables[section][1].append(cells)
    return tables


# --------------------------------------------------------------------------------------------------------------------
# Reading the benchmarks' output


def recorded_section(title):
    with open(RECORDED) as f:
        sections = re.split(r"^=== ", f.read(), flags=re.M)
    return next(s for s in sections if s.startswith(title))


def test_reads_the_gnn_example_comparison():
    rows = run_all.rows_from_example("gcn", recorded_section("threads 1 model gcn"), 1)
    assert [(r["peer"], r["ratio"], r["ours_ms"], r["peer_ms"]) for r in rows] == [
        ("PyG", 6.28, 69.7, 437.8), ("torch.sparse", 1.81, 69.7, 126.1)]
    assert rows[0]["setting"] == "email-Enron (36692 nodes, 367662 edges)"
    assert {r["benchmark"] for r in rows} == {"GCN epoch"} and {r["threads"] for r in rows} == {1}
    gat = run_all.rows_from_example("gat", recorded_section("threads 2 model gat"), 2)
    assert [(r["peer"], r["ratio"]) for r in gat] == [("PyG", 3.41)]


def test_reads_the_pruned_mlp_and_encoder_block_comparisons():
    mlp = run_all.rows_from_example("mlp", recorded_section("pruned mlp threads 1"), 1)
    assert [(r["setting"], r["ours_ms"], r["peer_ms"], r["ratio"]) for r in mlp] == [
        ("training step", 83.1, 444.5, 5.35), ("inference batch 1", 0.44, 3.40, 7.67),
        ("inference batch 16", 1.74, 15.94, 9.14), ("inference batch 64", 5.99, 33.95, 5.67),
        ("inference batch 256", 27.79, 118.04, 4.25)]
    assert {r["peer"] for r in mlp} == {"dense"}
    block = run_all.rows_from_example("transformer", recorded_section("sparse transformer threads 2"), 2)
    assert [(r["setting"], r["peer"], r["ours_ms"], r["peer_ms"], r["ratio"]) for r in block] == [
        ("block step (attention + FFN)", "SDPA(mask) + dense FFN", 213.6, 513.9, 2.41),
        ("attention alone", "SDPA(mask)", 103.9, 402.1, 3.87)]


# --------------------------------------------------------------------------------------------------------------------
# The report


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "out"
    done = run(["--tiny", "--threads", "1", "2", "--ops", "--e2e", "mlp", "--out", str(out)], tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_report_csv_has_a_row_per_measurement_and_thread_count(report):
    with open(report / "report.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert reader.fieldnames[:8] == ["benchmark", "setting", "peer", "threads", "ours_ms", "peer_ms", "ratio",
                                     "machine"]
    assert {r["benchmark"] for r in rows} == {"spmm_sum", "pruned MLP"}
    for bench, peers in (("spmm_sum", {"torch.sparse.mm", "scipy"}), ("pruned MLP", {"dense"})):
        for t in ("1", "2"):
            assert {r["peer"] for r in rows if r["benchmark"] == bench and r["threads"] == t} == peers, (bench, t)
    for r in rows:
        ours, peer, ratio = float(r["ours_ms"]), float(r["peer_ms"]), float(r["ratio"])
        assert ours > 0 and peer > 0 and ratio > 0, r
        if r["part"] == "ops":  # computed from unrounded times; the examples print times rounded to 0.01 ms
            assert ratio == pytest.approx(peer / ours, rel=1e-3), r
        assert r["machine"], r
    assert (report / "raw" / "ops_t1.csv").is_file() and (report / "raw" / "mlp_t2.txt").is_file()
    # A raw log opens with its command as anyone runs it from the repository
    # root: no interpreter path or folder of the machine that made it.
    first = (report / "raw" / "mlp_t2.txt").read_text().splitlines()[0]
    assert first.startswith("$ python3 examples/pruned_mlp.py ") and "--threads 2" in first, first
    assert REPO_ROOT not in first and sys.executable not in first, first


def test_report_chart_is_a_png(report):
    with open(report / "report.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_report_markdown_tables_match_the_csv(report):
    with open(report / "report.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    text = (report / "report.md").read_text()
    assert "machine: " in text and "threads" in text and "torch " in text
    assert re.search(r"Command: `SPARSETIR_DATASETS=\S+ python3 \S*run_all\.py --tiny --threads 1 2 --ops --e2e mlp "
                     r"--out \S+`", text), text
    tables = md_tables(text)
    for r in rows:
        head, body = tables[r["benchmark"]]
        label = f"{r['threads']} thread{'s' if r['threads'] != '1' else ''}"
        line = next(c for c in body if c[0] == r["setting"] and c[1] == r["peer"])
        cell = lambda what: line[head.index(f"{what} ({label})")].strip("*")  # noqa: E731
        assert float(cell("ratio")) == pytest.approx(float(r["ratio"]), abs=0.0051), (r, line)
        assert float(cell("ours ms")) == pytest.approx(float(r["ours_ms"]), rel=1e-3), (r, line)
        assert float(cell("peer ms")) == pytest.approx(float(r["peer_ms"]), rel=1e-3), (r, line)
    summary_head, summary = tables["Summary"]
    assert summary_head[-2:] == ["1 thread", "2 threads"]
    assert {(c[0], c[1]) for c in summary} == {(r["benchmark"], r["peer"]) for r in rows}


# --------------------------------------------------------------------------------------------------------------------
# Published results


@pytest.fixture
def tracked_dir(tmp_path):
    """A git repository whose results/ folder holds a tracked report."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "report.csv").write_text("published\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "results/report.csv"], check=True)
    return tmp_path / "results"


def test_refuses_to_overwrite_a_tracked_folder(tracked_dir, tmp_path):
    done = run(["--tiny", "--ops", "--out", str(tracked_dir)], tmp_path)
    assert done.returncode != 0
    assert "tracked by git" in done.stderr and "--force" in done.stderr, done.stderr
    assert (tracked_dir / "report.csv").read_text() == "published\n"
    assert sorted(os.listdir(tracked_dir)) == ["report.csv"]


def test_force_and_untracked_folders_are_written(tracked_dir, tmp_path):
    assert run_all.tracked_files(str(tracked_dir)) == ["results/report.csv"]
    assert run_all.tracked_files(str(tracked_dir / "new" / "deeper")) == []
    assert run_all.tracked_files(str(tmp_path.parent / "elsewhere")) == []
    run_all.check_out_dir(str(tracked_dir), force=True)
    run_all.check_out_dir(str(tracked_dir / "new"), force=False)
    (tracked_dir / "untracked").mkdir()
    (tracked_dir / "untracked" / "report.csv").write_text("old run\n")
    run_all.check_out_dir(str(tracked_dir / "untracked"), force=False)
    with pytest.raises(SystemExit, match="tracked by git"):
        run_all.check_out_dir(str(tracked_dir), force=False)


def test_progress_bar_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    bar = run_all.Bar(2)
    assert bar.tqdm is None
    bar.describe("ops, 1 thread")
    bar.advance()
    bar.advance()
    bar.close()
    err = capsys.readouterr().err
    assert "1/2" in err and "[" + "#" * 30 + "] 2/2" in err, err
