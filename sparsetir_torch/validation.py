"""An opt-in re-check of structure arrays on every call.

The operators validate a sparse structure (indptr order, index ranges) once
and cache what they learn per graph, trusting it until the version counter of
an index tensor moves. Writes that bypass the counter (through ``.data``, a
NumPy view, ``set_`` onto the same storage) go unseen, just as torch does not
check sparse invariants unless asked. ``validate_every_call`` asks: while it
is on, every operator call and every ``st.compile``d kernel call validates its
structure again (one pass over indptr and indices) and compares a digest of
their contents with the cached entry, so a changed structure is neither read
out of bounds nor served stale transposes or format copies. Conversions of
torch sparse tensors and PyG graphs are made anew on every call too.

Like ``torch.sparse.check_sparse_tensor_invariants`` it is a process-wide
switch, usable as a context manager::

    with st.validate_every_call():
        out = st.spmm(A, B)

``SPARSETIR_VALIDATE=always`` in the environment turns it on at import.
"""
from __future__ import annotations

from . import _C


class validate_every_call:  # noqa: N801 - named like torch.sparse.check_sparse_tensor_invariants
    """Re-validate every structure on every call while enabled (see the module's text)."""

    def __init__(self, enable: bool = True):
        self._enable = bool(enable)
        self._saved: list[bool] = []

    @staticmethod
    def enable() -> None:
        _C.set_validate_every_call(True)

    @staticmethod
    def disable() -> None:
        _C.set_validate_every_call(False)

    @staticmethod
    def is_enabled() -> bool:
        return _C.validate_every_call()

    def __enter__(self) -> "validate_every_call":
        self._saved.append(_C.validate_every_call())
        _C.set_validate_every_call(self._enable)
        return self

    def __exit__(self, *exc) -> None:
        _C.set_validate_every_call(self._saved.pop())
