"""SparseMatrix: a CSR (or BSR) handle whose derived formats are built once.

`st.SparseMatrix(indptr, indices, values, shape)` holds the component tensors.
Formats derived from it (the transpose used by backward passes, row ids, ...)
are built by the C++ runtime classes on first use and cached on the handle.
Torch sparse tensors passed to the operators directly go through a bounded,
thread-safe cache keyed by the identity and version of their index tensors
(`_ConversionCache`), so converting a COO tensor to CSR happens once per graph.
"""
from __future__ import annotations

import threading
import weakref
import zlib
from collections import OrderedDict

import torch

from . import _C
from .ell_formats import EllMatrix, HybMatrix, scatter_values
from .identity_cache import IdentityCache, is_edge_index_class, is_torch_sparse_tensor
from .ops import ops
from .torch_warnings import quiet_sparse_warnings


# The entry of SparseMatrix._derived that records which structure the rest
# was derived from.
_STRUCTURE_KEY = "structure"


def _version(t: torch.Tensor):
    try:
        return t._version
    except RuntimeError:  # an inference tensor: no counter, and no in-place writes outside inference mode
        return None


def _contents(t: torch.Tensor) -> int:
    return zlib.crc32(t.detach().contiguous().cpu().numpy().view("uint8"))


def _structure_key(indptr: torch.Tensor, indices: torch.Tensor) -> tuple:
    """The version counters of the index tensors, and with
    st.validate_every_call on, a digest of their contents."""
    key = (id(indptr), id(indices), _version(indptr), _version(indices))
    if _C.validate_every_call():
        key += (_contents(indptr), _contents(indices))
    return key


