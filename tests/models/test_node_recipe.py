"""The node-recipe options: norms without batch statistics, residual switch, jumping knowledge, input and feature
dropout, the GCN branch against a dense computation, and the row normalisation of node features."""
import copy

import dgl
import pytest
import torch
from torch import nn

from geaet_dgl.config import ConfigError, GEANetConfig, ModelConfig, apply_overrides
from geaet_dgl.data.input_transform import (apply_input_transform, propagate, propagate_transform, row_normalize,
                                           row_normalize_transform)
from geaet_dgl.inference import fold_for_inference
from geaet_dgl.inference.layerwise import layerwise_forward
from geaet_dgl.models import build_model
from geaet_dgl.nn.branches import build_mpnn
from geaet_dgl.nn.geaet_layer import GEAETLayer
from geaet_dgl.nn.norm import BranchNorm
from geaet_dgl.config.presets import get_preset


def _graph(n=12, e=40, seed=0, feats=5):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, n, (e,), generator=gen)
    dst = torch.randint(0, n, (e,), generator=gen)
    g = dgl.graph((src, dst), num_nodes=n)
    g.ndata["feat"] = torch.rand(n, feats, generator=gen)
    return g


def _dense_gcn_propagation(g: dgl.DGLGraph, self_loops: bool = True) -> torch.Tensor:
    """(N, N) D^-1/2 (A + I) D^-1/2 with A's existing self-loops replaced by one, written out densely;
    ``self_loops=False``: D^-1/2 A D^-1/2 without any (D: in-degrees, 1 for a node without any)."""
    n = g.num_nodes()
    adj = torch.zeros(n, n, dtype=torch.float64)
    src, dst = g.edges()
    for s, d in zip(src.tolist(), dst.tolist()):
        if s != d:
            adj[d, s] += 1.0  # messages flow src -> dst; multi-edges count twice, as DGL's sum does
    if self_loops:
        adj += torch.eye(n, dtype=torch.float64)
    deg = adj.sum(1).clamp(min=1)
    return deg.rsqrt()[:, None] * adj * deg.rsqrt()[None, :]


def _dense_branch(branch, x: torch.Tensor, prop: torch.Tensor) -> torch.Tensor:
    """The raw-feature branch written out: ``P (ReLU(P X W1^T + b1)) W2^T + b2`` (P = I: the MLP branch)."""
    first = torch.relu(prop @ (x @ branch.first.lin.weight.t()) + branch.first.bias)
    return prop @ (first @ branch.second.lin.weight.t()) + branch.second.bias


def _stack_outputs(model, g: dgl.DGLGraph) -> list:
    """The encoder's and every layer's (N, d) node features, layer by layer (eval mode, no dropout)."""
    stack = [model.node_encoder(g.ndata["feat"])]
    for layer in model.layers:
        stack.append(layer(g, stack[-1])[0])
    return stack


@pytest.mark.parametrize("kind", ["node_layer", "none"])
def test_branch_norm_without_batch_statistics(kind):
    x = torch.randn(7, 6) * 3 + 1
    norm = BranchNorm(kind, 6)
    got = norm(x, None)
    if kind == "none":
        assert torch.equal(got, x)
        return
    expected = (x - x.mean(1, keepdim=True)) / (x.var(1, unbiased=False, keepdim=True) + 1e-5).sqrt()
    assert torch.allclose(got, expected, atol=1e-5)
    # a node's output does not depend on the other nodes: the same in any batch, in train and eval mode
    assert torch.allclose(norm(x[:3], None), got[:3], atol=1e-6)


