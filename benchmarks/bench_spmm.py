"""CPU SpMM (C = A @ B, A CSR float32, B dense n x K float32) side by side:

    base    hand-written kernel of the best level this CPU runs (benchmarks/baseline/spmm_avx512.cc or spmm_avx2.cc),
            K-specialized, 2 threads
    torch   torch.sparse.mm on a torch CSR tensor (MKL), torch.set_num_threads(2)
    scipy   scipy.sparse csr_matrix @ ndarray (single-threaded)
    ours*   our generated kernels, from ours_kernels() below (add scheduled variants there):
            ours = kernels/csrmm.py unscheduled, sched = the operators' recipe (sparsetir_torch.recipes.spmm_cpu),
            nopf = the same recipe without the B-row prefetch (both through the Kernel API, which validates the
            structure arrays on every call), op = torch.ops.sparsetir.spmm (the recipe's kernel; validation cached
            per graph, as in training)

Matrices: ../shared/datasets/*.mtx.gz beside the repository ($SPARSETIR_DATASETS overrides) (pattern matrices get random values in [0.5, 1.5)), R-MAT power-law graphs
(scale 16 and 17, edge factor 16, a=0.57, b=c=0.19, Graph500-style random vertex relabelling, duplicates removed)
and a banded matrix (2^17 rows, 33 non-zeros per row). B is uniform in [-1, 1).

Every method's result is checked against scipy's float64 result before it is timed: the error of each element,
divided by (|A| @ |B|) for that element (the scale of a float32 sum's rounding error), must be <= --rtol (1e-4);
elements of empty rows must be exactly 0. Outputs written in place start as NaN, so an unwritten element fails.
Times are medians over >= --repeats runs after warm-up (B and A stay warm in cache between runs). The machine
should be otherwise idle: before each matrix the script waits (--wait-idle) for the other processes to go quiet,
measures their CPU share while it times (the load% column), and re-measures up to --retries times while that share
is above --max-load %, all within --patience seconds for the whole run (then rows keep their load% as a flag).
On an idle machine the run takes about 1.5 minutes for both K.

    python benchmarks/bench_spmm.py              # K = 32 and 128
    python benchmarks/bench_spmm.py --k 32       # one K
    python benchmarks/bench_spmm.py --matrices 'rmat|banded'

Writes spmm_<K>.csv into a new folder benchmarks/results/runs/<date-time>/ (--update-results: the committed
benchmarks/results/spmm_<K>.csv). Takes about 1.5 minutes.
"""
from __future__ import annotations

import argparse
import csv
import glob
import gzip
import math
import os
import re
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Dict

import numpy as np
import scipy.sparse as sp
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from baseline.build import SUPPORTED_K, available_isas, load_baseline  # noqa: E402

from bench_common import DATASETS, machine_info, machine_line, output_base  # noqa: E402
RESULTS = os.path.join(HERE, "results")
THREADS = 2

warnings.filterwarnings("ignore", message=".*[Ss]parse.*")  # torch's beta / invariant-check warnings


# --------------------------------------------------------------------------------------------------------------------
# Problems


@dataclass
class Problem:
    name: str
    indptr: torch.Tensor    # int32, m + 1
    indices: torch.Tensor   # int32, nnz
    values: torch.Tensor    # float32, nnz
    B: torch.Tensor         # float32, n x K
    m: int
    n: int
    K: int

    @property
    def nnz(self) -> int:
        return int(self.indices.numel())

    @property
    def flops(self) -> int:
        return 2 * self.nnz * self.K


@dataclass
class Matrix:
    name: str
    indptr: np.ndarray   # int64
    indices: np.ndarray  # int64
    values: np.ndarray   # float64
    shape: tuple


def _is_pattern(path: str) -> bool:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return "pattern" in f.readline().lower().split()


