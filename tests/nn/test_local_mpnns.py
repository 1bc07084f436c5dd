"""GCN, GIN and GINE against dense adjacency computations."""
import dgl
import torch
import torch.nn.functional as F

from geaet_dgl.nn import GCNLayer, GINELayer, GINLayer
from tests.conftest import with_features

D = 6


def dense_adjacency(g):
    """A[i, j] = number of edges j -> i."""
    a = torch.zeros(g.num_nodes(), g.num_nodes())
    src, dst = g.edges()
    a.index_put_((dst, src), torch.ones(len(src)), accumulate=True)
    return a


def test_gcn_matches_dense(graph_case):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    conv = GCNLayer(D, D)
    torch.nn.init.normal_(conv.bias)
    # PyG's add_remaining_self_loops: existing self-loops are replaced by exactly one per node
    a_hat = dense_adjacency(g).fill_diagonal_(0) + torch.eye(g.num_nodes())
    deg = a_hat.sum(1)
    norm = torch.diag(deg.rsqrt())
    expected = norm @ a_hat @ norm @ (g.ndata["h"] @ conv.lin.weight.T) + conv.bias
    out, e = conv(g, g.ndata["h"], g.edata["h"])
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    assert e is g.edata["h"]


def test_gin_matches_dense(graph_case):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    conv = GINLayer(D, D)
    expected = conv.nn(g.ndata["h"] + dense_adjacency(g) @ g.ndata["h"])
    torch.testing.assert_close(conv(g, g.ndata["h"])[0], expected, atol=1e-5, rtol=1e-5)


def test_gine_matches_edge_loop(graph_case):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    conv = GINELayer(D, D)
    x, e = g.ndata["h"], g.edata["h"]
    agg = torch.zeros_like(x)
    src, dst = g.edges()
    for k in range(g.num_edges()):
        agg[dst[k]] += F.relu(x[src[k]] + e[k])
    torch.testing.assert_close(conv(g, x, e)[0], conv.nn(x + agg), atol=1e-5, rtol=1e-5)
