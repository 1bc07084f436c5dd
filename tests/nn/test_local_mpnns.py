"""GCN, GIN and GINE against dense adjacency computations; gradients, save/load, permutation, batching."""
import dgl
import pytest
import torch
import torch.nn.functional as F

from geaet_dgl.nn import GCNLayer, GINELayer, GINLayer
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

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


@pytest.mark.parametrize("expanded", [False, True])
def test_gine_gradients_match_edge_loop(expanded):
    """The explicit backward (row gathers, saved messages as the ReLU mask) against autograd through the edge
    loop, float64: node and edge features (also a stride-0 expanded edge tensor, as graphgym's edge encoder
    off gives) and the MLP's weights; with the batch layout's cached endpoints and without."""
    from geaet_dgl.nn.batch_layout import BatchLayout

    torch.manual_seed(0)
    g = dgl.batch([random_graph(7, 20, 1), random_graph(4, 9, 2), dgl.graph(([], []), num_nodes=2)])
    conv = GINELayer(D, D).double()
    x = torch.randn(g.num_nodes(), D, dtype=torch.float64, requires_grad=True)
    e_param = torch.randn(1 if expanded else g.num_edges(), D, dtype=torch.float64, requires_grad=True)
    src, dst = g.edges()
    weights = torch.randn(g.num_nodes(), D, dtype=torch.float64)

    def edge_loop():
        e = e_param.expand(g.num_edges(), -1)
        agg = torch.zeros_like(x).index_put((dst,), F.relu(x[src] + e), accumulate=True)
        return conv.nn(x + agg)

    (edge_loop() * weights).sum().backward()
    expected = [x.grad.clone(), e_param.grad.clone()] + [p.grad.clone() for p in conv.parameters()]
    for layout in (None, BatchLayout.from_graph(g)):
        for t in [x, e_param, *conv.parameters()]:
            t.grad = None
        out = conv(g, x, e_param.expand(g.num_edges(), -1), layout=layout)[0]
        torch.testing.assert_close(out, edge_loop(), atol=1e-12, rtol=1e-12)
        (out * weights).sum().backward()
        got = [x.grad, e_param.grad] + [p.grad for p in conv.parameters()]
        for a, b in zip(got, expected):
            torch.testing.assert_close(a, b, atol=1e-12, rtol=1e-12)
    with torch.no_grad():  # the inference path (no autograd function)
        torch.testing.assert_close(conv(g, x, e_param.expand(g.num_edges(), -1))[0], edge_loop(),
                                   atol=1e-12, rtol=1e-12)


MPNN_CLASSES = {"gcn": GCNLayer, "gin": GINLayer, "gine": GINELayer}


@pytest.mark.parametrize("name", sorted(MPNN_CLASSES))
def test_gradients_save_load_permutation_and_batching(name):
    graphs = with_features([random_graph(7, 20, 1), random_graph(3, 5, 2), dgl.graph(([], []), num_nodes=2)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    conv = MPNN_CLASSES[name](D, D)
    assert conv.applies_residual is False  # the GEAET layer adds it
    assert_gradients(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_save_load(conv, MPNN_CLASSES[name](D, D), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(conv, graphs, D)
    assert set(bg.ndata.keys()) == {"h", "feat", "lap_pe"} and set(bg.edata.keys()) == {"h", "feat"}


@pytest.mark.parametrize("name", sorted(MPNN_CLASSES))
def test_reset_parameters_redraws_the_weights(name):
    torch.manual_seed(0)
    conv = MPNN_CLASSES[name](D, D)
    before = [p.detach().clone() for p in conv.parameters()]
    conv.reset_parameters()
    after = list(conv.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after) if a.dim() == 2)