def load_datasets(rng: np.random.Generator) -> list:
    from sparsetir_torch.matrix_market import read_matrix_market

    out = []
    for path in sorted(glob.glob(os.path.join(DATASETS, "*.mtx.gz"))):
        if os.path.basename(path).startswith("wrong."):
            continue
        csr = read_matrix_market(path)
        values = csr.values.numpy().copy()
        if _is_pattern(path):
            values = rng.uniform(0.5, 1.5, size=values.shape)
        name = os.path.basename(path)[: -len(".mtx.gz")]
        out.append(Matrix(name, csr.indptr.numpy(), csr.indices.numpy(), values, tuple(csr.shape)))
    return out


def _csr_from_coo(name, rows, cols, shape, rng) -> Matrix:
    key = np.unique(rows * shape[1] + cols)  # sorts by (row, col) and removes duplicates
    r, c = key // shape[1], key % shape[1]
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
    return Matrix(name, indptr, c, rng.uniform(0.5, 1.5, size=c.size), shape)


def rmat(scale: int, edge_factor: int, rng: np.random.Generator, a=0.57, b=0.19, c=0.19) -> Matrix:
    n = 1 << scale
    e = edge_factor * n
    rows = np.zeros(e, dtype=np.int64)
    cols = np.zeros(e, dtype=np.int64)
    for level in range(scale):
        r = rng.random(e)
        row_bit = r >= a + b                                  # quadrants c, d
        col_bit = ((r >= a) & (r < a + b)) | (r >= a + b + c)  # quadrants b, d
        rows |= row_bit.astype(np.int64) << level
        cols |= col_bit.astype(np.int64) << level
    perm = rng.permutation(n)  # Graph500-style relabelling: hubs are not all at low indices
    return _csr_from_coo(f"rmat{scale}", perm[rows], perm[cols], (n, n), rng)


def banded(n: int, half_bandwidth: int, rng: np.random.Generator) -> Matrix:
    offs = np.arange(-half_bandwidth, half_bandwidth + 1)
    rows = np.repeat(np.arange(n), offs.size)
    cols = rows + np.tile(offs, n)
    keep = (cols >= 0) & (cols < n)
    return _csr_from_coo(f"banded{2 * half_bandwidth + 1}", rows[keep], cols[keep], (n, n), rng)


def all_matrices(pattern: str) -> list:
    rng = np.random.default_rng(0)
    mats = load_datasets(rng)
    mats += [rmat(16, 16, rng), rmat(17, 16, rng), banded(1 << 17, 16, rng)]
    return [mt for mt in mats if re.search(pattern, mt.name)]


def make_problem(mt: Matrix, K: int, rng: np.random.Generator) -> Problem:
    B = torch.from_numpy(rng.uniform(-1.0, 1.0, size=(mt.shape[1], K)).astype(np.float32))
    return Problem(mt.name, torch.from_numpy(mt.indptr.astype(np.int32)), torch.from_numpy(mt.indices.astype(np.int32)),
                   torch.from_numpy(mt.values.astype(np.float32)), B, mt.shape[0], mt.shape[1], K)


# --------------------------------------------------------------------------------------------------------------------
# Methods: name -> factory(problem) -> run() returning the output (torch tensor or ndarray). Factories do the one-time
# work (compiling, format conversion, output allocation); run() is what gets timed.


def _nan_output(p: Problem) -> torch.Tensor:
    return torch.full((p.m, p.K), float("nan"), dtype=torch.float32)


def _base_factory(p: Problem) -> Callable:
    levels = [isa for isa in ("avx512", "avx2", "neon") if isa in available_isas()]
    if not levels:
        raise RuntimeError("no hand-written baseline runs on this CPU")
    spmm = load_baseline("spmm", levels[0])
    C = _nan_output(p)

    def run():
        spmm(p.indptr, p.indices, p.values, p.B, C, THREADS)
        return C
    return run


def _torch_factory(p: Problem) -> Callable:
    # int32 indices: MKL's native (LP64) index type; measured as fast as or faster than int64 here.
    A = torch.sparse_csr_tensor(p.indptr, p.indices, p.values, (p.m, p.n))

    def run():
        return torch.sparse.mm(A, p.B)
    return run


def _scipy_factory(p: Problem) -> Callable:
    A = sp.csr_matrix((p.values.numpy(), p.indices.numpy(), p.indptr.numpy()), shape=(p.m, p.n))
    Bn = p.B.numpy()

    def run():
        return A @ Bn
    return run