class SparseMatrix:
    """A sparse matrix in CSR form: indptr (rows + 1), indices (nnz), values
    (nnz), or (nnz, heads) for one value per head on every non-zero (a
    multi-head adjacency, as torch's hybrid CSR tensor of shape (m, n, heads))
    or, for block-sparse matrices, values (nnzb, bh, bw) with indptr and
    indices over block rows and block columns."""

    def __init__(self, indptr: torch.Tensor, indices: torch.Tensor, values: torch.Tensor, shape):
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2 or min(shape) < 0:
            raise ValueError(f"SparseMatrix: shape must be two non-negative sizes, got {shape}")
        for name, t in (("indptr", indptr), ("indices", indices), ("values", values)):
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"SparseMatrix: {name} must be a tensor, got {type(t).__name__}")
        if indptr.dim() != 1 or indices.dim() != 1:
            raise ValueError("SparseMatrix: indptr and indices must be 1-D")
        block = tuple(values.shape[1:]) if values.dim() == 3 else (1, 1)
        if values.dim() not in (1, 2, 3):
            raise ValueError(f"SparseMatrix: values must be 1-D (CSR), 2-D (CSR, one value per head) or 3-D (BSR "
                             f"blocks), got shape {tuple(values.shape)}")
        if shape[0] != (indptr.shape[0] - 1) * block[0]:
            raise ValueError(
                f"SparseMatrix: indptr has {indptr.shape[0] - 1} rows (of blocks of height {block[0]}) "
                f"but shape is {shape}")
        if block[1] and shape[1] % block[1]:
            raise ValueError(f"SparseMatrix: shape {shape} is not a whole number of blocks of width {block[1]}")
        self.indptr, self.indices, self.values, self.shape = indptr, indices, values, shape
        self._derived = {}

    # ------------------------------------------------------------------ derived forms
    @property
    def _derived(self) -> dict:
        """What is derived from this structure (transpose, ELL / hyb / BSR
        forms, format choices, a layer's normalized graph), shared by the
        matrices with_values makes. Emptied when the structure changes: an
        in-place write to indptr or indices moves their version counters, and
        under st.validate_every_call the contents are compared too (writes
        that bypass the counters)."""
        store = self._derived_store
        if torch.compiler.is_compiling():
            return store  # traced code reads what eager calls derived (a graph's guards cover its inputs)
        key = _structure_key(self.indptr, self.indices)
        if store.get(_STRUCTURE_KEY) != key:
            store.clear()
            store[_STRUCTURE_KEY] = key
        return store

    @_derived.setter
    def _derived(self, store: dict) -> None:
        self._derived_store = store

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_torch(cls, t: torch.Tensor) -> "SparseMatrix":
        """From a torch sparse CSR, COO (coalesced as needed) or BSR tensor."""
        if t.layout == torch.sparse_csr:
            if t.dense_dim() > 1 or t.dim() - t.dense_dim() != 2:
                raise ValueError(f"SparseMatrix.from_torch: a CSR tensor must be 2-D, or hybrid with one dense "
                                 f"dimension (heads), got shape {tuple(t.shape)} with {t.dense_dim()} dense "
                                 f"dimensions")
            return cls(t.crow_indices(), t.col_indices(), t.values(), t.shape[:2])
        if t.layout == torch.sparse_bsr:
            return cls(t.crow_indices(), t.col_indices(), t.values(), t.shape)
        if t.layout == torch.sparse_coo:
            if t.dim() != 2:
                raise ValueError(f"SparseMatrix.from_torch: a COO tensor must be 2-D, got {t.dim()}-D")
            _check_coo_indices(t)
            if t.is_coalesced():
                if _coo_in_csr_order(t):
                    return _coalesced_coo_matrix(t)
                # Marked coalesced (is_coalesced=True) but unsorted or with
                # duplicates: coalesce() would trust the mark, so the entries
                # are sorted (and duplicates summed) here. values() keeps the
                # autograd edge to t.
                rows, cols = t._indices()
                return cls.from_coo(rows, cols, t.values(), t.shape)
            with quiet_sparse_warnings():
                csr = t.coalesce().to_sparse_csr()
            return cls(csr.crow_indices(), csr.col_indices(), csr.values(), csr.shape)
        raise ValueError(f"SparseMatrix.from_torch: expected a sparse CSR, COO or BSR tensor, got layout {t.layout}")

    @classmethod
    def from_coo(cls, row: torch.Tensor, col: torch.Tensor, values: torch.Tensor, shape,
                 sum_duplicates: bool = True) -> "SparseMatrix":
        """From COO arrays (any order): the C++ runtime sorts them into CSR
        (columns sorted within rows) and returns each entry's slot, so the
        values move with one index_add. With `sum_duplicates`, equal
        (row, col) pairs add up into one entry; otherwise they are all kept.
        `row` and `col` are int32 or int64 (the CSR keeps their dtype)."""
        shape = tuple(int(s) for s in shape)
        if len(shape) != 2:
            raise ValueError(f"SparseMatrix.from_coo: shape must have two dimensions, got {shape}")
        if not isinstance(values, torch.Tensor) or values.dim() != 1:
            raise ValueError("SparseMatrix.from_coo: values must be a 1-D tensor")
        indptr, indices, slot = ops._coo_to_csr(row, col, shape[0], shape[1], sum_duplicates)  # checks row, col
        if values.shape[0] != slot.shape[0]:
            raise ValueError(f"SparseMatrix.from_coo: values must have one element per entry of row and col, got "
                             f"{values.shape[0]} values for {slot.shape[0]} entries")
        return cls(indptr, indices, values.new_zeros(indices.shape[0]).index_add(0, slot, values), shape)

    @classmethod
    def from_dense(cls, dense: torch.Tensor, index_dtype=torch.int64) -> "SparseMatrix":
        if not isinstance(dense, torch.Tensor) or dense.dim() != 2:
            got = f"shape {tuple(dense.shape)}" if isinstance(dense, torch.Tensor) else type(dense).__name__
            raise ValueError(f"SparseMatrix.from_dense: expected a 2-D tensor, got {got}")
        with quiet_sparse_warnings():
            csr = dense.to_sparse_csr()
        return cls(csr.crow_indices().to(index_dtype), csr.col_indices().to(index_dtype), csr.values(), dense.shape)

    # ------------------------------------------------------------------ properties
    @property
    def nnz(self) -> int:
        return self.indices.shape[0]

    @property
    def is_block(self) -> bool:
        return self.values.dim() == 3

    @property
    def heads(self):
        """The heads of a multi-head matrix (values (nnz, heads)), else None."""
        return self.values.shape[1] if self.values.dim() == 2 else None

    @property
    def dtype(self):
        return self.values.dtype

    def transpose_structure(self):
        """(indptr, indices, perm) of the transpose, built once by the C++
        runtime (values_t = values[perm])."""
        if "transpose" not in self._derived:
            columns = self.shape[1] // (self.values.shape[2] if self.is_block else 1)
            _C.check_csr("SparseMatrix.t", self.indptr, self.indices, columns,
                         f"the {'block ' if self.is_block else ''}columns of shape {self.shape}")
            self._derived["transpose"] = ops._csr_transpose(self.indptr, self.indices, columns)
        return self._derived["transpose"]

    def values_derived(self, key, make, structure=None):
        """make(values), cached under `key` while the values stay the same
        tensor at the same version (and `structure`, when given, the same
        object: a structure rebuilt after an index edit). Not cached while the
        values require grad (make is then part of the graph) nor for inference
        tensors, which have no version to tell a change by."""
        values = self.values
        cached = self._derived.get(key)
        if (cached is not None and cached[0] is values and cached[1] == values._version
                and cached[2] is structure):
            return cached[3]
        out = make(values)
        if not values.requires_grad and not values.is_inference():
            self._derived[key] = (values, values._version, structure, out)
        return out

    def _check_not_block(self, what: str) -> None:
        if self.is_block:
            raise ValueError(f"SparseMatrix.{what}: a block (BSR) matrix has no {what} form; convert a CSR matrix")
        if self.heads is not None:
            raise ValueError(f"SparseMatrix.{what}: a multi-head matrix (values {tuple(self.values.shape)}) has no "
                             f"{what} form; take one head with with_values(values[:, h])")

    def ell(self, width: int) -> EllMatrix:
        """The ELL form with `width` slots per row (at least the longest row).
        The structure is built once (cached here and per graph in C++); the
        values are scattered on every call, so they follow with_values."""
        self._check_not_block("ell")
        key = ("ell", int(width))
        if key not in self._derived:
            _C.check_csr("SparseMatrix.ell", self.indptr, self.indices, self.shape[1],
                         f"the columns of shape {self.shape}")
            self._derived[key] = ops._csr_to_ell(self.indptr, self.indices, int(width))
        indices, slot = self._derived[key]
        values = scatter_values(self.values, slot, indices.numel(), self.indptr).view(indices.shape)
        return EllMatrix(indices, values, slot, self.shape)

    def hyb(self, parts: int, max_width: int) -> HybMatrix:
        """The hyb(parts, max_width) form (max_width a power of two; parts =
        1 is bucketed ELL). Structure cached as for ell(); values scattered
        on every call."""
        bucket_info, row_map, indices, slot = self.hyb_structure(parts, max_width)
        values = scatter_values(self.values, slot, indices.numel(), self.indptr)
        return HybMatrix(bucket_info, row_map, indices, values, slot, self.shape, int(parts), int(max_width))

    def hyb_structure(self, parts: int, max_width: int):
        """The structure of hyb(parts, max_width) without values: (bucket_info,
        row_map, indices, slot) as in HybMatrix, converted once (C++) and cached."""
        self._check_not_block("hyb")
        key = ("hyb", int(parts), int(max_width))
        if key not in self._derived:
            self._derived[key] = ops._csr_to_hyb(self.indptr, self.indices, self.shape[1], int(parts),
                                                 int(max_width))
        return self._derived[key]

    def t(self) -> "SparseMatrix":
        """The transpose as a SparseMatrix (values permuted; blocks transposed)."""
        t_indptr, t_indices, perm = self.transpose_structure()
        values = self.values.index_select(0, perm)
        if self.is_block:
            values = values.transpose(1, 2).contiguous()
        return SparseMatrix(t_indptr, t_indices, values, (self.shape[1], self.shape[0]))

    def to_torch(self) -> torch.Tensor:
        # torch builds the tensor without checking its invariants: an index
        # out of range would put a value in another row of to_dense().
        columns = self.shape[1] // (self.values.shape[2] if self.is_block else 1)
        _C.check_csr("SparseMatrix.to_torch", self.indptr, self.indices, columns,
                     f"the {'block ' if self.is_block else ''}columns of shape {self.shape}")
        with quiet_sparse_warnings():
            if self.is_block:
                return torch.sparse_bsr_tensor(self.indptr, self.indices, self.values, self.shape)
            return torch.sparse_csr_tensor(self.indptr, self.indices, self.values,
                                           self.shape + tuple(self.values.shape[1:]))

    def to_dense(self) -> torch.Tensor:
        return self.to_torch().to_dense()

    @classmethod
    def _assemble(cls, indptr, indices, values, shape, derived) -> "SparseMatrix":
        """A matrix from parts already checked (no validation), sharing `derived`."""
        out = cls.__new__(cls)
        out.indptr, out.indices, out.values, out.shape, out._derived = indptr, indices, values, shape, derived
        return out

    def with_values(self, values: torch.Tensor) -> "SparseMatrix":
        """The same structure (and its cached derived formats) with new values
        of the same shape (checked; the structure was checked already); a CSR
        matrix also takes (nnz,) or (nnz, heads) values, one per head."""
        if not isinstance(values, torch.Tensor):
            raise ValueError(f"SparseMatrix.with_values: values must be a tensor, got {type(values).__name__}")
        per_head = (not self.is_block and values.dim() in (1, 2) and values.shape[0] == self.nnz)
        if values.shape != self.values.shape and not per_head:
            expected = f"(nnz,) or (nnz, heads) with nnz = {self.nnz}" if not self.is_block else \
                f"shape {tuple(self.values.shape)}"
            raise ValueError(f"SparseMatrix.with_values: values must have {expected}, got {tuple(values.shape)}")
        return SparseMatrix._assemble(self.indptr, self.indices, values, self.shape, self._derived)

    def to(self, device) -> "SparseMatrix":
        """This matrix on `device` (self where it is already there). The moved
        structure is kept with this one's derived forms, so moving a fixed
        pattern at every call copies its index tensors once; the values are
        moved at each call (differentiably: they may be trained). The moved
        matrix derives its own forms on its device at first use."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if self.indptr.device == device:
            return self
        key = ("on_device", str(device))
        moved = self._derived.get(key)
        if moved is None:
            moved = (self.indptr.to(device), self.indices.to(device), {})
            if not torch.compiler.is_compiling():  # traced code keeps no tensors of its own
                self._derived[key] = moved
        indptr, indices, derived = moved
        return SparseMatrix._assemble(indptr, indices, self.values.to(device), self.shape, derived)

    def __matmul__(self, other):
        from .api import spmm

        return spmm(self, other)

    def __repr__(self):
        kind = f"BSR {tuple(self.values.shape[1:])}" if self.is_block else \
            "CSR" if self.heads is None else f"CSR, heads={self.heads}"
        return f"SparseMatrix({kind}, shape={self.shape}, nnz={self.nnz}, dtype={self.dtype})"


# --------------------------------------------------------------------------- COO tensors


def _check_coo_indices(t: torch.Tensor) -> None:
    """Every index of a 2-D COO tensor is in range. torch does not look at
    them when a tensor is made with check_invariants=False, and its coalesce()
    then writes out of bounds: they are checked first."""
    indices = t._indices()
    for axis, (name, size) in enumerate((("row", t.shape[0]), ("column", t.shape[1]))):
        bad = ((indices[axis] < 0) | (indices[axis] >= size)).nonzero()
        if bad.numel():
            k = int(bad[0, 0])
            raise ValueError(f"SparseMatrix.from_torch: the COO tensor's entry {k} has {name} index "
                             f"{int(indices[axis, k])}, out of range for {size} {name}s")


def _coo_in_csr_order(t: torch.Tensor) -> bool:
    """Whether a 2-D COO tensor's entries are sorted by (row, column) without
    repeats, as a coalesced one's are. False for other tensors."""
    if t.dim() != 2:
        return False
    rows, cols = t._indices()
    if rows.numel() < 2:
        return True
    # Indices out of range are refused before any use; here they only must not overflow.
    keys = rows.clamp(0, t.shape[0]) * (t.shape[1] + 1) + cols.clamp(0, t.shape[1])
    return bool((keys[1:] > keys[:-1]).all())


