"""The folded inference model (and layer-wise inference) computes what the model computes in eval mode: for every
paper preset and for every layer of the menu."""
import copy
import importlib
import inspect
import pkgutil

import dgl
import pytest
import torch
from torch import nn

import geaet_dgl.models
import geaet_dgl.nn
from geaet_lab.benchmarking.inputs import synthetic_graphs
from geaet_dgl.data import collate_for
from geaet_dgl.inference import FoldedGEAET, fold_for_inference
from geaet_dgl.models import build_model
from geaet_dgl.models.encoders import LinearEncoder
from geaet_dgl.models.positional import EquivStableLapPEEncoder, KernelSEEncoder
from geaet_dgl.models.signnet import FoldedSignNetEncoder, SignNetEncoder
from geaet_dgl.nn.external_attention import FoldedGEANet, GEANet
from geaet_dgl.nn.gated_gcn import FoldedGatedGCN, GatedGCNLayer
from geaet_dgl.nn.gen_conv import FoldedGENConv, GENConvLayer
from geaet_dgl.nn.geaet_layer import FoldedGEAETLayer, GEAETLayer
from geaet_dgl.nn.biased_attention import BiasedGraphSelfAttention, FoldedBiasedSelfAttention
from geaet_dgl.nn.self_attention import FoldedSelfAttention, GraphSelfAttention
from geaet_dgl.config.presets import get_preset
from tests.inference.layer_menu import MENU, menu_graphs, menu_model, trained_looking

TOLERANCE = 1e-5
PAPER_PRESETS = ("mnist", "cifar10", "pattern", "peptides-struct", "voc", "coco")


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


def _model(preset: str, **changes) -> nn.Module:
    config = copy.deepcopy(get_preset(preset).model)
    for key, value in changes.items():
        setattr(config, key, value)
    torch.manual_seed(0)
    return trained_looking(build_model(config))


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
        if cfg.mpnn == "genconv":
            assert isinstance(layer.local_model, FoldedGENConv)
        if cfg.attention == "transformer":
            assert isinstance(layer.global_model, FoldedSelfAttention)
        if cfg.attention == "biased_transformer":
            assert isinstance(layer.global_model, FoldedBiasedSelfAttention)
        assert isinstance(layer.external_model, FoldedGEANet)
    with torch.no_grad():
        expected = model.eval()(graph)
    assert expected.abs().max() > 1e-3  # a meaningful output, not all zeros
    assert float((folded(graph) - expected).abs().max()) < TOLERANCE


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


# -- the whole layer menu (layer_menu.py): the folded model against the model's own eval forward ----------------


@pytest.mark.parametrize("name", list(MENU))
def test_folded_model_matches_the_model_for_every_layer_of_the_menu(name):
    model = menu_model(MENU[name])
    graph = dgl.batch(menu_graphs())
    with torch.no_grad():
        expected = model(graph)
    folded = fold_for_inference(model)
    assert float(expected.abs().max()) > 1e-3
    torch.testing.assert_close(folded(graph), expected, rtol=0, atol=TOLERANCE)
    # Each part with an eval-mode path of its own runs it (not the module's training forward).
    cfg = model.config
    for layer in folded.layers:
        assert isinstance(layer, FoldedGEAETLayer)
        if cfg.mpnn == "gatedgcn":
            assert isinstance(layer.local_model, FoldedGatedGCN)
        if cfg.mpnn == "genconv":
            assert isinstance(layer.local_model, FoldedGENConv)
        if cfg.attention == "transformer":
            assert isinstance(layer.global_model, FoldedSelfAttention)
        if cfg.attention == "biased_transformer":
            assert isinstance(layer.global_model, FoldedBiasedSelfAttention)
        if cfg.external and cfg.geanet.variant == "reference":
            assert isinstance(layer.external_model, FoldedGEANet)
    if cfg.pe == "signnet":
        assert isinstance(folded.pe_encoder, FoldedSignNetEncoder)


#: The constructor options of every module with an eval-mode path of its own. Each is set by an entry of MENU
#: (the model configuration reaches it); a new option fails this test until MENU sets it and the folded path
#: is checked against it, so the fast path cannot silently compute an older layer's math.
FOLDED_OPTIONS = {
    "GatedGCNLayer": {"in_feats", "out_feats", "dropout", "residual", "activation", "equivstable_pe"},
    "GraphSelfAttention": {"hidden_dim", "num_heads", "attn_dropout"},
    "BiasedGraphSelfAttention": {"hidden_dim", "num_heads", "attn_dropout"},
    "GEANet": {"hidden_dim", "num_heads", "unit_size", "node_unit", "edge_unit", "shared_unit", "scope"},
    "GEAETLayer": {"hidden_dim", "local_model", "global_model", "external_model", "local_dropout", "global_dropout",
                   "external_dropout", "ffn_dropout", "norm", "use_ffn", "local_out_act", "activation", "residual"},
    "KernelSEEncoder": {"k", "pe_dim", "raw_norm", "model", "num_layers"},
    "LinearEncoder": {"in_feats", "out_feats"},
    "EquivStableLapPEEncoder": {"k", "out_feats"},
    "SignNetEncoder": {"k", "pe_dim", "model", "phi_layers", "phi_hidden_dim", "phi_out_dim", "rho_layers"},
    "GENConvLayer": {"feats", "expansion", "eps"},  # the model builds it with its defaults (MENU's genconv entry)
}


def test_every_option_of_a_folded_module_is_in_the_menu():
    classes = (GatedGCNLayer, GraphSelfAttention, BiasedGraphSelfAttention, GEANet, GEAETLayer, KernelSEEncoder,
               LinearEncoder, EquivStableLapPEEncoder, SignNetEncoder, GENConvLayer)
    assert {cls.__name__ for cls in classes} == set(FOLDED_OPTIONS)
    for cls in classes:
        options = set(inspect.signature(cls.__init__).parameters) - {"self"}
        assert options == FOLDED_OPTIONS[cls.__name__], (
            f"{cls.__name__} has options {sorted(options ^ FOLDED_OPTIONS[cls.__name__])} that the menu test does "
            "not know: set them in an entry of MENU, then list them in FOLDED_OPTIONS")
    # Every module that has an eval-mode path of its own is one of them.
    found = set()
    for package in (geaet_dgl.nn, geaet_dgl.models):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            found |= {obj.__name__ for obj in vars(module).values()
                      if inspect.isclass(obj) and issubclass(obj, nn.Module) and obj.__module__ == module.__name__
                      and any(name in vars(obj) for name in ("folded", "edge_square_distance", "forward_in_chunks",
                                                             "attend_in_chunks"))}
    assert found == set(FOLDED_OPTIONS)
