"""st.nn layers: outputs and gradients against dense float64 references and
against PyG's layers with the same weights (PyG's state_dict loads into ours),
every graph form (edge_index, EdgeIndex, torch sparse adj_t, SparseMatrix),
the per-graph cache and the argument errors."""
import pytest
import torch
import torch.nn.functional as F

import sparsetir_torch as st
from sparsetir_torch import nn as stnn

pytestmark = pytest.mark.filterwarnings("ignore:Sparse (CSR|BSR)? ?.*:UserWarning", "ignore::FutureWarning",
                                        "ignore::DeprecationWarning")

try:
    import torch_geometric
    import torch_geometric.nn as pyg_nn
except ImportError:  # optional dependency
    torch_geometric = None

needs_pyg = pytest.mark.skipif(torch_geometric is None, reason="torch_geometric is not installed")


def random_graph(n=30, e=120, seed=0, loops=True, isolated=(5,)):
    """An edge_index with duplicates possible, some self loops, and nodes
    without incoming edges."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (e,), generator=g)
    dst = torch.randint(0, n, (e,), generator=g)
    keep = ~torch.isin(dst, torch.tensor(isolated))
    src, dst = src[keep], dst[keep]
    if loops:  # node 1 gets two loops
        src, dst = torch.cat([src, torch.tensor([1, 2, 1])]), torch.cat([dst, torch.tensor([1, 2, 1])])
    return torch.stack([src, dst])


def dense_adjacency(edge_index, n, weight=None):
    """A[i, j] = the summed weight of edges j -> i (float64)."""
    a = torch.zeros(n, n, dtype=torch.float64)
    w = torch.ones(edge_index.shape[1], dtype=torch.float64) if weight is None else weight.double()
    return a.index_put((edge_index[1], edge_index[0]), w, accumulate=True)


def gcn_reference(x, edge_index, weight, bias, edge_weight=None, improved=False):
    n = x.shape[0]
    w = torch.ones(edge_index.shape[1], dtype=torch.float64) if edge_weight is None else edge_weight.double()
    loop = edge_index[0] == edge_index[1]
    a = dense_adjacency(edge_index[:, ~loop], n, w[~loop])
    # A node's loops collapse into its last one (PyG's add_remaining_self_loops);
    # a node without one gets the fill weight.
    diag = torch.full((n,), 2.0 if improved else 1.0, dtype=torch.float64)
    for e in torch.nonzero(loop).flatten().tolist():
        diag = diag.index_put((edge_index[0, e:e + 1],), w[e:e + 1])
    a = a + torch.diag(diag)
    d = a.sum(1)
    dis = torch.where(d > 0, d.pow(-0.5), torch.zeros_like(d))
    return (dis[:, None] * a * dis[None, :]) @ (x.double() @ weight.double().T) + bias.double()


def graph_forms(edge_index, n):
    a = torch.sparse_coo_tensor(torch.stack([edge_index[1], edge_index[0]]), torch.ones(edge_index.shape[1]),
                                (n, n)).coalesce()
    forms = {"edge_index": edge_index, "csr_adj_t": a.to_sparse_csr(), "SparseMatrix": st.SparseMatrix.from_torch(a)}
    if torch_geometric is not None:
        forms["EdgeIndex"] = torch_geometric.EdgeIndex(edge_index.contiguous(), sparse_size=(n, n))
    return forms


def dedup(edge_index):
    """Matrix forms sum duplicate edges into one entry; compare them on a
    graph without duplicates."""
    return torch.unique(edge_index, dim=1).contiguous()


@pytest.mark.parametrize("form", ("edge_index", "csr_adj_t", "SparseMatrix", "EdgeIndex"))
def test_gcn_matches_dense_reference_for_every_graph_form(form):
    n = 30
    edge_index = dedup(random_graph(n))
    forms = graph_forms(edge_index, n)
    if form not in forms:
        pytest.skip("torch_geometric is not installed")
    conv = stnn.GCNConv(8, 5).double()
    with torch.no_grad():
        conv.bias.uniform_(-1, 1)
    x = torch.randn(n, 8, dtype=torch.float64, requires_grad=True)
    out = conv(x, forms[form])
    ref = gcn_reference(x, edge_index, conv.lin.weight, conv.bias)
    torch.testing.assert_close(out, ref)
    g, = torch.autograd.grad(out.square().sum(), x)
    g_ref, = torch.autograd.grad(ref.square().sum(), x)
    torch.testing.assert_close(g, g_ref)



def test_gcn_on_a_graph_without_edges_sees_only_the_self_loops():
    # Every node gets its loop: the normalized adjacency is the identity, so
    # the layer is its linear map plus the bias (as PyG's GCNConv gives).
    torch.manual_seed(3)
    conv, x = stnn.GCNConv(4, 3), torch.randn(5, 4)
    expected = conv.lin(x) + conv.bias
    empty_csr = torch.sparse_csr_tensor(torch.zeros(6, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                                        torch.zeros(0), (5, 5))
    for graph in (torch.zeros(2, 0, dtype=torch.long), empty_csr,
                  st.SparseMatrix(torch.zeros(6, dtype=torch.int64), torch.zeros(0, dtype=torch.int64),
                                  torch.zeros(0), (5, 5))):
        torch.testing.assert_close(conv(x, graph), expected)
    graph, weights = stnn.gcn_norm(torch.zeros(2, 0, dtype=torch.long), num_nodes=5)
    assert graph.num_edges == 5 and torch.equal(weights, torch.ones(5))

@pytest.mark.parametrize("improved", (False, True))
def test_gcn_with_edge_weights_and_their_gradient(improved):
    n = 25
    edge_index = random_graph(n, 90, seed=3)
    w = torch.rand(edge_index.shape[1], dtype=torch.float64, requires_grad=True)
    conv = stnn.GCNConv(4, 3, improved=improved).double()
    x = torch.randn(n, 4, dtype=torch.float64)
    out = conv(x, edge_index, w)
    ref = gcn_reference(x, edge_index, conv.lin.weight, conv.bias, w, improved)
    torch.testing.assert_close(out, ref)
    g, = torch.autograd.grad(out.sum(), w)
    g_ref, = torch.autograd.grad(ref.sum(), w)
    torch.testing.assert_close(g, g_ref)


@pytest.mark.parametrize("aggr", ("mean", "max", "sum", "min"))
def test_sage_matches_dense_reference(aggr):
    n = 30
    edge_index = random_graph(n, seed=1)
    conv = stnn.SAGEConv(6, 4, aggr=aggr, normalize=True).double()
    x = torch.randn(n, 6, dtype=torch.float64)
    out = conv(x, edge_index)
    src, dst = edge_index
    msgs = x[src]
    agg = torch.zeros(n, 6, dtype=torch.float64)
    if aggr in ("max", "min"):
        agg = agg.scatter_reduce(0, dst[:, None].expand(-1, 6), msgs, "amax" if aggr == "max" else "amin",
                                 include_self=False)
    else:
        agg = agg.index_add(0, dst, msgs)
        if aggr == "mean":
            agg = agg / torch.bincount(dst, minlength=n).clamp(min=1)[:, None]
    ref = F.normalize(agg @ conv.lin_l.weight.T + conv.lin_l.bias + x @ conv.lin_r.weight.T, dim=-1)
    torch.testing.assert_close(out, ref)


def sage_reference(x, edge_index, conv, aggr):
    """SAGEConv in float64 from the edge list (no projection, no normalize)."""
    n, c = x.shape
    src, dst = edge_index
    agg = torch.zeros(n, c, dtype=torch.float64)
    if aggr in ("max", "min"):
        agg = agg.scatter_reduce(0, dst[:, None].expand(-1, c), x[src], "amax" if aggr == "max" else "amin",
                                 include_self=False)
    else:
        agg = agg.index_add(0, dst, x[src])
        if aggr == "mean":
            agg = agg / torch.bincount(dst, minlength=n).clamp(min=1)[:, None]
    return agg @ conv.lin_l.weight.T + conv.lin_l.bias + x @ conv.lin_r.weight.T


@pytest.mark.parametrize("aggr", ("mean", "max", "sum"))
@pytest.mark.parametrize("channels", ((6, 4), (4, 6)), ids=("narrowing", "widening"))
def test_sage_gradients_match_dense_reference_on_either_aggregation_order(aggr, channels):
    """Narrowing layers with a mean or sum run both linear maps as one GEMM
    and aggregate after it; the others aggregate first and add the root term
    into the GEMM's output in place. Both give the reference's values and
    gradients, with and without a gradient for x (the dense gradient through
    the cached transposed values of the graph's constant ones)."""
    n = 30
    edge_index = random_graph(n, seed=3)
    conv = stnn.SAGEConv(*channels, aggr=aggr).double()
    for x_grad in (True, False):
        x = torch.randn(n, channels[0], dtype=torch.float64, requires_grad=x_grad)
        out, ref = conv(x, edge_index), sage_reference(x, edge_index, conv, aggr)
        torch.testing.assert_close(out, ref)
        seed = torch.randn_like(out)
        params = ([x] if x_grad else []) + list(conv.parameters())
        grads = torch.autograd.grad((out * seed).sum(), params)
        grads_ref = torch.autograd.grad((ref * seed).sum(), params)
        for g, g_ref in zip(grads, grads_ref):
            torch.testing.assert_close(g, g_ref)
    conv = conv.float()
    x = torch.randn(n, channels[0])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = conv(x, edge_index)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.float(), conv(x, edge_index), rtol=3e-2, atol=3e-2)


