"""One report of every benchmark: the operators against their peers (bench_ops.py: torch.sparse with MKL, SciPy,
SDPA, dense matmul) and the end-to-end examples (examples/: time per epoch or step of st.nn against PyG,
torch.sparse and dense models), at each thread count, side by side.

    python benchmarks/run_all.py --quick --threads 1 2          # a small setting: about 2 minutes on 2 cores
    python benchmarks/run_all.py --threads 1 2                  # everything: about 25 minutes on 2 cores
    python benchmarks/run_all.py --ops spmm,sddmm --threads 2   # some ops only (no end-to-end runs)
    python benchmarks/run_all.py --e2e gcn,mlp                  # some end-to-end runs only (no op benchmarks)

Each benchmark runs in a fresh process per thread count (bench_ops.py, or an example with its comparison on); its
whole output is kept under <out>/raw/, and the measurements are collected into

    report.csv   one row per measurement: benchmark, setting, peer, threads, ours_ms, peer_ms, ratio, machine, ...
    report.png   one panel per benchmark: bars of ratio = peer time / our time per thread count, a line at 1.0
    report.md    the machine, a summary (geometric means), a table per benchmark and the command that made it

The default folder is benchmarks/results/report/<machine tag>. A folder holding files tracked by git (published
results) is not written unless --force is given.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import re
import shlex
import subprocess
import sys
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
EXAMPLES = os.path.join(REPO, "examples")
sys.path.insert(0, HERE)
from bench_common import RESULTS, apply_isa, machine_info, machine_line  # noqa: E402

COLUMNS = ["benchmark", "setting", "peer", "threads", "ours_ms", "peer_ms", "ratio", "machine", "part", "note"]
ALL_OPS = ("spmm", "reduce", "sddmm", "bsrmm", "attention", "overhead")  # bench_ops.py's --ops

# The end-to-end runs: name -> (title, example script, its arguments per size). "full" repeats the settings of
# the README's training table; "quick" and "tiny" shrink them.
GNN_FULL = ["--graph", "email-Enron", "--epochs", "12", "--compare"]
GNN_QUICK = ["--graph", "email-Enron", "--max-nodes", "20000", "--epochs", "5", "--compare"]
GNN_TINY = ["--graph", "email-Enron", "--max-nodes", "300", "--epochs", "3", "--hidden", "16", "--compare"]
E2E = {
    "gcn": ("GCN epoch", "gnn_node_classification.py", ["--model", "gcn"]),
    "sage": ("SAGE-mean epoch", "gnn_node_classification.py", ["--model", "sage", "--aggr", "mean"]),
    "sage-max": ("SAGE-max epoch", "gnn_node_classification.py", ["--model", "sage", "--aggr", "max"]),
    "gat": ("GAT epoch", "gnn_node_classification.py", ["--model", "gat", "--heads", "4"]),
    "gin": ("GIN epoch", "gnn_node_classification.py", ["--model", "gin"]),
    "mlp": ("pruned MLP", "pruned_mlp.py", []),
    "transformer": ("sparse encoder block", "sparse_transformer.py", []),
}
SIZE_ARGS = {
    "full": {"gnn": GNN_FULL, "mlp": [], "transformer": []},
    "quick": {"gnn": GNN_QUICK,
              "mlp": ["--width", "1024", "--hidden", "2048", "--batch", "128", "--dense-steps", "3", "--steps", "3",
                      "--rounds", "3"],
              "transformer": ["--length", "1024", "--steps", "2", "--rounds", "3"]},
    "tiny": {"gnn": GNN_TINY,
             "mlp": ["--width", "128", "--hidden", "256", "--batch", "128", "--dense-steps", "1", "--steps", "1",
                     "--rounds", "1"],
             "transformer": ["--length", "128", "--dim", "64", "--window", "8", "--steps", "1", "--rounds", "1"]},
}
DEFAULT_E2E = {"full": list(E2E), "quick": ["gcn", "sage", "sage-max", "gat", "mlp", "transformer"],
               "tiny": ["gcn", "mlp", "transformer"]}
# bench_ops.py's arguments per size (before --ops / --threads / --out and the user's --matrices / --k).
OPS_ARGS = {
    "full": [],
    "quick": ["--quick", "--matrices", "cond-mat|rmat15", "--k", "32", "--budget", "0.05", "--patience", "10",
              "--wait-idle", "2", "--retries", "1"],
    "tiny": ["--matrices", "^lund_a$", "--k", "16", "--budget", "0.01", "--min-reps", "3", "--patience", "0",
             "--wait-idle", "0", "--retries", "0"],
}
DEFAULT_OPS = {"full": list(ALL_OPS), "quick": list(ALL_OPS), "tiny": ["spmm"]}


# --------------------------------------------------------------------------------------------------------------------
# Where the report goes


def tracked_files(path: str) -> List[str]:
    """The files under `path` that git tracks (in the repository around it, if any)."""
    path = os.path.abspath(path)
    probe = path
    while not os.path.isdir(probe):
        probe = os.path.dirname(probe)
    try:
        done = subprocess.run(["git", "-C", probe, "ls-files", "-z", "--full-name", "--", path],
                              capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return []  # no git: nothing is tracked
    return [f for f in done.stdout.split("\0") if f] if done.returncode == 0 else []


def check_out_dir(path: str, force: bool) -> None:
    """Refuses (SystemExit) a folder holding files tracked by git, unless force."""
    tracked = tracked_files(path)
    if tracked and not force:
        shown = ", ".join(tracked[:3]) + (f" and {len(tracked) - 3} more" if len(tracked) > 3 else "")
        raise SystemExit(f"run_all.py: {path} holds results tracked by git ({shown}); not overwriting them. "
                         f"Pass --force to replace them, or --out another folder.")


def machine_tag(info: dict) -> str:
    cpu = re.sub(r"\((r|tm)\)|\bcpu\b|\bprocessor\b|@.*|\d+-core", "", info["cpu"].lower())
    cpu = re.sub(r"[^a-z0-9]+", "-", cpu).strip("-") or "cpu"
    return f"{cpu}_{info['isa'].split(':')[-1].split('+')[0]}"


# --------------------------------------------------------------------------------------------------------------------
# Progress


class Bar:
    """tqdm where installed, else a one-line bar on stderr."""

    def __init__(self, total: int):
        self.total, self.done, self.text, self.shown = total, 0, "", 0.0
        self.t0 = time.perf_counter()
        try:
            from tqdm import tqdm
            self.tqdm = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)
        except ImportError:
            self.tqdm = None
        self.tty = sys.stderr.isatty()

    def describe(self, text: str) -> None:
        text = " ".join(text.split())[:70]
        now = time.perf_counter()
        if text == self.text or now - self.shown < 0.3:  # a child prints tables faster than anyone reads
            return
        self.text, self.shown = text, now
        if self.tqdm is not None:
            self.tqdm.set_postfix_str(text, refresh=True)
        elif self.tty:
            self._draw()

    def advance(self) -> None:
        self.done += 1
        if self.tqdm is not None:
            self.tqdm.update(1)
        else:
            self._draw(newline=not self.tty)

    def _draw(self, newline: bool = False) -> None:
        fill = int(30 * self.done / max(1, self.total))
        line = (f"[{'#' * fill}{'.' * (30 - fill)}] {self.done}/{self.total} "
                f"{time.perf_counter() - self.t0:4.0f} s {self.text}")
        sys.stderr.write(line + "\n" if newline else "\r" + line[:119].ljust(119))
        sys.stderr.flush()

    def close(self) -> None:
        if self.tqdm is not None:
            self.tqdm.close()
        elif self.tty:
            sys.stderr.write("\n")


def portable_command(cmd: List[str]) -> str:
    """cmd as run from the repository root on any machine: python3 for the interpreter, paths in the repository
    relative to it (a published log names no folder of the machine that made it)."""
    inside = REPO + os.sep
    return shlex.join(["python3"] + [os.path.relpath(a, REPO) if a.startswith(inside) else a for a in cmd[1:]])


def run_logged(cmd: List[str], log_path: str, bar: Bar) -> tuple:
    """Runs cmd from the repository root, its stdout and stderr into log_path; each line it prints becomes the
    bar's text. Returns (exit status, the output)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p),
               PYTHONUNBUFFERED="1")
    lines = []
    with open(log_path, "w") as log:
        log.write("$ " + portable_command(cmd) + "\n")
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in proc.stdout:
            log.write(line)
            lines.append(line)
            if line.strip() and "arning" not in line:
                bar.describe(line.strip(" []"))
        rc = proc.wait()
    return rc, "".join(lines)


