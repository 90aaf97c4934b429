"""Schedules: named transformations of a kernel, recorded in a replayable trace.

    sch = st.Schedule(f)
    sch.sparse_reorder("csrmm", ["I", "K", "J"])   # stage I: sparse iterations
    i, j, k = sch.get_loops("csrmm")               # lowers to stage II on first use
    k_0, k_1 = sch.split(k, factors=[None, 16])
    sch.vectorize(k_1)
    sch.parallel(i)
    kernel = st.compile(sch)
    print(sch.trace)                               # Python that replays the schedule

Loops are named by their variables (strings), so the trace is plain Python:
``Schedule.replay(trace, f)`` runs it on a fresh schedule of ``f``.
"""
from __future__ import annotations

import operator
from typing import Optional, Sequence, Union

from . import _C
from .errors import ScheduleError

PrimFunc = _C.PrimFunc


def _names(items) -> list:
    return [str(x) for x in items]


def _int(value, what: str) -> int:
    """An int argument as it is: int() would truncate a float or parse a string silently."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ScheduleError(f"{what} must be an int, got {value!r}")
    return operator.index(value)


class Schedule:
    def __init__(self, f: Union[PrimFunc, str]):
        if isinstance(f, str):
            from .compiler import parse

            f = parse(f)
        self._native = _C.Schedule(f)

    @property
    def mod(self) -> PrimFunc:
        """The current function."""
        return self._native.mod

    @property
    def trace(self) -> str:
        """The primitives applied so far, as Python that replays them."""
        return self._native.trace

    @classmethod
    def replay(cls, trace: str, f: Union[PrimFunc, str]) -> "Schedule":
        sch = cls(f)
        exec(compile(trace, "<trace>", "exec"), {"sch": sch})  # noqa: S102 - a trace is our own Python
        return sch

    # ---- stage I
    def sparse_reorder(self, iteration: str, order: Sequence[str]) -> None:
        self._native.sparse_reorder(iteration, _names(order))

    def sparse_fuse(self, iteration: str, iterators: Sequence[str]) -> None:
        """Iterate a dense_fixed parent and its varied child (e.g. ["I", "J"]) as
        one loop over the child's non-zeros; the parent is found by binary search."""
        self._native.sparse_fuse(iteration, _names(iterators))

    def annotate(self, iteration: str, key: str, value) -> None:
        self._native.annotate(iteration, key, value)

    def specialize(self, **values: int) -> None:
        """Binds scalar parameters to constants (e.g. feat_size=128); calls must
        then pass exactly those values."""
        self._native.specialize({k: _int(v, f"specialize: {k}") for k, v in values.items()})

    def lower_sparse_iter(self) -> None:
        self._native.lower_sparse_iter()

    # ---- stages II / III
    def get_blocks(self) -> list:
        return self._native.get_blocks()

    def get_loops(self, block: str) -> list:
        return self._native.get_loops(block)

    def split(self, loop: str, factors: Sequence[Optional[int]]) -> list:
        return self._native.split(str(loop), [None if f is None else _int(f, f"split: factor {k}")
                                              for k, f in enumerate(factors)])

    def fuse(self, *loops) -> str:
        if len(loops) == 1 and not isinstance(loops[0], str):
            loops = tuple(loops[0])
        return self._native.fuse(_names(loops))

    def merge(self, *loops) -> str:
        """Consecutive sibling loops over the same range become one loop that
        runs their bodies in order (stage II); returns the merged loop's name."""
        if len(loops) == 1 and not isinstance(loops[0], str):
            loops = tuple(loops[0])
        return self._native.merge(_names(loops))

    def reorder(self, *loops) -> None:
        if len(loops) == 1 and not isinstance(loops[0], str):
            loops = tuple(loops[0])
        self._native.reorder(_names(loops))

    def parallel(self, loop: str) -> None:
        self._native.parallel(str(loop))

    def vectorize(self, loop: str) -> None:
        self._native.vectorize(str(loop))

    def unroll(self, loop: str) -> None:
        self._native.unroll(str(loop))

    def bind(self, loop: str, thread_axis: str) -> None:
        self._native.bind(str(loop), thread_axis)

    def lower_sparse_buffer(self) -> None:
        self._native.lower_sparse_buffer()

    def cache_read(self, loop: str, buffer: str, scope: str = "local") -> str:
        """Inside ``loop``, read ``buffer`` from a copy in ``scope`` (stage III)."""
        return self._native.cache_read(str(loop), buffer, scope)

    def cache_write(self, loop: str, buffer: str, scope: str = "local") -> str:
        """Inside ``loop``, accumulate ``buffer`` in a copy in ``scope`` and write it
        back after each iteration (stage III): register-resident output rows."""
        return self._native.cache_write(str(loop), buffer, scope)

    def rfactor(self, loop: str) -> str:
        """Factors the reduction carried by `loop` into one partial result per
        iteration (a local buffer, returned by name) combined after the
        reduction, so that `loop` can be vectorized. Reassociates the sum."""
        return self._native.rfactor(str(loop))

    def prefetch(self, loop: str, buffer: str, offset: int, cache_level: int = 1) -> None:
        """At the top of ``loop``'s body, prefetch the span of ``buffer`` that
        iteration ``loop + offset`` reads (stage III). For gathers such as
        ``B[indices[j], k]``, whose addresses hardware prefetchers cannot
        guess; index arrays read to form the address are bounds-guarded.
        ``cache_level`` is the nearest cache the lines are brought into: 1
        (L1) or 2 (L2 but not L1: for spans too long for L1, or an operand
        far out in DRAM, where L2 takes more misses in flight)."""
        self._native.prefetch(str(loop), buffer, _int(offset, "prefetch: offset"),
                              _int(cache_level, "prefetch: cache_level"))

    def tensorize(self, loop: str, intrinsic: str = "mma_m16n8k16") -> None:
        """The nest of three loops from ``loop`` that multiply-accumulates one
        tile (rows 16, columns 8, depth 16, in any order; float16 or bfloat16
        multiplicands in any two dimensions of their buffers, read with those
        dimensions' strides; a float32 or local accumulator whose last two
        dimensions hold the tile) becomes one tensor-core instruction that a
        warp runs together (``T.sp.mma_sync``; stage III, cuda target)."""
        self._native.tensorize(str(loop), intrinsic)

    def __repr__(self) -> str:
        return f"<Schedule of {self.mod.name}, {len(self.trace.splitlines())} primitives>"