def test_gin_matches_dense_reference_and_trains_eps():
    n = 20
    edge_index = random_graph(n, 60, seed=2)
    mlp = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3)).double()
    conv = stnn.GINConv(mlp, eps=0.3, train_eps=True)
    x = torch.randn(n, 5, dtype=torch.float64)
    out = conv(x, edge_index)
    ref = mlp(dense_adjacency(edge_index, n) @ x + 1.3 * x)
    torch.testing.assert_close(out, ref)
    out.sum().backward()
    assert conv.eps.grad is not None and conv.eps.grad.abs().item() > 0


def gat_reference(conv, x, edge_index, n):
    H, C = conv.heads, conv.out_channels
    keep = edge_index[0] != edge_index[1]
    ei = torch.cat([edge_index[:, keep], torch.arange(n).repeat(2, 1)], 1)
    h = (x @ conv.lin.weight.T).view(n, H, C)
    a_src, a_dst = (h * conv.att_src).sum(-1), (h * conv.att_dst).sum(-1)
    s = F.leaky_relu(a_src[ei[0]] + a_dst[ei[1]], conv.negative_slope)
    dense = torch.full((H, n, n), float("-inf"), dtype=x.dtype)
    dense = dense.index_put((torch.arange(H)[:, None], ei[1][None, :], ei[0][None, :]), s.T)
    p = torch.softmax(dense, -1)  # every node has its self loop: no empty row
    out = torch.einsum("hij,jhc->ihc", p, h)
    out = out.reshape(n, H * C) if conv.concat else out.mean(1)
    if conv.res is not None:
        out = out + x @ conv.res.weight.T
    return out + conv.bias


