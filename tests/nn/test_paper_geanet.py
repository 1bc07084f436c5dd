"""The paper's GEANet (variant='paper') against its equations written out per graph with plain loops."""
import math

import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError, apply_overrides
from geaet_dgl.models import build_model
from geaet_dgl.nn.paper_geanet import PaperGEANet, build_geanet
from geaet_dgl.config.presets import get_preset
from tests.conftest import with_features

D, H, S = 12, 3, 7  # S != d/H on purpose: the paper does not tie the slots to the head width
DH = D // H


def paper_gea(x: torch.Tensor, u_s, u_k: torch.Tensor, u_v: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """X_out = Concat_i(DNorm(X'_i U_k^T) U_v) W_o for the rows ``x`` (n, d) of one normalisation group,
    X' = X U_s; DNorm written element by element: alpha_hat_ij = exp(a_ij) / sum_k exp(a_kj),
    alpha_ij = alpha_hat_ij / sum_k alpha_hat_ik."""
    n = x.shape[0]
    if u_s is not None:
        x = x @ u_s
    heads = []
    for i in range(H):
        a = x[:, i * DH:(i + 1) * DH] @ u_k.T  # (n, S)
        alpha_hat = torch.zeros_like(a)
        for j in range(S):
            column = [math.exp(a[k, j].item()) for k in range(n)]
            for r in range(n):
                alpha_hat[r, j] = column[r] / sum(column)
        alpha = torch.zeros_like(a)
        for r in range(n):
            alpha[r] = alpha_hat[r] / alpha_hat[r].sum()
        heads.append(alpha @ u_v)  # (n, d_h)
    return torch.cat(heads, dim=1) @ w_o if n else x.new_zeros(0, D)


def expected(net: PaperGEANet, graphs, scope: str):
    """Nodes and edges of each graph (scope 'graph') or of the whole batch ('batch'), one group at a time."""
    groups = [[g] for g in graphs] if scope == "graph" else [graphs]
    u_s = net.shared.weight.T if net.shared_unit else None
    nodes, edges = [], []
    for group in groups:
        x = torch.cat([g.ndata["h"] for g in group])
        e = torch.cat([g.edata["h"] for g in group])
        nodes.append(paper_gea(x, u_s, net.node_key, net.node_value, net.node_out.weight.T))
        edges.append(paper_gea(e, u_s, net.edge_key, net.edge_value, net.edge_out.weight.T) if net.edge_unit else e)
    return torch.cat(nodes), torch.cat(edges)


def _net(shared: bool, scope: str = "graph", edge: bool = True) -> PaperGEANet:
    torch.manual_seed(0)
    return PaperGEANet(D, H, S, edge_unit=edge, shared_unit=shared, scope=scope).double()


@pytest.mark.parametrize("scope", ["graph", "batch"])
@pytest.mark.parametrize("shared", [False, True])
def test_matches_the_papers_equations(graph_case, scope, shared):
    _, graphs = graph_case
    graphs = [g for g in with_features(graphs, D)]
    for g in graphs:
        g.ndata["h"], g.edata["h"] = g.ndata["h"].double(), g.edata["h"].double()
    net = _net(shared, scope)
    batch = dgl.batch(graphs)
    x, e = net(batch, batch.ndata["h"], batch.edata["h"])
    want_x, want_e = expected(net, graphs, scope)
    torch.testing.assert_close(x, want_x, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(e, want_e, rtol=1e-10, atol=1e-12)
    assert set(batch.ndata) == {"h", "feat", "lap_pe"} and set(batch.edata) == {"h", "feat"}  # graph left clean


def test_batched_equals_one_graph_at_a_time():
    graphs = with_features([dgl.rand_graph(7, 20), dgl.rand_graph(3, 5), dgl.rand_graph(11, 30)], D)
    net = _net(shared=True).float()
    batch = dgl.batch(graphs)
    x, e = net(batch, batch.ndata["h"], batch.edata["h"])
    single = [net(g, g.ndata["h"], g.edata["h"]) for g in graphs]
    torch.testing.assert_close(x, torch.cat([s[0] for s in single]))
    torch.testing.assert_close(e, torch.cat([s[1] for s in single]))


def test_every_parameter_gets_a_finite_nonzero_gradient():
    graphs = with_features([dgl.rand_graph(7, 20), dgl.rand_graph(5, 9)], D)
    net = _net(shared=True).float()
    batch = dgl.batch(graphs)
    x, e = net(batch, batch.ndata["h"], batch.edata["h"])
    target_x, target_e = torch.randn_like(x), torch.randn_like(e)
    ((x - target_x) ** 2).sum().add(((e - target_e) ** 2).sum()).backward()
    for name, param in net.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
        assert param.grad.abs().sum() > 0, name


def test_units_have_the_papers_shapes_and_no_bias():
    net = PaperGEANet(D, H, S, edge_unit=True, shared_unit=True)
    shapes = {name: tuple(p.shape) for name, p in net.named_parameters()}
    assert shapes == {"node_key": (S, DH), "node_value": (S, DH), "edge_key": (S, DH), "edge_value": (S, DH),
                      "shared.weight": (D, D), "node_out.weight": (D, D), "edge_out.weight": (D, D)}
    with pytest.raises(ValueError, match="must divide"):
        PaperGEANet(10, 4, 5)
    with pytest.raises(ValueError, match="variant='paper2' is not one of reference, paper"):
        build_geanet("paper2", D, H, S)


def _linear(fan_in: int, fan_out: int, bias: bool = True) -> int:
    return fan_in * fan_out + (fan_out if bias else 0)


@pytest.mark.parametrize("preset", ["mnist", "pattern"])
def test_parameter_difference_counted_by_hand(preset):
    """Per layer, reference: Linear(S, S) key and value units per path (+ share_U Linear(d, d));
    paper: (S, d/H) key and value units and a bias-free (d, d) W_o per path (+ a bias-free (d, d) U_s)."""
    ref = get_preset(preset)
    paper = apply_overrides(ref, {"model.geanet.variant": "paper"})
    m, g = ref.model, ref.model.geanet
    d, s, dh = m.hidden_dim, m.geanet_unit_size(), m.hidden_dim // g.num_heads
    paths = 1 + int(g.edge_unit)
    reference_layer = paths * 2 * _linear(s, s) + (_linear(d, d) if g.shared_unit else 0)
    paper_layer = paths * (2 * s * dh + d * d) + (d * d if g.shared_unit else 0)
    by_hand = m.num_layers * (paper_layer - reference_layer)
    counted = build_model(paper.model).num_parameters - build_model(ref.model).num_parameters
    assert counted == by_hand
    if preset == "mnist":
        assert by_hand == 5 * (2 * 10 * 10 + 40 * 40 - 2 * (10 * 10 + 10)) == 7900


def test_variant_setting_brings_the_papers_per_graph_scope():
    mnist = get_preset("mnist")
    assert mnist.model.geanet.scope == "batch"
    paper = apply_overrides(mnist, {"model.geanet.variant": "paper"})
    assert (paper.model.geanet.variant, paper.model.geanet.scope) == ("paper", "graph")
    batch = apply_overrides(mnist, {"model.geanet.variant": "paper", "model.geanet.scope": "batch"})
    assert batch.model.geanet.scope == "batch"
    free = apply_overrides(mnist, {"model.geanet.variant": "paper", "model.geanet.unit_size": "32"})
    assert free.model.geanet.unit_size == 32  # S independent of the head width
    with pytest.raises(ConfigError, match="must equal hidden_dim"):
        apply_overrides(mnist, {"model.geanet.unit_size": "32"})  # the reference ties S to d/H
    with pytest.raises(ConfigError, match="geanet.variant='other' is not one of reference, paper"):
        apply_overrides(mnist, {"model.geanet.variant": "other"})