# --------------------------------------------------------------------------------------------------------------------
# Reading what the benchmarks print


def number(s) -> float:
    try:
        return float(s)
    except (TypeError, ValueError):
        return math.nan


def rows_from_ops_csv(path: str, threads: int) -> List[dict]:
    """bench_ops.py's CSV -> report rows (one per op, matrix, K and peer)."""
    out = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["op"] == "overhead":
                bench, setting = "overhead (tiny SpMM, per call)", r["variant"]
            else:
                bench, setting = r["op"], f"{r['matrix']} K={r['K']}"
            notes = [r.get("note") or ""]
            if number(r.get("load_pct")) > 10:
                notes.append(f"other processes used {number(r['load_pct']):.0f}% of the CPUs")
            out.append({"benchmark": bench, "setting": setting, "peer": r["peer"], "threads": threads,
                        "ours_ms": number(r["ours_ms"]), "peer_ms": number(r["peer_ms"]),
                        "ratio": number(r["ratio"]), "part": "ops", "note": "; ".join(n for n in notes if n)})
    return out


GNN_HEAD = re.compile(r"^(\S+): (\d+) nodes, (\d+) edges;")
GNN_TIME = re.compile(r"^\s*(\S+): test accuracy [\d.]+, median epoch ([\d.]+) ms")
GNN_RATIO = re.compile(r"^st\.nn is ([\d.]+)x (.+?)\s*$")
STEP = re.compile(r"^(.+?): (?:SDPA with mask / )?dense ([\d.]+) ms, (?:block-)?sparse ([\d.]+) ms: ([\d.]+)x\s*$")