@pytest.mark.parametrize("heads,concat,residual", [(1, True, False), (3, True, True), (2, False, False)])
def test_gat_matches_dense_reference(heads, concat, residual):
    n = 24
    edge_index = dedup(random_graph(n, 80, seed=4))
    conv = stnn.GATConv(6, 4, heads=heads, concat=concat, residual=residual).double()
    with torch.no_grad():
        conv.bias.uniform_(-1, 1)
    x = torch.randn(n, 6, dtype=torch.float64, requires_grad=True)
    out = conv(x, edge_index)
    ref = gat_reference(conv, x, edge_index, n)
    torch.testing.assert_close(out, ref)
    params = [x, conv.lin.weight, conv.att_src, conv.att_dst]
    grads = torch.autograd.grad(out.square().sum(), params)
    grads_ref = torch.autograd.grad(ref.square().sum(), params)
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref)


def test_gat_attention_dropout_drops_coefficients_with_st_dropout():
    # In training with dropout > 0, each coefficient alpha_ij (per head) is
    # dropped by st.nn.functional.dropout, in the CSR order of the graph with
    # its self loops; the seed comes from torch's generator, so the
    # reference can draw the same mask.
    n, p = 24, 0.4
    edge_index = dedup(random_graph(n, 80, seed=4))
    conv = stnn.GATConv(6, 4, heads=3, dropout=p).double()
    x = torch.randn(n, 6, dtype=torch.float64, requires_grad=True)
    graph = stnn.as_graph(edge_index, n).with_self_loops(remaining=False).graph
    torch.manual_seed(123)
    seed = torch.randint(-(2 ** 63), 2 ** 63 - 1, (), dtype=torch.int64)
    kept = torch.ops.sparsetir.dropout(torch.ones(graph.indices.numel(), 3, dtype=torch.float64), p, seed) != 0
    rows = torch.repeat_interleave(torch.arange(n), graph.indptr.diff())
    scale = torch.zeros(3, n, n, dtype=torch.float64)
    scale[:, rows, graph.indices.long()] = kept.T.double() / (1 - p)
    torch.manual_seed(123)
    out = conv(x, edge_index)
    conv.eval()
    ref_full = gat_reference(conv, x, edge_index, n)  # no dropout in eval: the fused kernel
    # The reference with the mask: the coefficients of gat_reference, scaled.
    H, C = 3, 4
    keep_loops = edge_index[0] != edge_index[1]
    ei = torch.cat([edge_index[:, keep_loops], torch.arange(n).repeat(2, 1)], 1)
    h = (x @ conv.lin.weight.T).view(n, H, C)
    s = F.leaky_relu((h * conv.att_src).sum(-1)[ei[0]] + (h * conv.att_dst).sum(-1)[ei[1]], conv.negative_slope)
    dense = torch.full((H, n, n), float("-inf"), dtype=x.dtype)
    dense = dense.index_put((torch.arange(H)[:, None], ei[1][None, :], ei[0][None, :]), s.T)
    ref = torch.einsum("hij,jhc->ihc", torch.softmax(dense, -1) * scale, h).reshape(n, H * C) + conv.bias
    torch.testing.assert_close(out, ref)
    assert not torch.allclose(out, ref_full)  # the dropout did drop
    params = [x, conv.lin.weight, conv.att_src]
    grads, grads_ref = (torch.autograd.grad(o.square().sum(), params) for o in (out, ref))
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref)