@pytest.mark.parametrize("residual", [True, False])
def test_gcn_branch_and_residual_against_a_dense_computation(residual):
    g = dgl.add_edges(_graph(), [2, 2], [2, 5])  # a self-loop (replaced) and a multi-edge
    torch.manual_seed(0)
    gcn = build_mpnn("gcn", 6)
    with torch.no_grad():
        gcn.bias.normal_()
    layer = GEAETLayer(6, gcn, norm="none", use_ffn=False, residual=residual).double()
    x = torch.randn(g.num_nodes(), 6, dtype=torch.float64, requires_grad=True)
    out, _ = layer(g, x)
    prop = _dense_gcn_propagation(g)
    expected = prop @ (x @ gcn.lin.weight.t()) + gcn.bias
    if residual:
        expected = expected + x
    # the GCN's degree normalisation is computed once per batch in float32 (nn/gcn.py), hence 1e-6
    assert torch.allclose(out, expected, atol=1e-6)
    torch.autograd.gradcheck(lambda inp: layer(g, inp)[0], (x,))


def _config(**changes) -> ModelConfig:
    config = ModelConfig(node_in_feats=5, edge_in_feats=1, out_feats=3, edge_encoder="constant", pe="none",
                         hidden_dim=8, num_layers=2, mpnn="gcn", attention="none", num_heads=2,
                         geanet=GEANetConfig(num_heads=2, scope="graph"), norm="node_layer", head="node",
                         head_layers=1)
    for key, value in changes.items():
        setattr(config, key, value)
    return config.validate()


@pytest.mark.parametrize("jk", ["cat", "max"])
def test_jumping_knowledge_reads_every_layer(jk):
    torch.manual_seed(0)
    model = build_model(_config(jk=jk)).eval()
    g = _graph()
    seen = []
    hooks = [layer.register_forward_hook(lambda m, i, o: seen.append(o[0])) for layer in model.layers]
    with torch.no_grad():
        out = model(g)
        h0 = model.node_encoder(g.ndata["feat"])
    for hook in hooks:
        hook.remove()
    features = [h0] + seen
    if jk == "cat":
        combined = torch.cat(features, -1) @ model.jk.linear.weight.t() + model.jk.linear.bias
    else:
        combined = torch.stack(features).max(0).values
    assert torch.allclose(out, model.head(combined, None), atol=1e-6)
    # the gradient reaches the first layer through the jumping knowledge, not only through the last layer
    model.train()
    model(g).sum().backward()
    assert model.layers[0].local_model.lin.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("changes", [dict(jk="cat"), dict(jk="max", residual=False), dict(norm="none"),
                                     dict(norm="node_layer", attention="transformer", use_ffn=False),
                                     dict(input_gcn_weight=0.7, jk="cat")])
def test_batched_equals_single_graphs(changes):
    torch.manual_seed(0)
    model = build_model(_config(**changes)).eval()
    graphs = [_graph(seed=s) for s in range(3)]
    with torch.no_grad():
        batched = model(dgl.batch(graphs))
        single = torch.cat([model(g) for g in graphs])
    assert torch.allclose(batched, single, atol=1e-5)


@pytest.mark.parametrize("changes", [dict(jk="cat"), dict(residual=False, norm="batch"), dict(norm="none"),
                                     dict(residual=False, attention="transformer", jk="max"),
                                     dict(input_gcn_weight=0.8, norm="none", residual=False)])
def test_folded_and_layerwise_inference_equal_the_model(changes):
    torch.manual_seed(0)
    model = build_model(_config(**changes))
    model.train()
    with torch.no_grad():  # BatchNorm running statistics away from their initial values
        model(_graph(n=30, e=90, seed=5))
    model.eval()
    g = _graph(n=30, e=90, seed=1)
    with torch.no_grad():
        expected = model(g)
        assert (fold_for_inference(model)(g) - expected).abs().max() < 1e-5
        assert (layerwise_forward(model, g, chunk_nodes=7) - expected).abs().max() < 1e-5


