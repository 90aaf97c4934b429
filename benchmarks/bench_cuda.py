"""CUDA peers: torch's own CUDA implementations of our operators, the times a sparsetir CUDA backend must beat.

    spmm       torch.sparse.mm(A_csr, B) (cuSPARSE)                 every --datasets matrix plus R-MAT graphs with
                                                                    2^16, 2^18 and 2^20 nodes; K = 32, 64, 128, 256,
                                                                    512; float32 and float16
    sddmm      torch.sparse.sampled_addmm(A_csr, X, Y.T, beta=0)    the same matrices; K = 32 and 128; float32
    bsrmm      torch BSR A_bsr @ B (A.to_sparse_bsr((32, 32)))      4096 x 4096, 32 x 32 blocks, block sparsity
               and dense torch.matmul(A_dense, B) (cuBLAS)          80 / 90 / 95 %; K = 64 and 256; float32, float16
    bsr_linear dense F.linear(x, W) (cuBLAS) and torch BSR          a pruned Linear layer x @ W^T: W 4096 x 4096,
               (W_bsr @ x^T)^T                                      the blocks and sparsities of bsrmm; batch 256
                                                                    and 2048; float32, float16
    attention  F.scaled_dot_product_attention(q, k, v,              batch 1, 4 heads, D = 64, L = S = 1024 and 4096,
               attn_mask=bool mask) and FlexAttention               10 % of each row allowed ("rand": random columns;
               (torch.compile'd flex_attention, block mask from     "win+rand": a 64-wide local window plus random
               create_block_mask reading the same bool mask)        columns); float16 and float32
    attention_train  the same forward and its backward (dq, dk, dv  batch 1, 4 heads, D = 64, L = 1024 and 4096,
               for an upstream gradient) against SDPA's             random columns; float16 and float32

Ours: if `import sparsetir_torch` works and torch.ops.sparsetir.spmm accepts CUDA tensors (one tiny call), our
operators are checked and timed the same way and ratio = peer time / our time (> 1: ours faster). Otherwise the
script prints "sparsetir CUDA ops: not available (<reason>); peers only" and leaves the ours / ratio columns empty.

Matrices: every *.mtx / *.mtx.gz in --datasets, read by the small Matrix Market reader below (scipy.io.mmread when
scipy imports); malformed files (wrong.mtx) are reported and skipped. Pattern matrices get random values in
[0.5, 1.5); real matrices are scaled to max |value| = 1, so that float16 cannot overflow. R-MAT: a = 0.57,
b = c = 0.19, edge factor 16, Graph500-style random relabelling, numpy seed 0, duplicates removed, CSR sorted.
Indices are int32. Dense operands are uniform in [-1, 1) (attention: standard normal); never all-zero data.

Checking: every case is run once and compared with a float64 reference computed by torch on the GPU from the same
(rounded) inputs: index_add over the non-zeros for spmm, gathered dot products for sddmm, dense matmul for bsrmm,
a dense masked softmax for attention. An element passes if |out - ref| <= tol * (mag + 1e-3 * max(mag)), where mag is
the same computation on absolute values (|A| @ |B|, ...), the scale of the rounding error; tol = 1e-4 for float32
and 1e-2 for float16 (attention 2e-3 / 2e-2). A wrong (or non-finite) result is reported and not timed.

Timing: CUDA events. 5 warm-up calls, then each call is timed on its own between two events, with the L2 cache
flushed (a 256 MiB memset, outside the events) before it, so the time is GPU time from a cold L2; calls are repeated
until >= 20 calls and >= --budget seconds (0.2, at most 500 calls); the median is reported. A call whose warm-up
estimate is under 10 us is timed instead in batches of back-to-back calls (warm L2, >= 20 batches, median batch
time / calls per batch), where the host's launch overhead counts when it exceeds the GPU time. The CSV's timing
column says which. --warm-l2 skips the flush.

Bandwidth (spmm, sddmm, bsrmm): bytes = nnz * (index + value bytes) + rows * K * elem + cols * K * elem, the lower
bound of docs' ARCHITECTURE.md (indices and values read once, the output written once, B (sddmm: X and Y) read once;
bsrmm counts stored block entries as nnz and one index per block). Attention rows have K = D and nnz = allowed
entries x heads, and no bandwidth figure. GB/s = bytes / median time; frac_peak = GB/s / the
device's peak: 2 x memory clock x bus width from torch.cuda.get_device_properties when torch exposes them, else
--peak-gbps (3350, H100 SXM HBM3). A value above 1 means the data stayed in L2 (tiny matrices).

    python benchmarks/bench_cuda.py --datasets /path/to/datasets      # everything (< 6 minutes on an H100)
    python benchmarks/bench_cuda.py --quick                            # a subset (< 1 minute)
    python benchmarks/bench_cuda.py --ops spmm,sddmm --k 32 128 --matrices 'rmat|Enron'

Writes DIR/bench_cuda.csv (one row per measurement, each with the device, torch and CUDA versions), DIR/report.txt
(the printed tables) and DIR/bench_cuda.png if matplotlib imports; DIR = --out, or a new
benchmarks/results/cuda-<timestamp>/. An existing bench_cuda.csv is never overwritten. Without a CUDA device the
script prints "no CUDA device: nothing to time" and exits 0.
"""
from __future__ import annotations

import argparse
import csv
import datetime
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
from typing import Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
ALL_OPS = ("spmm", "sddmm", "bsrmm", "bsr_linear", "attention", "attention_train")
DTYPES = {"float32": torch.float32, "float16": torch.float16}
TOL = {torch.float32: 1e-4, torch.float16: 1e-2}
ATTENTION_TOL = {torch.float32: 2e-3, torch.float16: 2e-2}
INDEX_BYTES = 4  # int32 indices throughout
DEVICE = "cuda"  # where the cases' data lives (a CPU smoke test of this script's logic may set "cpu")

WARMUP_CALLS = 5
MIN_REPS = 20
MAX_REPS = 500
BATCH_BELOW_S = 10e-6    # calls faster than this are timed in batches (event resolution is ~0.5 us)
FLUSH_BYTES = 256 << 20  # > 5x the H100's 50 MB L2

warnings.filterwarnings("ignore", message=".*[Ss]parse.*")  # torch's beta / invariant-check warnings


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def short(e: BaseException, limit: int = 160) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {(lines[0] if lines else '')[:limit]}"


# --------------------------------------------------------------------------------------------------------------------
# Matrices: a Matrix Market reader (no sparsetir_torch import: its extension may not be built where this runs) and
# R-MAT generation, both giving sorted, duplicate-free CSR in numpy.


