"""GatedGCN against an edge-loop computation written here."""
import dgl
import pytest
import torch
import torch.nn.functional as F

from geaet_dgl.nn import GatedGCNLayer, pe_square_distance
from tests.conftest import with_features

D = 8


def reference_gated_gcn(conv: GatedGCNLayer, g: dgl.DGLGraph, x, e, pe=None):
    """Eval-mode GatedGCN with explicit loops over edges (j -> i)."""
    src, dst = g.edges()
    lin = lambda m, t: t @ m.weight.T + m.bias  # noqa: E731
    Ax, Bx, Dx, Ex, Ce = lin(conv.A, x), lin(conv.B, x), lin(conv.D, x), lin(conv.E, x), lin(conv.C, e)
    e_hat = torch.zeros(g.num_edges(), D)
    num = torch.zeros(g.num_nodes(), D)
    den = torch.zeros(g.num_nodes(), D)
    for k in range(g.num_edges()):
        j, i = int(src[k]), int(dst[k])
        e_hat[k] = Dx[i] + Ex[j] + Ce[k]
        sigma = torch.sigmoid(e_hat[k])
        if pe is not None:
            r = ((pe[i] - pe[j]) ** 2).sum().view(1, 1)
            sigma = sigma * conv.mlp_r_ij(r).view(-1)
        num[i] += sigma * Bx[j]
        den[i] += sigma
    x_new = Ax + num / (den + 1e-6)

    def bn(m, t):
        return (t - m.running_mean) / torch.sqrt(m.running_var + m.eps) * m.weight + m.bias

    x_out = x + F.relu(bn(conv.bn_node_x, x_new))
    e_out = e + F.relu(bn(conv.bn_edge_e, e_hat))
    return x_out, e_out


def _randomise_bn(conv):
    for bn in (conv.bn_node_x, conv.bn_edge_e):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
        bn.weight.data.uniform_(0.5, 1.5)
        bn.bias.data.uniform_(-0.3, 0.3)


@pytest.mark.parametrize("equivstable", [False, True])
def test_matches_edge_loop(graph_case, equivstable):
    _, graphs = graph_case
    bg = dgl.batch(with_features(graphs, D))
    torch.manual_seed(0)
    conv = GatedGCNLayer(D, D, dropout=0.3, equivstable_pe=equivstable)
    _randomise_bn(conv)
    conv.eval()
    pe = torch.randn(bg.num_nodes(), D) if equivstable else None
    x, e = conv(bg, bg.ndata["h"], bg.edata["h"], pe_dist=pe_square_distance(bg, pe) if equivstable else None)
    ref_x, ref_e = reference_gated_gcn(conv, bg, bg.ndata["h"], bg.edata["h"], pe)
    torch.testing.assert_close(x, ref_x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, ref_e, atol=1e-5, rtol=1e-5)


def test_batched_equals_single_in_eval():
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D)
    conv = GatedGCNLayer(D, D).eval()
    _randomise_bn(conv)
    bg = dgl.batch(graphs)
    x, e = conv(bg, bg.ndata["h"], bg.edata["h"])
    singles = [conv(g, g.ndata["h"], g.edata["h"]) for g in graphs]
    torch.testing.assert_close(x, torch.cat([s[0] for s in singles]))
    torch.testing.assert_close(e, torch.cat([s[1] for s in singles]))


def test_gradients_and_clean_graph():
    bg = dgl.batch(with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D))
    conv = GatedGCNLayer(D, D, equivstable_pe=True)
    x, e = conv(bg, bg.ndata["h"], bg.edata["h"], pe_dist=pe_square_distance(bg, torch.randn(bg.num_nodes(), D)))
    (x.pow(2).sum() + e.pow(2).sum()).backward()
    for name, p in conv.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert set(bg.edata.keys()) == {"h", "feat"}


def test_requires_pe_when_equivstable():
    g = with_features([dgl.rand_graph(4, 6)], D)[0]
    with pytest.raises(ValueError, match="positional-encoding distances"):
        GatedGCNLayer(D, D, equivstable_pe=True)(g, g.ndata["h"], g.edata["h"])


def test_skipping_the_edge_output_keeps_the_node_output():
    bg = dgl.batch(with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D))
    conv = GatedGCNLayer(D, D).eval()
    _randomise_bn(conv)
    x_full, _ = conv(bg, bg.ndata["h"], bg.edata["h"])
    x_only, e_none = conv(bg, bg.ndata["h"], bg.edata["h"], edge_output=False)
    assert e_none is None
    torch.testing.assert_close(x_only, x_full)
