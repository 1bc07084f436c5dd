"""PNALayer against a per-node float64 loop (PyG PNAConv as the reference configures it), and the layer checks."""
import dgl
import torch

from geaet_dgl.nn.pna import PNALayer, degree_histogram
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

D = 8


def loop_pna(conv, g, x, e):
    src, dst = g.edges()
    pre, post = conv.pre_nns[0][0], conv.post_nns[0][0]
    rows = []
    for i in range(g.num_nodes()):
        incoming = [k for k in range(g.num_edges()) if dst[k] == i]
        m = torch.stack([pre(torch.cat([x[i], x[src[k]], conv.edge_encoder(e[k])])) for k in incoming]) \
            if incoming else torch.zeros(1, D, dtype=x.dtype)
        agg = [m.mean(0), m.max(0).values, m.sum(0)] if incoming else [m[0]] * 3
        rows.append(conv.lin(post(torch.cat([x[i]] + agg))))
    return torch.stack(rows)


def test_matches_node_loop(graph_case):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    torch.manual_seed(0)
    conv = PNALayer(D, D, D).double()
    x, e = g.ndata["h"].double(), g.edata["h"].double()
    out, out_e = conv(g, x, e)
    torch.testing.assert_close(out, loop_pna(conv, g, x, e))
    assert out_e is e


def test_degree_histogram_and_its_averages():
    graphs = [dgl.graph(([0, 1, 2], [1, 2, 1]), num_nodes=4), dgl.graph(([0], [0]), num_nodes=1)]
    assert degree_histogram(graphs) == [2, 2, 1]  # in-degrees 0, 1, 2, 0 and 1
    stats = PNALayer(D, D, D, [2, 2, 1]).aggr_module
    assert abs(float(stats.avg_deg_lin) - 4 / 5) < 1e-6
    assert abs(float(stats.avg_deg_log) - (2 * torch.log(torch.tensor(2.0)) + torch.log(torch.tensor(3.0))) / 5) < 1e-6


def test_gradients_save_load_permutation_and_batching():
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=2)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    conv = PNALayer(D, D, D)
    assert_gradients(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_save_load(conv, PNALayer(D, D, D), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(conv, graphs, D)


def test_the_trainer_gives_pna_the_training_splits_histogram():
    import dataclasses

    from geaet_dgl.models import build_model
    from geaet_dgl.models.geaet import set_degree_statistics
    from geaet_dgl.config.presets import get_preset

    config = dataclasses.replace(get_preset("mnist").model, mpnn="pna", pe="none", num_layers=2)
    model = build_model(config)
    graphs = [dgl.graph(([0, 1, 2], [1, 2, 1]), num_nodes=4), dgl.graph(([0], [0]), num_nodes=1)]
    set_degree_statistics(model, graphs)
    for layer in model.layers:
        assert abs(float(layer.local_model.aggr_module.avg_deg_lin) - 4 / 5) < 1e-6