def rows_from_example(name: str, text: str, threads: int) -> List[dict]:
    """An example's printed comparison -> report rows. The GNN example prints each implementation's median epoch and
    'st.nn is R x PEER'; pruned_mlp and sparse_transformer print 'WHAT: dense T ms, block-sparse T ms: R x' and
    'WHAT: SDPA with mask / dense T ms, sparse T ms: R x'."""
    title = E2E[name][0]
    rows = []
    if E2E[name][1] == "gnn_node_classification.py":
        setting, times = "", {}
        for line in text.splitlines():
            if m := GNN_HEAD.match(line):
                setting = f"{m[1]} ({m[2]} nodes, {m[3]} edges)"
            elif m := GNN_TIME.match(line):
                times[m[1]] = float(m[2])
            elif m := GNN_RATIO.match(line):
                peer = m[2]
                rows.append({"benchmark": title, "setting": setting, "peer": peer, "threads": threads,
                             "ours_ms": times.get("st.nn", math.nan), "peer_ms": times.get(peer, math.nan),
                             "ratio": float(m[1]), "part": "e2e", "note": ""})
        return rows
    for line in text.splitlines():
        if m := STEP.match(line):
            what = " ".join(m[1].split())
            if name == "mlp":
                peer = "dense"
            else:
                peer = "SDPA(mask) + dense FFN" if what.startswith("block step") else "SDPA(mask)"
            rows.append({"benchmark": title, "setting": what, "peer": peer, "threads": threads,
                         "ours_ms": float(m[3]), "peer_ms": float(m[2]), "ratio": float(m[4]), "part": "e2e",
                         "note": ""})
    return rows


# --------------------------------------------------------------------------------------------------------------------
# Writing the report


def fmt_ms(v: float) -> str:
    return "n/a" if v != v else f"{v:.4g}"


def fmt_ratio(v: float) -> str:
    return "n/a" if v != v else f"{v:.2f}"