_COMPILED: Dict[tuple, object] = {}


def _script_kernel_factory(script: str, **replacements: str) -> Callable:
    """A factory for a built-in script of kernels/ (compiled once per process)."""
    def factory(p: Problem) -> Callable:
        import sparsetir_torch as st
        from sparsetir_torch.kernels import kernel_script

        key = (script, tuple(sorted(replacements.items())))
        if key not in _COMPILED:
            _COMPILED[key] = st.compile(kernel_script(script, **replacements))
        k = _COMPILED[key]
        C = _nan_output(p)

        def run():
            k(a=p.values, b=p.B, c=C, indptr=p.indptr, indices=p.indices, m=p.m, n=p.n, feat_size=p.K, nnz=p.nnz)
            return C
        return run
    return factory


def _scheduled_spmm_factory(p: Problem, **recipe_options) -> Callable:
    """kernels/csrmm.py scheduled by sparsetir_torch.recipes.spmm_cpu for this K."""
    import sparsetir_torch as st
    from sparsetir_torch.recipes import spmm_cpu

    key = ("spmm_cpu", p.K, tuple(sorted(recipe_options.items())))
    if key not in _COMPILED:
        _COMPILED[key] = st.compile(spmm_cpu(p.K, **recipe_options))
    k = _COMPILED[key]
    C = _nan_output(p)

    def run():
        k(a=p.values, b=p.B, c=C, indptr=p.indptr, indices=p.indices, m=p.m, n=p.n, feat_size=p.K, nnz=p.nnz)
        return C
    return run


def _operator_factory(p: Problem) -> Callable:
    """torch.ops.sparsetir.spmm: the recipe's kernel as the operator runs it (structure validated once per graph and
    cached; the Kernel API of the sched/nopf columns validates indptr and indices on every call, O(nnz))."""
    import sparsetir_torch  # noqa: F401  (registers the op)

    def run():
        return torch.ops.sparsetir.spmm(p.indptr, p.indices, p.values, p.B)
    return run


def ours_kernels() -> Dict[str, Callable]:
    """Our generated kernels to benchmark: name -> factory(Problem) -> run(). Add variants (scheduled kernels, other
    scripts) here; each gets its own columns and ratio columns against base and torch."""
    return {
        "ours": _script_kernel_factory("csrmm"),
        "sched": _scheduled_spmm_factory,
        "nopf": lambda p: _scheduled_spmm_factory(p, prefetch=False),
        "op": _operator_factory,
    }


def peer_methods() -> Dict[str, Callable]:
    return {"base": _base_factory, "torch": _torch_factory, "scipy": _scipy_factory}


# --------------------------------------------------------------------------------------------------------------------
# Checking and timing


def reference(p: Problem):
    A64 = sp.csr_matrix((p.values.numpy().astype(np.float64), p.indices.numpy(), p.indptr.numpy()), shape=(p.m, p.n))
    B64 = p.B.numpy().astype(np.float64)
    ref = A64 @ B64
    scale = abs(A64) @ np.abs(B64)  # bound on the size of the terms summed into each element
    return ref, scale


def check(out, ref: np.ndarray, scale: np.ndarray) -> float:
    """The largest |out - ref| / (|A| @ |B|); inf if anything is non-finite, has the wrong shape or an element that
    should be exactly 0 (an empty row) is not."""
    o = out.numpy() if isinstance(out, torch.Tensor) else np.asarray(out)
    if isinstance(o, np.matrix):
        o = np.asarray(o)
    if o.shape != ref.shape or not np.all(np.isfinite(o)):
        return math.inf
    diff = np.abs(o.astype(np.float64) - ref)
    zero = scale == 0
    if np.any(diff[zero] != 0):
        return math.inf
    return float(np.max(diff / np.where(zero, 1.0, scale), initial=0.0))


