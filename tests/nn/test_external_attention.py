"""GEANet against a loop-per-graph computation written here in plain PyTorch."""
import io

import dgl
import pytest
import torch

from geaet_dgl.nn import GEANet
from tests.conftest import with_features

D, H, S = 12, 3, 4


def reference_double_norm(scores: torch.Tensor) -> torch.Tensor:
    """scores (M, H, S): exp normalised over the M rows, then over the S slots."""
    if scores.shape[0] == 0:
        return scores
    e = torch.exp(scores - scores.max(dim=0, keepdim=True).values)
    col = e / e.sum(dim=0, keepdim=True)
    return col / col.sum(dim=-1, keepdim=True)


def reference_units(x: torch.Tensor, u1: torch.nn.Linear, u2: torch.nn.Linear) -> torch.Tensor:
    """x (M, H, S) -> (M, H, S) through key unit, double norm, value unit."""
    scores = x @ u1.weight.T + u1.bias
    return reference_double_norm(scores) @ u2.weight.T + u2.bias


def reference_geanet(net: GEANet, graphs, scope: str):
    """Per-graph (or whole-batch) computation, channels split explicitly."""
    xs = [g.ndata["h"] for g in graphs]
    es = [g.edata["h"] for g in graphs]
    if net.shared_unit:
        xs = [net.share_U(x) for x in xs]
        es = [net.share_U(e) for e in es]
    groups = [[i] for i in range(len(graphs))] if scope == "graph" else [list(range(len(graphs)))]
    node_out, edge_out = [None] * len(graphs), [None] * len(graphs)
    for group in groups:
        x = torch.cat([xs[i] for i in group])
        node_heads = torch.stack([x[:, h * S:(h + 1) * S] for h in range(H)], dim=1)  # contiguous blocks
        y = reference_units(node_heads, net.node_U1, net.node_U2).reshape(x.shape[0], D)
        e = torch.cat([es[i] for i in group])
        edge_heads = torch.stack([e[:, h::H] for h in range(H)], dim=1)  # strided channels per head
        ye = reference_units(edge_heads, net.edge_U1, net.edge_U2).reshape(e.shape[0], D)
        n_off = e_off = 0
        for i in group:
            n, m = graphs[i].num_nodes(), graphs[i].num_edges()
            node_out[i], edge_out[i] = y[n_off:n_off + n], ye[e_off:e_off + m]
            n_off, e_off = n_off + n, e_off + m
    return torch.cat(node_out), torch.cat(edge_out)


