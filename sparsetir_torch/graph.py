"""Graph: the CSR adjacency a GNN layer aggregates over, built once per graph.

Message passing sends x[j] along every edge j -> i and combines what arrives
at i, so the matrix a layer multiplies by has one row per target node listing
the sources of its incoming edges (PyG's ``adj_t``). `as_graph` builds it
from any form a PyG user holds:

- an ``edge_index`` (2, E) integer tensor (row 0 sources, row 1 targets) and
  ``num_nodes`` (default: the largest index + 1);
- a ``torch_geometric.EdgeIndex`` (its sparse size gives the node count);
- a ``torch_sparse.SparseTensor`` ``adj_t``, a torch sparse CSR / COO tensor
  or an ``st.SparseMatrix``: already the transposed adjacency, as in PyG;
  values other than all ones are edge weights (`adjacency_weights`), as PyG's
  layers take them.

Graphs are cached by the identity and version of the tensor they came from,
so the conversion, the self loops, the normalization and the format choice of
the spmm kernels happen on the first epoch only. Per-edge tensors given in
``edge_index`` order (edge weights) move into CSR order with `edge_values`.
"""
from __future__ import annotations

import threading

import torch

from .ops import _row_ids, ops
from .identity_cache import IdentityCache, is_edge_index_class as _is_edge_index_class
from .identity_cache import is_torch_sparse_tensor as _is_torch_sparse_tensor
from .sparse_matrix import SparseMatrix, as_sparse_matrix

_INT32_MAX = 2**31 - 1


class Graph:
    """A graph as a CSR matrix: row i holds the sources j of the edges j -> i.

    ``adj`` has all-ones values (float32) so that its structure serves every
    dtype; ``edge_order`` (or None) gives, for each input edge, its position
    in CSR order."""

    def __init__(self, adj: SparseMatrix, edge_order: torch.Tensor | None = None):
        if adj.is_block:
            raise ValueError("st.nn: a graph must be a CSR or COO adjacency, not block-sparse")
        self.adj = adj
        self.edge_order = edge_order
        self._derived: dict = {}
        self._lock = threading.RLock()  # a derived form may be built from another

    @property
    def num_nodes(self) -> int:
        return self.adj.shape[0]

    @property
    def num_edges(self) -> int:
        return self.adj.nnz

    @property
    def indptr(self) -> torch.Tensor:
        return self.adj.indptr

    @property
    def indices(self) -> torch.Tensor:
        return self.adj.indices

    def derived(self, key, make):
        """make(), computed once per graph under `key`."""
        # A plain lookup first: under torch.compile it traces (a guard on the
        # table), so a layer on a graph whose forms exist compiles without a
        # graph break; building one runs eagerly, outside the traced graph.
        value = self._derived.get(key)
        return value if value is not None else self._make_derived(key, make)

    @torch.compiler.disable
    def _make_derived(self, key, make):
        with self._lock:
            if key not in self._derived:
                self._derived[key] = make()
            return self._derived[key]

    def row_ids(self) -> torch.Tensor:
        """The target node (row) of every edge in CSR order (int64)."""
        return self.derived("row_ids", lambda: _row_ids(self.indptr, self.num_edges))

    def ones(self, dtype=torch.float32) -> torch.Tensor:
        """All-ones edge values (unweighted aggregation) of `dtype`."""
        return self.derived(("ones", dtype), lambda: torch.ones(self.num_edges, dtype=dtype,
                                                                device=self.indptr.device))

    def in_degree(self, dtype=torch.float32) -> torch.Tensor:
        """The number of incoming edges of every node."""
        return self.derived(("in_degree", dtype), lambda: (self.indptr[1:] - self.indptr[:-1]).to(dtype))

    def edge_values(self, values: torch.Tensor) -> torch.Tensor:
        """Per-edge values given in the input's edge order (E, ...) in CSR order."""
        if not isinstance(values, torch.Tensor) or values.dim() == 0 or values.shape[0] != self.num_edges:
            raise ValueError(f"st.nn: per-edge values must have one row per edge ({self.num_edges}), "
                             f"got {_shape_or_type(values)}")
        if self.edge_order is None:
            return values
        inverse = self.derived("edge_order_inverse", lambda: torch.argsort(self.edge_order))
        return values.index_select(0, inverse)

    def with_values(self, values: torch.Tensor) -> SparseMatrix:
        """The adjacency with `values` (in CSR order): shares the structure's
        cached formats (transpose, format choice)."""
        return self.adj.with_values(values)

    def with_self_loops(self, remaining: bool = True) -> "SelfLoops":
        """This graph with self loops (cached): one per node that has none
        and a node's several loops kept as its last one (``remaining``, PyG's
        add_remaining_self_loops) or, when not
        ``remaining``, existing loops removed and exactly one added per node
        (remove_self_loops + add_self_loops)."""
        return self.derived(("self_loops", remaining), lambda: _add_self_loops(self, remaining))

    def __repr__(self):
        return f"Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges})"