def time_runs(run: Callable, repeats: int, budget_s: float) -> float:
    """Median seconds per call: warm-up (>= 2 calls; up to 10 calls or 0.2 s: torch's first calls are slow
    while the allocator warms up), then >= repeats timed calls (more for fast kernels, up to budget_s or 200)."""
    t_start = time.perf_counter()
    warm = 0
    while warm < 2 or (warm < 10 and time.perf_counter() - t_start < 0.2):
        run()
        warm += 1
    times = []
    t_start = time.perf_counter()
    while len(times) < repeats or (len(times) < 200 and time.perf_counter() - t_start < budget_s):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class ForeignLoad:
    """The share of the machine's CPU time used by other processes between start() and stop(): this benchmark
    wants an idle machine, and the number says how far a row's times may be off."""

    @staticmethod
    def _busy_s() -> float:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait

    @staticmethod
    def _own_s() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def start(self) -> None:
        self.t, self.busy, self.own = time.perf_counter(), self._busy_s(), self._own_s()

    def stop(self) -> float:
        wall = time.perf_counter() - self.t
        foreign = (self._busy_s() - self.busy) - (self._own_s() - self.own)
        return max(0.0, foreign / (wall * (os.cpu_count() or 1)))


def min_traffic_bytes(p: Problem) -> int:
    """Compulsory DRAM traffic if nothing were cached: A (index + value per non-zero, indptr), each touched B row
    once, C written once."""
    touched = int(np.unique(p.indices.numpy()).size)
    return 8 * p.nnz + 4 * (p.m + 1) + 4 * p.K * (touched + p.m)


# --------------------------------------------------------------------------------------------------------------------


_PATIENCE_END = math.inf  # set by main(): after this time, no more waiting for idle or re-measuring


def _patience_left() -> float:
    return _PATIENCE_END - time.perf_counter()


def wait_for_idle(max_wait_s: float) -> float:
    """Waits (up to max_wait_s, within the run's --patience) until other processes use < 5% of the CPUs over a
    0.5 s window; returns the last window's share."""
    load = ForeignLoad()
    deadline = time.perf_counter() + max(0.0, min(max_wait_s, _patience_left()))
    while True:
        load.start()
        time.sleep(0.5)
        share = load.stop()
        if share < 0.05 or time.perf_counter() >= deadline:
            return share


def bench_k(K: int, matrices: list, args, ours: Dict[str, Callable]) -> list:
    methods = dict(peer_methods())
    methods.update(ours)
    rng = np.random.default_rng(K)
    rows = []
    for mt in matrices:
        p = make_problem(mt, K, rng)
        assert p.nnz > 0 and torch.count_nonzero(p.values) > 0 and torch.count_nonzero(p.B) > 0, f"{p.name}: zero data"
        ref, scale = reference(p)
        assert np.any(ref != 0), f"{p.name}: all-zero reference"
        row = {"matrix": p.name, "rows": p.m, "cols": p.n, "nnz": p.nnz, "K": K,
               "min_traffic_MB": min_traffic_bytes(p) / 1e6}
        runs = {}
        for name, factory in methods.items():  # check every result before timing anything
            run = factory(p)
            err = check(run(), ref, scale)
            row[f"{name}_err"] = err
            if err <= args.rtol:
                runs[name] = run
            else:
                print(f"  {p.name} K={K} {name}: WRONG RESULT (max scaled error {err:.3g}); not timed", flush=True)
        del ref, scale
        best = None
        for attempt in range(1 + args.retries):  # a busy machine (other processes) distorts times: re-measure
            wait_for_idle(args.wait_idle)
            load = ForeignLoad()
            load.start()
            times = {name: time_runs(run, args.repeats, args.budget) for name, run in runs.items()}
            share = load.stop()
            if best is None or share < best[0]:
                best = (share, times)
            if share * 100 <= args.max_load:
                break
            again = attempt < args.retries and _patience_left() > 0
            print(f"  {p.name} K={K}: other processes used {share:.0%} of the CPUs; "
                  f"{'re-measuring' if again else 'keeping the least loaded attempt'}", file=sys.stderr, flush=True)
            if not again:
                break
        share, times = best
        for name in methods:
            t = times.get(name, math.nan)
            row[f"{name}_ms"] = t * 1e3
            row[f"{name}_gflops"] = p.flops / t / 1e9
        row["other_load_pct"] = 100 * share
        row["base_GBps_min_traffic"] = row["min_traffic_MB"] / 1e3 / (row["base_ms"] / 1e3)
        for name in ours:
            row[f"{name}/base"] = row[f"{name}_ms"] / row["base_ms"]
            row[f"{name}/torch"] = row[f"{name}_ms"] / row["torch_ms"]
        rows.append(row)
        print(f"  done {p.name} K={K}", file=sys.stderr, flush=True)
        del runs
    return rows