def _coalesced_coo_matrix(t: torch.Tensor) -> SparseMatrix:
    """The SparseMatrix of a COO tensor in CSR order: its columns as they are,
    row pointers counted from its rows, values() (which keeps the autograd
    edge to t, unlike _values())."""
    rows, cols = t._indices()
    indptr = torch.zeros(t.shape[0] + 1, dtype=torch.int64, device=rows.device)
    indptr[1:] = torch.bincount(rows, minlength=t.shape[0]).cumsum(0)
    return SparseMatrix(indptr, cols.contiguous(), t.values(), t.shape)


# --------------------------------------------------------------------------- implicit cache


class _ConversionCache:
    """The SparseMatrix of a torch sparse tensor (CSR, BSR or coalesced COO),
    keyed by the identity of the tensor and the versions of its index tensors:
    bounded (least recently used dropped first), thread-safe, and an entry
    goes when its tensor is freed. Reusing one SparseMatrix keeps the index
    tensors the operators see identical from call to call, so the per-graph
    cache in C++ (validation, transposes) hits. Values are read from the
    tensor on every call: they may change between calls (coalesced COO values
    are already in CSR order).

    Whether an entry still holds is asked of a C++ fingerprint
    (csrc/ops/sparse_tensor_fingerprint.h) in one call that also returns the
    values: reading the versions in Python means building a view of every
    index tensor on every call, which cost as much as the operator itself on
    a small matrix. The fingerprint also sees edits of the index tensors a
    tensor was built from, which do not bump the sparse tensor's own version."""

    def __init__(self, capacity: int = 64):
        self.capacity = capacity
        # id(t) -> [weakref to t, its fingerprint, (indptr, indices, shape, derived),
        #           the SparseMatrix last returned or None]
        self._entries: OrderedDict[int, list] = OrderedDict()
        # Reentrant: dropping an entry can free its tensor, whose weakref
        # callback (_forget) takes the lock again on the same thread.
        self._lock = threading.RLock()

    def lookup(self, t) -> SparseMatrix | None:
        """The cached SparseMatrix of t, None if there is none or it no longer
        holds. Lock-free: under the GIL, reading the table and moving an entry
        to the recent end are single operations on it, and a fingerprint is
        immutable; what changes the table takes the lock."""
        entry = self._entries.get(id(t))
        if entry is None or _C.validate_every_call():
            return None
        # The fingerprint checks identity too: a freed tensor's id may be reused.
        values = entry[1].values_if_unchanged(t)
        if values is None:
            return None
        try:
            self._entries.move_to_end(id(t))
        except KeyError:
            pass  # dropped by another thread meanwhile; the structure is still right for this call
        matrix = entry[3]
        if matrix is None or matrix.values is not values:
            indptr, indices, shape, derived = entry[2]
            matrix = SparseMatrix._assemble(indptr, indices, values, shape, derived)
            # The values t holds come back as the same tensor on every call, so
            # the matrix is kept for the next; the view t.values() (returned
            # when gradients must reach t) is not: it would keep t alive.
            if values._base is not t:
                entry[3] = matrix
        return matrix

    def get(self, t: torch.Tensor) -> SparseMatrix:
        matrix = self.lookup(t)
        if matrix is not None:
            return matrix
        key = id(t)
        fingerprint = _C.sparse_tensor_fingerprint(t)
        matrix = self._convert(t)
        if fingerprint is None:
            return matrix  # inference tensors have no versions: nothing would tell that they changed
        # The entry keeps the structure, not matrix: matrix.values is the view
        # t.values(), and holding it would keep t (and so the entry) alive forever.
        structure = (matrix.indptr, matrix.indices, matrix.shape, matrix._derived_store)
        with self._lock:
            self._entries[key] = [weakref.ref(t, self._forget(key)), fingerprint, structure, None]
            self._entries.move_to_end(key)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return matrix

    def _forget(self, key):
        def callback(_):
            with self._lock:
                self._entries.pop(key, None)

        return callback

    @staticmethod
    def _convert(t: torch.Tensor) -> SparseMatrix:
        if t.layout != torch.sparse_coo:
            return SparseMatrix.from_torch(t)
        # COO tensors come here only coalesced and in CSR order (as_sparse_matrix
        # checked it): from_torch would look at the order a second time.
        _check_coo_indices(t)
        return _coalesced_coo_matrix(t)

    def clear(self):
        with self._lock:
            self._entries.clear()

    def __len__(self):
        with self._lock:
            return len(self._entries)


