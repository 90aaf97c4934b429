"""Automatic choice of a storage format per graph (SpMM).

At the first SpMM of a graph (a SparseMatrix or a cached torch sparse tensor)
with a given feature width and dtype, the candidates are CSR; BSR(b) for the
block sizes b that divide the matrix and keep the padding small, ranked by
fill (the C++ block counter, no conversion needed), the least-fill one and a
second within BLOCK_FILL_SLACK of it; and, for graphs whose row lengths
spread widely (power-law degrees), hyb(1, w): rows bucketed into
power-of-two ELL widths up to the longest row (the op
torch.ops.sparsetir._spmm_hyb, its bucket kernels made by format_decompose),
where those buckets pad at most HYB_MAX_PADDING. Each candidate is converted once by the C++ runtime
classes, warmed up (its kernel compiles) and timed on the graph itself in
interleaved rounds; a win over CSR must hold by MIN_GAIN through
confirmation rounds. The whole search is bounded by MAX_TUNING_CALLS SpMM
calls. The CSR kernel's schedule parameters come from the cost model
(csr_schedule). The choice is cached on the matrix and persisted beside the
kernel cache (choices/, one file per choice), keyed by a signature of the
graph (shape, nnz, degree histogram), the op, the width and the dtypes, so a
new process reuses it. A graph whose only candidate is CSR (most sampled
minibatches) is settled without a lookup or a file. SPARSETIR_TUNE=0 turns
the search off: CSR everywhere.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import time

import numpy as np
import torch

from . import _C
from .ell_formats import scatter_values
from .ops import ops
from .recipes import bsrmm_plan, cpu_target, csrmm_plan

BLOCK_SIZES = (2, 3, 4, 6, 8, 12, 16, 32)
# A block format must not store more than this many times the non-zeros.
MAX_FILL = 2.0
# At most this many timed calls (SpMM-equivalent) per choice.
MAX_TUNING_CALLS = 20
# Timed rounds per candidate: as many as the budget holds, up to this many
# (the fastest of more calls is less likely to be a disturbed one).
REPEATS = 4
# hyb is a candidate when the row lengths' coefficient of variation exceeds
# this (power-law graphs: email-Enron 2.6, cond-mat-2005 1.6; meshes < 0.3)
# and the longest row fits one ELL width up to HYB_MAX_WIDTH (no row split:
# the buckets then partition the rows and write without atomics).
HYB_MIN_SPREAD = 1.0
HYB_MAX_WIDTH = 4096
# ... and its buckets store at most this many slots per non-zero. On a CPU
# the buckets, each run alone with hot caches, already take 1.0-1.7x CSR's
# time on email-Enron and cond-mat-2005 (benchmarks/bench_locality.py), and
# every padding slot adds work, so a hyb form that pads more than the 10 %
# it would have to win by cannot win: power-of-two widths pad those graphs
# by 36-39 % (hyb measured 0.35-0.69x of CSR), and timing it cost 10-35 CSR
# calls on every new graph (every sampled minibatch of a GNN).
HYB_MAX_PADDING = 1.1


def tuning_enabled() -> bool:
    return os.environ.get("SPARSETIR_TUNE", "1") not in ("0", "false", "off", "")


# --------------------------------------------------------------------------- signature and persistence


def graph_signature(A) -> str:
    """A digest of what makes a graph's best format: shape, nnz, index dtype
    and the histogram of row lengths (log2 buckets)."""
    # numpy on views of the index tensors: a few microseconds per step where
    # torch's dispatch costs tens, and a new graph pays this before anything else.
    lengths = np.diff(A.indptr.numpy()).astype(np.int64)
    buckets = np.bincount(np.floor(np.log2(np.maximum(lengths, 1))).astype(np.int64), minlength=1)
    text = f"{A.shape}|{A.nnz}|{A.indices.dtype}|{buckets.tolist()}|{int((lengths == 0).sum())}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _choices_dir() -> str:
    return os.path.join(_C.cache_dir(), "choices")


def _choice_path(key: str) -> str:
    """One small file per choice: storing or loading one costs the same
    however many graphs were tuned, and processes never rewrite each
    other's records."""
    return os.path.join(_choices_dir(), hashlib.sha256(key.encode()).hexdigest()[:32] + ".json")