def print_table(rows: list, ours: Dict[str, Callable]) -> None:
    names = ["base", "torch", "scipy", *ours]
    head = f"{'matrix':<16}{'rows':>8}{'nnz':>9}{'K':>5}"
    for n in names:
        head += f"{n + ' ms':>12}{'GF/s':>7}"
    for n in ours:
        head += f"{n + '/base':>11}{n + '/torch':>11}"
    head += f"{'base GB/s*':>11}{'load%':>6}"
    print(head)
    print("-" * len(head))
    for r in rows:
        line = f"{r['matrix']:<16}{r['rows']:>8}{r['nnz']:>9}{r['K']:>5}"
        for n in names:
            line += f"{r[n + '_ms']:>12.4f}{r[n + '_gflops']:>7.1f}"
        for n in ours:
            line += f"{r[n + '/base']:>11.1f}{r[n + '/torch']:>11.1f}"
        line += f"{r['base_GBps_min_traffic']:>11.1f}{r['other_load_pct']:>6.0f}"
        print(line)
    print("ms = median time per call; GF/s = 2*nnz*K / time; ours/base, ours/torch = time ratios (>1: ours slower);")
    print("base GB/s* = compulsory bytes (A + touched B rows + C) / base time (an effective rate: B and A may be "
          "cache-resident)")
    print("load% = CPU share used by other processes while the row ran (should be ~0 for trustworthy times)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k", type=int, nargs="+", default=[32, 128], choices=list(SUPPORTED_K))
    parser.add_argument("--matrices", default=".", help="regex on matrix names")
    parser.add_argument("--repeats", type=int, default=10, help="minimum timed runs per method (median reported)")
    parser.add_argument("--budget", type=float, default=0.25, help="seconds of extra timed runs for fast methods")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--max-load", type=float, default=10.0,
                        help="re-measure a matrix if other processes used more than this %% of the CPUs meanwhile")
    parser.add_argument("--retries", type=int, default=2, help="re-measurements per matrix under --max-load")
    parser.add_argument("--wait-idle", type=float, default=20.0,
                        help="seconds to wait at most for an idle machine before timing each matrix")
    parser.add_argument("--patience", type=float, default=120.0,
                        help="total seconds the whole run may spend waiting for idle and re-measuring")
    parser.add_argument("--update-results", action="store_true",
                        help="write the committed benchmarks/results/spmm_<K>.csv instead of a new folder")
    args = parser.parse_args()
    if args.repeats < 10:
        parser.error("--repeats must be >= 10")

    torch.set_num_threads(THREADS)
    t0 = time.perf_counter()
    global _PATIENCE_END
    _PATIENCE_END = t0 + args.patience
    matrices = all_matrices(args.matrices)
    print(f"loaded {len(matrices)} matrices in {time.perf_counter() - t0:.1f} s; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", file=sys.stderr)
    ours = ours_kernels()
    machine = machine_info()
    print(machine_line(machine) + "; expected run time about 1.5 minutes", file=sys.stderr)
    for K in args.k:
        rows = bench_k(K, matrices, args, ours)
        print(f"\nSpMM, K = {K}, float32 CSR; base and torch on {THREADS} threads, scipy and ours as they run")
        print_table(rows, ours)
        path = output_base(f"spmm_{K}", args.update_results) + ".csv"
        rows = [dict(r, **{f"machine_{k}": v for k, v in machine.items()}) for r in rows]
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {os.path.relpath(path)}")
    print(f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
