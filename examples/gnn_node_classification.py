"""Node classification with a 2-layer GCN, GraphSAGE, GAT or GIN on a real
graph, trained with st.nn layers (and st.nn.Dropout) and, with --compare, the
same model with PyG's layers and with torch.sparse (torch's dropout), timed
epoch by epoch in turn; --torch-dropout gives the st.nn model torch's too. With
--compile the st.nn model runs under torch.compile: its layers trace into one
graph once the graph's derived forms (normalization, self loops) exist, so the
model runs once eagerly before it is compiled.

    tools/python examples/gnn_node_classification.py --model gcn --graph email-Enron
    tools/python examples/gnn_node_classification.py --model gat --heads 4 --compare
    tools/python examples/gnn_node_classification.py --model sage --compile --compare
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings

import torch
import torch.nn.functional as F

import sparsetir_torch as st
from _data import load_graph, node_data

try:
    with warnings.catch_warnings():  # PyG's import warns about torch.jit.script
        warnings.simplefilter("ignore")
        import torch_geometric.nn as pyg_nn
except ImportError:
    pyg_nn = None


class Net(torch.nn.Module):
    """conv -> ReLU -> dropout -> conv, from a layer library (st.nn or PyG's);
    the dropout is the library's (torch's for PyG) unless `torch_dropout`."""

    def __init__(self, nn, model: str, features: int, hidden: int, classes: int, heads: int, aggr: str,
                 dropout: float = 0.5, torch_dropout: bool = False):
        super().__init__()
        self.dropout = (st.nn.Dropout if nn is st.nn and not torch_dropout else torch.nn.Dropout)(dropout)
        if model == "gcn":
            self.conv1, self.conv2 = nn.GCNConv(features, hidden), nn.GCNConv(hidden, classes)
        elif model == "sage":
            self.conv1, self.conv2 = nn.SAGEConv(features, hidden, aggr=aggr), nn.SAGEConv(hidden, classes, aggr=aggr)
        elif model == "gat":
            self.conv1 = nn.GATConv(features, hidden // heads, heads=heads)
            self.conv2 = nn.GATConv(hidden // heads * heads, classes, heads=1)
        elif model == "gin":
            mlp = lambda a, b: torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, b))  # noqa: E731
            self.conv1, self.conv2 = nn.GINConv(mlp(features, hidden)), nn.GINConv(mlp(hidden, classes))
        else:
            raise SystemExit(f"unknown model {model!r}")

    def forward(self, x, graph):
        return self.conv2(self.dropout(F.relu(self.conv1(x, graph))), graph)


class TorchSparseGCN(torch.nn.Module):
    """The same GCN with torch.sparse.mm on a normalized CSR adjacency."""

    def __init__(self, features: int, hidden: int, classes: int, dropout: float = 0.5):
        super().__init__()
        self.dropout = dropout
        self.lin1, self.lin2 = torch.nn.Linear(features, hidden), torch.nn.Linear(hidden, classes)

    def forward(self, x, adj):
        x = F.dropout(F.relu(torch.sparse.mm(adj, self.lin1(x))), p=self.dropout, training=self.training)
        return torch.sparse.mm(adj, self.lin2(x))


class TorchSparseSAGE(torch.nn.Module):
    """The same GraphSAGE with torch.sparse.mm(reduce=...) on the CSR adjacency."""

    def __init__(self, features: int, hidden: int, classes: int, aggr: str, dropout: float = 0.5):
        super().__init__()
        self.dropout = dropout
        self.reduce = {"mean": "mean", "max": "amax", "min": "amin", "sum": "sum"}[aggr]
        self.l1, self.r1 = torch.nn.Linear(features, hidden), torch.nn.Linear(features, hidden, bias=False)
        self.l2, self.r2 = torch.nn.Linear(hidden, classes), torch.nn.Linear(hidden, classes, bias=False)

    def forward(self, x, adj):
        x = self.l1(torch.sparse.mm(adj, x, self.reduce)) + self.r1(x)
        x = F.dropout(F.relu(x), p=self.dropout, training=self.training)
        return self.l2(torch.sparse.mm(adj, x, self.reduce)) + self.r2(x)


def adjacency(edge_index, n):
    graph = st.nn.as_graph(edge_index, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.sparse_csr_tensor(graph.indptr.long(), graph.indices.long(), torch.ones(graph.num_edges), (n, n))


def normalized_adjacency(edge_index, n):
    graph, values = st.nn.gcn_norm(edge_index, num_nodes=n)
    with warnings.catch_warnings():  # torch: "sparse CSR support is in beta"
        warnings.simplefilter("ignore")
        return torch.sparse_csr_tensor(graph.indptr.long(), graph.indices.long(), values, (n, n))


def make_runs(args, edge_index, n, x, y):
    """name -> (model, graph argument) of every implementation to train."""
    classes = int(y.max()) + 1
    shape = (x.shape[1], args.hidden, classes, args.heads, args.aggr, args.dropout)
    ours = Net(st.nn, args.model, *shape, torch_dropout=args.torch_dropout)
    runs = {"st.nn": compiled(ours, st.nn.as_graph(edge_index, n), x) if args.compile else (ours, edge_index)}
    if args.compare and pyg_nn is not None:
        runs["PyG"] = (Net(pyg_nn, args.model, *shape), edge_index)
        runs["PyG"][0].load_state_dict(ours.state_dict())
    if args.compare and args.model == "gcn":
        runs["torch.sparse"] = (TorchSparseGCN(x.shape[1], args.hidden, classes, args.dropout),
                                normalized_adjacency(edge_index, n))
    if args.compare and args.model == "sage":
        runs["torch.sparse"] = (TorchSparseSAGE(x.shape[1], args.hidden, classes, args.aggr, args.dropout),
                                adjacency(edge_index, n))
    return runs


def compiled(model, graph, x):
    """(torch.compile(model), graph), after one eager call has built the
    graph's derived forms: the compiled layers then only look them up."""
    with torch.no_grad():
        model.eval()
        model(x, graph)
    return torch.compile(model, fullgraph=True), graph