def _load_choice(key: str):
    """The stored record for `key`, or None."""
    try:
        with open(_choice_path(key), encoding="utf-8") as f:
            stored = json.load(f)
    except (OSError, ValueError):
        return None
    # The key is stored too: a digest collision must not hand over a record.
    return stored.get("record") if isinstance(stored, dict) and stored.get("key") == key else None


# The choices folder keeps at most this many records: storing one more
# removes the least recently written ones (a record costs one re-tuning when
# its graph comes back).
MAX_CHOICES = 4096


def _bound_choices(folder: str, keep: int = MAX_CHOICES) -> None:
    """Removes the oldest records (and stray temporary files over a day old)
    beyond `keep`."""
    try:
        entries = [e for e in os.scandir(folder) if e.is_file(follow_symlinks=False)]
    except OSError:
        return
    now = time.time()
    records = []
    for e in entries:
        try:
            mtime = e.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        if e.name.endswith(".tmp"):
            if now - mtime > 86400:  # left by a process that died mid-write
                _remove_quietly(e.path)
        elif e.name.endswith(".json"):
            records.append((mtime, e.path))
    if len(records) > keep:
        for _, path in sorted(records)[:len(records) - keep]:
            _remove_quietly(path)


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _store_choice(key: str, record: dict) -> None:
    """Writes the record's file (to a temporary file, then renamed into place),
    keeping the folder within MAX_CHOICES records."""
    path = _choice_path(key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if len(os.listdir(os.path.dirname(path))) >= MAX_CHOICES:
            _bound_choices(os.path.dirname(path), MAX_CHOICES - 1)
        tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "record": record}))  # one write, not one per token
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs re-tuning in the next process


# --------------------------------------------------------------------------- candidates


def _cannot_be_timed(b: int, fills: dict, least: float) -> bool:
    """Whether block size b is ruled out by a counted divisor d: a b x b block
    covers whole d x d blocks, so b pads at least as much as d, and a d that
    pads beyond MAX_FILL, or beyond BLOCK_FILL_SLACK times the least fill so
    far (which only drops), rules out b unseen."""
    return any(b % d == 0 and (fill > MAX_FILL or fill > BLOCK_FILL_SLACK * least) for d, fill in fills.items())


def block_candidates(A, derived: dict | None = None) -> list:
    """(block size, fill ratio) of the BSR formats the chooser may time, most
    promising first: least fill (the kernel's work is stored values times K),
    then the larger block (fewer gathers). Sizes that a divisor's fill rules
    out are not counted; the rest are counted once per graph.

    `derived`: A._derived when the caller holds it (here and below: each
    reading of the property checks the structure's versions again, and a
    graph seen once, as in minibatch training, pays for every reading)."""
    derived = A._derived if derived is None else derived
    cached = derived.get("block_candidates")
    if cached is not None:
        return cached
    m, n = A.shape
    fills, least = {}, float("inf")
    for b in sorted(BLOCK_SIZES) if A.nnz else ():
        if m % b or n % b or m < b or n < b or _cannot_be_timed(b, fills, least):
            continue
        fills[b] = _C.bsr_block_count(A.indptr, A.indices, n, b, b) * b * b / A.nnz
        least = min(least, fills[b])
    out = sorted(((b, fill) for b, fill in fills.items() if fill <= MAX_FILL),
                 key=lambda c: (round(c[1], 2), -c[0]))
    derived["block_candidates"] = out
    return out