class MatrixMarketError(ValueError):
    pass


@dataclass
class Matrix:
    name: str
    indptr: np.ndarray   # int64, rows + 1
    indices: np.ndarray  # int64, nnz
    values: np.ndarray   # float64, nnz
    shape: Tuple[int, int]


def _open_text(path: str):
    return gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")


def read_mm_field(path: str) -> str:
    """The field ('pattern', 'real' or 'integer') of a coordinate general Matrix Market file; raises otherwise."""
    with _open_text(path) as f:
        parts = f.readline().lower().split()
    if len(parts) != 5 or parts[0] != "%%matrixmarket" or parts[1] != "matrix":
        raise MatrixMarketError("no '%%MatrixMarket matrix' header")
    if parts[2] != "coordinate" or parts[4] != "general":
        raise MatrixMarketError(f"only 'coordinate ... general' is read, not {parts[2]} {parts[4]}")
    if parts[3] not in ("pattern", "real", "integer"):
        raise MatrixMarketError(f"unsupported field {parts[3]!r}")
    return parts[3]


def _read_coo_scipy(path: str):
    import scipy.io

    coo = scipy.io.mmread(path).tocoo()  # opens .gz itself
    return coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data.astype(np.float64), coo.shape


def _read_coo_numpy(path: str, field: str):
    with _open_text(path) as f:
        f.readline()
        line = f.readline()
        while line and (line.startswith("%") or not line.strip()):
            line = f.readline()
        size = line.split()
        if len(size) != 3:
            raise MatrixMarketError(f"bad size line {line.strip()!r}")
        m, n, nnz = (int(t) for t in size)
        tokens = f.read().split()
    per = 2 if field == "pattern" else 3
    if len(tokens) != nnz * per:
        raise MatrixMarketError(f"{len(tokens)} numbers after the size line, expected {nnz} entries of {per}")
    a = np.array(tokens, dtype=np.float64).reshape(nnz, per)
    if not np.array_equal(a[:, :2], np.floor(a[:, :2])):
        raise MatrixMarketError("non-integer index")
    values = a[:, 2] if per == 3 else np.ones(nnz)
    return a[:, 0].astype(np.int64) - 1, a[:, 1].astype(np.int64) - 1, values, (m, n)


def csr_from_coo(name: str, rows, cols, values, shape) -> Matrix:
    """Sorted by (row, column); duplicates summed (Matrix Market's rule; R-MAT callers pass values after dedup)."""
    m, n = shape
    keys = rows * n + cols
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(first)
    vals = np.add.reduceat(values[order], starts) if keys.size else values[:0]
    keys = keys[starts]
    r, c = keys // n, keys % n
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
    return Matrix(name, indptr, c, vals.astype(np.float64), (m, n))


def read_matrix_market(path: str, rng: np.random.Generator) -> Matrix:
    """A validated CSR matrix: 1-based indices in range; pattern matrices get values in [0.5, 1.5), real ones are
    scaled to max |value| = 1 (float16 must not overflow; the values do not change the work)."""
    field = read_mm_field(path)
    try:
        import scipy.io  # noqa: F401
        have_scipy = True
    except ImportError:
        have_scipy = False
    try:
        rows, cols, values, shape = _read_coo_scipy(path) if have_scipy else _read_coo_numpy(path, field)
    except MatrixMarketError:
        raise
    except Exception as e:  # noqa: BLE001  (scipy reports a bad file as ValueError and friends)
        raise MatrixMarketError(short(e)) from e
    m, n = (int(s) for s in shape)
    for what, idx, size in (("row", rows, m), ("column", cols, n)):
        if idx.size and (idx.min() < 0 or idx.max() >= size):
            raise MatrixMarketError(f"{what} index out of range 1..{size}")
    name = re.sub(r"\.mtx(\.gz)?$", "", os.path.basename(path))
    if field == "pattern":
        values = rng.uniform(0.5, 1.5, size=rows.size)
    else:
        top = float(np.abs(values).max()) if values.size else 0.0
        values = values / top if top > 0 else rng.uniform(0.5, 1.5, size=rows.size)
    return csr_from_coo(name, rows, cols, values, (m, n))


def load_datasets(folder: Optional[str], wanted: Callable[[str], bool]) -> List[Matrix]:
    """Every *.mtx / *.mtx.gz in folder whose name (without the extension) is wanted; bad files are skipped."""
    if not folder:
        return []
    paths = sorted(set(glob.glob(os.path.join(folder, "*.mtx.gz")) + glob.glob(os.path.join(folder, "*.mtx"))))
    out = []
    for path in paths:
        base = os.path.basename(path)
        if not wanted(re.sub(r"\.mtx(\.gz)?$", "", base)):
            continue
        t0 = time.perf_counter()
        try:
            mt = read_matrix_market(path, np.random.default_rng(0))
        except (MatrixMarketError, OSError, UnicodeDecodeError) as e:
            say(f"  skipped {base}: {e}")
            continue
        say(f"  {mt.name}: {mt.shape[0]} x {mt.shape[1]}, nnz {mt.indices.size} ({time.perf_counter() - t0:.1f} s)")
        out.append(mt)
    return out


