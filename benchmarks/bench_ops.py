"""The operators torch.ops.sparsetir.* against their PyTorch / SciPy counterparts, float32, CPU:

    spmm_sum    ops.spmm(indptr, indices, values, B)            vs torch.sparse.mm(csr, B) (MKL) and scipy A @ B
    spmm_mean   ops.spmm(..., "mean")                           vs torch.sparse.mm(csr, B, reduce="mean")
    spmm_max    ops.spmm(..., "max")                            vs torch.sparse.mm(csr, B, reduce="amax")
    sddmm       ops.sddmm(indptr, indices, None, X, Y)          vs torch.sparse.sampled_addmm(csr, X, Y.t(), beta=0)
    bsrmm       ops.bsrmm(indptr, indices, blocks, B)           vs dense torch.matmul(A, B) and torch BSR A @ B
                (4096 x 4096, 32 x 32 blocks, block sparsity 80 / 90 / 95 %)
    attention   ops.sparse_attention(indptr, indices, q, k, v)  vs F.scaled_dot_product_attention(q, k, v,
                attn_mask=bool mask); 1 batch x 4 heads, D = 64, L = S = 1024 and 4096, 10 % of each row allowed
                ("rand": random columns; "win+rand": a 64-wide local window plus random columns)
    overhead    per-call time on a tiny matrix (100 x 100, 500 nnz, K = 16): ops.spmm and st.spmm(csr, B) vs
                torch.sparse.mm(csr, B)

Matrices for spmm / sddmm: every ../shared/datasets/*.mtx.gz (pattern matrices get random values in [0.5, 1.5),
loaded with bench_spmm's helpers) plus R-MAT graphs with 2^15 and 2^17 nodes, edge factor 16 (bench_spmm.rmat).

Method: torch on --threads (2) threads; our operators use torch's thread pool (the same threads); scipy is
single-threaded. Every configuration is run once and checked against its peer (loose tolerance, scaled by the
result's magnitude) before anything is timed; a configuration whose result is wrong is reported and not timed. Then
ours and the peers are timed interleaved (round-robin blocks of calls, so that load from other processes hits all of
them alike) after warm-up, until each has >= --min-reps calls and >= --budget seconds (fewer reps, >= 3, for calls
slower than 0.25 s); the median call is reported. ratio = peer time / our time (> 1: ours faster). The load% column
is the CPU share other processes used meanwhile (the machine is shared; high values flag noisy rows).

    python benchmarks/bench_ops.py                       # everything (~10 minutes)
    python benchmarks/bench_ops.py --quick               # a subset (< 2 minutes)
    python benchmarks/bench_ops.py --ops spmm,sddmm --matrices 'rmat|Enron' --k 32 128

Writes benchmarks/results/ops.csv (one row per measurement) and benchmarks/results/ops.png (speedup bars).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
import warnings
from typing import Callable, Dict, List, Optional

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_spmm as spmm_bench  # noqa: E402
from bench_common import apply_isa, machine_info, machine_line, output_base  # noqa: E402
from bench_spmm import ForeignLoad, Matrix, load_datasets, rmat, wait_for_idle  # noqa: E402

RESULTS = os.path.join(HERE, "results")
MACHINE: dict = {}
ALL_OPS = ("spmm", "reduce", "sddmm", "bsrmm", "attention", "overhead")

warnings.filterwarnings("ignore", message=".*[Ss]parse.*")  # torch's beta / invariant-check warnings


def import_st():
    """import sparsetir_torch, retrying while somebody else rebuilds the extension."""
    for attempt in range(6):
        try:
            import sparsetir_torch as st
            return st
        except Exception as e:  # noqa: BLE001
            if attempt == 5:
                raise
            print(f"import sparsetir_torch failed ({e!r}); retrying in 60 s", file=sys.stderr, flush=True)
            time.sleep(60)


st = import_st()
ops = torch.ops.sparsetir


# --------------------------------------------------------------------------------------------------------------------
# Timing


class Timer:
    def __init__(self, budget_s: float, min_reps: int, max_reps: int = 100000, wait_idle_s: float = 10.0,
                 max_load: float = 0.10, retries: int = 2):
        self.budget_s, self.min_reps, self.max_reps = budget_s, min_reps, max_reps
        self.wait_idle_s, self.max_load, self.retries = wait_idle_s, max_load, retries

    def measure_quiet(self, measure: Callable[[], Dict[str, float]], what: str):
        """Runs measure() after waiting (briefly) for the other processes to go quiet; re-measures up to `retries`
        times while they used more than max_load of the CPUs (within the run's patience). Returns the least loaded
        attempt's (times, load share)."""
        best = None
        for attempt in range(1 + self.retries):
            if spmm_bench._patience_left() > 0:
                wait_for_idle(self.wait_idle_s)
            load = ForeignLoad()
            load.start()
            times = measure()
            share = load.stop()
            if best is None or share < best[1]:
                best = (times, share)
            if share <= self.max_load:
                break
            again = attempt < self.retries and spmm_bench._patience_left() > 0
            print(f"  {what}: other processes used {share:.0%} of the CPUs; "
                  f"{'re-measuring' if again else 'keeping the least loaded attempt'}", file=sys.stderr, flush=True)
            if not again:
                break
        return best

    def measure(self, runs: Dict[str, Callable]) -> Dict[str, float]:
        """Median seconds per call of each run, timed interleaved. Each run has already been called once (checked)."""
        est = {}
        for name, run in runs.items():  # warm-up: >= 2 calls, up to 0.1 s or 20 calls
            t_start = time.perf_counter()
            times = []
            while len(times) < 2 or (len(times) < 20 and time.perf_counter() - t_start < 0.1):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
            est[name] = statistics.median(times)
        # blocks of ~10 ms worth of calls, round-robin over the methods
        block = {n: max(1, min(200, int(0.01 / max(t, 1e-7)))) for n, t in est.items()}
        need = {n: (self.min_reps if est[n] < 0.25 else 3) for n in runs}
        samples: Dict[str, List[float]] = {n: [] for n in runs}
        spent = {n: 0.0 for n in runs}
        while True:
            pending = [n for n in runs if len(samples[n]) < self.max_reps
                       and (len(samples[n]) < need[n] or (spent[n] < self.budget_s and est[n] < 0.25))]
            if not pending:
                break
            for n in pending:
                run, s = runs[n], samples[n]
                for _ in range(block[n]):
                    t0 = time.perf_counter()
                    run()
                    dt = time.perf_counter() - t0
                    s.append(dt)
                    spent[n] += dt
        return {n: (statistics.median(s), min(s)) for n, s in samples.items()}


def close(ours: torch.Tensor, ref: torch.Tensor, rtol: float = 1e-3, atol_rel: float = 1e-4) -> Optional[str]:
    """None if ours matches ref loosely (|d| <= atol_rel * max|ref| + rtol * |ref|, elementwise); else a message."""
    ours = torch.as_tensor(ours).to(torch.float64)
    ref = torch.as_tensor(np.asarray(ref) if not isinstance(ref, torch.Tensor) else ref).to(torch.float64)
    if ours.shape != ref.shape:
        return f"shape {tuple(ours.shape)} != {tuple(ref.shape)}"
    if not torch.isfinite(ours).all():
        return "non-finite values"
    if ref.numel() == 0:
        return None
    scale = float(ref.abs().max())
    diff = (ours - ref).abs()
    bad = diff > atol_rel * scale + rtol * ref.abs() + 1e-6
    if bad.any():
        return f"{int(bad.sum())} elements off, max |diff| {float(diff.max()):.3g} (max |ref| {scale:.3g})"
    return None


# --------------------------------------------------------------------------------------------------------------------
# Results


ROWS: List[dict] = []
T_START = time.perf_counter()


def progress(msg: str) -> None:
    print(f"  [{time.perf_counter() - T_START:6.0f} s] {msg}", file=sys.stderr, flush=True)


NAN2 = (math.nan, math.nan)


STREAM_GBS = float("nan")  # the machine's triad bandwidth, measured at start


def stream_triad_gbs(n: int = 1 << 25, reps: int = 7) -> float:
    """STREAM triad a = b + s * c over float32 arrays (128 MiB each) on
    torch's threads: GB/s counting 3 arrays (reads of b, c, the write of a)."""
    b, c, a = torch.rand(n), torch.rand(n), torch.empty(n)
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        torch.add(b, c, alpha=3.0, out=a)
        times.append(time.perf_counter() - t)
    return 3 * 4 * n / min(times[1:]) / 1e9


def record(op: str, matrix: str, K, ours: tuple, times: Dict[str, tuple], load: float, **extra) -> None:
    """ours and times[peer]: (median, min) seconds per call. extra may hold
    flops and bytes (the compulsory traffic: structure, values, each dense
    row once, the output once) for GFLOP/s and the fraction of STREAM."""
    if "flops" in extra and ours[0] == ours[0]:
        extra["ours_gflops"] = extra["flops"] / ours[0] / 1e9
        extra["stream_fraction"] = extra.pop("bytes") / ours[0] / 1e9 / STREAM_GBS
    extra.pop("bytes", None)
    for peer, t in times.items():
        ROWS.append({"op": op, "matrix": matrix, "K": K, "ours_ms": ours[0] * 1e3, "peer": peer, "peer_ms": t[0] * 1e3,
                     "ratio": t[0] / ours[0], "ours_min_ms": ours[1] * 1e3, "peer_min_ms": t[1] * 1e3,
                     "ratio_min": t[1] / ours[1], "load_pct": load * 100, **extra})


def run_config(timer: Timer, op: str, matrix: str, K, ours: Callable, peers: Dict[str, Optional[Callable]],
               check_against: Optional[str], extract: Callable = lambda x: x, **extra) -> None:
    """Checks ours against peers[check_against] (or the result of `check_against` if it is a callable), times
    ours and the peers that ran, and records one row per peer (n/a for peers that failed)."""
    try:
        out = extract(ours())
    except Exception as e:  # noqa: BLE001
        print(f"  {op} {matrix} K={K}: ours FAILED: {e}", flush=True)
        record(op, matrix, K, NAN2, {p: NAN2 for p in peers}, 0.0, note=f"ours failed: {e}", **extra)
        return
    runs = {"ours": ours}
    notes = {}
    for name, fn in peers.items():
        if fn is None:
            notes[name] = "unsupported"
            continue
        try:
            ref = fn()
        except Exception as e:  # noqa: BLE001
            notes[name] = f"peer failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
            print(f"  {op} {matrix} K={K}: {name} n/a ({notes[name]})", flush=True)
            continue
        runs[name] = fn
        if name == check_against:
            msg = close(out, extract(ref) if not isinstance(ref, np.ndarray) else ref)
            if msg is not None:
                print(f"  {op} {matrix} K={K}: WRONG RESULT vs {name}: {msg}; not timed", flush=True)
                record(op, matrix, K, NAN2, {p: NAN2 for p in peers}, 0.0, note=f"wrong: {msg}", **extra)
                return
    del out
    t, share = timer.measure_quiet(lambda: timer.measure(runs), f"{op} {matrix} K={K}")
    for name in peers:
        before = len(ROWS)
        record(op, matrix, K, t["ours"], {name: t.get(name, NAN2)}, share, **extra)
        ROWS[before]["note"] = notes.get(name, "")


# --------------------------------------------------------------------------------------------------------------------
# Problems


def matrices(pattern: str, quick: bool) -> List[Matrix]:
    import re

    rng = np.random.default_rng(0)
    mats = load_datasets(rng) + [rmat(15, 16, rng)] + ([] if quick else [rmat(17, 16, rng)])
    if quick:
        mats = [m for m in mats if m.name in ("cond-mat-2005", "horse-laplacian", "lund_a", "arrow", "rmat15")]
    return [m for m in mats if re.search(pattern, m.name)]


class Csr:
    def __init__(self, mt: Matrix):
        self.name, self.m, self.n = mt.name, mt.shape[0], mt.shape[1]
        self.indptr = torch.from_numpy(mt.indptr.astype(np.int32))
        self.indices = torch.from_numpy(mt.indices.astype(np.int32))
        self.values = torch.from_numpy(mt.values.astype(np.float32))
        self.torch = torch.sparse_csr_tensor(self.indptr, self.indices, self.values, (self.m, self.n))
        self.scipy = sp.csr_matrix((self.values.numpy(), self.indices.numpy(), self.indptr.numpy()),
                                   shape=(self.m, self.n))
        self.nnz = int(self.indices.numel())


BASELINES: Dict[str, Callable] = {}  # op -> the hand-written kernel at our level (benchmarks/baseline)


def load_baselines(threads: int) -> None:
    """The hand-written intrinsics kernels (benchmarks/baseline) of the level
    our kernels are built for, where one exists and this CPU runs it."""
    from baseline.build import available_isas, load_baseline

    isa = MACHINE.get("isa", "").split(":")[-1].split("+")[0]
    if isa not in available_isas():
        print(f"no hand-written baseline for {isa or 'this level'} on this CPU", file=sys.stderr)
        return
    for op in ("spmm", "sddmm"):
        fn = load_baseline(op, isa)
        BASELINES[op] = (lambda fn: lambda *args: fn(*args, num_threads=threads))(fn)
        BASELINES[op].label = f"{op}_{isa} (hand-written)"


def baseline_spmm(A, B, K):
    if "spmm" not in BASELINES or K not in (32, 64, 128, 256):
        return {}
    C = torch.empty(A.m, K)
    return {BASELINES["spmm"].label: lambda: (BASELINES["spmm"](A.indptr, A.indices, A.values, B, C), C)[1]}


def baseline_sddmm(A, X, Y, K):
    if "sddmm" not in BASELINES or K not in (32, 64, 128, 256):
        return {}
    ones, out = torch.ones(A.nnz), torch.empty(A.nnz)
    return {BASELINES["sddmm"].label: lambda: (BASELINES["sddmm"](A.indptr, A.indices, ones, X, Y, out), out)[1]}


def bench_spmm(timer: Timer, mats: List[Matrix], ks, reduce_ops: bool, sum_op: bool) -> None:
    for mt in mats:
        A = Csr(mt)
        for K in ks:
            g = torch.Generator().manual_seed(K)
            B = torch.rand(A.n, K, generator=g) * 2 - 1
            Bn = B.numpy()
            if sum_op:
                run_config(timer, "spmm_sum", A.name, K,
                           lambda: ops.spmm(A.indptr, A.indices, A.values, B),
                           {"torch.sparse.mm": lambda: torch.sparse.mm(A.torch, B), "scipy": lambda: A.scipy @ Bn,
                            **baseline_spmm(A, B, K)},
                           "torch.sparse.mm", nnz=A.nnz, flops=2 * A.nnz * K,
                           bytes=8 * A.nnz + 4 * (A.m + 1) + 4 * K * (A.n + A.m))
            if reduce_ops:
                for ours_r, torch_r in (("mean", "mean"), ("max", "amax")):
                    run_config(timer, f"spmm_{ours_r}", A.name, K,
                               lambda r=ours_r: ops.spmm(A.indptr, A.indices, A.values, B, r),
                               {f"torch.sparse.mm({torch_r})": lambda r=torch_r: torch.sparse.mm(A.torch, B, reduce=r)},
                               f"torch.sparse.mm({torch_r})", nnz=A.nnz)
            progress(f"spmm {A.name} K={K} done")
            del B, Bn


def bench_sddmm(timer: Timer, mats: List[Matrix], ks) -> None:
    for mt in mats:
        A = Csr(mt)
        for K in ks:
            g = torch.Generator().manual_seed(1000 + K)
            X = torch.rand(A.m, K, generator=g) * 2 - 1
            Y = torch.rand(A.n, K, generator=g) * 2 - 1
            Yt = Y.t()
            run_config(timer, "sddmm", A.name, K,
                       lambda: ops.sddmm(A.indptr, A.indices, None, X, Y),
                       {"sampled_addmm": lambda: torch.sparse.sampled_addmm(A.torch, X, Yt, beta=0.0, alpha=1.0),
                        **baseline_sddmm(A, X, Y, K)},
                       "sampled_addmm", extract=lambda r: r.values() if r.layout == torch.sparse_csr else r,
                       nnz=A.nnz, flops=2 * A.nnz * K, bytes=8 * A.nnz + 4 * (A.m + 1) + 4 * K * (A.n + A.m))
            progress(f"sddmm {A.name} K={K} done")


def block_sparse(n: int, block: int, sparsity: float, g: torch.Generator):
    nb = n // block
    keep = torch.rand(nb, nb, generator=g) >= sparsity
    keep[torch.arange(nb), torch.randint(0, nb, (nb,), generator=g)] = True  # no empty block row
    crow = torch.zeros(nb + 1, dtype=torch.int64)
    crow[1:] = keep.sum(1).cumsum(0)
    col = keep.nonzero()[:, 1].contiguous()
    blocks = torch.rand(col.numel(), block, block, generator=g) * 2 - 1
    return crow, col, blocks


def bench_bsrmm(timer: Timer, sparsities, ks, n: int = 4096, block: int = 32) -> None:
    for s in sparsities:
        g = torch.Generator().manual_seed(int(s * 100))
        crow, col, blocks = block_sparse(n, block, s, g)
        bsr = torch.sparse_bsr_tensor(crow, col, blocks, (n, n))
        dense = bsr.to_dense()
        crow32, col32 = crow.to(torch.int32), col.to(torch.int32)
        actual = 1 - col.numel() / (n // block) ** 2
        name = f"{n}x{n}_b{block}_s{round(s * 100)}"
        for K in ks:
            B = torch.rand(n, K, generator=g) * 2 - 1
            run_config(timer, "bsrmm", name, K, lambda: ops.bsrmm(crow32, col32, blocks, B),
                       {"dense matmul": lambda: torch.matmul(dense, B), "torch BSR": lambda: bsr @ B},
                       "dense matmul", nnz=col.numel() * block * block, block_sparsity=round(actual, 4))
            progress(f"bsrmm {name} K={K} done")


def attention_pattern(L: int, S: int, density: float, window: int, g: torch.Generator):
    per_row = max(1, round(density * S))
    score = torch.rand(L, S, generator=g)
    if window:
        i = torch.arange(L).unsqueeze(1)
        j = torch.arange(S).unsqueeze(0)
        score = score + ((j - i * S // L).abs() <= window // 2).float() * 2  # window entries first
    top = score.topk(per_row, dim=1).indices.sort(dim=1).values
    mask = torch.zeros(L, S, dtype=torch.bool)
    mask.scatter_(1, top, True)
    indptr = torch.arange(0, L * per_row + 1, per_row, dtype=torch.int32)
    return indptr, top.reshape(-1).to(torch.int32).contiguous(), mask


def bench_attention(timer: Timer, lengths, heads: int = 4, D: int = 64, density: float = 0.1) -> None:
    for L in lengths:
        for window in (0, 64):
            g = torch.Generator().manual_seed(L + window)
            indptr, indices, mask = attention_pattern(L, L, density, window, g)
            q, k, v = (torch.randn(1, heads, L, D, generator=g) for _ in range(3))
            name = f"L{L}_h{heads}_{'win+rand' if window else 'rand'}{round(density * 100)}"
            run_config(timer, "attention", name, D, lambda: ops.sparse_attention(indptr, indices, q, k, v),
                       {"sdpa(bool mask)": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)},
                       "sdpa(bool mask)", nnz=indices.numel() * heads)
            progress(f"attention {name} done")


def bench_overhead(timer: Timer, calls: int) -> None:
    g = torch.Generator().manual_seed(7)
    m = n = 100
    flat = torch.randperm(m * n, generator=g)[:500].sort().values
    rows, cols = flat // n, flat % n
    indptr = torch.zeros(m + 1, dtype=torch.int32)
    indptr[1:] = torch.bincount(rows, minlength=m).cumsum(0)
    indices = cols.to(torch.int32)
    values = torch.rand(500, generator=g)
    csr = torch.sparse_csr_tensor(indptr, indices, values, (m, n))
    handle = st.SparseMatrix(indptr, indices, values, (m, n))
    B = torch.rand(n, 16, generator=g)
    ref = torch.sparse.mm(csr, B)
    runs = {"ops.spmm": lambda: ops.spmm(indptr, indices, values, B),
            "st.spmm(csr)": lambda: st.spmm(csr, B),
            "st.spmm(SparseMatrix)": lambda: st.spmm(handle, B),
            "torch.sparse.mm": lambda: torch.sparse.mm(csr, B),
            "empty call (loop)": lambda: None}
    for name, run in runs.items():
        msg = close(run(), ref) if name != "empty call (loop)" else None
        if msg:
            print(f"  overhead {name}: WRONG RESULT: {msg}", flush=True)
            return
    for run in runs.values():  # warm-up
        for _ in range(200):
            run()

    def measure():
        samples: Dict[str, List[float]] = {n_: [] for n_ in runs}
        per_block = 50
        for _ in range(max(1, calls // per_block)):  # interleaved blocks of 50 calls
            for name, run in runs.items():
                s = samples[name]
                for _ in range(per_block):
                    t0 = time.perf_counter()
                    run()
                    s.append(time.perf_counter() - t0)
        return {n_: (statistics.median(s), min(s)) for n_, s in samples.items()}

    med, share = timer.measure_quiet(measure, "overhead")
    peer = med["torch.sparse.mm"]
    for name in ("ops.spmm", "st.spmm(csr)", "st.spmm(SparseMatrix)"):
        record("overhead", "tiny100x100_nnz500", 16, med[name], {"torch.sparse.mm": peer}, share,
               variant=name, nnz=500, note=f"timer loop alone {med['empty call (loop)'][0] * 1e6:.2f} us")


# --------------------------------------------------------------------------------------------------------------------
# Reporting


def geomean(xs):
    xs = [x for x in xs if x == x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def op_key(r):
    return r["op"] + (f" [{r['variant']}]" if r.get("variant") else "")


def print_tables() -> None:
    ops_seen = list(dict.fromkeys(op_key(r) for r in ROWS))
    for op in ops_seen:
        rows = [r for r in ROWS if op_key(r) == op]
        print(f"\n== {op} ==  (ms = median per call; ratio = peer / ours, > 1 means ours is faster)")
        head = (f"{'matrix':<22}{'nnz':>10}{'K':>5}{'ours ms':>11}  {'peer':<26}{'peer ms':>11}{'ratio':>8}"
                f"{'r(min)':>8}{'load%':>6}{'GFLOP/s':>9}{'%STREAM':>8}")
        print(head)
        print("-" * len(head))
        for r in rows:
            us = op == "overhead" or op.startswith("overhead")
            fmt = (lambda x: f"{x * 1e3:>8.2f}us") if us else (lambda x: f"{x:>11.4f}")
            line = (f"{r['matrix']:<22}{r.get('nnz', ''):>10}{str(r['K']):>5}{fmt(r['ours_ms'])}  {r['peer']:<26}"
                    f"{fmt(r['peer_ms'])}{r['ratio']:>8.2f}{r['ratio_min']:>8.2f}{r['load_pct']:>6.0f}"
                    + (f"{r['ours_gflops']:>9.1f}{100 * r['stream_fraction']:>8.0f}" if "ours_gflops" in r else ""))
            if r.get("note"):
                line += f"  ({r['note']})"
            print(line)


MAX_LOAD_PCT = 10.0  # rows above it are "loaded" (set from --max-load)


def idle_gm(rows) -> str:
    idle = [r["ratio"] for r in rows if r["load_pct"] <= MAX_LOAD_PCT and r["ratio"] == r["ratio"]]
    return f"{geomean(idle):.2f}/{len(idle)}" if idle else "-"


def summarize() -> List[str]:
    out = ["", "== summary: geometric-mean ratio (peer / ours, medians) and worst case, per op, peer and K; "
           "gm(min) = the geomean of the ratios of the fastest calls (less sensitive to other processes); "
           "gm(idle)/n = the geomean over the n rows measured with load% <= --max-load only =="]
    groups: Dict[tuple, list] = {}
    for r in ROWS:
        groups.setdefault((op_key(r), r["peer"], r["K"]), []).append(r)
    head = f"{'op':<34}{'peer':<26}{'K':>5}{'n':>4}{'geomean':>9}{'worst':>8}{'gm(min)':>9}{'gm(idle)/n':>12}  worst case"
    out += [head, "-" * len(head)]
    for (op, peer, K), rows in groups.items():
        ok = [r for r in rows if r["ratio"] == r["ratio"]]
        if not ok:
            out.append(f"{op:<34}{peer:<26}{str(K):>5}{0:>4}{'n/a':>9}")
            continue
        w = min(ok, key=lambda r: r["ratio"])
        out.append(f"{op:<34}{peer:<26}{str(K):>5}{len(ok):>4}{geomean([r['ratio'] for r in ok]):>9.2f}"
                   f"{w['ratio']:>8.2f}{geomean([r['ratio_min'] for r in ok]):>9.2f}{idle_gm(ok):>12}  {w['matrix']}")
    # over all K
    out.append("")
    allk: Dict[tuple, list] = {}
    for r in ROWS:
        if r["ratio"] == r["ratio"]:
            allk.setdefault((op_key(r), r["peer"]), []).append(r)
    for (op, peer), rows in allk.items():
        w = min(rows, key=lambda r: r["ratio"])
        slower = sum(r["ratio"] < 1 for r in rows)
        out.append(f"{op:<34}{peer:<26}{'all':>5}{len(rows):>4}{geomean([r['ratio'] for r in rows]):>9.2f}"
                   f"{w['ratio']:>8.2f}{geomean([r['ratio_min'] for r in rows]):>9.2f}{idle_gm(rows):>12}  {w['matrix']} K={w['K']}; "
                   f"ours slower in {slower}/{len(rows)}")
    return out


def targets() -> List[str]:
    def sel(op, peer=None, pred=lambda r: True):
        return [r for r in ROWS if r["op"] == op and (peer is None or r["peer"] == peer)
                and r["ratio"] == r["ratio"] and pred(r)]

    def verdict(ok):
        return "MET" if ok else "NOT MET"

    out = ["", "== project targets =="]
    rs = sel("spmm_sum", "torch.sparse.mm")
    if rs:
        gm, worst = geomean([r["ratio"] for r in rs]), min(rs, key=lambda r: r["ratio"])
        out.append(f"SpMM sum >= 2x torch.sparse.mm by geomean, slower on no matrix: geomean {gm:.2f}, worst "
                   f"{worst['ratio']:.2f} ({worst['matrix']} K={worst['K']}) -> {verdict(gm >= 2 and worst['ratio'] >= 1)}")
    for red, peer in (("mean", "torch.sparse.mm(mean)"), ("max", "torch.sparse.mm(amax)")):
        rs = sel(f"spmm_{red}", peer)
        if rs:
            gm = geomean([r["ratio"] for r in rs])
            out.append(f"SpMM {red} >= 2x {peer} (geomean): {gm:.2f} -> {verdict(gm >= 2)}")
    rs = sel("sddmm", "sampled_addmm")
    if rs:
        gm = geomean([r["ratio"] for r in rs])
        out.append(f"SDDMM >= 2x sampled_addmm (geomean): {gm:.2f} -> {verdict(gm >= 2)}")
    for op, name in (("spmm_sum", "spmm"), ("sddmm", "sddmm")):
        rs = [r for r in sel(op) if r["peer"].endswith("(hand-written)")]
        if rs:
            gm, worst = geomean([r["ratio"] for r in rs]), min(rs, key=lambda r: r["ratio"])
            out.append(f"{name} >= 0.9x the hand-written {rs[0]['peer'].split()[0]} (geomean): {gm:.2f}, worst "
                       f"{worst['ratio']:.2f} ({worst['matrix']} K={worst['K']}) -> {verdict(gm >= 0.9)}")
    rs = sel("bsrmm", "dense matmul")
    if rs:
        worst = min(r["ratio"] for r in rs)
        out.append(f"bsrmm faster than dense matmul at >= 80% block sparsity, 32x32 (every config): worst {worst:.2f} "
                   f"-> {verdict(worst > 1)}")
    rs = sel("bsrmm", "torch BSR")
    if rs:
        gm, worst = geomean([r["ratio"] for r in rs]), min(r["ratio"] for r in rs)
        out.append(f"bsrmm >= 1.5x torch BSR: geomean {gm:.2f}, worst {worst:.2f} -> {verdict(worst >= 1.5)} "
                   f"(every config), {verdict(gm >= 1.5)} (geomean)")
    elif sel("bsrmm"):
        out.append("bsrmm vs torch BSR: n/a (torch BSR matmul did not run)")
    rs = sel("attention", pred=lambda r: r["matrix"].startswith("L4096"))
    if rs:
        worst = min(r["ratio"] for r in rs)
        out.append(f"sparse_attention L=4096 10% >= 3x SDPA(bool mask): " +
                   ", ".join(f"{r['matrix']} {r['ratio']:.2f}" for r in rs) + f" -> {verdict(worst >= 3)}")
    rs = [r for r in ROWS if r["op"] == "overhead"]
    for r in rs:
        us = r["ours_ms"] * 1e3
        out.append(f"per-call overhead <= 20 us: {r['variant']} {us:.2f} us (torch.sparse.mm {r['peer_ms'] * 1e3:.2f} us)"
                   f" -> {verdict(us <= 20)}")
    return out


def write_csv(path: str) -> None:
    fields = ["op", "matrix", "K", "ours_ms", "peer", "peer_ms", "ratio", "variant", "nnz", "block_sparsity",
              "ours_min_ms", "peer_min_ms", "ratio_min", "load_pct", "ours_gflops", "stream_fraction", "note"] + [f"machine_{k}" for k in MACHINE]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in ROWS:
            row = {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}
            row.update({f"machine_{k}": v for k, v in MACHINE.items()})
            w.writerow(row)


def plot(path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)", file=sys.stderr)
        return False
    ops_seen = list(dict.fromkeys(op_key(r) for r in ROWS if r["op"] != "overhead"))
    ov = [r for r in ROWS if r["op"] == "overhead"]
    panels = ops_seen + (["overhead"] if ov else [])
    if not panels:
        return False
    fig, axes = plt.subplots(len(panels), 1, figsize=(16, 3.6 * len(panels)), squeeze=False)
    for ax, op in zip(axes[:, 0], panels):
        rows = ov if op == "overhead" else [r for r in ROWS if op_key(r) == op]
        groups = list(dict.fromkeys(r["matrix"] if op != "overhead" else r["variant"] for r in rows))
        series = list(dict.fromkeys((r["peer"], r["K"]) for r in rows))
        width = 0.8 / max(1, len(series))
        all_y: List[float] = []
        cmap = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
        for si, (peer, K) in enumerate(series):
            xs, ys, loaded = [], [], []
            for gi, gname in enumerate(groups):
                for r in rows:
                    key = r["matrix"] if op != "overhead" else r["variant"]
                    if key == gname and r["peer"] == peer and r["K"] == K and r["ratio"] == r["ratio"]:
                        xs.append(gi - 0.4 + width * (si + 0.5))
                        ys.append(r["ratio"])
                        loaded.append(r["load_pct"] > MAX_LOAD_PCT)
            bars = ax.bar(xs, ys, width, label=f"vs {peer}, K={K}", color=cmap(si % cmap.N))
            for bar, is_loaded in zip(bars, loaded):
                if is_loaded:  # measured while other processes used the CPUs: less reliable
                    bar.set_hatch("//")
                    bar.set_alpha(0.5)
            ax.bar_label(bars, labels=[f"{y:.2f}" for y in ys], fontsize=6, rotation=90, padding=2)
            all_y.extend(ys)
        ax.axhline(1.0, color="black", linewidth=1.2)
        ax.text(1.0, 1.0, " 1.0 = as fast as the peer", transform=ax.get_yaxis_transform(), fontsize=7,
                va="bottom", ha="right")
        if all_y:
            ax.set_ylim(0, max(1.5, max(all_y) * 1.25))
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=15, fontsize=8)
        ax.set_ylabel("speedup (peer time / ours)")
        title = op if op != "overhead" else "per-call overhead, tiny SpMM (torch.sparse.mm time / ours)"
        ax.set_title(f"{title} - {MACHINE.get('cpu', '')}, kernels for {MACHINE.get('isa', '')}, "
                     f"{MACHINE.get('threads', '')} threads (hatched: measured under load)", fontsize=9)
        ax.legend(fontsize=7, ncol=min(4, len(series)), loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", default=",".join(ALL_OPS),
                        help=f"comma-separated subset of {','.join(ALL_OPS)} (reduce = spmm mean and max)")
    parser.add_argument("--quick", action="store_true", help="a subset of matrices and sizes (< 2 minutes)")
    parser.add_argument("--matrices", default=".", help="regex on matrix names (spmm, reduce, sddmm)")
    parser.add_argument("--k", type=int, nargs="+", default=None, help="K for spmm / sddmm (default 32 64 128 256)")
    parser.add_argument("--budget", type=float, default=None, help="seconds of timed calls per method and config")
    parser.add_argument("--min-reps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-load", type=float, default=10.0,
                        help="re-measure a configuration if other processes used more than this %% of the CPUs")
    parser.add_argument("--retries", type=int, default=2, help="re-measurements per configuration under --max-load")
    parser.add_argument("--wait-idle", type=float, default=10.0,
                        help="seconds to wait at most for an idle machine before timing each configuration")
    parser.add_argument("--patience", type=float, default=None,
                        help="total seconds the run may spend waiting for idle and re-measuring "
                             "(default 240, 40 with --quick)")
    parser.add_argument("--isa", default=None,
                        help="build our kernels for this CPU level (generic, avx2, avx512, ...; default: this CPU's) "
                             "and restrict MKL and torch's own kernels to the same level "
                             "(MKL_ENABLE_INSTRUCTIONS, ATEN_CPU_CAPABILITY)")
    parser.add_argument("--out", default=None, help="output path without extension "
                        "(default: a new folder benchmarks/results/runs/<date-time>/ops)")
    parser.add_argument("--update-results", action="store_true",
                        help="write the committed benchmarks/results/ops.{csv,png} instead of a new folder")
    args = parser.parse_args()
    apply_isa(args.isa)
    args.out = output_base("ops", args.update_results, args.out)
    wanted = [o.strip() for o in args.ops.split(",") if o.strip()]
    bad = [o for o in wanted if o not in ALL_OPS]
    if bad:
        parser.error(f"unknown ops {bad}; choose from {ALL_OPS}")

    torch.set_num_threads(args.threads)
    t0 = T_START
    ks = args.k or ([32, 128] if args.quick else [32, 64, 128, 256])
    budget = args.budget if args.budget is not None else (0.1 if args.quick else 0.2)
    timer = Timer(budget, args.min_reps, wait_idle_s=args.wait_idle, max_load=args.max_load / 100,
                  retries=args.retries)
    patience = args.patience if args.patience is not None else (40.0 if args.quick else 240.0)
    spmm_bench._PATIENCE_END = t0 + patience
    so = st._C.__file__
    global MACHINE
    MACHINE = machine_info()
    global STREAM_GBS
    STREAM_GBS = stream_triad_gbs()
    MACHINE["stream_triad_gbs"] = round(STREAM_GBS, 1)
    print(machine_line(MACHINE) + f"; STREAM triad {STREAM_GBS:.1f} GB/s", file=sys.stderr, flush=True)
    load_baselines(args.threads)
    print(f"expected run time: about {2 if args.quick else 10} minutes", file=sys.stderr, flush=True)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; ops {wanted}; K {ks}; "
          f"budget {budget} s, min reps {args.min_reps}; extension {os.path.basename(so)} built "
          f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(os.path.getmtime(so)))}", file=sys.stderr, flush=True)

    if {"spmm", "reduce", "sddmm"} & set(wanted):
        mats = matrices(args.matrices, args.quick)
        print(f"{len(mats)} matrices: {', '.join(m.name for m in mats)} "
              f"({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
        if "spmm" in wanted or "reduce" in wanted:
            bench_spmm(timer, mats, ks, "reduce" in wanted, "spmm" in wanted)
        if "sddmm" in wanted:
            bench_sddmm(timer, mats, ks)
        del mats
    if "bsrmm" in wanted:
        bench_bsrmm(timer, [0.9] if args.quick else [0.8, 0.9, 0.95], [64] if args.quick else [64, 256])
    if "attention" in wanted:
        bench_attention(timer, [1024] if args.quick else [1024, 4096])
    if "overhead" in wanted:
        bench_overhead(timer, 500 if args.quick else 2000)

    global MAX_LOAD_PCT
    MAX_LOAD_PCT = args.max_load
    print_tables()
    loaded = [r for r in ROWS if r["load_pct"] > args.max_load]
    lines = summarize() + targets()
    if loaded:
        lines.append(f"\nNOTE: {len(loaded)} of {len(ROWS)} rows ran while other processes used more than "
                     f"{args.max_load:.0f}% of the CPUs (load% column): their times are inflated (2-thread parallel "
                     f"regions wait for a descheduled thread, often in steps of the ~4 ms scheduler tick) and their "
                     f"ratios are unreliable; the r(min) / gm(min) columns are less affected.")
    print("\n".join(lines))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_csv(args.out + ".csv")
    print(f"\nwrote {os.path.relpath(args.out + '.csv')}")
    if plot(args.out + ".png"):
        print(f"wrote {os.path.relpath(args.out + '.png')}")
    print(f"total {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