def epoch(model, optimizer, graph, x, y, train) -> float:
    model.train()
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x, graph)[train], y[train])
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def accuracy(model, graph, x, y, mask) -> float:
    model.eval()
    return float((model(x, graph).argmax(1)[mask] == y[mask]).float().mean())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=("gcn", "sage", "gat", "gin"), default="gcn")
    p.add_argument("--aggr", default="mean", help="SAGE aggregation: mean, max, sum")
    p.add_argument("--heads", type=int, default=4, help="GAT heads in the first layer")
    p.add_argument("--graph", default="email-Enron", help="a Matrix Market file or a name in $SPARSETIR_DATASETS")
    p.add_argument("--max-nodes", type=int, default=None, help="train on the first N nodes' subgraph")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--dropout", type=float, default=0.5,
                   help="dropout after the first layer: st.nn.Dropout in the st.nn model, torch's in the others")
    p.add_argument("--torch-dropout", action="store_true",
                   help="torch.nn.Dropout in the st.nn model too: torch draws the CPU mask one element at a time "
                        "(13 ns each on the AMD host of the README's figures), which can cost a 2-layer GNN more "
                        "than its layers; st.nn.Dropout draws it vectorized and saves no mask")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--compare", action="store_true", help="also train with PyG's layers and torch.sparse")
    p.add_argument("--compile", action="store_true", help="run the st.nn model under torch.compile")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    edge_index, n = load_graph(args.graph, args.max_nodes)
    x, y, train, test = node_data(edge_index, n)
    print(f"{args.graph}: {n} nodes, {edge_index.shape[1]} edges; {args.model}, {torch.get_num_threads()} threads")
    runs = make_runs(args, edge_index, n, x, y)
    optimizers = {name: torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4) for name, (m, _) in runs.items()}
    times = {name: [] for name in runs}
    for e in range(args.epochs):
        for name, (model, graph) in runs.items():  # interleaved: each sees the same machine load
            start = time.perf_counter()
            loss = epoch(model, optimizers[name], graph, x, y, train)
            times[name].append(time.perf_counter() - start)
            if name == "st.nn" and (e % 10 == 0 or e == args.epochs - 1):
                print(f"epoch {e:3d}  loss {loss:.4f}")
    for name, (model, graph) in runs.items():
        steady = times[name][1:] or times[name]  # the first epoch converts the graph and compiles kernels
        print(f"{name:>12}: test accuracy {accuracy(model, graph, x, y, test):.3f}, "
              f"median epoch {1e3 * statistics.median(steady):.1f} ms")
    if len(runs) > 1:
        ours = statistics.median(times["st.nn"][1:] or times["st.nn"])
        for name in runs:
            if name != "st.nn":
                peer = statistics.median(times[name][1:] or times[name])
                print(f"st.nn is {peer / ours:.2f}x {name}")
    return times


if __name__ == "__main__":
    main()