class SelfLoops:
    """A graph with self loops, and where each of its edges came from:
    ``source[e]`` is the position of edge e in the original graph's CSR order,
    -1 for an added loop."""

    def __init__(self, graph: Graph, source: torch.Tensor):
        self.graph, self.source = graph, source
        self._added = source < 0
        self._kept = source.clamp(min=0)

    def carry(self, values: torch.Tensor, fill: float) -> torch.Tensor:
        """Per-edge values of the original graph (CSR order) on this graph:
        added loops get `fill`."""
        if values.shape[0] == 0:
            # A graph without edges: every edge here is an added loop (and
            # there is no position 0 to gather from).
            return values.new_full((self.source.shape[0],) + tuple(values.shape[1:]), fill)
        moved = values.index_select(0, self._kept)
        mask = self._added.view((-1,) + (1,) * (values.dim() - 1))
        return torch.where(mask, torch.full_like(moved, fill), moved)


def _add_self_loops(graph: Graph, remaining: bool) -> SelfLoops:
    n = graph.num_nodes
    if graph.adj.shape[0] != graph.adj.shape[1]:
        raise ValueError(f"st.nn: self loops need a square adjacency, got shape {graph.adj.shape}")
    rows, cols = graph.row_ids(), graph.indices.long()
    is_loop = rows == cols
    nodes = torch.arange(n, device=rows.device)
    if remaining:
        # A node's existing loops collapse into its last one (in edge order),
        # as PyG's add_remaining_self_loops does.
        loops = torch.nonzero(is_loop).flatten()
        last = torch.full((n,), -1, dtype=torch.int64, device=rows.device)
        last = last.scatter_reduce(0, rows.index_select(0, loops), loops, "amax")
        kept = torch.cat([torch.nonzero(~is_loop).flatten(), last[last >= 0]])
        added = nodes[last < 0]
    else:
        kept = torch.nonzero(~is_loop).flatten()
        added = nodes
    coo_rows = torch.cat([rows.index_select(0, kept), added])
    coo_cols = torch.cat([cols.index_select(0, kept), added])
    index_dtype = graph.indptr.dtype
    indptr, indices, slot = ops._coo_to_csr(coo_rows.to(index_dtype), coo_cols.to(index_dtype), n, n, False)
    source = torch.full((slot.shape[0],), -1, dtype=torch.int64, device=rows.device)
    source[slot[:kept.shape[0]]] = kept
    adj = SparseMatrix(indptr, indices, torch.ones(indices.shape[0], device=rows.device), (n, n))
    return SelfLoops(Graph(adj), source)


def gcn_norm(graph, edge_weight: torch.Tensor | None = None, num_nodes: int | None = None, improved: bool = False,
             add_self_loops: bool = True, dtype=torch.float32) -> tuple[Graph, torch.Tensor]:
    """The symmetric normalization of GCN: the graph (with self loops when
    asked: weight 2 with ``improved``, else 1, for nodes without one) and the
    per-edge values D^-1/2 (A + I) D^-1/2 in its CSR order, where D holds the
    weighted in-degrees. ``edge_weight`` is in the input's edge order.
    Without weights the values are cached per graph."""
    g = as_graph(graph, num_nodes)
    fill = 2.0 if improved else 1.0

    def make(weight):
        target = g
        if add_self_loops:
            loops = g.with_self_loops(remaining=True)
            weight = loops.carry(weight, fill)
            target = loops.graph
        rows = target.row_ids()
        degree = torch.zeros(target.num_nodes, dtype=weight.dtype, device=weight.device).index_add_(0, rows, weight)
        inv_sqrt = degree.pow(-0.5).masked_fill(degree == 0, 0.0)
        values = inv_sqrt.index_select(0, rows) * weight * inv_sqrt.index_select(0, target.indices.long())
        return target, values

    if edge_weight is not None:
        return make(g.edge_values(edge_weight))
    return g.derived(("gcn_norm", improved, add_self_loops, dtype),
                     lambda: make(torch.ones(g.num_edges, dtype=dtype, device=g.indptr.device)))


def degree(graph, num_nodes: int | None = None, dtype=torch.float32) -> torch.Tensor:
    """The in-degree of every node (the number of edges j -> i), as PyG's
    ``degree(edge_index[1], num_nodes)``."""
    return as_graph(graph, num_nodes).in_degree(dtype)


# --------------------------------------------------------------------------- conversion and cache


def _index_dtype(num_nodes: int, num_edges: int) -> torch.dtype:
    # int32 indices halve the structure's memory traffic in every kernel.
    return torch.int32 if max(num_nodes, num_edges) <= _INT32_MAX else torch.int64


def _from_edge_index(edge_index: torch.Tensor, num_nodes: int | None) -> Graph:
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"st.nn: edge_index must have shape (2, E), got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.int32, torch.int64):
        raise ValueError(f"st.nn: edge_index must have dtype int32 or int64, got {edge_index.dtype}")
    if edge_index.numel() and int(edge_index.min()) < 0:
        raise ValueError("st.nn: edge_index holds a negative node index")
    largest = int(edge_index.max()) + 1 if edge_index.numel() else 0
    if num_nodes is None:
        num_nodes = largest
    elif largest > num_nodes:
        raise ValueError(f"st.nn: edge_index holds node {largest - 1}, out of range for num_nodes={num_nodes}")
    dtype = _index_dtype(num_nodes, edge_index.shape[1])
    sources, targets = edge_index[0].to(dtype), edge_index[1].to(dtype)
    indptr, indices, slot = ops._coo_to_csr(targets, sources, num_nodes, num_nodes, False)
    adj = SparseMatrix(indptr, indices, torch.ones(indices.shape[0], device=indices.device), (num_nodes, num_nodes))
    return Graph(adj, edge_order=slot)