# --------------------------------------------------------------------------- against PyG


def pyg_pair(kind):
    if kind == "gcn":
        return pyg_nn.GCNConv(8, 6), stnn.GCNConv(8, 6)
    if kind == "gcn_improved":
        return pyg_nn.GCNConv(8, 6, improved=True), stnn.GCNConv(8, 6, improved=True)
    if kind.startswith("sage_") and kind != "sage_project":
        aggr = kind.split("_")[1]
        return pyg_nn.SAGEConv(8, 6, aggr=aggr), stnn.SAGEConv(8, 6, aggr=aggr)
    if kind == "sage_project":
        return pyg_nn.SAGEConv(8, 6, project=True), stnn.SAGEConv(8, 6, project=True)
    if kind == "gat":
        return pyg_nn.GATConv(8, 6, heads=3), stnn.GATConv(8, 6, heads=3)
    if kind == "gat_mean_residual":
        return (pyg_nn.GATConv(8, 6, heads=2, concat=False, residual=True),
                stnn.GATConv(8, 6, heads=2, concat=False, residual=True))
    if kind == "gin":
        mlp = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 6))
        mlp2 = torch.nn.Sequential(torch.nn.Linear(8, 6), torch.nn.ReLU(), torch.nn.Linear(6, 6))
        return pyg_nn.GINConv(mlp, train_eps=True), stnn.GINConv(mlp2, train_eps=True)
    raise KeyError(kind)


@needs_pyg
@pytest.mark.parametrize("kind", ("gcn", "gcn_improved", "sage_mean", "sage_max", "sage_sum", "sage_project", "gat",
                                  "gat_mean_residual", "gin"))