def bsr_operands(A, b: int):
    """(indptr, indices, blocks) of A in BSR(b x b): the structure converted
    once per graph (C++), the values scattered into blocks (differentiable)."""
    indptr, indices, slot = ops._csr_to_bsr(A.indptr, A.indices, A.shape[1], b, b)

    def scatter(values):
        # Duplicates share a slot, and only within a block row.
        blocks = scatter_values(values, slot, indices.shape[0] * b * b, A.indptr, group_rows=b)
        return blocks.view(indices.shape[0], b, b)

    # The C++ cache returns the same slot tensor until the indices change.
    return indptr, indices, A.values_derived(("bsr_blocks", b), scatter, structure=slot)


def structure_summary(A, caller: str = "st.spmm", derived: dict | None = None) -> dict:
    """The validation pass's summary of A's rows (_C.check_csr: rows, nnz,
    longest row, the lengths' sum of squares, hyb's padded slots, rows not in
    column order), cached per graph. A malformed A is refused here, named for `caller`."""
    derived = A._derived if derived is None else derived
    summary = derived.get("csr_summary")
    if summary is None:
        summary = _C.check_csr(caller, A.indptr, A.indices, A.shape[1],
                               f"the columns of argument 'A' of shape {tuple(A.shape)}")
        derived["csr_summary"] = summary
    return summary


def hyb_form(A, derived: dict | None = None):
    """(parts, max_width) of the hyb form for a graph with skewed row
    lengths, or None: one part, the longest row in one ELL width."""
    if A.nnz == 0 or A.values.dtype not in (torch.float32, torch.float64):
        return None
    s = structure_summary(A, derived=derived)
    mean = s["nnz"] / s["rows"]
    spread = math.sqrt(max(0.0, s["row_length_squares"] / s["rows"] - mean * mean)) / mean
    longest = s["max_row_length"]
    if spread < HYB_MIN_SPREAD or longest > HYB_MAX_WIDTH:
        return None
    return 1, 1 << max(0, (longest - 1).bit_length())


def hyb_candidate(A, derived: dict | None = None):
    """hyb_form(A) where it is worth timing (padding within HYB_MAX_PADDING), or None."""
    form = hyb_form(A, derived)
    if form is None:
        return None
    s = structure_summary(A, derived=derived)
    return None if s["padded_slots"] / s["nnz"] > HYB_MAX_PADDING else form


# The overloads themselves: calling them skips the packet's overload lookup.
_SPMM = ops.spmm.default
_BSRMM = ops.bsrmm.default
_SPMM_HYB = ops._spmm_hyb.default


def run_choice(A, B: torch.Tensor, choice: dict) -> torch.Tensor:
    if choice["format"] == "hyb":
        return _SPMM_HYB(A.indptr, A.indices, A.values, B, choice["parts"], choice["max_width"])
    if choice["format"] == "bsr" and _blocks_give_csr_result(B):
        indptr, indices, blocks = bsr_operands(A, choice["block"])
        return _BSRMM(indptr, indices, blocks, B)
    return _SPMM(A.indptr, A.indices, A.values, B, "sum")


def _blocks_give_csr_result(B: torch.Tensor) -> bool:
    """Whether A's blocks multiply B to the result A's CSR form gives. Blocks
    hold zeros where A has no entry, and 0 * inf is NaN: a B with an infinity
    or a NaN would put NaN in rows whose entries never meet it (CSR and
    torch.sparse.mm keep them finite), so such a call runs CSR. B's sum is
    finite exactly when B is, but for a sum past the dtype's range (that call
    runs CSR too): one pass, 20x cheaper than isfinite(B).all() here. Inside
    torch.compile the check would be control flow on data: CSR there."""
    return not torch.compiler.is_compiling() and math.isfinite(float(B.sum()))


# --------------------------------------------------------------------------- the search