@pytest.mark.parametrize("scope", ["graph", "batch"])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("one_product", [True, False])
def test_matches_reference_computation(graph_case, scope, shared, one_product):
    """Both ways of applying the units (one block-diagonal product, or per head) equal the per-head loop."""
    _, graphs = graph_case
    graphs = with_features(graphs, D)
    torch.manual_seed(0)
    net = GEANet(D, H, S, edge_unit=True, shared_unit=shared, scope=scope)
    net.one_product = one_product
    bg = dgl.batch(graphs)
    x, e = net(bg, bg.ndata["h"], bg.edata["h"])
    ref_x, ref_e = reference_geanet(net, graphs, scope)
    assert x.shape == (bg.num_nodes(), D) and e.shape == (bg.num_edges(), D)
    torch.testing.assert_close(x, ref_x, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(e, ref_e, atol=1e-5, rtol=1e-5)
    assert set(bg.ndata.keys()) == {"h", "feat", "lap_pe"}  # nothing left on the graph


def test_graph_scope_independent_of_batch_mates():
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30), dgl.rand_graph(4, 7)], D, seed=3)
    torch.manual_seed(1)
    net = GEANet(D, H, S, edge_unit=True, scope="graph")
    bg = dgl.batch(graphs)
    x, e = net(bg, bg.ndata["h"], bg.edata["h"])
    alone = [net(g, g.ndata["h"], g.edata["h"]) for g in graphs]
    torch.testing.assert_close(x, torch.cat([a[0] for a in alone]), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(e, torch.cat([a[1] for a in alone]), atol=1e-6, rtol=1e-6)


def test_batch_scope_depends_on_batch_mates():
    graphs = with_features([dgl.rand_graph(6, 15), dgl.rand_graph(9, 30)], D, seed=4)
    torch.manual_seed(1)
    net = GEANet(D, H, S, scope="batch")
    bg = dgl.batch(graphs)
    x, _ = net(bg, bg.ndata["h"], bg.edata["h"])
    alone, _ = net(graphs[0], graphs[0].ndata["h"], graphs[0].edata["h"])
    assert not torch.allclose(x[:6], alone, atol=1e-4)


def test_attention_rows_sum_to_one_and_columns_normalised():
    g = with_features([dgl.rand_graph(8, 20)], D)[0]
    net = GEANet(D, H, S, scope="graph")
    net.keep_attention = True
    net(g, g.ndata["h"], g.edata["h"])
    attn = net.last_node_attention  # (N, H, S)
    torch.testing.assert_close(attn.sum(-1), torch.ones(8, H))
    assert (attn >= 0).all()


def test_permutation_equivariance_graph_scope():
    g = with_features([dgl.rand_graph(10, 30)], D, seed=5)[0]
    perm = torch.randperm(10)
    inverse = torch.argsort(perm)
    src, dst = g.edges()
    pg = dgl.graph((inverse[src], inverse[dst]), num_nodes=10)
    net = GEANet(D, H, S, edge_unit=True, scope="graph")
    x, e = net(g, g.ndata["h"], g.edata["h"])
    px, pe = net(pg, g.ndata["h"][perm], g.edata["h"])
    torch.testing.assert_close(px, x[perm], atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(pe, e, atol=1e-6, rtol=1e-6)


def test_disabled_units_pass_features_through():
    g = with_features([dgl.rand_graph(5, 9)], D)[0]
    net = GEANet(D, H, S, node_unit=False, edge_unit=False)
    x, e = net(g, g.ndata["h"], g.edata["h"])
    assert x is g.ndata["h"] or torch.equal(x, g.ndata["h"])
    assert torch.equal(e, g.edata["h"])
    assert sum(p.numel() for p in net.parameters()) == 0


def test_gradients_reach_every_parameter():
    g = with_features([dgl.rand_graph(7, 20), dgl.rand_graph(4, 6)], D)
    bg = dgl.batch(g)
    net = GEANet(D, H, S, edge_unit=True, shared_unit=True)
    x, e = net(bg, bg.ndata["h"], bg.edata["h"])
    (x.pow(2).sum() + e.pow(3).sum()).backward()
    for name, p in net.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


def test_state_dict_round_trip():
    g = with_features([dgl.rand_graph(7, 20)], D)[0]
    net = GEANet(D, H, S, edge_unit=True, shared_unit=True)
    buf = io.BytesIO()
    torch.save(net.state_dict(), buf)
    buf.seek(0)
    other = GEANet(D, H, S, edge_unit=True, shared_unit=True)
    other.load_state_dict(torch.load(buf))
    for a, b in zip(net(g, g.ndata["h"], g.edata["h"]), other(g, g.ndata["h"], g.edata["h"])):
        torch.testing.assert_close(a, b)


def test_invalid_options_raise():
    with pytest.raises(ValueError, match="scope"):
        GEANet(D, H, S, scope="global")
    with pytest.raises(ValueError, match="must equal"):
        GEANet(D, 5, S)


@pytest.mark.parametrize("rows", [1, 2, 37])
def test_batch_double_norm_matches_autograd_of_the_plain_expression(rows):
    """The explicit backward of the batch-scope double norm equals autograd through the textbook formula."""
    from geaet_dgl.nn import double_normalize

    gen = torch.Generator().manual_seed(rows)
    scores = (3 * torch.randn(rows, H, S, generator=gen, dtype=torch.float64)).requires_grad_()
    weights = torch.randn(rows, H, S, generator=gen, dtype=torch.float64)
    ours = double_normalize(scores, None)
    (grad_ours,) = torch.autograd.grad((ours * weights).sum(), scores)
    plain = reference_double_norm(scores)
    (grad_plain,) = torch.autograd.grad((plain * weights).sum(), scores)
    assert torch.allclose(ours, plain, atol=1e-12)
    assert torch.allclose(grad_ours, grad_plain, atol=1e-10)
    assert torch.autograd.gradcheck(lambda s: double_normalize(s, None), (scores,))


def test_many_heads_apply_the_units_per_head():
    assert GEANet(16, 4, 4).one_product and not GEANet(16, 8, 2).one_product


def test_heads_as_one_linear_equals_the_unit_per_head():
    from geaet_dgl.nn.external_attention import heads_as_one_linear

    torch.manual_seed(0)
    unit = torch.nn.Linear(S, S)
    x = torch.randn(9, D)
    strided = torch.arange(D).reshape(H, S).t().reshape(-1)
    per_head_contiguous = torch.stack([unit(x[:, h * S:(h + 1) * S]) for h in range(H)], dim=1).reshape(9, D)
    per_head_strided = torch.stack([unit(x[:, h::H]) for h in range(H)], dim=1).reshape(9, D)
    assert torch.allclose(torch.nn.functional.linear(x, *heads_as_one_linear(unit, H)), per_head_contiguous,
                          atol=1e-6)
    assert torch.allclose(torch.nn.functional.linear(x, *heads_as_one_linear(unit, H, strided)), per_head_strided,
                          atol=1e-6)