def test_pyg_weights_load_and_outputs_and_gradients_match(kind):
    torch.manual_seed(0)
    n = 40
    edge_index = random_graph(n, 200, seed=7)
    if kind.startswith("gat"):
        edge_index = dedup(edge_index)  # PyG's GAT sums duplicate edges' messages in its softmax too; keep it simple
    ref_layer, layer = pyg_pair(kind)
    ref_layer, layer = ref_layer.double(), layer.double()
    layer.load_state_dict(ref_layer.state_dict())  # strict: the same names and shapes
    x = torch.randn(n, 8, dtype=torch.float64, requires_grad=True)
    if kind == "gcn_improved":
        # PyG adds the weight-2 self loops only to explicit edge weights (with
        # none, every weight becomes 1); ours follows A + 2I in both cases.
        w = torch.ones(edge_index.shape[1], dtype=torch.float64)
        out, ref = layer(x, edge_index, w), ref_layer(x, edge_index, w)
    else:
        out, ref = layer(x, edge_index), ref_layer(x, edge_index)
    torch.testing.assert_close(out, ref)
    seed = torch.randn_like(out)
    grads = torch.autograd.grad((out * seed).sum(), [x] + list(layer.parameters()))
    grads_ref = torch.autograd.grad((ref * seed).sum(), [x] + list(ref_layer.parameters()))
    for g, g_ref in zip(grads, grads_ref):
        torch.testing.assert_close(g, g_ref)


