"""st.nn: graph neural network layers, a block-sparse Linear layer and a
sparse multi-head attention on the library's kernels, and a one-pass CPU
dropout (st.nn.Dropout, st.nn.functional.dropout) for the models around them.

The layers take PyG's constructor arguments and keep PyG's parameter names,
so a PyG layer's ``state_dict()`` loads into ours; ``forward(x, edge_index)``
accepts an edge_index (2, E), a torch_geometric EdgeIndex, a torch_sparse
SparseTensor ``adj_t``, a torch sparse adjacency or an st.SparseMatrix (see
sparsetir_torch/graph.py). Each graph is converted, given self loops and
normalized once, then cached.
"""
from ..graph import Graph, as_graph, degree, gcn_norm
from . import functional
from .block_sparse_linear import BlockSparseLinear
from .functional import Dropout
from .gat_conv import GATConv
from .gcn_conv import GCNConv
from .gin_conv import GINConv
from .sage_conv import SAGEConv
from .sparse_multihead_attention import SparseMultiheadAttention
from . import attention_patterns

__all__ = ["BlockSparseLinear", "Dropout", "GATConv", "GCNConv", "GINConv", "Graph", "SAGEConv", "SparseMultiheadAttention", "attention_patterns", "as_graph", "degree", "functional",
           "gcn_norm"]