_TORCH_SPARSE_CACHE = _ConversionCache()


_FOREIGN_CACHE = IdentityCache()


def _from_edge_index(a) -> SparseMatrix:
    """A torch_geometric EdgeIndex as the matrix PyG multiplies by
    (``EdgeIndex.matmul``): A[edge_index[0], edge_index[1]] = 1, summed over
    duplicate edges, of its sparse size (else the largest index + 1)."""
    plain = a.as_tensor()
    rows, columns = a.sparse_size()
    largest = int(plain.max()) + 1 if plain.numel() else 0
    shape = (rows if rows is not None else largest, columns if columns is not None else largest)
    ones = torch.ones(plain.shape[1], device=plain.device)
    return SparseMatrix.from_coo(plain[0].contiguous(), plain[1].contiguous(), ones, shape)


def _from_torch_sparse(a) -> SparseMatrix:
    """A torch_sparse SparseTensor's CSR components (values 1 where it has none)."""
    rowptr, col, value = a.csr()
    if value is None:
        value = torch.ones(col.shape[0], device=col.device)
    return SparseMatrix(rowptr, col, value, tuple(a.sizes()))


def as_sparse_matrix(a, what: str) -> SparseMatrix:
    """A SparseMatrix for an operator argument: a SparseMatrix, or a torch sparse
    CSR / BSR tensor (its components, no copy) or COO tensor (converted to CSR
    once), both cached by the tensor's identity and its indices' versions; a
    torch_geometric EdgeIndex or a torch_sparse SparseTensor (converted once
    per object and version)."""
    if isinstance(a, SparseMatrix):
        return a
    if is_edge_index_class(a):
        return _FOREIGN_CACHE.get(a, None, lambda: _from_edge_index(a))
    if is_torch_sparse_tensor(a):
        return _FOREIGN_CACHE.get(a, None, lambda: _from_torch_sparse(a))
    # A tensor seen before: no layout checks (only accepted tensors have entries).
    cached = _TORCH_SPARSE_CACHE.lookup(a)
    if cached is not None:
        return cached
    if isinstance(a, torch.Tensor):
        if a.layout == torch.sparse_bsr and a.requires_grad and torch.is_grad_enabled():
            # Its values' gradient would be a BSR tensor, which torch's gradient
            # accumulation cannot take (it fails in backward, naming no operator).
            raise ValueError(f"{what}: a torch BSR tensor cannot receive gradients (torch accumulates no BSR "
                             f"gradient); pass st.SparseMatrix(A.crow_indices(), A.col_indices(), values, A.shape) "
                             f"with values that require grad")
        if a.layout in (torch.sparse_csr, torch.sparse_bsr, torch.sparse_coo):
            try:
                if a.layout == torch.sparse_coo and not (a.is_coalesced() and _coo_in_csr_order(a)):
                    # Coalescing (or sorting) makes new values each time: nothing to key a cache on.
                    return SparseMatrix.from_torch(a)
                return _TORCH_SPARSE_CACHE.get(a)
            except ValueError as e:  # a batched tensor, wrong hybrid dimensions: named for the operator
                raise ValueError(f"{what}: {e}") from None
        raise ValueError(f"{what}: expected a sparse tensor (CSR, COO or BSR), st.SparseMatrix, "
                         f"torch_geometric.EdgeIndex or torch_sparse.SparseTensor, got a {a.layout} tensor")
    raise ValueError(f"{what}: expected a sparse tensor or st.SparseMatrix, got {type(a).__name__}")