@needs_pyg
def test_pyg_edge_index_class_and_float32_training_step():
    torch.manual_seed(1)
    n = 50
    edge_index = random_graph(n, 300, seed=9)
    ei = torch_geometric.EdgeIndex(edge_index, sparse_size=(n, n))
    ref_layer, layer = pyg_nn.GCNConv(16, 8), stnn.GCNConv(16, 8)
    layer.load_state_dict(ref_layer.state_dict())
    x = torch.randn(n, 16)
    torch.testing.assert_close(layer(x, ei), ref_layer(x, edge_index), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- graph cache and errors


def test_a_graph_is_converted_once_and_follows_in_place_edits():
    n = 10
    edge_index = random_graph(n, 30, seed=5)
    g1 = stnn.as_graph(edge_index, n)
    assert stnn.as_graph(edge_index, n) is g1
    assert stnn.gcn_norm(edge_index, num_nodes=n)[1] is stnn.gcn_norm(edge_index, num_nodes=n)[1]
    edge_index[0, 0] = (edge_index[0, 0] + 1) % n  # bumps the version
    assert stnn.as_graph(edge_index, n) is not g1


def test_degree_counts_incoming_edges():
    edge_index = torch.tensor([[0, 1, 2, 2], [1, 1, 0, 3]])
    torch.testing.assert_close(stnn.degree(edge_index, 5), torch.tensor([1.0, 2.0, 0.0, 1.0, 0.0]))


def test_bad_graphs_and_features_name_the_problem():
    conv = stnn.GCNConv(4, 2)
    x = torch.randn(5, 4)
    with pytest.raises(ValueError, match="edge_index must have shape \\(2, E\\)"):
        conv(x, torch.zeros(3, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="edge_index holds node 7, out of range for num_nodes=5"):
        conv(x, torch.tensor([[0, 7], [1, 2]]))
    with pytest.raises(ValueError, match="edge_index must have dtype int32 or int64"):
        conv(x, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="GCNConv: argument 'x' has 3 features, the layer expects in_channels=4"):
        conv(torch.randn(5, 3), torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="expected an edge_index"):
        conv(x, [[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="SAGEConv: aggr must be one of"):
        stnn.SAGEConv(4, 2, aggr="lstm")
    with pytest.raises(ValueError, match="the adjacency has 4 rows but there are 5 nodes"):
        conv(x, torch.eye(4).to_sparse_csr())
    edges = torch.tensor([[0, 1, 2], [1, 2, 3]])
    with pytest.raises(ValueError, match="GCNConv: edge_weight must be 1-D, one weight per edge, got shape \\(3, 1\\)"):
        conv(x, edges, torch.ones(3, 1))
    with pytest.raises(ValueError, match="GCNConv: edge_weight must be 1-D, one weight per edge, got list"):
        conv(x, edges, [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="GATConv: heads must be >= 1, got 0"):
        stnn.GATConv(4, 2, heads=0)


@needs_pyg
def test_operators_take_an_edge_index_as_pyg_multiplies_by_it():
    edge_index = random_graph(20, 70, seed=11)  # with duplicates: they add up, as in EdgeIndex.matmul
    ei = torch_geometric.EdgeIndex(edge_index.contiguous(), sparse_size=(20, 20))
    x = torch.randn(20, 5, dtype=torch.float64)
    a = torch.zeros(20, 20, dtype=torch.float64).index_put((edge_index[0], edge_index[1]),
                                                          torch.ones(edge_index.shape[1], dtype=torch.float64),
                                                          accumulate=True)
    torch.testing.assert_close(st.spmm(ei, x.float()).double(), a @ x, rtol=1e-5, atol=1e-5)
    sorted_ei, _ = ei.sort_by("row")
    torch.testing.assert_close(st.spmm(ei, x.float()), sorted_ei.matmul(x.float()))
    scores = torch.randn(st.sparse_matrix.as_sparse_matrix(ei, "x").nnz)
    assert st.edge_softmax(ei, scores).shape == scores.shape


@pytest.mark.parametrize("make", [
    lambda: stnn.GCNConv(8, 6), lambda: stnn.SAGEConv(8, 6), lambda: stnn.SAGEConv(8, 6, aggr="max"),
    lambda: stnn.GATConv(8, 3, heads=2), lambda: stnn.GINConv(torch.nn.Linear(8, 6))],
    ids=["gcn", "sage-mean", "sage-max", "gat", "gin"])
def test_layers_compile_into_one_graph_once_the_graph_forms_exist(make):
    """After one eager call has built a Graph's derived forms (normalization,
    self loops, row ids), torch.compile traces a layer with no graph break and
    gives the eager values and gradients."""
    torch.manual_seed(0)
    n = 30
    graph = stnn.as_graph(random_graph(n), n)
    layer = make().double()
    x = torch.randn(n, 8, dtype=torch.float64, requires_grad=True)
    eager = layer(x, graph)
    (gx,) = torch.autograd.grad(eager.square().sum(), x)
    torch._dynamo.reset()
    compiled = torch.compile(layer, backend="aot_eager", fullgraph=True)
    out = compiled(x, graph)
    (cgx,) = torch.autograd.grad(out.square().sum(), x)
    torch.testing.assert_close(out, eager)
    torch.testing.assert_close(cgx, gx)
    explained = torch._dynamo.explain(layer)(x, graph)
    assert explained.graph_break_count == 0, explained.break_reasons


@pytest.mark.parametrize("channels", ((8, 6), (6, 8)), ids=("narrowing", "widening"))
def test_sage_mean_compiles_into_one_graph(channels):
    torch.manual_seed(0)
    n = 30
    graph = stnn.as_graph(random_graph(n), n)
    layer = stnn.SAGEConv(*channels).double()
    x = torch.randn(n, channels[0], dtype=torch.float64, requires_grad=True)
    eager = layer(x, graph)
    (gx,) = torch.autograd.grad(eager.square().sum(), x)
    torch._dynamo.reset()
    out = torch.compile(layer, backend="aot_eager", fullgraph=True)(x, graph)
    (cgx,) = torch.autograd.grad(out.square().sum(), x)
    torch.testing.assert_close(out, eager)
    torch.testing.assert_close(cgx, gx)


def _weighted_adjacency():
    torch.manual_seed(5)
    ei = torch.tensor([[0, 1, 2, 3, 4, 5, 1, 2], [1, 2, 3, 4, 5, 0, 0, 5]])
    w = torch.rand(8, dtype=torch.float64) + 0.5
    adj_t = torch.sparse_coo_tensor(ei.flip(0), w, (6, 6)).coalesce().to_sparse_csr()
    return ei, w, adj_t, torch.randn(6, 3, dtype=torch.float64)


@pytest.mark.parametrize("form", ["csr", "coo", "SparseMatrix"])
def test_a_weighted_adjacency_weights_the_messages(form):
    # The values of a torch sparse / SparseMatrix adjacency are edge weights
    # (as in PyG): dense float64 references of GIN's sum, SAGE's sum and mean
    # and GCN's normalization with weighted degrees.
    ei, w, adj_t, x = _weighted_adjacency()
    graph = {"csr": adj_t, "coo": adj_t.to_sparse_coo().coalesce(),
             "SparseMatrix": st.SparseMatrix(adj_t.crow_indices(), adj_t.col_indices(), adj_t.values(), (6, 6))}[form]
    dense = adj_t.to_dense()
    gin = stnn.GINConv(torch.nn.Identity())
    torch.testing.assert_close(gin(x, graph), dense @ x + x)
    sage = stnn.SAGEConv(3, 2, aggr="sum", root_weight=False, bias=False).double()
    torch.testing.assert_close(sage(x, graph), (dense @ x) @ sage.lin_l.weight.T)
    mean = stnn.SAGEConv(3, 2, aggr="mean", root_weight=False, bias=False).double()
    counts = (dense != 0).sum(1, keepdim=True).clamp(min=1)
    torch.testing.assert_close(mean(x, graph), ((dense @ x) / counts) @ mean.lin_l.weight.T)
    gcn = stnn.GCNConv(3, 2, bias=False).double()
    loops = dense + torch.eye(6, dtype=torch.float64)
    d = loops.sum(1).rsqrt()
    torch.testing.assert_close(gcn(x, graph), (d[:, None] * loops * d[None, :]) @ (x @ gcn.lin.weight.T))
    # All-ones values are the unweighted graph (its normalization cached).
    ones = torch.sparse_csr_tensor(adj_t.crow_indices(), adj_t.col_indices(), torch.ones(8, dtype=torch.float64))
    torch.testing.assert_close(gcn(x, ones), gcn(x, ei))


def test_a_weighted_adjacency_matches_pyg_layers():
    pnn = pytest.importorskip("torch_geometric.nn", reason="PyG is an optional dependency")
    ei, w, adj_t, x = _weighted_adjacency()
    torch.manual_seed(6)
    for ours, ref in [(stnn.SAGEConv(3, 2, aggr="sum"), pnn.SAGEConv(3, 2, aggr="sum")),
                      (stnn.SAGEConv(3, 2, aggr="mean"), pnn.SAGEConv(3, 2, aggr="mean")),
                      (stnn.SAGEConv(3, 2, aggr="max"), pnn.SAGEConv(3, 2, aggr="max")),
                      (stnn.GCNConv(3, 2), pnn.GCNConv(3, 2)),
                      (stnn.GINConv(torch.nn.Linear(3, 2)), pnn.GINConv(torch.nn.Linear(3, 2)))]:
        ours, ref = ours.double(), ref.double()
        ours.load_state_dict(ref.state_dict())
        torch.testing.assert_close(ours(x, adj_t), ref(x, adj_t))


def test_weights_that_require_grad_get_their_gradient():
    ei, w, adj_t, x = _weighted_adjacency()
    values = adj_t.values().clone().requires_grad_()
    graph = st.SparseMatrix(adj_t.crow_indices(), adj_t.col_indices(), values, (6, 6))
    gin = stnn.GINConv(torch.nn.Identity())
    (grad,) = torch.autograd.grad(gin(x, graph).sum(), values)
    # d/dv_e of sum(A x) = sum_k x[j_e, k]
    torch.testing.assert_close(grad, x[adj_t.col_indices()].sum(1))


@pytest.mark.parametrize("views", [True, False], ids=["views-of-a-torch-csr", "plain-tensors"])
def test_a_weighted_adjacency_under_torch_compile(views):
    # The weights are looked at eagerly (a graph break there); the rest
    # compiles and gives the eager values, also when the matrix's tensors are
    # views of a torch sparse tensor's.
    ei, w, adj_t, x = _weighted_adjacency()
    parts = (adj_t.crow_indices(), adj_t.col_indices(), adj_t.values())
    A = st.SparseMatrix(*(parts if views else [p.clone() for p in parts]), (6, 6))
    for layer in (stnn.GCNConv(3, 2).double(), stnn.SAGEConv(3, 2, aggr="sum").double(),
                  stnn.GINConv(torch.nn.Linear(3, 2).double())):
        eager = layer(x, A)
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(layer, backend="aot_eager")(x, A), eager)
