"""A bounded cache keyed by the identity and version of a tensor-like object:
what is derived from an edge_index, a torch_geometric EdgeIndex or a
torch_sparse SparseTensor (their CSR forms) is built once per object."""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

from . import _C


def is_edge_index_class(a) -> bool:
    """A torch_geometric.EdgeIndex (checked by name: PyG is optional)."""
    return type(a).__name__ == "EdgeIndex" and type(a).__module__.startswith("torch_geometric")


def is_torch_sparse_tensor(a) -> bool:
    """A torch_sparse.SparseTensor (checked by name: torch_sparse is optional)."""
    return type(a).__name__ == "SparseTensor" and type(a).__module__.startswith("torch_sparse")


class IdentityCache:
    """Objects derived from a tensor (or a torch_sparse SparseTensor), by the
    identity of that object, valid while its version is unchanged; bounded,
    and an entry goes with its object."""

    def __init__(self, capacity: int = 32):
        self.capacity = capacity
        self._entries: OrderedDict[int, tuple] = OrderedDict()
        self._lock = threading.RLock()

    @staticmethod
    def _version(a):
        if is_torch_sparse_tensor(a):
            return a.storage.rowptr()._version, a.storage.col()._version
        return a._version

    def get(self, a, key_extra, make):
        if _C.validate_every_call():
            return make()  # st.validate_every_call: nothing derived is trusted across calls
        key = id(a)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is a and entry[1] == (self._version(a), key_extra):
                self._entries.move_to_end(key)
                return entry[2]
        value = make()
        try:
            ref = weakref.ref(a, self._forget(key))
        except TypeError:
            return value
        with self._lock:
            self._entries[key] = (ref, (self._version(a), key_extra), value)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value

    def _forget(self, key):
        def callback(_):
            with self._lock:
                self._entries.pop(key, None)
        return callback

    def clear(self):
        with self._lock:
            self._entries.clear()