def _from_matrix(a, what: str) -> Graph:
    if _is_torch_sparse_tensor(a):
        rowptr, col, _ = a.csr()
        m = SparseMatrix(rowptr, col, torch.ones(col.shape[0], device=col.device), tuple(a.sizes()))
    else:
        m = as_sparse_matrix(a, what)
    if m.is_block:
        raise ValueError(f"{what}: a graph must be a CSR or COO adjacency, not block-sparse")
    adj = SparseMatrix(m.indptr, m.indices, torch.ones(m.nnz, device=m.indices.device), m.shape)
    return Graph(adj)


_GRAPHS = IdentityCache()


def adjacency_weights(a, what: str = "st.nn: argument 'edge_index'") -> torch.Tensor | None:
    """The edge weights of a weighted adjacency, in CSR order: the values of a
    torch sparse tensor, an st.SparseMatrix or a torch_sparse SparseTensor
    (PyG's layers weight their messages by them), unless all are ones. None
    for an edge_index, an EdgeIndex, a Graph and an unweighted matrix, whose
    layers use the graph's cached ones and normalization. Values that require
    grad are weights whatever they hold: the gradient reaches them."""
    if isinstance(a, Graph) or _is_edge_index_class(a) or (isinstance(a, torch.Tensor) and a.layout == torch.strided):
        return None
    if not (_is_torch_sparse_tensor(a) or isinstance(a, (torch.Tensor, SparseMatrix))):
        return None  # as_graph names what it does not take
    return _matrix_weights(a, what)


# Run eagerly under torch.compile: it looks at the values (are they all
# ones?), and a matrix adjacency breaks the traced graph here (an edge_index
# or a Graph returns before).
@torch.compiler.disable
def _matrix_weights(a, what: str) -> torch.Tensor | None:
    m = as_sparse_matrix(a, what)
    if m.is_block:
        return None  # refused by as_graph
    if m.values.dim() != 1:
        raise ValueError(f"{what}: an adjacency's values are edge weights, one per edge, got shape "
                         f"{tuple(m.values.shape)}")
    if not m.values.requires_grad and m.values_derived("st.nn.unweighted", lambda v: bool(torch.all(v == 1))):
        return None
    return _plain(m.values)


def _plain(values: torch.Tensor) -> torch.Tensor:
    """`values`, or for a view of a torch sparse tensor's values (what
    t.values() returns) a new tensor with the same values and gradient: a
    compiled layer receives it as an input, and torch.compile cannot take a
    view whose base is sparse."""
    base = values._base
    return values if base is None or base.layout == torch.strided else values * 1


def as_graph(a, num_nodes: int | None = None, what: str = "st.nn: argument 'edge_index'") -> Graph:
    """The Graph of an edge_index (with num_nodes), a torch_geometric
    EdgeIndex, a torch_sparse SparseTensor adj_t, a torch sparse tensor or an
    st.SparseMatrix (cached per object)."""
    if isinstance(a, Graph):
        return a
    if _is_edge_index_class(a):
        size = a.sparse_size()
        n = num_nodes if num_nodes is not None else (size[1] if size[1] is not None else size[0])
        plain = a.as_tensor()
        return _GRAPHS.get(a, n, lambda: _from_edge_index(plain, n))
    if isinstance(a, torch.Tensor) and a.layout == torch.strided:
        return _GRAPHS.get(a, num_nodes, lambda: _from_edge_index(a, num_nodes))
    if _is_torch_sparse_tensor(a):
        graph = _GRAPHS.get(a, None, lambda: _from_matrix(a, what))
    elif isinstance(a, (torch.Tensor, SparseMatrix)):
        # Kept with the matrix's derived formats, which the conversion cache
        # renews when the index tensors change.
        m = as_sparse_matrix(a, what)
        graph = m._derived.get("st.nn.graph")
        if graph is None:
            graph = m._derived.setdefault("st.nn.graph", _from_matrix(m, what))
    else:
        graph = None
    if graph is not None:
        if num_nodes is not None and graph.num_nodes != num_nodes:
            raise ValueError(f"{what}: the adjacency has {graph.num_nodes} rows but there are {num_nodes} nodes")
        return graph
    raise ValueError(f"{what}: expected an edge_index (2, E) tensor, a torch_geometric EdgeIndex, a torch_sparse "
                     f"SparseTensor, a torch sparse tensor or st.SparseMatrix, got {type(a).__name__}")


def _shape_or_type(values) -> str:
    return f"shape {tuple(values.shape)}" if isinstance(values, torch.Tensor) else type(values).__name__
