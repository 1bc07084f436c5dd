"""The GEAET layer's composition, checked against the branches composed by hand."""
import dgl
import pytest
import torch
import torch.nn.functional as F

from geaet_dgl.nn import GEAETLayer, build_attention, build_geanet, build_mpnn
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

D = 8


def make_layer(mpnn="gatedgcn", attention="transformer", external=True, heads=2, edge_unit=False, scope="graph",
               **options):
    """A GEAET layer from branch names, as the model builds it."""
    local = build_mpnn(mpnn, D)
    attn = build_attention(attention, D, heads)
    ext = build_geanet("reference", D, heads, edge_unit=edge_unit, scope=scope) if external else None
    return GEAETLayer(D, local, attn, ext, **options)


def bn_eval(norm, t):
    m = norm.norm
    return (t - m.running_mean) / torch.sqrt(m.running_var + m.eps) * m.weight + m.bias


def _randomise_norms(layer):
    for module in layer.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
            module.weight.data.uniform_(0.5, 1.5)
            module.bias.data.uniform_(-0.3, 0.3)


@pytest.mark.parametrize("mpnn", ["gatedgcn", "gcn", "gine"])
def test_composition_matches_hand_composition(mpnn):
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    layer = make_layer(mpnn, edge_unit=True, local_out_act=True, local_dropout=0.5, global_dropout=0.5,
                       external_dropout=0.5, ffn_dropout=0.5)
    _randomise_norms(layer)
    layer.eval()
    x, e = bg.ndata["h"], bg.edata["h"]
    out_x, out_e = layer(bg, x, e)

    local_x, local_e = layer.local_model(bg, x, e)
    if mpnn != "gatedgcn":  # GatedGCN has its own residual; the others get act + residual here
        local_x = x + F.relu(local_x)
    h_local = bn_eval(layer.norm1_local, local_x)
    h_global = bn_eval(layer.norm1_global, x + layer.global_model(bg, x)[0])
    ext_x, ext_e = layer.external_model(bg, x, local_e)
    h_ext = bn_eval(layer.norm1_external, x + ext_x)
    h = h_local + h_global + h_ext
    h = h + layer.ff_linear2(F.relu(layer.ff_linear1(h)))
    expected = bn_eval(layer.norm2, h)
    torch.testing.assert_close(out_x, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out_e, ext_e, atol=1e-5, rtol=1e-5)


def test_layer_norm_is_per_graph_over_nodes_and_channels():
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D)
    bg = dgl.batch(graphs)
    layer = make_layer("none", "none", norm="layer", use_ffn=False).eval()
    x = bg.ndata["h"]
    out, _ = layer(bg, x, bg.edata["h"])
    ext, _ = layer.external_model(bg, x, bg.edata["h"])
    h, start = x + ext, 0
    expected = []
    for g in graphs:
        block = h[start:start + g.num_nodes()]
        start += g.num_nodes()
        expected.append((block - block.mean()) / torch.sqrt(block.var(unbiased=False) + 1e-5))
    expected = torch.cat(expected)  # the affine map is the identity at initialisation
    # norm2 then normalises the (only) branch output once more, per graph
    again, start = [], 0
    for g in graphs:
        block = expected[start:start + g.num_nodes()]
        start += g.num_nodes()
        again.append((block - block.mean()) / torch.sqrt(block.var(unbiased=False) + 1e-5))
    torch.testing.assert_close(out, torch.cat(again), atol=1e-4, rtol=1e-4)


def test_graph_scope_layer_batched_equals_single_in_eval():
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30), dgl.rand_graph(3, 4)], D)
    layer = make_layer(edge_unit=True)
    _randomise_norms(layer)
    layer.eval()
    bg = dgl.batch(graphs)
    x, e = layer(bg, bg.ndata["h"], bg.edata["h"])
    singles = [layer(g, g.ndata["h"], g.edata["h"]) for g in graphs]
    torch.testing.assert_close(x, torch.cat([s[0] for s in singles]), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, torch.cat([s[1] for s in singles]), atol=1e-5, rtol=1e-5)


def test_needs_a_branch():
    with pytest.raises(ValueError, match="at least one"):
        GEAETLayer(D)


@pytest.mark.parametrize("mpnn", ["gatedgcn", "gine"])
def test_gradients_save_load_and_permutation(mpnn):
    graphs = with_features([random_graph(7, 20, 1), random_graph(5, 12, 2)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    layer = make_layer(mpnn, edge_unit=True, local_out_act=True)
    layer.train()
    assert_gradients(layer, bg, bg.ndata["h"], bg.edata["h"])
    _randomise_norms(layer)
    torch.manual_seed(1)
    assert_save_load(layer, make_layer(mpnn, edge_unit=True, local_out_act=True), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(layer, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(layer, graphs, D)


def test_gatedgcn_without_its_residual_gets_the_layers():
    """applies_residual follows GatedGCN's residual switch: off, the layer adds dropout + residual itself."""
    from geaet_dgl.nn import GatedGCNLayer

    graphs = with_features([random_graph(7, 20, 1)], D)
    g = graphs[0]
    torch.manual_seed(0)
    conv = GatedGCNLayer(D, D, residual=False)
    assert not conv.applies_residual and build_mpnn("gatedgcn", D).applies_residual
    layer = GEAETLayer(D, conv, use_ffn=False).eval()
    _randomise_norms(layer)
    x, e = g.ndata["h"], g.edata["h"]
    out, out_e = layer(g, x, e)
    local_x, local_e = conv(g, x, e)
    torch.testing.assert_close(out, bn_eval(layer.norm2, bn_eval(layer.norm1_local, x + local_x)))
    torch.testing.assert_close(out_e, local_e)