def rmat(scale: int, edge_factor: int = 16, seed: int = 0, a=0.57, b=0.19, c=0.19) -> Matrix:
    """R-MAT power-law graph with 2^scale nodes: each edge picks a quadrant per level; then a random relabelling
    (Graph500-style: the hubs are not all at low indices); duplicates removed."""
    rng = np.random.default_rng(seed)
    n = 1 << scale
    e = edge_factor * n
    rows = np.zeros(e, dtype=np.int64)
    cols = np.zeros(e, dtype=np.int64)
    for level in range(scale):
        r = rng.random(e, dtype=np.float32)
        rows |= (r >= a + b).astype(np.int64) << level                               # quadrants c, d
        cols |= (((r >= a) & (r < a + b)) | (r >= a + b + c)).astype(np.int64) << level  # quadrants b, d
    perm = rng.permutation(n)
    keys = np.unique(perm[rows] * n + perm[cols])
    return csr_from_coo(f"rmat{scale}", keys // n, keys % n, rng.uniform(0.5, 1.5, size=keys.size), (n, n))


class Graph:
    """A matrix on the GPU: int32 CSR arrays for the operators, int64 COO rows / columns for the references."""

    def __init__(self, mt: Matrix):
        self.name, (self.m, self.n) = mt.name, mt.shape
        self.nnz = int(mt.indices.size)
        self.indptr = torch.from_numpy(mt.indptr.astype(np.int32)).to(DEVICE)
        self.indices = torch.from_numpy(mt.indices.astype(np.int32)).to(DEVICE)
        self.values = torch.from_numpy(mt.values.astype(np.float32)).to(DEVICE)
        self.col64 = self.indices.long()
        counts = torch.from_numpy(np.diff(mt.indptr)).to(DEVICE)
        self.row64 = torch.repeat_interleave(torch.arange(self.m, device=DEVICE), counts)

    def csr(self, values: torch.Tensor) -> torch.Tensor:
        return torch.sparse_csr_tensor(self.indptr, self.indices, values, (self.m, self.n))


def uniform(rows: int, cols: int, seed: int, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator(device=DEVICE).manual_seed(seed)
    return (torch.rand(rows, cols, device=DEVICE, generator=g) * 2 - 1).to(dtype)


# --------------------------------------------------------------------------------------------------------------------
# float64 references and the magnitude-scaled comparison

CHUNK_ELEMENTS = 1 << 25  # bounds the float64 temporaries (256 MiB each)


def spmm_reference(G: Graph, values: torch.Tensor, B: torch.Tensor):
    """(A @ B, |A| @ |B|) in float64, by index_add over chunks of non-zeros (independent of cuSPARSE)."""
    K = B.shape[1]
    ref = torch.zeros(G.m, K, dtype=torch.float64, device=DEVICE)
    mag = torch.zeros_like(ref)
    step = max(1, CHUNK_ELEMENTS // K)
    for s in range(0, G.nnz, step):
        rows = G.row64[s:s + step]
        prod = B[G.col64[s:s + step]].double() * values[s:s + step, None].double()
        ref.index_add_(0, rows, prod)
        mag.index_add_(0, rows, prod.abs_())
    return ref, mag


def sddmm_reference(G: Graph, X: torch.Tensor, Y: torch.Tensor):
    """(dot(X[i], Y[j]), dot(|X[i]|, |Y[j]|)) for every non-zero (i, j), float64."""
    K = X.shape[1]
    ref = torch.empty(G.nnz, dtype=torch.float64, device=DEVICE)
    mag = torch.empty_like(ref)
    step = max(1, CHUNK_ELEMENTS // K)
    for s in range(0, G.nnz, step):
        prod = X[G.row64[s:s + step]].double() * Y[G.col64[s:s + step]].double()
        ref[s:s + step] = prod.sum(1)
        mag[s:s + step] = prod.abs_().sum(1)
    return ref, mag


def attention_reference(q, k, v, mask):
    """(softmax(q k^T / sqrt(D), masked) @ v, the same weights @ |v|), float64."""
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = (q64 @ k64.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores.masked_fill_(~mask, float("-inf"))
    p = torch.softmax(scores, dim=-1)
    return p @ v64, p @ v64.abs()


def compare(out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor, tol: float) -> Optional[str]:
    """None if every element satisfies |out - ref| <= tol * (mag + 1e-3 * max(mag)); else what is wrong.
    NaN / inf count as wrong. Chunked, so that float64 temporaries stay small."""
    if out.layout != torch.strided:  # sampled_addmm returns a CSR tensor with A's pattern
        out = out.values()
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    o, r, m = out.reshape(-1), ref.reshape(-1), mag.reshape(-1)
    if o.numel() == 0:
        return None
    floor = 1e-3 * float(m.max())
    bad, worst = 0, 0.0
    for s in range(0, o.numel(), CHUNK_ELEMENTS):
        d = (o[s:s + CHUNK_ELEMENTS].double() - r[s:s + CHUNK_ELEMENTS]).abs_()
        scale = m[s:s + CHUNK_ELEMENTS] + floor
        bad += int((~(d <= tol * scale)).sum())  # ~(<=) so that NaN counts as bad
        rel = torch.nan_to_num(d / scale, nan=math.inf)
        worst = max(worst, float(rel.max()))
    if bad:
        return f"{bad} of {o.numel()} elements off by more than {tol:g} x magnitude (worst {worst:.3g})"
    return None


# --------------------------------------------------------------------------------------------------------------------
# Timing with CUDA events


@dataclass
class Timing:
    ms: float
    reps: int
    method: str


class GpuTimer:
    def __init__(self, budget_s: float, flush_l2: bool):
        self.budget_s = budget_s
        self.flush_buf = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda") if flush_l2 else None

    def _flush(self) -> None:
        if self.flush_buf is not None:
            self.flush_buf.zero_()

    @staticmethod
    def _events(n: int):
        return [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]

    def _per_call(self, fn: Callable, reps: int) -> List[float]:
        pairs = self._events(reps)
        for start, end in pairs:
            self._flush()  # queued before `start`, so its time is not counted
            start.record()
            fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) for start, end in pairs]

    def _batched(self, fn: Callable, batches: int, per_batch: int) -> List[float]:
        pairs = self._events(batches)
        for start, end in pairs:
            start.record()
            for _ in range(per_batch):
                fn()
            end.record()
        torch.cuda.synchronize()
        return [start.elapsed_time(end) / per_batch for start, end in pairs]

    def measure(self, fn: Callable) -> Timing:
        for _ in range(WARMUP_CALLS):
            self._flush()
            fn()
        est_s = statistics.median(self._per_call(fn, 3)) / 1e3
        flush = "L2 flushed" if self.flush_buf is not None else "warm L2"
        if est_s < BATCH_BELOW_S:
            per_batch = int(min(1000, max(10, 200e-6 / max(est_s, 1e-7))))
            batches = int(min(200, max(MIN_REPS, self.budget_s / (per_batch * max(est_s, 1e-7)))))
            times = self._batched(fn, batches, per_batch)
            method = f"events per batch of {per_batch} back-to-back calls, warm L2"
        else:
            reps = int(min(MAX_REPS, max(MIN_REPS, self.budget_s / est_s)))
            times = self._per_call(fn, reps)
            method = f"events per call, {flush}"
        return Timing(statistics.median(times), len(times), method)


# --------------------------------------------------------------------------------------------------------------------
# Our operators (the hook): used only when the project's extension imports here and its ops run on CUDA tensors.


def detect_ours():
    """(torch.ops.sparsetir, None) when our operators accept CUDA tensors, else (None, why not)."""
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    try:
        import sparsetir_torch  # noqa: F401  (registers torch.ops.sparsetir)
    except Exception as e:  # noqa: BLE001
        return None, f"import sparsetir_torch failed: {short(e)}"
    ops = torch.ops.sparsetir
    try:
        indptr = torch.tensor([0, 1, 2], dtype=torch.int32, device="cuda")
        indices = torch.tensor([1, 0], dtype=torch.int32, device="cuda")
        values = torch.tensor([2.0, 3.0], device="cuda")
        dense = torch.arange(8.0, device="cuda").reshape(2, 4)
        out = ops.spmm(indptr, indices, values, dense)
        if not out.is_cuda:
            return None, "torch.ops.sparsetir.spmm returned a CPU tensor for CUDA inputs"
        if not torch.equal(out, torch.stack([2 * dense[1], 3 * dense[0]])):
            return None, "torch.ops.sparsetir.spmm gave a wrong result on a 2 x 2 CUDA test"
    except Exception as e:  # noqa: BLE001
        return None, f"torch.ops.sparsetir.spmm rejected CUDA tensors: {short(e)}"
    return ops, None


class Ours:
    """Callables running our operators on a case's inputs, or None (no CUDA backend)."""

    def __init__(self, ops):
        self.ops = ops

    def spmm(self, G: Graph, values, B):
        return None if self.ops is None else (lambda: self.ops.spmm(G.indptr, G.indices, values, B))

    def sddmm(self, G: Graph, X, Y):
        return None if self.ops is None else (lambda: self.ops.sddmm(G.indptr, G.indices, None, X, Y))

    def bsrmm(self, indptr, indices, blocks, B):
        return None if self.ops is None else (lambda: self.ops.bsrmm(indptr, indices, blocks, B))

    def bsr_linear(self, x, indptr, indices, blocks):
        return None if self.ops is None else (lambda: self.ops.bsr_linear(x, indptr, indices, blocks))

    def attention(self, indptr, indices, q, k, v):
        return None if self.ops is None else (lambda: self.ops.sparse_attention(indptr, indices, q, k, v))


# --------------------------------------------------------------------------------------------------------------------
# Cases and results


@dataclass
class Case:
    op: str
    matrix: str
    rows: int
    cols: int
    nnz: int
    K: int
    dtype: str
    bytes: Optional[int] = None  # the lower bound of bytes moved, where it means something


REPORT: List[str] = []


def say(msg: str = "") -> None:
    print(msg, flush=True)
    REPORT.append(msg)


class Bench:
    def __init__(self, timer: GpuTimer, ours: Ours, peak_gbps: float, env: Dict[str, str], deadline: float):
        self.timer, self.ours, self.peak_gbps, self.env, self.deadline = timer, ours, peak_gbps, env, deadline
        self.rows: List[dict] = []

    def _gbps(self, case: Case, t: Optional[Timing]) -> Optional[float]:
        return case.bytes / (t.ms * 1e-3) / 1e9 if case.bytes and t else None

    def record(self, case: Case, peer: str, t: Optional[Timing], ours_t: Optional[Timing], note: str) -> None:
        gbps, ours_gbps = self._gbps(case, t), self._gbps(case, ours_t)
        row = {**case.__dict__, "peer": peer, "peer_ms": t.ms if t else None, "ours_ms": ours_t.ms if ours_t else None,
               "ratio": t.ms / ours_t.ms if t and ours_t else None, "gbps": gbps,
               "frac_peak": gbps / self.peak_gbps if gbps else None, "ours_gbps": ours_gbps,
               "reps": t.reps if t else None, "timing": t.method if t else "", "note": note, **self.env}
        self.rows.append(row)
        ms = f"{t.ms:.4f} ms" if t else "n/a"
        extra = f", {gbps:.0f} GB/s ({gbps / self.peak_gbps:.0%} of peak)" if gbps else ""
        ours_txt = f", ours {ours_t.ms:.4f} ms, ratio {row['ratio']:.2f}" if ours_t and t else ""
        print(f"  {case.op} {case.matrix} K={case.K} {case.dtype} {peer}: {ms}{extra}{ours_txt}"
              f"{'  (' + note + ')' if note else ''}", flush=True)

    def run(self, case: Case, peers: Dict[str, Union[Callable, str]], check: Callable[[torch.Tensor], Optional[str]],
            ours: Optional[Callable] = None, notes: Optional[Dict[str, str]] = None) -> None:
        """Checks, then times, ours (if any) and every peer; one row per peer. A peer given as a string did not get
        as far as a callable (the string says why)."""
        notes = dict(notes or {})
        if time.perf_counter() > self.deadline:
            for name in peers:
                self.record(case, name, None, None, "skipped: --time-limit reached")
            return
        ours_t, ours_note = None, ""
        if ours is not None:
            ours_t, ours_note = self._check_and_time(ours, check, "ours")
        for name, fn in peers.items():
            if isinstance(fn, str):
                t, note = None, fn
            else:
                t, note = self._check_and_time(fn, check, name)
            note = "; ".join(x for x in (notes.get(name, ""), note, ours_note) if x)
            self.record(case, name, t, ours_t, note)

    def _check_and_time(self, fn: Callable, check, name: str) -> Tuple[Optional[Timing], str]:
        try:
            out = fn()
            sync()  # surface asynchronous errors here
            msg = check(out)
            del out
        except Exception as e:  # noqa: BLE001
            torch.cuda.empty_cache()
            return None, f"{name} failed: {short(e)}"
        if msg:
            return None, f"{name} WRONG, not timed: {msg}"
        try:
            return self.timer.measure(fn), ""
        except Exception as e:  # noqa: BLE001
            return None, f"{name} failed while timed: {short(e)}"


# --------------------------------------------------------------------------------------------------------------------
# The operators


def spmm_bytes(nnz: int, rows: int, cols: int, K: int, elem: int, index_bytes: int = INDEX_BYTES) -> int:
    return nnz * (index_bytes + elem) + rows * K * elem + cols * K * elem


def bench_spmm(bench: Bench, graphs: List[Graph], ks, dtypes) -> None:
    for G in graphs:
        for dname in dtypes:
            dtype = DTYPES[dname]
            values = G.values.to(dtype)
            A = G.csr(values)
            for K in ks:
                B = uniform(G.n, K, seed=K, dtype=dtype)
                ref, mag = spmm_reference(G, values, B)
                case = Case("spmm", G.name, G.m, G.n, G.nnz, K, dname,
                            spmm_bytes(G.nnz, G.m, G.n, K, values.element_size()))
                bench.run(case, {"torch.sparse.mm (cuSPARSE)": lambda: torch.sparse.mm(A, B)},
                          lambda out: compare(out, ref, mag, TOL[dtype]), bench.ours.spmm(G, values, B))
                del B, ref, mag
        torch.cuda.empty_cache()


def bench_sddmm(bench: Bench, graphs: List[Graph], ks) -> None:
    for G in graphs:
        A = G.csr(G.values)
        for K in ks:
            X = uniform(G.m, K, seed=1000 + K, dtype=torch.float32)
            Y = uniform(G.n, K, seed=2000 + K, dtype=torch.float32)
            ref, mag = sddmm_reference(G, X, Y)
            case = Case("sddmm", G.name, G.m, G.n, G.nnz, K, "float32", spmm_bytes(G.nnz, G.m, G.n, K, 4))
            bench.run(case, {"sampled_addmm (cuSPARSE)":
                             lambda: torch.sparse.sampled_addmm(A, X, Y.T, beta=0.0, alpha=1.0)},
                      lambda out: compare(out, ref, mag, TOL[torch.float32]), bench.ours.sddmm(G, X, Y))
            del X, Y, ref, mag
        torch.cuda.empty_cache()


def block_sparse_dense(n: int, block: int, sparsity: float, seed: int = 0) -> torch.Tensor:
    """A dense n x n float32 matrix (on the GPU) of random block x block blocks, a fraction `sparsity` of them zero;
    every block row keeps at least one block."""
    g = torch.Generator().manual_seed(seed)
    nb = n // block
    keep = torch.rand(nb, nb, generator=g) >= sparsity
    keep[torch.arange(nb), torch.randint(0, nb, (nb,), generator=g)] = True
    values = torch.rand(n, n, generator=g) * 2 - 1
    mask = keep.repeat_interleave(block, 0).repeat_interleave(block, 1)
    return (values * mask).to(DEVICE)


def bench_bsrmm(bench: Bench, sparsities, ks, dtypes, n: int = 4096, block: int = 32) -> None:
    for s in sparsities:
        dense32 = block_sparse_dense(n, block, s)
        for dname in dtypes:
            dtype = DTYPES[dname]
            dense = dense32.to(dtype)
            A = dense.to_sparse_bsr((block, block))
            nnzb = A.col_indices().numel()
            crow32, col32 = A.crow_indices().int(), A.col_indices().int()
            name = f"{n}x{n}_b{block}_s{round(s * 100)}"
            actual = 1 - nnzb / (n // block) ** 2
            for K in ks:
                B = uniform(n, K, seed=K, dtype=dtype)
                ref = dense.double() @ B.double()
                mag = dense.double().abs_() @ B.double().abs_()
                elem = dense.element_size()
                case = Case("bsrmm", name, n, n, nnzb * block * block, K, dname,
                            nnzb * (INDEX_BYTES + block * block * elem) + 2 * n * K * elem)
                bench.run(case, {"torch BSR @": lambda: A @ B, "dense matmul (cuBLAS)": lambda: torch.matmul(dense, B)},
                          lambda out: compare(out, ref, mag, TOL[dtype]),
                          bench.ours.bsrmm(crow32, col32, A.values(), B),
                          notes={p: f"block sparsity {actual:.3f}" for p in ("torch BSR @", "dense matmul (cuBLAS)")})
                del B, ref, mag
        torch.cuda.empty_cache()


def bench_bsr_linear(bench: Bench, sparsities, batches, dtypes, n: int = 4096, block: int = 32) -> None:
    """A pruned Linear layer's forward pass, x @ W^T, with W block-sparse."""
    for s in sparsities:
        dense32 = block_sparse_dense(n, block, s)
        for dname in dtypes:
            dtype = DTYPES[dname]
            W = dense32.to(dtype)
            A = W.to_sparse_bsr((block, block))
            nnzb = A.col_indices().numel()
            crow32, col32 = A.crow_indices().int(), A.col_indices().int()
            name = f"{n}x{n}_b{block}_s{round(s * 100)}"
            actual = 1 - nnzb / (n // block) ** 2
            for batch in batches:
                x = uniform(batch, n, seed=batch, dtype=dtype)
                ref = x.double() @ W.double().T
                mag = x.double().abs_() @ W.double().abs_().T
                elem = W.element_size()
                case = Case("bsr_linear", name, n, n, nnzb * block * block, batch, dname,
                            nnzb * (INDEX_BYTES + block * block * elem) + 2 * n * batch * elem)
                bench.run(case, {"dense F.linear (cuBLAS)": lambda: F.linear(x, W),
                                 "torch BSR (W @ x^T)^T": lambda: (A @ x.T).T},
                          lambda out: compare(out, ref, mag, TOL[dtype]),
                          bench.ours.bsr_linear(x, crow32, col32, A.values()),
                          notes={p: f"block sparsity {actual:.3f}"
                                 for p in ("dense F.linear (cuBLAS)", "torch BSR (W @ x^T)^T")})
                del x, ref, mag
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def attention_pattern(L: int, S: int, density: float, window: int, seed: int):
    """(indptr, indices, dense bool mask) on the GPU: round(density * S) allowed columns per row, random, or the
    `window` columns around the diagonal first and then random ones."""
    g = torch.Generator().manual_seed(seed)
    per_row = max(1, round(density * S))
    score = torch.rand(L, S, generator=g)
    if window:
        i = torch.arange(L).unsqueeze(1)
        j = torch.arange(S).unsqueeze(0)
        score = score + ((j - i * S // L).abs() <= window // 2).float() * 2  # window entries rank first
    top = score.topk(per_row, dim=1).indices.sort(dim=1).values
    mask = torch.zeros(L, S, dtype=torch.bool)
    mask.scatter_(1, top, True)
    indptr = torch.arange(0, L * per_row + 1, per_row, dtype=torch.int32)
    return indptr.to(DEVICE), top.reshape(-1).to(torch.int32).to(DEVICE), mask.to(DEVICE)


# FlexAttention reads the pattern through one module-level mask_mod and this global, so that a new pattern of the
# same size does not make torch.compile recompile (a new closure per pattern would).
_FLEX_MASK: Optional[torch.Tensor] = None


def _flex_mask_mod(b, h, q_idx, kv_idx):
    return _FLEX_MASK[q_idx, kv_idx]


class Flex:
    """torch.compile'd flex_attention, or the reason it is not available."""

    def __init__(self, enabled: bool):
        self.fn, self.create_block_mask, self.error = None, None, None
        if not enabled:
            self.error = "FlexAttention skipped (--no-flex)"
            return
        try:
            import torch._dynamo
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            for knob in ("recompile_limit", "cache_size_limit"):  # one compile per (L, dtype); allow plenty
                if hasattr(torch._dynamo.config, knob):
                    setattr(torch._dynamo.config, knob, 64)
            self.fn = torch.compile(flex_attention, dynamic=False)
            self.create_block_mask = create_block_mask
        except Exception as e:  # noqa: BLE001
            self.error = f"FlexAttention unavailable: {short(e)}"

    def prepare(self, mask: torch.Tensor, q, k, v) -> Tuple[Union[Callable, str], str]:
        """(callable, note with the first call's (compile) time) or (error string, '')."""
        global _FLEX_MASK
        if self.error:
            return self.error, ""
        try:
            _FLEX_MASK = mask
            L, S = mask.shape
            block_mask = self.create_block_mask(_flex_mask_mod, None, None, L, S, device=DEVICE)
            t0 = time.perf_counter()
            self.fn(q, k, v, block_mask=block_mask)
            sync()
            first = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001
            return f"FlexAttention failed: {short(e)}", ""
        return (lambda: self.fn(q, k, v, block_mask=block_mask)), f"first call (compile) {first:.1f} s"


def bench_attention(bench: Bench, lengths, windows, dtypes, flex: Flex, heads: int = 4, D: int = 64,
                    density: float = 0.1) -> None:
    for L in lengths:
        for window in windows:
            indptr, indices, mask = attention_pattern(L, L, density, window, seed=L + window)
            name = f"L{L}_h{heads}_{'win+rand' if window else 'rand'}{round(density * 100)}"
            for dname in dtypes:
                dtype = DTYPES[dname]
                g = torch.Generator(device=DEVICE).manual_seed(L + window)
                q, k, v = (torch.randn(1, heads, L, D, device=DEVICE, generator=g).to(dtype) for _ in range(3))
                ref, mag = attention_reference(q, k, v, mask)
                in_time = time.perf_counter() <= bench.deadline  # do not start a compile past the limit
                flex_fn, flex_note = flex.prepare(mask, q, k, v) if in_time else ("skipped: --time-limit reached", "")
                case = Case("attention", name, L, L, indices.numel() * heads, D, dname)
                bench.run(case, {"sdpa(bool mask)": lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                                 "flex_attention(block mask)": flex_fn},
                          lambda out: compare(out, ref, mag, ATTENTION_TOL[dtype]),
                          bench.ours.attention(indptr, indices, q, k, v),
                          notes={"flex_attention(block mask)": flex_note})
                del q, k, v, ref, mag
            torch.cuda.empty_cache()


def attention_gradients_reference(q, k, v, mask, grad_out):
    """(dq, dk, dv) of the masked softmax attention in float64, flattened into one vector, and the same sums over
    the absolute values of the factors (the magnitudes compare() scales its tolerance by)."""
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    scores = (q64 @ k64.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    p = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    grads = torch.autograd.grad(p @ v64, (q64, k64, v64), grad_out.double())
    ref = torch.cat([g.reshape(-1) for g in grads])
    return ref, ref.abs() + float(ref.abs().mean())


def bench_attention_train(bench: Bench, lengths, dtypes, heads: int = 4, D: int = 64, density: float = 0.1) -> None:
    """The forward and backward of the attention (the gradients of q, k and v for a random upstream gradient),
    ours against SDPA's with the boolean mask, on the random pattern."""
    for L in lengths:
        indptr, indices, mask = attention_pattern(L, L, density, 0, seed=L)
        name = f"L{L}_h{heads}_rand{round(density * 100)}_fwd+bwd"
        for dname in dtypes:
            dtype = DTYPES[dname]
            g = torch.Generator(device=DEVICE).manual_seed(L)
            q, k, v = (torch.randn(1, heads, L, D, device=DEVICE, generator=g).to(dtype).requires_grad_()
                       for _ in range(3))
            grad_out = torch.randn(1, heads, L, D, device=DEVICE, generator=g).to(dtype)
            ref, mag = attention_gradients_reference(q, k, v, mask, grad_out)

            def step(forward):
                grads = torch.autograd.grad(forward(), (q, k, v), grad_out)
                return torch.cat([t.reshape(-1) for t in grads])

            ours = bench.ours.attention(indptr, indices, q, k, v)
            case = Case("attention_train", name, L, L, indices.numel() * heads, D, dname)
            bench.run(case, {"sdpa(bool mask) fwd+bwd": lambda: step(
                          lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))},
                      lambda out: compare(out, ref, mag, 5 * ATTENTION_TOL[dtype]),
                      None if ours is None else (lambda: step(ours)))
            del q, k, v, grad_out, ref, mag
        torch.cuda.empty_cache()


# --------------------------------------------------------------------------------------------------------------------
# Reporting

CSV_FIELDS = ["op", "matrix", "rows", "cols", "nnz", "K", "dtype", "peer", "peer_ms", "ours_ms", "ratio", "gbps",
              "frac_peak", "ours_gbps", "reps", "timing", "note", "device", "torch", "cuda"]


def fmt(v, spec: str, width: int) -> str:
    """v right-aligned in width; blank for None / NaN."""
    return f"{'':>{width}}" if v is None or v != v else f"{v:>{width}{spec}}"


def print_tables(rows: List[dict]) -> None:
    for op in dict.fromkeys(r["op"] for r in rows):
        say(f"\n== {op} ==  (ms = median per call; ratio = peer / ours, > 1 means ours is faster; "
            f"GB/s and %peak from the bytes lower bound)")
        head = (f"{'matrix':<22}{'rows':>9}{'nnz':>10}{'K':>5} {'dtype':<8}{'peer':<28}{'peer ms':>10}{'ours ms':>10}"
                f"{'ratio':>7}{'GB/s':>7}{'%peak':>6}  note")
        say(head)
        say("-" * len(head))
        for r in (r for r in rows if r["op"] == op):
            pct = r["frac_peak"] * 100 if r["frac_peak"] is not None else None
            say(f"{r['matrix']:<22}{r['rows']:>9}{r['nnz']:>10}{r['K']:>5} {r['dtype']:<8}{r['peer']:<28}"
                f"{fmt(r['peer_ms'], '.4f', 10)}{fmt(r['ours_ms'], '.4f', 10)}{fmt(r['ratio'], '.2f', 7)}"
                f"{fmt(r['gbps'], '.0f', 7)}{fmt(pct, '.0f', 6)}  {r['note']}")


def geomean(xs) -> float:
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def print_summary(rows: List[dict]) -> None:
    say("\n== summary per op, peer, dtype and K: geometric means over the matrices (timed rows only) ==")
    head = f"{'op':<10}{'peer':<28}{'dtype':<9}{'K':>5}{'n':>4}{'GB/s':>8}{'%peak':>7}{'ratio':>7}  slowest GB/s"
    say(head)
    say("-" * len(head))
    groups: Dict[tuple, List[dict]] = {}
    for r in rows:
        if r["peer_ms"] is not None:
            groups.setdefault((r["op"], r["peer"], r["dtype"], r["K"]), []).append(r)
    for (op, peer, dtype, K), rs in groups.items():
        gb = geomean([r["gbps"] for r in rs])
        frac = geomean([r["frac_peak"] for r in rs])
        ratio = geomean([r["ratio"] for r in rs])
        with_gb = [r for r in rs if r["gbps"]]
        worst = min(with_gb, key=lambda r: r["gbps"]) if with_gb else None
        say(f"{op:<10}{peer:<28}{dtype:<9}{K:>5}{len(rs):>4}{fmt(gb, '.0f', 8)}{fmt(frac * 100, '.0f', 7)}"
            f"{fmt(ratio, '.2f', 7)}  {worst['matrix'] + ' ' + format(worst['gbps'], '.0f') if worst else ''}")
    failed = [r for r in rows if r["peer_ms"] is None]
    if failed:
        say(f"\n{len(failed)} of {len(rows)} rows have no peer time (failed, wrong or skipped): see their notes")


def write_csv(path: str, rows: List[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})


def plot(path: str, rows: List[dict]) -> bool:
    """One panel per op: ratio (peer / ours) when ours ran, else the fraction of peak bandwidth (or the time, for
    attention). Skipped without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ops = list(dict.fromkeys(r["op"] for r in rows if r["peer_ms"] is not None))
    if not ops:
        return False
    fig, axes = plt.subplots(len(ops), 1, figsize=(16, 3.8 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops):
        rs = [r for r in rows if r["op"] == op and r["peer_ms"] is not None]
        key = next((k for k in ("ratio", "frac_peak") if any(r[k] for r in rs)), "peer_ms")
        labels = {"ratio": "peer / ours", "frac_peak": "fraction of peak bandwidth", "peer_ms": "ms per call"}
        groups = list(dict.fromkeys(r["matrix"] for r in rs))
        series = list(dict.fromkeys((r["peer"], r["dtype"], r["K"]) for r in rs))
        width = 0.8 / len(series)
        cmap = plt.get_cmap("tab10" if len(series) <= 10 else "tab20")
        for si, (peer, dtype, K) in enumerate(series):
            pts = [(groups.index(r["matrix"]) - 0.4 + width * (si + 0.5), r[key]) for r in rs
                   if (r["peer"], r["dtype"], r["K"]) == (peer, dtype, K) and r[key]]
            if pts:
                ax.bar([p[0] for p in pts], [p[1] for p in pts], width, label=f"{peer} {dtype} K={K}",
                       color=cmap(si % cmap.N))
        ax.set_yscale("log")
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups, rotation=15, fontsize=8)
        ax.set_ylabel(labels[key])
        ax.set_title(op)
        ax.legend(fontsize=6, ncol=4, loc="best")
        ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------------------------------------
# Setup


class EmulatedBench(Bench):
    """Checks our operators on CPU tensors under the project's SIMT emulator (SPARSETIR_EMULATE_CUDA=1: their cuda
    recipes and CUDA source, compiled by the host compiler): correctness only. Peers and timing are skipped; a
    time measured on the emulator would say nothing about a GPU."""

    def run(self, case: Case, peers, check, ours: Optional[Callable] = None, notes=None) -> None:
        if ours is None:
            return
        try:
            msg = check(ours())
        except Exception as e:  # noqa: BLE001
            msg = f"failed: {short(e)}"
        row = {**case.__dict__, "peer": "", "peer_ms": None, "ours_ms": None, "ratio": None, "gbps": None,
               "frac_peak": None, "ours_gbps": None, "reps": None, "timing": "not timed (emulated)",
               "note": f"WRONG: {msg}" if msg else "ok (emulated, not timed)", **self.env}
        self.rows.append(row)
        print(f"  {case.op} {case.matrix} K={case.K} {case.dtype}: {row['note']}", flush=True)


def emulator_mode(args) -> int:
    """Without a CUDA device: the same cases, scaled down, run through our operators' CUDA path under the SIMT
    emulator and checked against the float64 references, and nothing timed (so the script says)."""
    global DEVICE
    DEVICE = "cpu"
    os.environ["SPARSETIR_EMULATE_CUDA"] = "1"
    if REPO not in sys.path:
        sys.path.insert(0, REPO)
    try:
        import sparsetir_torch  # noqa: F401  (registers torch.ops.sparsetir)
    except Exception as e:  # noqa: BLE001
        print(f"no CUDA device, and sparsetir_torch does not import ({short(e)}): nothing to check or time")
        return 1
    say("no CUDA device: our operators' CUDA kernels run under the SIMT emulator on small cases, for correctness "
        "only; nothing is timed")
    bench = EmulatedBench(None, Ours(torch.ops.sparsetir), 1.0, {"device": "SIMT emulator (CPU)",
                          "torch": torch.__version__, "cuda": "emulated"}, deadline=math.inf)
    graphs = [Graph(rmat(9))]
    runners = {
        "spmm": lambda: bench_spmm(bench, graphs, args.k or [32, 128], ["float32", "float16"]),
        "sddmm": lambda: bench_sddmm(bench, graphs, args.k or [32, 128]),
        "bsrmm": lambda: bench_bsrmm(bench, [0.9], [64], ["float32", "float16"], n=256),
        "bsr_linear": lambda: bench_bsr_linear(bench, [0.9], [32], ["float32", "float16"], n=256),
        "attention": lambda: bench_attention(bench, [128], [0, 16], ["float16", "float32"], Flex(False)),
        "attention_train": lambda: bench_attention_train(bench, [128], ["float16", "float32"]),
    }
    for op in args.ops:
        runners[op]()
    wrong = [r for r in bench.rows if not r["note"].startswith("ok")]
    say(f"\nemulated: {len(bench.rows)} cases checked, {len(wrong)} wrong; nothing timed")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        write_csv(os.path.join(args.out, "bench_cuda.csv"), bench.rows)
    return 1 if wrong else 0


def device_env() -> Dict[str, str]:
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": str(torch.version.cuda)}


def peak_bandwidth(flag: Optional[float]) -> Tuple[float, str]:
    """GB/s: --peak-gbps if given, else 2 x memory clock x bus width from the device properties when torch exposes
    them (and they give a plausible number), else 3350 (H100 SXM HBM3)."""
    if flag:
        return flag, "--peak-gbps"
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    clock_khz, bus_bits = getattr(props, "memory_clock_rate", 0), getattr(props, "memory_bus_width", 0)
    if clock_khz and bus_bits:
        gbps = 2 * clock_khz * 1e3 * bus_bits / 8 / 1e9  # double data rate
        if 100 < gbps < 20000:
            return gbps, f"device properties: memory clock {clock_khz / 1e3:.0f} MHz x {bus_bits}-bit bus x 2"
    return 3350.0, "default 3350 (H100 SXM HBM3); torch exposes no usable memory clock / bus width"


def default_datasets() -> Optional[str]:
    for cand in (os.path.join(REPO, "..", "shared", "datasets"), os.path.join(REPO, "shared", "datasets")):
        if os.path.isdir(cand):
            return os.path.normpath(cand)
    return None


def output_dir(requested: Optional[str]) -> str:
    """--out, or a new benchmarks/results/cuda-<timestamp>; refuses to overwrite an existing bench_cuda.csv."""
    if requested:
        if os.path.exists(os.path.join(requested, "bench_cuda.csv")):
            sys.exit(f"bench_cuda: {requested}/bench_cuda.csv exists; choose another --out (results are never "
                     f"overwritten)")
        return requested
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path, i = os.path.join(RESULTS, f"cuda-{stamp}"), 1
    while os.path.exists(path):
        path, i = os.path.join(RESULTS, f"cuda-{stamp}-{i}"), i + 1
    return path


QUICK_MATRICES = ("cond-mat-2005", "lund_a", "arrow", "rmat16")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=default_datasets(),
                   help="folder of *.mtx.gz matrices (default ../shared/datasets beside the repo, if it exists)")
    p.add_argument("--ops", default=",".join(ALL_OPS),
                   help=f"comma-separated subset of {','.join(ALL_OPS)}, run in that order")
    p.add_argument("--k", type=int, nargs="+", default=None,
                   help="K for spmm and sddmm (default spmm 32 64 128 256 512, sddmm 32 128)")
    p.add_argument("--matrices", default=".", help="regex on matrix names (spmm, sddmm)")
    p.add_argument("--quick", action="store_true", help="a small subset (< 1 minute)")
    p.add_argument("--out", default=None, help="output folder (default: a new benchmarks/results/cuda-<timestamp>)")
    p.add_argument("--budget", type=float, default=0.2, help="seconds of timed calls per method and case")
    p.add_argument("--time-limit", type=float, default=330.0,
                   help="seconds after which the remaining cases are skipped (reported as such)")
    p.add_argument("--peak-gbps", type=float, default=None,
                   help="peak memory bandwidth, GB/s (default: from the device properties, else 3350)")
    p.add_argument("--warm-l2", action="store_true", help="do not flush the L2 cache before each timed call")
    p.add_argument("--no-flex", action="store_true", help="skip FlexAttention (it compiles for each size and dtype)")
    args = p.parse_args()
    args.ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    bad = [o for o in args.ops if o not in ALL_OPS]
    if bad:
        p.error(f"unknown ops {bad}; choose from {ALL_OPS}")
    return args


def load_graphs(args) -> List[Graph]:
    def wanted(name: str) -> bool:
        return bool(re.search(args.matrices, name)) and (not args.quick or name in QUICK_MATRICES)

    say(f"matrices from {args.datasets or '(no --datasets folder found)'}:")
    mats = load_datasets(args.datasets, wanted)
    for scale in (16, 18, 20):
        if wanted(f"rmat{scale}"):
            t0 = time.perf_counter()
            mats.append(rmat(scale))
            say(f"  rmat{scale}: nnz {mats[-1].indices.size} ({time.perf_counter() - t0:.1f} s)")
    return [Graph(m) for m in mats]


def main() -> int:
    args = parse_args()
    if not torch.cuda.is_available():
        return emulator_mode(args)
    out_dir = output_dir(args.out)
    t_start = time.perf_counter()
    torch.cuda.init()
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    env = device_env()
    peak, peak_src = peak_bandwidth(args.peak_gbps)
    say(f"device {env['device']} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
        f"{props.total_memory / 2**30:.1f} GiB); torch {env['torch']}, CUDA {env['cuda']}; "
        f"peak bandwidth {peak:.0f} GB/s ({peak_src})")
    ops, reason = detect_ours()
    say("sparsetir CUDA ops: available; ours timed too" if ops is not None
        else f"sparsetir CUDA ops: not available ({reason}); peers only")
    quick = args.quick
    bench = Bench(GpuTimer(args.budget, flush_l2=not args.warm_l2), Ours(ops), peak, env,
                  deadline=t_start + args.time_limit)
    say(f"ops {args.ops}; budget {args.budget} s per method and case; "
        f"{'warm L2' if args.warm_l2 else 'L2 flushed before each timed call'}; output {out_dir}")

    os.makedirs(out_dir, exist_ok=True)
    csv_path = os.path.join(out_dir, "bench_cuda.csv")

    def done(what: str) -> None:  # the CSV is rewritten after each op, so that a killed run keeps its rows
        write_csv(csv_path, bench.rows)
        say(f"[{time.perf_counter() - t_start:5.0f} s] {what} done")

    graphs: List[Graph] = []

    def matrices() -> List[Graph]:  # loaded once, by the first op that needs them
        if not graphs:
            graphs.extend(load_graphs(args))
            done("loading matrices")
        return graphs

    runners = {  # the ops run in the order --ops names them
        "spmm": lambda: bench_spmm(bench, matrices(), args.k or ([32, 128] if quick else [32, 64, 128, 256, 512]),
                                   ["float32", "float16"]),
        "sddmm": lambda: bench_sddmm(bench, matrices(), args.k or ([32] if quick else [32, 128])),
        "bsrmm": lambda: bench_bsrmm(bench, [0.9] if quick else [0.8, 0.9, 0.95], [64] if quick else [64, 256],
                                     ["float32", "float16"]),
        "bsr_linear": lambda: bench_bsr_linear(bench, [0.9] if quick else [0.8, 0.9, 0.95],
                                               [256] if quick else [256, 2048], ["float32", "float16"]),
        "attention": lambda: bench_attention(bench, [1024] if quick else [1024, 4096], [0] if quick else [0, 64],
                                             ["float16"] if quick else ["float16", "float32"], Flex(not args.no_flex)),
        "attention_train": lambda: bench_attention_train(bench, [1024] if quick else [1024, 4096],
                                                         ["float16"] if quick else ["float16", "float32"]),
    }
    for op in args.ops:
        runners[op]()
        done(op)
    graphs.clear()
    torch.cuda.empty_cache()

    print_tables(bench.rows)
    print_summary(bench.rows)
    say(f"\nwrote {os.path.relpath(csv_path)}")
    if plot(os.path.join(out_dir, "bench_cuda.png"), bench.rows):
        say(f"wrote {os.path.relpath(os.path.join(out_dir, 'bench_cuda.png'))}")
    say(f"total {time.perf_counter() - t_start:.1f} s")
    with open(os.path.join(out_dir, "report.txt"), "w") as f:
        f.write("\n".join(REPORT) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