# Another format must beat CSR by this factor to be chosen: a persisted choice
# outlives the noise of the few calls that made it (on a shared machine two
# timings of one kernel differ by 5-8 %).
MIN_GAIN = 1.10
# Block sizes timed: the least-fill one, and the next ones while their fill is
# within BLOCK_FILL_SLACK of it (more stored values are more work: bcsstk16's
# 2x2, fill 1.25 against 3x3's 1.02, never beat 3x3).
MAX_BLOCK_CANDIDATES = 2
BLOCK_FILL_SLACK = 1.15
# After the first round, a candidate this much slower than the fastest is
# not timed again: it cannot come within MIN_GAIN.
DROP_RATIO = 2.0
CONFIRM_REPEATS = 1


def _best_times(fns, repeats: int) -> list:
    """The fastest of up to `repeats` timed calls of each function, taken in
    rounds (each round calls every function once): interference from other
    processes (a descheduled worker thread) then hits all candidates alike,
    and the minimum is the least disturbed call. A function more than
    DROP_RATIO times slower than the best after a round leaves the rounds,
    except the first (the baseline): a disturbed first call of the baseline
    must not let a slower candidate win."""
    best = [float("inf")] * len(fns)
    live = list(range(len(fns)))
    for _ in range(repeats):
        for t in live:
            start = time.perf_counter()
            fns[t]()
            best[t] = min(best[t], time.perf_counter() - start)
        fastest = min(best)
        live = [t for t in live if t == 0 or best[t] <= DROP_RATIO * fastest]
    return best


def candidates_for(A, derived: dict | None = None) -> list:
    """The formats timed for A, CSR first."""
    candidates = [{"format": "csr", "fill": 1.0}]
    hyb = hyb_candidate(A, derived)
    if hyb is not None:
        candidates.append({"format": "hyb", "parts": hyb[0], "max_width": hyb[1]})
    blocks = block_candidates(A, derived)[:MAX_BLOCK_CANDIDATES]
    candidates += [{"format": "bsr", "block": b, "fill": round(fill, 3)}
                   for b, fill in blocks if fill <= BLOCK_FILL_SLACK * blocks[0][1]]
    return candidates


