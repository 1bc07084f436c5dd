"""The folded inference model computes what the model computes in eval mode, for every paper preset."""
import copy

import dgl
import pytest
import torch
from torch import nn

from geaet_dgl.benchmarking.inputs import synthetic_graphs
from geaet_dgl.data import collate_for
from geaet_dgl.inference import FoldedGEAET, fold_for_inference
from geaet_dgl.nn.self_attention import FoldedSelfAttention
from geaet_dgl.nn.gated_gcn import FoldedGatedGCN
from geaet_dgl.models import build_model
from geaet_dgl.nn.external_attention import FoldedGEANet
from geaet_dgl.nn.geaet_layer import FoldedGEAETLayer
from geaet_dgl.nn.norm import GraphLayerNorm
from geaet_dgl.presets import get_preset

TOLERANCE = 1e-5
PAPER_PRESETS = ("mnist", "cifar10", "pattern", "peptides-struct", "voc", "coco")


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def _superpixel_nodes_batch(num_graphs: int, seed: int):
    """PascalVOC-SP / COCO-SP-shaped inputs: superpixel-like kNN graphs, 14 node and 2 edge features."""
    data = synthetic_graphs("mnist", num_graphs, seed=seed)
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for i in range(num_graphs):
        g = data[i][0]
        g.ndata["feat"] = torch.rand(g.num_nodes(), 14, generator=gen)
        g.edata["feat"] = torch.rand(g.num_edges(), 2, generator=gen)
        graphs.append(g)
    return dgl.batch(graphs)


_BATCHES = {}


def _batch(preset: str, num_graphs: int = 3, seed: int = 0) -> dgl.DGLGraph:
    """A small batch shaped like the preset's dataset (cached: pattern's SBM graphs take a moment)."""
    key = (preset, num_graphs, seed)
    if key not in _BATCHES:
        if preset in ("voc", "coco"):
            _BATCHES[key] = _superpixel_nodes_batch(num_graphs, seed)
        else:
            data = synthetic_graphs(preset, num_graphs, seed=seed)
            _BATCHES[key] = collate_for(data)([data[i] for i in range(num_graphs)])[0]
    return _BATCHES[key]


def _trained_looking(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every norm statistics and affine values far from their defaults, and every weight some noise:
    a fold that dropped a scale, a shift or a bias would show."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                m.running_mean.copy_(0.5 * torch.randn(m.num_features, generator=gen))
                m.running_var.copy_(1.0 + torch.rand(m.num_features, generator=gen))
                m.weight.copy_((0.2 + 0.4 * torch.rand(m.num_features, generator=gen))
                               * torch.where(torch.rand(m.num_features, generator=gen) < 0.2, -1.0, 1.0))
                m.bias.copy_(0.3 * torch.randn(m.num_features, generator=gen))
            elif isinstance(m, GraphLayerNorm):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.3 * torch.randn(m.bias.shape, generator=gen))
    return model


def _model(preset: str, **changes) -> nn.Module:
    config = copy.deepcopy(get_preset(preset).model)
    for key, value in changes.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    return _trained_looking(build_model(config))


def _max_diff(model: nn.Module, graph: dgl.DGLGraph) -> float:
    model.eval()
    with torch.no_grad():
        expected = model(graph)
    folded = fold_for_inference(model)
    got = folded(graph)
    assert got.shape == expected.shape and not got.requires_grad
    return float((got - expected).abs().max())


@pytest.mark.parametrize("preset", PAPER_PRESETS)
def test_folded_model_matches_the_model_for_every_paper_preset(preset):
    model = _model(preset)
    graph = _batch(preset)
    folded = fold_for_inference(model)
    # Everything the preset uses is folded, not run through the fallback.
    assert isinstance(folded, FoldedGEAET)
    assert all(isinstance(layer, FoldedGEAETLayer) for layer in folded.layers)
    cfg = model.config
    for layer in folded.layers:
        if cfg.mpnn == "gatedgcn":
            assert isinstance(layer.local_model, FoldedGatedGCN)
        if cfg.attention == "transformer":
            assert isinstance(layer.global_model, FoldedSelfAttention)
        assert isinstance(layer.external_model, FoldedGEANet)
    with torch.no_grad():
        expected = model.eval()(graph)
    assert expected.abs().max() > 1e-3  # a meaningful output, not all zeros
    assert float((folded(graph) - expected).abs().max()) < TOLERANCE