def test_input_gcn_branch_against_a_dense_computation():
    """model.input_gcn_weight=w: the head reads (1 - w) * stack + w * GCN2(ReLU(GCN1(X))) on the raw features;
    off (w=0), the model has no such parameters and the same initial weights as before."""
    g = dgl.add_edges(_graph(), [3], [3])
    torch.manual_seed(0)
    model = build_model(_config(input_gcn_weight=0.75)).eval()
    branch = model.input_gcn
    expected_branch = _dense_branch(branch, g.ndata["feat"], _dense_gcn_propagation(g).float())
    with torch.no_grad():
        expected = model.head(0.25 * _stack_outputs(model, g)[-1] + 0.75 * expected_branch, None)
        assert torch.allclose(model(g), expected, atol=1e-5)
    model.train()
    model(g).sum().backward()
    assert branch.first.lin.weight.grad.abs().sum() > 0  # trained through the head
    torch.manual_seed(0)
    off = build_model(_config())
    assert off.input_gcn is None
    assert [n for n, _ in off.named_parameters()] == [n for n, _ in model.named_parameters() if "input_gcn" not in n]
    for (name, a), b in zip(off.named_parameters(), (p for n, p in model.named_parameters() if "input_gcn" not in n)):
        assert torch.equal(a, b), name
    with pytest.raises(ConfigError, match="input_gcn_weight=1.0 must be in"):
        _config(input_gcn_weight=1.0)


def test_input_mlp_branch_ignores_the_graph():
    """model.input_branch=mlp: the branch is Linear2(ReLU(Linear1(X))) on the raw features, the same whatever the
    edges; its weights have the GCN branch's names and initial values; the same mix goes to the head."""
    g = _graph()
    torch.manual_seed(0)
    model = build_model(_config(input_gcn_weight=0.6, input_branch="mlp")).eval()
    torch.manual_seed(0)
    gcn = build_model(_config(input_gcn_weight=0.6)).eval()
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), gcn.state_dict().values()))
    branch, x = model.input_gcn, g.ndata["feat"]
    expected_branch = _dense_branch(branch, x, torch.eye(g.num_nodes()))
    with torch.no_grad():
        assert torch.allclose(branch(g, x), expected_branch, atol=1e-6)
        assert torch.allclose(branch(dgl.graph(([], []), num_nodes=g.num_nodes()), x), expected_branch, atol=1e-6)
        expected = model.head(0.4 * _stack_outputs(model, g)[-1] + 0.6 * expected_branch, None)
        assert torch.allclose(model(g), expected, atol=1e-5)
        assert (layerwise_forward(model, g, chunk_nodes=5) - expected).abs().max() < 1e-5
    with pytest.raises(ConfigError, match="input_branch='sage' is not one of gcn, mlp, hops"):
        _config(input_gcn_weight=0.6, input_branch="sage")


@pytest.mark.parametrize("branch", ["gcn", "mlp"])
def test_input_branch_mixed_with_the_logits(branch):
    """model.input_branch_mix=logits: (1 - w) * head(stack) + w * branch, the branch's second layer mapping to the
    outputs; batched equals single graphs, layer-wise inference equals the model; graph heads are refused."""
    g = dgl.add_edges(_graph(), [3], [3])
    torch.manual_seed(0)
    model = build_model(_config(input_gcn_weight=0.8, input_branch=branch, input_branch_mix="logits",
                                jk="cat")).eval()
    layer = model.input_gcn
    assert layer.second.lin.weight.shape == (3, 8)
    prop = _dense_gcn_propagation(g).float() if branch == "gcn" else torch.eye(g.num_nodes())
    expected_branch = _dense_branch(layer, g.ndata["feat"], prop)
    with torch.no_grad():
        expected = 0.2 * model.head(model.jk(_stack_outputs(model, g)), None) + 0.8 * expected_branch
        assert torch.allclose(model(g), expected, atol=1e-5)
        assert (layerwise_forward(model, g, chunk_nodes=5) - expected).abs().max() < 1e-5
        graphs = [_graph(seed=s) for s in range(3)]
        assert torch.allclose(model(dgl.batch(graphs)), torch.cat([model(one) for one in graphs]), atol=1e-5)
    with pytest.raises(ConfigError, match="input_branch_mix=logits mixes per-node outputs"):
        _config(input_gcn_weight=0.8, input_branch_mix="logits", head="graph")


