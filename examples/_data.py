"""Graphs for the examples: a Matrix Market file's pattern as an undirected
graph, with node features and labels generated reproducibly (the matrices
carry none).

Labels are the argmax of random class scores smoothed twice over the graph,
so neighbours tend to share a class; features are a per-class mean plus
noise, so a model does better with the graph than without it."""
from __future__ import annotations

import os

import torch

import sparsetir_torch as st
from sparsetir_torch import datasets
from sparsetir_torch.matrix_market import read_matrix_market

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# $SPARSETIR_DATASETS, else the matrices shipped with the tests.
DATASETS = os.environ.get("SPARSETIR_DATASETS") or os.path.join(REPO, "tests", "data", "matrices")


def dataset_path(name: str) -> str:
    if os.path.isfile(name):
        return name
    path = os.path.join(DATASETS, name if name.endswith(".mtx.gz") else name + ".mtx.gz")
    if not os.path.isfile(path) and name.removesuffix(".mtx.gz") in datasets.DATASETS:
        path = datasets.find(name) or path  # the cache that `python -m sparsetir_torch.datasets fetch` fills
    if not os.path.isfile(path):
        raise SystemExit(f"no graph {name!r}: not a file and not in {DATASETS} (set $SPARSETIR_DATASETS, or run "
                         f"`python3 -m sparsetir_torch.datasets fetch {name}`)")
    return path


def load_graph(name: str, max_nodes: int | None = None) -> tuple[torch.Tensor, int]:
    """(edge_index, num_nodes): both directions of every off-diagonal entry,
    once each; with max_nodes, the subgraph of the first max_nodes nodes."""
    m = read_matrix_market(dataset_path(name))
    n = min(m.shape[0], m.shape[1])
    rows = torch.repeat_interleave(torch.arange(m.shape[0]), m.indptr.diff())
    cols = m.indices
    keep = (rows < n) & (cols < n) & (rows != cols)
    if max_nodes is not None:
        n = min(n, max_nodes)
        keep &= (rows < n) & (cols < n)
    edges = torch.stack([torch.cat([rows[keep], cols[keep]]), torch.cat([cols[keep], rows[keep]])])
    return torch.unique(edges, dim=1).contiguous(), n


def node_data(edge_index: torch.Tensor, n: int, features: int = 64, classes: int = 8, seed: int = 0):
    """(x, y, train_mask, test_mask), the same for a given seed."""
    g = torch.Generator().manual_seed(seed)
    adj = st.SparseMatrix.from_coo(edge_index[1], edge_index[0], torch.ones(edge_index.shape[1]), (n, n))
    degree = (adj.indptr[1:] - adj.indptr[:-1]).clamp(min=1).float()
    scores = torch.randn(n, classes, generator=g)
    for _ in range(2):
        scores = scores + st.spmm(adj, scores) / degree[:, None]
    y = scores.argmax(1)
    means = torch.randn(classes, features, generator=g)
    x = means[y] + 2.0 * torch.randn(n, features, generator=g)
    train = torch.rand(n, generator=g) < 0.5
    return x, y, train, ~train
