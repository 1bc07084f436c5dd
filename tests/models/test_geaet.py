"""The full model: parameter counts, batching, gradients, learning."""
import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError, GEANetConfig, ModelConfig
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset, preset_names
from tests.conftest import random_graph, with_features


def small_config(**kw) -> ModelConfig:
    base = dict(hidden_dim=8, num_layers=2, num_heads=2, pe_k=8,
                geanet=GEANetConfig(num_heads=2, unit_size=4, edge_unit=True, scope="graph"))
    base.update(kw)
    return ModelConfig(**base)


@pytest.mark.parametrize("name", [n for n in preset_names() if get_preset(n).paper_params is not None])
def test_preset_parameter_counts_match_paper(name):
    preset = get_preset(name)
    assert build_model(preset.model).num_parameters == preset.paper_params


def test_mnist_count_by_hand():
    """113,155 = encoders 600 + 5 layers x 22,101 + head 2,050 (see docs/model.md)."""
    per_layer = (5 * (40 * 40 + 40) + 2 * 80 + (40 + 40 + 41)  # GatedGCN, its 2 BNs, the ESLapPE gate MLP
                 + (3 * 40 * 40 + 3 * 40 + 40 * 40 + 40)  # self-attention
                 + 2 * (10 * 10 + 10)  # GEANet node key/value units
                 + 4 * 80  # three branch norms and norm2
                 + (40 * 80 + 80 + 80 * 40 + 40))  # FFN
    total = (3 * 40 + 40) + (8 * 40 + 40) + (1 * 40 + 40) + 5 * per_layer + (40 * 40 + 40 + 40 * 10 + 10)
    assert total == 113_155 == build_model(get_preset("mnist").model).num_parameters


def _batch(sizes, seed=0):
    return with_features([random_graph(n, 3 * n, seed + i) for i, n in enumerate(sizes)], 8, seed=seed)


@pytest.mark.parametrize("pe", ["eslappe", "rwse", "lappe", "none"])
def test_graph_scope_model_batched_equals_single(pe):
    graphs = _batch([7, 3, 12, 1])
    for g in graphs:
        g.ndata["rwse"] = torch.rand(g.num_nodes(), 8)
        g.ndata["lap_eigval"] = torch.rand(g.num_nodes(), 8)
    model = build_model(small_config(pe=pe, pe_dim=3)).eval()
    batched = model(dgl.batch(graphs))
    singles = torch.cat([model(g) for g in graphs])
    assert batched.shape == (4, 10)
    torch.testing.assert_close(batched, singles, atol=1e-5, rtol=1e-5)


def test_node_head_shapes_and_finite_for_edge_cases(graph_case):
    _, graphs = graph_case
    graphs = with_features(graphs, 8)
    model = build_model(small_config(head="node", out_feats=3))
    out = model(dgl.batch(graphs))
    assert out.shape == (sum(g.num_nodes() for g in graphs), 3)
    assert torch.isfinite(out).all()


def test_gradients_reach_every_parameter_but_the_unused_last_edge_norm():
    model = build_model(get_preset("mnist").model)
    out = model(dgl.batch(_batch([20, 15, 9])))
    torch.nn.functional.cross_entropy(out, torch.tensor([1, 2, 3])).backward()
    missing = sorted(n for n, p in model.named_parameters() if p.grad is None)
    # The last layer's GatedGCN edge output feeds nothing (as in the reference).
    assert missing == ["layers.4.local_model.bn_edge_e.bias", "layers.4.local_model.bn_edge_e.weight"]
    for n, p in model.named_parameters():
        if p.grad is not None:
            assert torch.isfinite(p.grad).all(), n


@pytest.mark.slow
def test_learns_a_toy_task():
    """Classify graphs by whether their node feature mean is above 0.5."""
    torch.manual_seed(0)
    graphs, labels = [], []
    for i in range(64):
        g = random_graph(8, 24, i)
        label = i % 2
        g.ndata["feat"] = torch.rand(8, 3) * 0.5 + 0.5 * label
        g.edata["feat"] = torch.rand(g.num_edges(), 1)
        g.ndata["lap_pe"] = torch.zeros(8, 8)
        graphs.append(g)
        labels.append(label)
    bg, y = dgl.batch(graphs), torch.tensor(labels)
    model = build_model(small_config(out_feats=2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(model(bg), y)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    accuracy = (model(bg).argmax(-1) == y).float().mean().item()
    assert loss.item() < 0.3 * first and accuracy > 0.95


def test_missing_pe_gives_clear_error():
    g = _batch([5])[0]
    del g.ndata["lap_pe"]
    with pytest.raises(ValueError, match="lap_pe"):
        build_model(small_config())(g)


@pytest.mark.parametrize("change, message", [
    (dict(num_heads=3), "does not divide"),
    (dict(geanet=GEANetConfig(num_heads=2, unit_size=3)), "must equal hidden_dim"),
    (dict(mpnn="graphsage-pool"), "mpnn"),
])
def test_impossible_configs_rejected(change, message):
    with pytest.raises(ConfigError, match=message):
        build_model(small_config(**change))