@pytest.mark.parametrize("hops", [1, 2])
def test_hop_branch_keeps_ego_and_neighbours_apart(hops):
    """model.input_branch=hops: [X W_0 | A X W_1 | A^2 X W_2 ...] (A without self-loops, symmetric normalisation)
    -> ReLU -> Linear, against a dense computation; the node's own part ignores the edges; mixed with the logits,
    batched equals single graphs and layer-wise inference equals the model; a gradient reaches every hop."""
    g = dgl.add_edges(_graph(), [3, 7], [3, 2])  # a self-loop (dropped) and an extra edge
    torch.manual_seed(0)
    model = build_model(_config(input_gcn_weight=0.7, input_branch="hops", input_branch_hops=hops,
                                input_branch_mix="logits")).eval()
    branch, x = model.input_gcn, g.ndata["feat"]
    prop = _dense_gcn_propagation(g, self_loops=False)
    z = (x.double() @ branch.first.weight.t().double() + branch.first.bias.double()).split(8, dim=1)
    parts = [torch.linalg.matrix_power(prop, k) @ part for k, part in enumerate(z)]
    expected_branch = (torch.relu(torch.cat(parts, 1)) @ branch.second.weight.t().double()
                       + branch.second.bias.double()).float()
    assert len(z) == hops + 1 and branch.second.weight.shape == (3, 8 * (hops + 1))
    with torch.no_grad():
        assert torch.allclose(branch(g, x), expected_branch, atol=1e-5)
        expected = 0.3 * model.head(_stack_outputs(model, g)[-1], None) + 0.7 * expected_branch
        assert torch.allclose(model(g), expected, atol=1e-5)
        assert (layerwise_forward(model, g, chunk_nodes=5) - expected).abs().max() < 1e-5
        graphs = [_graph(seed=s) for s in range(3)]
        assert torch.allclose(model(dgl.batch(graphs)), torch.cat([model(one) for one in graphs]), atol=1e-5)
        # without edges only the node's own part is left: the neighbour parts are zero before the ReLU
        empty = dgl.graph(([], []), num_nodes=g.num_nodes())
        alone = torch.cat([z[0]] + [torch.zeros_like(part) for part in z[1:]], 1).float()
        assert torch.allclose(branch(empty, x), torch.relu(alone) @ branch.second.weight.t() + branch.second.bias,
                              atol=1e-5)
    model.train()
    model(g).sum().backward()
    grad = branch.first.weight.grad.split(8, dim=0)
    assert all(part.abs().sum() > 0 for part in grad)
    with pytest.raises(ConfigError, match="input_branch_hops=0 must be at least 1"):
        _config(input_gcn_weight=0.7, input_branch="hops", input_branch_hops=0)


@pytest.mark.slow
def test_hop_branch_learns_from_neighbours_of_other_classes():
    """On a graph whose edges all join different classes (p_in = 0) and whose own features are weak, the hop
    branch reads the label from the neighbours' features: >= 10 points above the MLP branch, same training."""
    import torch.nn.functional as F

    from geaet_dgl.data.generated.node_graphs import planted_partition

    g = planted_partition(300, 3, 0.0, 0.06, signal=0.6, seed=0)
    label, train, test = g.ndata["label"], g.ndata["train_mask"].bool(), g.ndata["test_mask"].bool()
    accuracy = {}
    for branch in ("mlp", "hops"):
        torch.manual_seed(0)
        model = build_model(ModelConfig(
            node_in_feats=8, edge_in_feats=1, out_feats=3, edge_encoder="constant", pe="none", hidden_dim=16,
            num_layers=1, mpnn="none", attention="none", num_heads=2, geanet=GEANetConfig(num_heads=2, scope="graph"),
            norm="node_layer", head="node", head_layers=1, input_gcn_weight=0.9, input_branch=branch,
            input_branch_mix="logits").validate())
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
        for _ in range(100):
            model.train()
            optimizer.zero_grad()
            F.cross_entropy(model(g)[train], label[train]).backward()
            optimizer.step()
        with torch.no_grad():
            accuracy[branch] = (model.eval()(g).argmax(1)[test] == label[test]).double().mean().item()
    assert accuracy["hops"] >= accuracy["mlp"] + 0.1, accuracy


