"""Schedules that make the built-in kernels fast on a CPU.

They encode the method of ARCHITECTURE.md's performance notes: specialize the
feature width at the first call, keep the output row in SIMD registers, walk
the feature dimension in vectors as wide as the CPU's registers, and split rows
across threads by non-zeros. The rules (lanes per level, unrolling and
accumulator sets per register file) live once, in the C++ recipes
(csrc/compiler/recipes/cpu_recipes.cc); this module asks them.
"""
from __future__ import annotations

from . import _C
from .compiler import parse
from .kernels import kernel_script
from .schedule import Schedule


def cpu_target(isa: str | None = None) -> dict:
    """The CPU target kernels are built for: this CPU's instruction-set level
    (detected, or $SPARSETIR_CPU_ISA), or the level `isa` ("generic", "avx2",
    "avx512", "neon", "sve", or an -march alias such as "x86-64-v3")."""
    return _C.cpu_target(isa or "")


def runnable_levels() -> list:
    """The CPU levels this machine executes, best first (the detected level
    and the levels of its family below it)."""
    return list(_C.runnable_cpu_levels())


def vector_lanes(feat_size: int, element_bytes: int = 4, isa: str | None = None) -> int:
    """The widest vector of `element_bytes`-byte lanes, one register of the
    target at most, dividing feat_size; 1 when none does."""
    return _C.vector_lanes(feat_size, element_bytes, isa or "")


def csrmm_plan(feat_size: int, element_bytes: int = 4, isa: str | None = None, prefetch: int = 1) -> dict:
    """The C++ recipe's choices for an SpMM row of feat_size elements whose
    gathers are prefetched as `prefetch` says (0 not at all, 1 into L1, 2
    into L2): vector_lanes, unrolled_vectors, output_row_in_registers,
    feature_tile (the elements one pass over a row's non-zeros computes),
    accumulator_sets."""
    return _C.csrmm_plan(feat_size, element_bytes, isa or "", int(prefetch))


def bsrmm_plan(block_h: int, feat_size: int, element_bytes: int = 4, isa: str | None = None) -> dict:
    """The C++ recipe's choices for bsrmm's output rows of feat_size elements
    (blocks of block_h rows): vector_lanes, unrolled_vectors, feature_tile
    (the elements of a row held in registers while a block's columns pass;
    a row wider than half the registers runs in tiles), output_tile_local
    (the block row's output kept on the stack) and b_tile_packed (a tile's
    slice of the B block copied into a local buffer first)."""
    return _C.bsrmm_plan(block_h, feat_size, element_bytes, isa or "")


def spmm_cpu(feat_size: int, script: str | None = None, parallel: bool = True, prefetch: bool | int = True,
             isa: str | None = None) -> Schedule:
    """The CSR SpMM (kernels/csrmm.py, or `script` with the same loop names)
    scheduled exactly as the operators' C++ recipe schedules it for a feature
    width known at the first call and the CPU level `isa` (this CPU's by
    default): the recipe's trace (_C.recipe_trace) replayed. `prefetch`
    names the recipe's software prefetch of the gathered rows: True or 1
    into L1, 2 into L2 (the operators' choice for long rows and operands out
    in DRAM), False or 0 none. `parallel=False` leaves out its parallel step
    (a serial kernel to compare with)."""
    if prefetch not in (0, 1, 2):  # True == 1 and False == 0
        raise ValueError(f"spmm_cpu: prefetch is True / 1 (into L1), 2 (into L2) or False / 0, got {prefetch!r}")
    target = "cpu" if isa is None else f"cpu:{isa}"
    trace = _C.recipe_trace("csrmm", "csrmm", "float32", "int32", {"feat_size": int(feat_size)}, target, int(prefetch))
    if not parallel:
        trace = "\n".join(line for line in trace.splitlines() if not line.startswith("sch.parallel("))
    return Schedule.replay(trace, parse(script if script is not None else kernel_script("csrmm")))