def _plan(budget: int, candidates: int):
    """(confirmation rounds, timed rounds, candidates timed) that fit `budget`
    calls: each candidate a warm-up and its rounds (at most REPEATS, as many
    as fit), two candidates at least, then the confirmation of a win if there
    is room for it."""
    confirm = CONFIRM_REPEATS if budget >= 4 + 2 * CONFIRM_REPEATS else 0
    remaining = budget - 2 * confirm
    count = max(2, min(candidates, remaining // 4))  # at least 3 rounds each while the budget allows
    repeats = max(1, min(REPEATS, remaining // count - 1))
    return confirm, repeats, min(count, remaining // (repeats + 1))


def _measure(A, K: int, dtype, candidates: list | None = None) -> dict:
    if candidates is None:
        candidates = candidates_for(A)
    # Every candidate gets a warm-up (which compiles its kernels and converts
    # the structure) and up to REPEATS timed calls, within the budget.
    confirm, repeats, count = _plan(MAX_TUNING_CALLS, len(candidates))
    candidates = candidates[:count]
    if len(candidates) < 2:
        return {"format": "csr", "block": None, "candidates": candidates, "source": "default"}
    # Any normal values time the same; ones cost nothing to make (randn of
    # email-Enron's B at K = 32 takes ten CSR calls).
    B = torch.ones(A.shape[1], K, dtype=dtype)
    with torch.no_grad():
        calls = [lambda c=c: run_choice(A, B, c) for c in candidates]
        for call in calls:
            call()
        for c, seconds in zip(candidates, _best_times(calls, repeats)):
            c["time_ms"] = round(1e3 * seconds, 4)
        best = min(range(1, len(candidates)), key=lambda t: candidates[t]["time_ms"])
        if confirm and candidates[best]["time_ms"] * MIN_GAIN <= candidates[0]["time_ms"]:
            # A win is confirmed by CONFIRM_REPEATS more rounds of the two:
            # a burst of interference over all of CSR's calls must not make
            # the choice that persists.
            for t, seconds in zip((0, best), _best_times([calls[0], calls[best]], confirm)):
                candidates[t]["time_ms"] = min(candidates[t]["time_ms"], round(1e3 * seconds, 4))
    best = min(candidates[1:], key=lambda c: c["time_ms"])
    if best["time_ms"] * MIN_GAIN > candidates[0]["time_ms"]:
        best = candidates[0]
    record = {"format": best["format"], "block": best.get("block"), "candidates": candidates, "source": "measured"}
    if best["format"] == "hyb":
        record.update(parts=best["parts"], max_width=best["max_width"])
    return record


def _key(A, op: str, K: int, dtype) -> str:
    # The CPU level is part of the key: a format measured with AVX-512 kernels
    # is no choice for AVX2 ones (a cache directory may be shared by both).
    return f"{op}|{graph_signature(A)}|K={K}|{dtype}|{A.indices.dtype}|{cpu_target()['target']}"


def _still_fits(A, record: dict) -> bool:
    if record.get("format") == "hyb":
        return hyb_candidate(A) == (record.get("parts"), record.get("max_width"))
    if record.get("format") != "bsr":
        return True
    b = record["block"]
    m, n = A.shape
    if m % b or n % b:
        return False
    return _C.bsr_block_count(A.indptr, A.indices, n, b, b) * b * b <= MAX_FILL * max(A.nnz, 1)


def choose(A, op: str, K: int, dtype, caller: str = "st.spmm") -> dict:
    """The format for `op` on A with feature width K (cached on A, then in
    the choices directory, else measured). A malformed A is refused first,
    named for `caller` (the candidates' block counters would otherwise name
    themselves)."""
    memo = ("choice", op, K, dtype)
    derived = A._derived
    if memo in derived:
        return derived[memo]
    if not A.is_block:
        structure_summary(A, caller, derived)
    candidates = [] if A.is_block or not tuning_enabled() or A.nnz == 0 else candidates_for(A, derived)
    if len(candidates) < 2:
        # Nothing but CSR to choose from (most sampled minibatches of a GNN:
        # no block size fits, the row lengths spread little), so nothing is
        # looked up or written: a new graph every step costs no file access.
        # No persisted choice could hold here either: it would be a block
        # size within MAX_FILL or this graph's hyb form, both candidates.
        record = {"format": "csr", "block": None, "candidates": candidates, "source": "default"}
    else:
        key = _key(A, op, K, dtype)
        record = _load_choice(key)
        if record is not None and not _still_fits(A, record):
            record = None  # another graph with the same signature: its blocks would pad too much here
        if record is not None:
            record = dict(record, source="persisted")
        else:
            record = _measure(A, K, dtype, candidates)
            _store_choice(key, record)
    derived[memo] = record
    return record


# The CSR kernel's schedule parameters follow from K, the CPU level and the
# structure by the cost model of the C++ recipe (PlanCsrmm in
# csrc/compiler/recipes/cpu_recipes.cc) and of GatherPrefetchFor
# (csrc/ops/csr_kernels.cc).


def csr_schedule(A, K: int, dtype) -> dict:
    """The schedule parameters spmm's CSR kernel takes for A at width K. They
    come from the cost model, not from timing: a row of more vectors than the
    level has registers, on a structure whose gathers are prefetched, is
    computed in feature tiles of half as many, one pass over the row's
    non-zeros each (feature_tile < K); other rows in one pass, where tiles
    ran 0.3-0.9x as fast on the dataset graphs; one task per thread with
    equal non-zeros needs no tuning."""
    element_size = torch.empty((), dtype=dtype).element_size()
    row_bytes = K * element_size
    level = _C.spmm_prefetch_level(A.indptr, A.indices, A.shape[1], row_bytes) if A.nnz else 0
    plan = csrmm_plan(K, 8 if element_size == 8 else 4, prefetch=level)  # 16-bit values accumulate in float32
    return {
        **_cpu_target_fields(),
        **plan,
        **_prefetch_fields(level),
        "tasks": f"{torch.get_num_threads()} (one per thread, equal non-zeros)",
        # The C++ recipe's steps for this kernel, replayable with st.Schedule.replay.
        "trace": _C.recipe_trace("csrmm", "csrmm", _dtype_name(dtype), _dtype_name(A.indices.dtype), {"feat_size": K},
                                 "cpu", level),
    }


def bsr_schedule(A, K: int, dtype) -> dict:
    """The schedule parameters bsrmm's kernel takes for A's blocks at width
    K: each output row's feature tile stays in registers while a block's
    columns pass; a row of more vectors than half the registers runs in
    tiles (feature_tile < K)."""
    block_h, block_w = (int(x) for x in A.values.shape[1:])
    element_size = torch.empty((), dtype=dtype).element_size()
    sizes = {"block_h": block_h, "block_w": block_w, "feat_size": K}
    return {
        **_cpu_target_fields(),
        **bsrmm_plan(block_h, K, 8 if element_size == 8 else 4),  # 16-bit values accumulate in float32
        "tasks": f"{torch.get_num_threads()} (one per thread, equal non-zero blocks)",
        "trace": _C.recipe_trace("bsrmm", "bsrmm", _dtype_name(dtype), _dtype_name(A.indices.dtype), sizes, "cpu"),
    }


def sddmm_schedule(A, K: int, dtype) -> dict:
    """The schedule of sddmm's dot product (x[i] . y[j] at A's non-zeros,
    x and y of K columns of `dtype`) on the cpu. Where the rows of y it
    gathers stay cached (y small, or the pattern banded), four of a row's
    dot products at a time (kernels/sddmm_dot_groups.py, group_lanes > 0:
    each vector of x loaded once for the four, the four sums merged in
    registers); elsewhere one at a time (kernels/sddmm_dot.py), the gathered
    rows prefetched by spmm's rule."""
    plan = (_C.sddmm_cpu_plan(A.indptr, A.indices, A.shape[1], K, torch.empty(0, dtype=dtype)) if A.nnz
            else {"prefetch": 0, "group_lanes": 0})
    level, lanes = plan["prefetch"], plan["group_lanes"]
    script, recipe, sizes = (("sddmm_dot_groups", "sddmm_dot_groups", {"feat_size": K, "lanes": lanes}) if lanes
                             else ("sddmm_dot", "sddmm", {"feat_size": K}))
    return {
        **_cpu_target_fields(),
        "kernel": script,
        "group_lanes": lanes,
        **_prefetch_fields(level),
        "tasks": f"{torch.get_num_threads()} (one per thread, equal non-zeros)",
        # The C++ recipe's steps for this kernel, replayable with st.Schedule.replay.
        "trace": _C.recipe_trace(script, recipe, _dtype_name(dtype), _dtype_name(A.indices.dtype), sizes, "cpu",
                                 level),
    }


def _cpu_target_fields() -> dict:
    target = cpu_target()
    return {"isa": target["target"], "compiler_flags": " ".join(target["compiler_flags"])}


def _prefetch_fields(level: int) -> dict:
    """Where a kernel prefetches its gathered rows (GatherPrefetchFor's level)."""
    return {"prefetch": level > 0, "prefetch_into": {0: None, 1: "L1", 2: "L2"}[level]}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")  # torch.float32 -> "float32", as scripts spell it


def explain(A, op: str = "spmm", k: int = 128, dtype=None, device: str = "cpu") -> dict:
    """What `op` runs on A at feature width k (dense operand dtype: A's values'
    by default): the chosen format, the measured time (ms) of every candidate
    and, for CSR and BSR, the kernel's schedule parameters. op="sddmm" on the
    cpu: the schedule of sddmm's dot product on A's pattern (which kernel,
    four dot products at a time or one, and its prefetches). With device="cuda": the
    cuda recipe's schedule (a replayable trace) of op "spmm", "spmm_mean" or
    "sddmm", the features a thread owns and, for spmm on a given A, whether
    its rows are cut into segments (A may be None there)."""
    from .sparse_matrix import as_sparse_matrix

    if int(k) < 0:
        raise ValueError(f"st.explain: k is a feature width, a number >= 0, got {k}")
    if device == "cuda":
        return _explain_cuda(None if A is None else as_sparse_matrix(A, "st.explain: argument 'A'"), op, int(k), dtype)
    if device != "cpu":
        raise ValueError(f"st.explain: device must be 'cpu' or 'cuda', got {device!r}")

    if op not in ("spmm", "sddmm"):
        raise ValueError(f"st.explain: on the cpu, op is 'spmm' (formats are chosen for it) or 'sddmm', got {op!r}")
    A = as_sparse_matrix(A, "st.explain: argument 'A'")
    dtype = A.values.dtype if dtype is None else dtype
    if op == "sddmm":
        if A.is_block:
            raise ValueError("st.explain: op='sddmm' samples a CSR pattern; A is block-sparse (BSR)")
        return {"op": op, "k": int(k), "shape": A.shape, "nnz": A.nnz, "format": "csr",
                "schedule": sddmm_schedule(A, int(k), dtype)}
    if dtype != A.values.dtype:
        raise ValueError(f"st.explain: dtype {dtype} differs from A's values ({A.values.dtype}); "
                         "st.spmm needs them equal")
    if A.is_block:
        bh, bw = A.values.shape[1:]
        record = {"format": "bsr", "block": bh if bh == bw else (bh, bw), "candidates": [], "source": "input"}
    else:
        record = choose(A, op, int(k), dtype, caller="st.explain")
    out = {"op": op, "k": int(k), "shape": A.shape, "nnz": A.nnz, "tuning": tuning_enabled(), **record}
    if record["format"] == "csr":
        out["schedule"] = csr_schedule(A, int(k), dtype)
    elif A.is_block:
        out["schedule"] = bsr_schedule(A, int(k), dtype)
    return out


_CUDA_RECIPES = {"spmm": ("csrmm", "csrmm"), "spmm_mean": ("csrmm_mean", "csrmm_mean"),
                 "sddmm": ("sddmm_dot", "sddmm"), "bsrmm": ("bsrmm", "bsrmm"),
                 "attention": ("sparse_attention_online", "sparse_attention_online")}


def _explain_cuda(A, op: str, k: int, dtype) -> dict:
    """The cuda schedule of `op` at feature width k, from the C++ recipe; for
    spmm (sum; spmm_mean: the mean, its division merged into the sum) on A,
    the row segments the operator would cut A into on A's device (a CPU A: on
    the device the emulator stands for); for bsrmm, A's blocks (16-bit blocks
    with sides of multiples of 16 and k a multiple of 8 run on tensor cores:
    "tensor_cores" says which; the others' register tile, "tile", takes as
    many rows a thread as A's block rows keep the device busy with); for attention (sparse_attention's forward,
    k the head dimension), whether it runs as one pass with an online softmax
    ("online_softmax") or through the multi-head operators, and what its
    backward runs ("backward")."""
    if op not in _CUDA_RECIPES:
        raise ValueError(f"st.explain: ops with a cuda recipe are {sorted(_CUDA_RECIPES)}, got {op!r}")
    script, recipe = _CUDA_RECIPES[op]
    out = {"op": op, "k": k, "device": "cuda", "format": "csr", "script": script}
    sizes = {"feat_size": k}
    if op in ("spmm", "spmm_mean"):
        if op == "spmm":
            values = dtype if dtype is not None else A.values.dtype if A is not None else torch.float32
            out["features_per_thread"] = _C.cuda_features_per_thread(k, torch.empty(0, dtype=values))
            sizes["features_per_thread"] = out["features_per_thread"]
        else:
            out["features_per_thread"] = 1  # the division has no per-thread split
        if A is not None and not A.is_block:
            device = str(A.indptr.device) if A.indptr.is_cuda else "cpu"
            like = torch.empty(0, dtype=A.values.dtype if dtype is None else dtype)
            segment = _C.spmm_cuda_row_segment(A.indptr, A.indices, A.shape[1], k, like, device)
            out["row_segment"] = segment  # non-zeros per segment; 0: rows whole
            if segment:
                out["format"], script = "csr row segments", "csrmm_segments"
                out["script"] = recipe = script
    if op == "sddmm":
        out["row_segment"] = _C.sddmm_cuda_row_segment(k)  # non-zeros per warp; 0: a thread per non-zero
        if out["row_segment"]:
            out["format"], script = "csr row segments", "sddmm_segments"
            out["script"] = recipe = script
    value_dtype = _dtype_name(dtype if dtype is not None else A.values.dtype if A is not None else torch.float32)
    index_dtype = _dtype_name(A.indices.dtype) if A is not None else "int32"
    if op == "attention":
        out["online_softmax"] = _C.sparse_attention_runs_online(k, k, 1)
        if not out["online_softmax"]:
            scores = "sddmm_heads_segments" if _C.sddmm_cuda_row_segment(k) else "sddmm_heads"
            out["script"] = f"{scores}, edge_softmax, csrmm_heads"
            out["backward"] = f"{scores}, edge_softmax, edge_softmax_backward, csrmm_heads"
            return out
        out["backward"] = "sparse_attention_backward_online, csrmm_heads"
        sizes = {"head_dim": k, "value_dim": k}
        # Lanes per scored column (0: the warp scores one column after another): the forward reads k as
        # given, the backward computes in float32 (16-bit inputs too) or float64.
        element_bytes = getattr(torch, value_dtype).itemsize
        # The operator's own choice of forward (the column groups, the shared tiles where set and A's rows
        # are in column order, or a warp per column) and its sizes.
        rows_sorted = A is None or not structure_summary(A, "st.explain")["unsorted_rows"]
        out["script"], forward_sizes = _C.cuda_attention_forward(k, k, element_bytes, rows_sorted)
        recipe = script = out["script"]
        sizes.update(forward_sizes)
        out["column_lanes"] = forward_sizes.get("column_lanes", 0)
        out["backward_column_lanes"] = _C.cuda_attention_column_lanes(k, max(element_bytes, 4))
        if out["column_lanes"]:
            out["backward"] = "sparse_attention_backward_online_columns, csrmm_heads"
        # The tile plan at this width (rows 0: no tiles).
        out["tile"] = _C.cuda_attention_tile(k, k, element_bytes, out["column_lanes"])
    if op == "bsrmm":
        if A is None or not A.is_block:
            raise ValueError("st.explain: op='bsrmm' needs A with blocks (a BSR tensor or a block st.SparseMatrix)")
        out["format"] = "bsr"
        block_h, block_w = A.values.shape[1:]
        sizes.update(block_h=int(block_h), block_w=int(block_w))
        out["block"] = (int(block_h), int(block_w))
        # The SIMT kernel's register tile, as the operator picks it for A's block rows on A's device (a CPU A: the
        # device the emulator stands for): rows x features outputs a thread (rows 0: one output a thread).
        device = str(A.indptr.device) if A.indptr.is_cuda else "cpu"
        tile = _C.cuda_bsrmm_tile(int(block_h), int(block_w), k, torch.empty(0, dtype=getattr(torch, value_dtype)),
                                  int(A.shape[0]) // int(block_h), device)
        sizes["rows_per_thread"] = tile["rows"]
    out["schedule"] = _C.recipe_trace(script, recipe, value_dtype, index_dtype, sizes, "cuda")
    if op == "bsrmm":
        out["tensor_cores"] = "sch.tensorize(" in out["schedule"]
        if not out["tensor_cores"]:
            out["tile"] = tile
    return out