@pytest.mark.parametrize("scope", ["graph", "batch"])
def test_both_geanet_scopes(scope):
    model = _model("mnist")
    for layer in model.layers:
        layer.external_model.scope = scope
    assert _max_diff(model, _batch("mnist", 4, seed=1)) < TOLERANCE


@pytest.mark.parametrize("scope", ["graph", "batch"])
@pytest.mark.parametrize("heads", [4, 8])  # 8 heads: units per head (the module's choice), not one product
@pytest.mark.parametrize("shared", [True, False])
def test_edge_and_shared_units_in_both_scopes(scope, heads, shared):
    geanet = copy.deepcopy(get_preset("pattern").model.geanet)
    geanet.num_heads, geanet.unit_size, geanet.scope, geanet.shared_unit = heads, 64 // heads, scope, shared
    model = _model("pattern", num_layers=2, geanet=geanet)
    assert model.layers[0].external_model.one_product == (heads <= 4)
    assert _max_diff(model, _batch("pattern", 2, seed=2)) < TOLERANCE


@pytest.mark.parametrize("mpnn", ["gine", "gin", "gcn", "gat", "pna", "genconv"])
def test_other_local_models_run_as_they_are_inside_the_folded_layer(mpnn):
    model = _model("mnist", mpnn=mpnn, num_layers=2)
    assert not isinstance(fold_for_inference(model).layers[0].local_model, FoldedGatedGCN)
    assert _max_diff(model, _batch("mnist", 3)) < TOLERANCE


def test_the_performer_runs_as_it_is_inside_the_folded_layer():
    model = _model("mnist", attention="performer", num_layers=2)
    assert _max_diff(model, _batch("mnist", 3)) < TOLERANCE


def test_kept_attention_weights_are_still_recorded():
    model = _model("mnist", num_layers=1)
    model.layers[0].global_model.keep_attention = True
    model.layers[0].external_model.keep_attention = True
    graph = _batch("mnist", 2)
    model.eval()
    with torch.no_grad():
        expected = model(graph)
    kept = (model.layers[0].global_model.last_attention, model.layers[0].external_model.last_node_attention)
    folded = fold_for_inference(model)
    layer = folded.layers[0]
    layer.global_model.last_attention = layer.external_model.last_node_attention = None  # only the folded run
    model.layers[0].global_model.last_attention = model.layers[0].external_model.last_node_attention = None
    assert float((folded(graph) - expected).abs().max()) < TOLERANCE
    torch.testing.assert_close(layer.global_model.last_attention, kept[0], rtol=0, atol=TOLERANCE)
    torch.testing.assert_close(layer.external_model.last_node_attention, kept[1], rtol=0, atol=TOLERANCE)


def test_batchnorm_without_running_statistics_is_not_folded():
    """Such a BatchNorm normalises with the batch's statistics in eval mode too: it must run as it is."""
    model = _model("mnist", num_layers=1)
    model.layers[0].norm1_global.norm = nn.BatchNorm1d(model.config.hidden_dim, track_running_stats=False)
    assert _max_diff(model, _batch("mnist", 3)) < TOLERANCE


def test_folding_puts_the_model_in_eval_mode_and_follows_new_weights_only_when_refolded():
    model = _model("mnist", num_layers=2)
    graph = _batch("mnist", 3)
    model.train()
    folded = fold_for_inference(model)
    assert not model.training
    before = folded(graph)
    with torch.no_grad():
        model.layers[0].norm2.norm.running_mean.add_(1.0)
        expected = model(graph)
    assert float((folded(graph) - before).abs().max()) == 0.0  # a folded copy keeps the weights it was built from
    assert float((fold_for_inference(model)(graph) - expected).abs().max()) < TOLERANCE


def test_batched_equals_per_graph_with_graph_scope():
    """With the per-graph GEANet softmax a graph's prediction does not depend on its batch mates."""
    model = _model("mnist", num_layers=2)
    for layer in model.layers:
        layer.external_model.scope = "graph"
    folded = fold_for_inference(model)
    data = synthetic_graphs("mnist", 3, seed=3)
    batched = folded(dgl.batch([data[i][0] for i in range(3)]))
    single = torch.cat([folded(data[i][0]) for i in range(3)])
    assert float((batched - single).abs().max()) < TOLERANCE
