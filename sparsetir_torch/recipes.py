"""Schedules that make the built-in kernels fast on a CPU.

They encode the method of ARCHITECTURE.md's performance notes: specialize the
feature width at the first call, keep the output row in SIMD registers, walk
the feature dimension in 16-lane (64-byte) vectors, and split rows across
threads by non-zeros.
"""
from __future__ import annotations

from .compiler import parse
from .kernels import kernel_script
from .schedule import Schedule


PREFETCH_DISTANCE = 32  # non-zeros ahead; ARCHITECTURE.md: 16-64 alike, under 12 too short


MAX_UNROLLED_VECTORS = 16  # beyond that, full unrolling runs out of registers


def vector_lanes(feat_size: int) -> int:
    """The widest vector (at most 16 lanes, 64 bytes of float32) dividing
    feat_size; 1 when none does (the C++ recipe's VectorLanes)."""
    lanes = 16
    while lanes > 1 and (feat_size % lanes or feat_size < lanes):
        lanes //= 2
    return lanes


def vectorize_features(sch: Schedule, loop: str, feat_size: int) -> int:
    """Splits feature loop `loop` into vectors of vector_lanes(feat_size), the
    inner part vectorized and the outer unrolled while that fits the
    registers; returns the lanes (1: left scalar)."""
    lanes = vector_lanes(feat_size)
    if lanes > 1:
        outer, inner = sch.split(loop, factors=[None, lanes])
        if feat_size // lanes <= MAX_UNROLLED_VECTORS:
            sch.unroll(outer)
        sch.vectorize(inner)
    return lanes


def spmm_cpu(feat_size: int, script: str | None = None, parallel: bool = True,
             prefetch: int | None = PREFETCH_DISTANCE) -> Schedule:
    """The CSR SpMM (kernels/csrmm.py, or `script` with the same loop names)
    scheduled for a feature width known at the first call (the same steps as
    the operators' C++ recipe, csrc/compiler/recipes/cpu_recipes.cc)."""
    sch = Schedule(parse(script if script is not None else kernel_script("csrmm")))
    sch.specialize(feat_size=feat_size)
    i, j, k = sch.get_loops("csrmm")
    vectorized = vectorize_features(sch, k, feat_size) > 1
    if feat_size <= 512:
        sch.cache_write(i, "C", "local")
        if vectorized and feat_size <= 64:
            # Two accumulator sets (every other non-zero): hides the FMA
            # latency a single dependent chain per vector leaves exposed.
            _, j_1 = sch.split(j, factors=[None, 2])
            sch.rfactor(j_1)
            sch.unroll(j_1)
            j = j_1
    if prefetch:
        # The B rows of the non-zeros `prefetch` ahead: a gather that no
        # hardware prefetcher predicts, and on a B beyond L2 the bottleneck.
        sch.prefetch(j, "B", prefetch)
    if parallel:
        sch.parallel(i)
    return sch