def geomean(xs) -> float:
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def write_csv(path: str, rows: List[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def thread_label(t: int) -> str:
    return f"{t} thread{'s' if t != 1 else ''}"


def markdown(rows: List[dict], threads: List[int], header: List[str], failures: List[str], command: str) -> str:
    lines = ["# Benchmark report", ""] + header + ["", f"Command: `{command}`", "",
             "ratio = peer time / our time: above 1.00 ours is faster (in bold: slower). Operators: median time per call, ours and the "
             "peers interleaved (benchmarks/bench_ops.py). End-to-end: median time per epoch or step, the models "
             "trained in turn (examples/). The raw output of every run is in raw/.", ""]
    if failures:
        lines += ["**Runs that failed** (their output is in raw/):", ""] + [f"- {f}" for f in failures] + [""]
    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    lines += ["## Summary", "", "Geometric mean of the ratios (and the worst one) per benchmark and peer.", "",
              "| benchmark | peer | n | " + " | ".join(thread_label(t) for t in threads) + " |",
              "|---|---|---|" + "---|" * len(threads)]
    for b in benches:
        for peer in dict.fromkeys(r["peer"] for r in rows if r["benchmark"] == b):
            cells, n = [], 0
            for t in threads:
                rs = [r["ratio"] for r in rows if r["benchmark"] == b and r["peer"] == peer and r["threads"] == t
                      and r["ratio"] == r["ratio"]]
                n = max(n, len(rs))
                cells.append(f"{geomean(rs):.2f} ({min(rs):.2f})" if rs else "-")
            lines.append(f"| {b} | {peer} | {n} | " + " | ".join(cells) + " |")
    for b in benches:
        brows = [r for r in rows if r["benchmark"] == b]
        lines += ["", f"## {b}", "", "| setting | peer | " + " | ".join(
            f"ours ms ({thread_label(t)}) | peer ms ({thread_label(t)}) | ratio ({thread_label(t)})" for t in threads)
            + " |", "|---|---|" + "---|---|---|" * len(threads)]
        groups = list(dict.fromkeys((r["setting"], r["peer"]) for r in brows))
        notes: Dict[str, List[tuple]] = {}  # note -> [(setting, peer, threads)]
        for setting, peer in groups:
            cells = []
            for t in threads:
                r = next((r for r in brows if r["setting"] == setting and r["peer"] == peer and r["threads"] == t),
                         None)
                if r is None:
                    cells += ["-", "-", "-"]
                    continue
                ratio = fmt_ratio(r["ratio"])
                cells += [fmt_ms(r["ours_ms"]), fmt_ms(r["peer_ms"]), f"**{ratio}**" if r["ratio"] < 1 else ratio]
                if r["note"]:
                    notes.setdefault(r["note"], []).append((setting, peer, t))
            lines.append(f"| {setting} | {peer} | " + " | ".join(cells) + " |")
        for i, (note, where) in enumerate(notes.items()):
            parts = []
            for t in threads:
                at = [f"{s} vs {p}" for s, p, tt in where if tt == t]
                if at:
                    parts.append(thread_label(t) if len(at) == len(groups) else f"{', '.join(at)}, {thread_label(t)}")
            lines += ([""] if i == 0 else []) + [f"- {note} ({'; '.join(parts)})"]
    return "\n".join(lines) + "\n"


def plot(path: str, rows: List[dict], threads: List[int], title: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)", file=sys.stderr)
        return False
    benches = list(dict.fromkeys(r["benchmark"] for r in rows))
    if not benches:
        return False
    most = max(len({(r["setting"], r["peer"]) for r in rows if r["benchmark"] == b}) for b in benches)
    width = min(48.0, max(9.0, 2 + most * (0.9 + 0.45 * len(threads))))
    fig, axes = plt.subplots(len(benches), 1, figsize=(width, 3.4 * len(benches)), squeeze=False)
    colors = plt.get_cmap("tab10")
    bar_w = 0.8 / len(threads)
    for ax, b in zip(axes[:, 0], benches):
        brows = [r for r in rows if r["benchmark"] == b]
        groups = list(dict.fromkeys((r["setting"], r["peer"]) for r in brows))
        top = 1.0
        for ti, t in enumerate(threads):
            xs, ys = [], []
            for gi, (setting, peer) in enumerate(groups):
                r = next((r for r in brows if (r["setting"], r["peer"], r["threads"]) == (setting, peer, t)), None)
                if r is not None and r["ratio"] == r["ratio"]:
                    xs.append(gi - 0.4 + bar_w * (ti + 0.5))
                    ys.append(r["ratio"])
            bars = ax.bar(xs, ys, bar_w, label=thread_label(t), color=colors(ti % 10))
            ax.bar_label(bars, labels=[f"{y:.2f}" for y in ys], fontsize=7, padding=2,
                         rotation=90 if len(groups) * len(threads) > 24 else 0)
            top = max([top] + ys)
        ax.axhline(1.0, color="black", linewidth=1.2)
        ax.text(1.003, 1.0, "1.0: as fast\nas the peer", transform=ax.get_yaxis_transform(), fontsize=7,
                ha="left", va="center", clip_on=False)
        ax.set_ylim(0, top * 1.3)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{s}\nvs {p}" for s, p in groups], fontsize=7, rotation=90 if len(groups) > 12 else 0)
        ax.set_ylabel("peer time / ours")
        ax.set_title(f"{b} - {title}", fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------------------------------


def shown_command(cmd: List[str]) -> str:
    """A run's command as the report shows it: from the repository root, T for the thread count, no --out."""
    shown, i = ["python3", os.path.relpath(cmd[1], REPO)], 2
    while i < len(cmd):
        if cmd[i] == "--out":
            i += 2
            continue
        shown.append("T" if cmd[i - 1] == "--threads" else cmd[i])
        i += 1
    return shlex.join(shown)


def selection(value: Optional[str], every, default, what: str, parser) -> List[str]:
    if value is None:
        return []
    chosen = list(default) if value == "default" else [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in chosen if v not in every]
    if bad:
        parser.error(f"unknown {what} {bad}; choose from {', '.join(every)}")
    return chosen


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="a small setting: a few matrices at K = 32, the GNNs on "
                   "20,000 nodes of email-Enron for 5 epochs, smaller MLP and encoder block (about 2 minutes at "
                   "--threads 1 2 on 2 cores)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # seconds: for the tests
    p.add_argument("--threads", type=int, nargs="+", default=[2], help="thread counts to run everything at (default 2)")
    p.add_argument("--ops", nargs="?", const="default", default=None, metavar="OPS",
                   help=f"run the op benchmarks (all, or a comma-separated subset of {','.join(ALL_OPS)}); "
                        "with --ops and no --e2e, no end-to-end runs")
    p.add_argument("--e2e", nargs="?", const="default", default=None, metavar="RUNS",
                   help=f"run the end-to-end benchmarks (all, or a comma-separated subset of {','.join(E2E)}); "
                        "with --e2e and no --ops, no op benchmarks")
    p.add_argument("--matrices", default=None, help="regex on matrix names for the op benchmarks (bench_ops.py)")
    p.add_argument("--k", type=int, nargs="+", default=None, help="K for spmm / sddmm (bench_ops.py)")
    p.add_argument("--isa", default=None, help="build our kernels for this CPU level and hold MKL and torch's "
                   "own kernels to it (as bench_ops.py --isa; applies to the examples too)")
    p.add_argument("--out", default=None, help="output folder (default benchmarks/results/report/<machine tag>)")
    p.add_argument("--torch-dropout", action="store_true",
                   help="the GNN examples' st.nn models with torch's dropout instead of st.nn.Dropout, so that "
                        "the epochs differ in the graph layers alone")
    p.add_argument("--force", action="store_true", help="write into a folder holding files tracked by git")
    args = p.parse_args(argv)
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    if args.ops is None and args.e2e is None:
        args.ops = args.e2e = "default"
    ops = selection(args.ops, ALL_OPS, DEFAULT_OPS[size], "ops", p)
    e2e = selection(args.e2e, E2E, DEFAULT_E2E[size], "end-to-end runs", p)
    threads = list(dict.fromkeys(args.threads))

    if args.out:
        check_out_dir(args.out, args.force)  # before anything slow
    apply_isa(args.isa)  # through the environment: every benchmark process inherits it
    info = machine_info()
    out = os.path.abspath(args.out or os.path.join(RESULTS, "report", machine_tag(info)))
    check_out_dir(out, args.force)
    raw = os.path.join(out, "raw")
    os.makedirs(raw, exist_ok=True)

    # The runs, each setting at every thread count in a row (so that they meet the same load).
    tasks = []
    if ops:
        cmd = [sys.executable, os.path.join(HERE, "bench_ops.py"), "--ops", ",".join(ops)] + OPS_ARGS[size]
        cmd += (["--matrices", args.matrices] if args.matrices else []) + (["--k", *map(str, args.k)] if args.k else [])
        cmd += ["--isa", args.isa] if args.isa else []
        for t in threads:
            base = os.path.join(raw, f"ops_t{t}")
            tasks.append(("ops", t, cmd + ["--threads", str(t), "--out", base], base))
    for name in e2e:
        _, script, extra = E2E[name]
        sized = SIZE_ARGS[size]["gnn" if script.startswith("gnn") else name]
        if args.torch_dropout and script.startswith("gnn"):
            sized = sized + ["--torch-dropout"]
        for t in threads:
            tasks.append((name, t, [sys.executable, os.path.join(EXAMPLES, script), *extra, *sized,
                                    "--threads", str(t)], os.path.join(raw, f"{name}_t{t}")))

    print(machine_line(dict(info, threads=", ".join(map(str, threads)))), file=sys.stderr)
    print(f"{len(tasks)} runs into {out}", file=sys.stderr, flush=True)
    rows: List[dict] = []
    failures: List[str] = []
    commands: Dict[str, str] = {}
    bar = Bar(len(tasks))
    t0 = time.perf_counter()
    for name, t, cmd, base in tasks:
        bar.shown = 0.0
        bar.describe(f"{name}, {thread_label(t)}")
        rc, text = run_logged(cmd, base + ".txt", bar)
        commands.setdefault(name, shown_command(cmd))
        got = []
        if rc == 0 and name == "ops" and os.path.isfile(base + ".csv"):
            got = rows_from_ops_csv(base + ".csv", t)
        elif rc == 0 and name != "ops":
            got = rows_from_example(name, text, t)
        if rc != 0 or not got:
            why = f"exit status {rc}" if rc != 0 else "printed no comparison (a peer not installed?)"
            failures.append(f"{name}, {thread_label(t)}: {why}; see raw/{os.path.basename(base)}.txt")
        rows += got
        bar.advance()
    bar.close()

    machine = f"{info['cpu']}; kernels for {info['isa']}; torch {info['torch']}"
    for r in rows:
        r["machine"] = machine
    argv0 = os.path.relpath(os.path.abspath(sys.argv[0]), os.getcwd()) if argv is None else "benchmarks/run_all.py"
    command = shlex.join(["python3", argv0, *(sys.argv[1:] if argv is None else argv)])
    if os.environ.get("SPARSETIR_DATASETS"):
        # relative to the repository, like every path of a published report
        datasets = os.path.relpath(os.path.abspath(os.environ["SPARSETIR_DATASETS"]), REPO)
        command = f"SPARSETIR_DATASETS={shlex.quote(datasets)} {command}"
    import sparsetir_torch
    header = [machine_line(dict(info, threads=", ".join(map(str, threads)))) + ".",
              "", f"sparsetir_torch {sparsetir_torch.__version__}; {time.strftime('%Y-%m-%d %H:%M')}; "
              f"{len(tasks)} runs in {time.perf_counter() - t0:.0f} s. The runs, one process each per thread count T:",
              ""] + [f"- {name}: `{c}`" for name, c in commands.items()]
    write_csv(os.path.join(out, "report.csv"), rows)
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write(markdown(rows, threads, header, failures, command))
    charted = plot(os.path.join(out, "report.png"), rows, threads,
                   f"{info['cpu']}, kernels for {info['isa']}, torch {info['torch']}")
    for what in ("report.csv", "report.md") + (("report.png",) if charted else ()):
        print(f"wrote {os.path.join(out, what)}")
    for f in failures:
        print(f"FAILED: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
