"""GATLayer against a per-edge float64 loop (PyG GATConv's definition), and the layer checks."""
import dgl
import torch
import torch.nn.functional as F

from geaet_dgl.nn.gat import GATLayer
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

D, H = 8, 2


def loop_gat(conv, g, x, e):
    """Softmax over each node's incoming non-self-loop edges plus one self-loop carrying the mean edge feature."""
    C = D // H
    h = (x @ conv.lin.weight.T).view(-1, H, C)
    src, dst = g.edges()
    out = torch.zeros(g.num_nodes(), H, C, dtype=x.dtype)
    for i in range(g.num_nodes()):
        incoming = [k for k in range(g.num_edges()) if dst[k] == i and src[k] != i]
        loop_e = e[incoming].mean(0) if incoming else torch.zeros(D, dtype=x.dtype)
        sources = [int(src[k]) for k in incoming] + [i]
        feats = [e[k] for k in incoming] + [loop_e]
        scores = torch.stack([(h[j] * conv.att_src[0]).sum(-1) + (h[i] * conv.att_dst[0]).sum(-1)
                              + ((f @ conv.lin_edge.weight.T).view(H, C) * conv.att_edge[0]).sum(-1)
                              for j, f in zip(sources, feats)])  # (deg + 1, H)
        alpha = torch.softmax(F.leaky_relu(scores, 0.2), dim=0)
        out[i] = sum(alpha[n].unsqueeze(-1) * h[j] for n, j in enumerate(sources))
    return out.reshape(-1, D) + conv.bias


def test_matches_edge_loop(graph_case):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    torch.manual_seed(0)
    conv = GATLayer(D, D, H, edge_feats=D).double()
    torch.nn.init.normal_(conv.bias)
    x, e = g.ndata["h"].double(), g.edata["h"].double()
    out, out_e = conv(g, x, e)
    torch.testing.assert_close(out, loop_gat(conv, g, x, e))
    assert out_e is e


def test_gradients_save_load_permutation_and_batching():
    graphs = with_features([random_graph(7, 20, 1, self_loops=True), random_graph(4, 6, 2),
                            dgl.graph(([], []), num_nodes=2)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    conv = GATLayer(D, D, H, edge_feats=D)
    assert_gradients(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_save_load(conv, GATLayer(D, D, H, edge_feats=D), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(conv, graphs, D)