def test_input_and_feature_dropout_act_in_training_only():
    torch.manual_seed(0)
    plain = build_model(_config())
    torch.manual_seed(0)
    dropped = build_model(_config(input_dropout=0.5, feature_dropout=0.5))
    # the same initial weights: the dropout modules hold no parameters and are built last
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), dropped.state_dict().values()))
    g = _graph()
    with torch.no_grad():
        assert torch.equal(plain.eval()(g), dropped.eval()(g))
        dropped.train()
        torch.manual_seed(1)
        first = dropped(g)
        torch.manual_seed(2)
        assert not torch.allclose(first, dropped(g))
    # input dropout zeroes about half of the raw features the encoder reads
    seen = []
    hook = dropped.node_encoder.register_forward_pre_hook(lambda m, i: seen.append(i[0]))
    dropped(_graph(n=400, e=800))
    hook.remove()
    zero = float((seen[0] == 0).float().mean())
    assert 0.4 < zero < 0.6


def test_new_options_are_validated():
    preset = get_preset("geaet-node")
    with pytest.raises(ConfigError, match="jk='sum' is not one of none, cat, max"):
        apply_overrides(preset, {"model.jk": "sum"})
    with pytest.raises(ConfigError, match=r"model.input_dropout=1.0 is out of range: it must be a probability in \[0, 1\)"):
        apply_overrides(preset, {"model.input_dropout": "1.0"})
    with pytest.raises(ConfigError, match="norm='group' is not one of batch, layer, node_layer, none"):
        apply_overrides(preset, {"model.norm": "group"})


def test_row_normalize_against_a_direct_computation():
    x = torch.tensor([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, 2.0, 4.0], [-1.0, 1.0, 2.0]])
    expected = torch.tensor([[0.25, 0.75, 0.0], [0.0, 0.0, 0.0], [0.25, 0.25, 0.5], [-0.25, 0.25, 0.5]])
    assert torch.equal(row_normalize(x), expected)
    g = dgl.graph(([0, 1], [1, 2]), num_nodes=4)
    g.ndata["feat"] = x.clone()
    apply_input_transform([g], row_normalize_transform())
    assert torch.equal(g.ndata["feat"], expected)
    bad = dgl.graph(([0], [1]))
    bad.ndata["feat"] = torch.ones(2)
    with pytest.raises(Exception, match="row normalisation needs"):
        apply_input_transform([bad], row_normalize_transform())


@pytest.mark.parametrize("hops", [1, 2])
def test_feature_propagation_against_a_dense_computation(hops):
    """data.feature_propagation=K: (D^-1/2 (A + I) D^-1/2)^K X, self-loops replaced by one, after row normalisation."""
    g = _graph(n=9, e=30, seed=3)
    g = dgl.add_edges(g, [4], [4])  # an existing self-loop: replaced, not doubled
    x = g.ndata["feat"].clone()
    dense = torch.linalg.matrix_power(_dense_gcn_propagation(g), hops)
    torch.testing.assert_close(propagate(g, x, hops), (dense @ x.double()).float(), rtol=1e-5, atol=1e-6)
    transform = {**row_normalize_transform(), **propagate_transform(hops)}
    apply_input_transform([g], transform)
    torch.testing.assert_close(g.ndata["feat"], (dense @ row_normalize(x).double()).float(), rtol=1e-5, atol=1e-6)
    assert torch.equal(propagate(g, x, 0), x)
    bad = dgl.graph(([0], [1]))
    bad.ndata["feat"] = torch.ones(2, dtype=torch.int64)
    with pytest.raises(Exception, match="propagation needs"):
        apply_input_transform([bad], propagate_transform(1))


def test_copy_of_config_keeps_the_new_fields():
    config = _config(jk="cat", input_dropout=0.3, feature_dropout=0.2, residual=False)
    assert copy.deepcopy(config) == config
    assert isinstance(build_model(config).jk, nn.Module)
