"""The compiler's Python API: parse, lower, compile, and call kernels."""
from __future__ import annotations

import operator
import os
import threading
from collections import OrderedDict
from typing import Any, Union

from . import _C

PrimFunc = _C.PrimFunc


def parse(text: str, source_name: str = "<script>") -> PrimFunc:
    """Parses a script (the SparseTIR TVMScript spelling) into a PrimFunc.

    Stage-I functions are verified; errors raise ScriptError with line:column.
    ``text`` may also be a path to a ``.py`` file.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the script text, got {type(text).__name__}")
    if "\n" not in text and text.endswith(".py"):
        if not os.path.isfile(text):
            raise FileNotFoundError(f"parse(): {text!r} looks like a path to a script, but there is no such file "
                                    f"(relative to {os.getcwd()!r}); pass the script's text or an existing path")
        with open(text, encoding="utf-8") as f:
            return _C.parse(f.read(), text)
    return _C.parse(text, source_name)


def lower_sparse_iter(f: PrimFunc) -> PrimFunc:
    """Stage I -> stage II: sparse iterations become loops over positions."""
    return _C.lower_sparse_iter(f)


def lower_sparse_buffer(f: PrimFunc) -> PrimFunc:
    """Stage II -> stage III: sparse buffers become flat buffers."""
    return _C.lower_sparse_buffer(f)


def specialize(f: PrimFunc, **values: int) -> PrimFunc:
    """Binds scalar parameters to constants at any stage, e.g.
    ``st.specialize(f, feat_size=128)``; the parameters stay in the signature and
    a call must pass exactly those values."""
    for name, value in values.items():  # int() would truncate a float or parse a string silently
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise ValueError(f"st.specialize: {name} must be an int, got {value!r}")
    return _C.specialize(f, {k: operator.index(v) for k, v in values.items()})


class Kernel:
    """A compiled kernel. Call it with torch tensors for the script's handle
    parameters and Python ints for its scalar parameters, by name or in
    parameter order; outputs are written in place. Every call is checked
    against the script: a wrong dtype, device, shape or a malformed structure
    array raises ValueError naming the parameter."""

    def __init__(self, native: "_C.Kernel"):
        self._native = native
        self._params = tuple(native.param_names)

    @property
    def name(self) -> str:
        return self._native.name

    @property
    def source(self) -> str:
        """The generated C++ source."""
        return self._native.source

    @property
    def params(self) -> tuple:
        return self._params

    @property
    def target(self) -> str:
        """The target it was built for, e.g. "cpu:avx512" or "cuda"."""
        return self._native.target

    def ptx(self, arch: str = "sm_90") -> str:
        """A cuda kernel's PTX for ``arch`` ("sm_80", "sm_90", or the number),
        compiled by NVRTC (which needs no GPU): what the driver would assemble
        for that architecture. ptxas (``ptxas -arch=sm_90 -v``) reports its
        registers and spills."""
        if not self.target.startswith("cuda"):
            raise ValueError(f"{self.name}.ptx(): the kernel was built for {self.target!r}; "
                             "st.compile(..., target=\"cuda\") builds a cuda kernel")
        from .cuda_runtime import nvrtc_ptx

        return nvrtc_ptx(f"{self.name}.ptx()", self.source, self.name + ".cu", arch)[0]

    @property
    def lowered(self) -> PrimFunc:
        """The stage-III function the source was generated from."""
        return self._native.lowered

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        name = self.name
        if len(args) > len(self._params):
            raise ValueError(f"{name}() takes {len(self._params)} arguments but {len(args)} were given")
        values = list(args) + [_MISSING] * (len(self._params) - len(args))
        for key, value in kwargs.items():
            if key not in self._params:
                raise ValueError(f"{name}() got an unexpected argument '{key}'; its parameters are {', '.join(self._params)}")
            index = self._params.index(key)
            if values[index] is not _MISSING:
                raise ValueError(f"{name}() got multiple values for argument '{key}'")
            values[index] = value
        missing = [p for p, v in zip(self._params, values) if v is _MISSING]
        if missing:
            raise ValueError(f"{name}() is missing argument{'s' if len(missing) > 1 else ''} " + ", ".join(f"'{m}'" for m in missing))
        self._native.run(values)

    def __repr__(self) -> str:
        return f"<Kernel {self.name}({', '.join(self._params)})>"


_MISSING = object()

# compile()'s in-memory table: script text or function (structural hash and
# equality) -> Kernel, so a repeated compile() costs a lookup instead of
# lowering and generating code again to find the cached object.
_COMPILED: "OrderedDict[tuple, Kernel]" = OrderedDict()
_COMPILED_CAPACITY = 512
_COMPILED_LOCK = threading.Lock()
_COMPILED_HITS = 0


def compile(f, target: str = "cpu") -> Kernel:  # noqa: A001 - the public name
    """Lowers a script or PrimFunc to stage III, generates code for ``target``
    and builds it (once per content: kernels are cached in memory and on disk
    under $SPARSETIR_CACHE_DIR).

    ``target``: "cpu" (this CPU's instruction-set level, or
    $SPARSETIR_CPU_ISA), "cpu:<level>" ("generic", "avx2", "avx512", "neon",
    "sve" or an -march alias such as "x86-64-v3"; a level this CPU cannot run
    compiles but must not be called), or "cuda"."""
    from .schedule import Schedule

    if isinstance(f, Schedule):
        f = f.mod
    if not isinstance(f, (str, PrimFunc)):
        raise TypeError(f"compile() takes a PrimFunc, a Schedule or script text, got {type(f).__name__}")
    global _COMPILED_HITS
    func = None
    if isinstance(f, str) and "\n" not in f and os.path.isfile(f):
        func = f = parse(f)  # a path: its contents may change, so key on the function
    # With SPARSETIR_DUMP_IR set every compile() lowers again, so it dumps.
    # Structural equality ignores names, but a kernel is called by its
    # parameters' names: a function renamed is another key.
    names = (f.name, tuple(name for name, _ in f.params)) if isinstance(f, PrimFunc) else ()
    key = (target, f, names) if not os.environ.get("SPARSETIR_DUMP_IR") else None
    with _COMPILED_LOCK:
        kernel = _COMPILED.get(key) if key is not None else None
        if kernel is not None:
            _COMPILED.move_to_end(key)
            _COMPILED_HITS += 1
            return kernel
    if func is None:
        func = parse(f) if isinstance(f, str) else f
    kernel = Kernel(_C.build(func, target))
    if key is None:
        return kernel
    with _COMPILED_LOCK:
        _COMPILED[key] = kernel
        while len(_COMPILED) > _COMPILED_CAPACITY:
            _COMPILED.popitem(last=False)
    return kernel


def clear_compiled() -> None:
    """Empties compile()'s in-memory table (the disk cache is untouched)."""
    with _COMPILED_LOCK:
        _COMPILED.clear()


def cache_info() -> dict:
    """The kernel cache directory and this process's compile / hit counters."""
    info = dict(_C.cache_stats())
    info["memory_hits"] += _COMPILED_HITS  # compile() answered from its own table
    info["directory"] = _C.cache_dir()
    return info
