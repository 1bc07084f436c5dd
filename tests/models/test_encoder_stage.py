"""The encoder stage as one module: the model, its folded copy and the heterograph model hold one, with the
parameter names (and order) that run folders and checkpoints written before it was a module carry."""
import copy

import dgl
import pytest
import torch

from geaet_dgl.config import GEANetConfig, HeteroConfig, ModelConfig
from geaet_dgl.config.presets import get_preset
from geaet_dgl.data.generated.hetero import author_paper_graphs
from geaet_dgl.inference import fold_for_inference
from geaet_dgl.inference.geaet import FoldedEncoderStage
from geaet_dgl.inference.layerwise import layerwise_forward
from geaet_dgl.models import build_model
from geaet_dgl.models.encoder_stage import EncoderStage, HeteroEncoderStage
from geaet_dgl.nn.batch_layout import BatchLayout
from tests.models.test_graphgps_options import _token_model, _zinc_like, _zinc_model

#: The names outside ``layers.`` of each model's state_dict, in order, as the code before the encoder stage
#: wrote them (recorded from that commit, 3a0cee0): old checkpoints carry exactly these.
BEFORE = {
    "lappe+rwse": ["node_encoder.encoder.weight", "edge_encoder.encoder.weight", "pe_encoder.linear_A.weight",
                   "pe_encoder.linear_A.bias", "pe_encoder.pe_encoder.1.weight", "pe_encoder.pe_encoder.1.bias",
                   "se_encoder.raw_norm.weight", "se_encoder.raw_norm.bias", "se_encoder.raw_norm.running_mean",
                   "se_encoder.raw_norm.running_var", "se_encoder.raw_norm.num_batches_tracked",
                   "se_encoder.pe_encoder.weight", "se_encoder.pe_encoder.bias",
                   "head.layer_post_mp.FC_layers.0.weight", "head.layer_post_mp.FC_layers.0.bias", "head.layer_post_mp.FC_layers.1.weight",
                   "head.layer_post_mp.FC_layers.1.bias"],
    "graph token": ["node_encoder.encoder.weight", "edge_encoder.encoder.weight",
                    "degree_encoder.in_degree_encoder.weight", "degree_encoder.out_degree_encoder.weight",
                    "bias_encoder.spatial_encoder.weight", "bias_encoder.edge_encoder.weight",
                    "bias_encoder.edge_dis_encoder.weight", "graph_token.node_token", "graph_token.bias_token",
                    "head.layer_post_mp.FC_layers.0.weight", "head.layer_post_mp.FC_layers.0.bias",
                    "head.layer_post_mp.FC_layers.1.weight", "head.layer_post_mp.FC_layers.1.bias"],
    "chameleon": ["node_encoder.encoder.weight", "node_encoder.encoder.bias", "edge_encoder.encoder.weight",
             "head.layer_post_mp.final.weight", "head.layer_post_mp.final.bias", "input_gcn.first.bias",
             "input_gcn.first.lin.weight", "input_gcn.second.bias", "input_gcn.second.lin.weight"],
    "hetero": ["node_encoders.0.encoder.weight", "node_encoders.0.encoder.bias", "node_encoders.1.encoder.weight",
               "node_encoders.1.encoder.bias", "edge_encoders.0.encoder.weight", "edge_encoders.1.encoder.weight",
               "node_type_embedding.weight", "edge_type_embedding.weight", "head.layer_post_mp.hidden.0.weight",
               "head.layer_post_mp.hidden.0.bias", "head.layer_post_mp.final.weight", "head.layer_post_mp.final.bias"],
}


def _hetero_config() -> ModelConfig:
    schema = HeteroConfig(ntypes=["author", "paper"], node_in_feats=[4, 4],
                          etypes=["author:writes:paper", "paper:cites:paper"], edge_in_feats=[0, 0],
                          target_ntype="paper")
    return ModelConfig(hidden_dim=16, num_layers=2, pe="none", out_feats=2, head="node", num_heads=2,
                       geanet=GEANetConfig(num_heads=2, unit_size=8), hetero=schema)


CONFIGS = {"lappe+rwse": lambda: _zinc_model(se="rwse", se_k=6, se_dim=5, se_raw_norm=True),
           "graph token": _token_model, "chameleon": lambda: get_preset("chameleon").model, "hetero": _hetero_config}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameter_names_and_order_are_those_before_the_stage(name):
    model = build_model(CONFIGS[name]())
    keys = list(model.state_dict())
    assert [k for k in keys if not k.startswith("layers.")] == BEFORE[name]
    # the stage's parts first, then the layers: an optimiser's saved state (by position) still fits
    stage_keys = [k for k in keys if k.split(".")[0] in model.encoder.PARTS]
    assert keys[:len(stage_keys)] == stage_keys and keys[len(stage_keys)].startswith("layers.")
    stage_params = list(model.encoder.parameters())
    assert all(a is b for a, b in zip(list(model.parameters())[:len(stage_params)], stage_params))
    assert [n for n, _ in model.named_parameters()] == [k for k, v in model.state_dict(keep_vars=True).items()
                                                        if isinstance(v, torch.nn.Parameter)]
    for part in model.encoder.PARTS:  # one module under one name: the model's part is the stage's
        assert getattr(model, part) is getattr(model.encoder, part)


def test_the_stage_alone_has_its_parts_under_their_names_and_computes_what_the_model_reads():
    torch.manual_seed(0)
    config = _zinc_model(se="rwse", se_k=6, se_dim=5, se_raw_norm=True)
    model = build_model(config).eval()
    stage = EncoderStage(config).eval()
    stage.load_state_dict({k: v for k, v in model.state_dict().items() if k.split(".")[0] in EncoderStage.PARTS})
    graph = dgl.batch(_zinc_like())
    layout = BatchLayout.from_graph(graph)
    want = model.encode(graph, layout)
    got = stage(graph, BatchLayout.from_graph(graph))
    torch.testing.assert_close(got.nodes, want.nodes)
    torch.testing.assert_close(got.edges, want.edges)
    # the nodes: the base encoder's columns, the LapPE's, the RWSE's (GraphGPS's Concat3NodeEncoder)
    base = model.node_encoder.encoder.weight[graph.ndata["feat"][:, 0]]
    assert got.nodes.shape == (graph.num_nodes(), config.hidden_dim)
    torch.testing.assert_close(got.nodes[:, :base.shape[1]], base)


def test_copies_device_moves_and_modes_reach_the_stage_through_the_model():
    torch.manual_seed(0)
    model = build_model(_token_model())
    twin = copy.deepcopy(model)
    assert twin.encoder.node_encoder is twin.node_encoder and twin.node_encoder is not model.node_encoder
    model.double().eval()
    assert model.encoder.node_encoder.encoder.weight.dtype == torch.float64
    assert not model.encoder.training and not model.encoder.graph_token.training
    model.train()
    assert model.encoder.training and model.graph_token.training
    graph = dgl.batch(_zinc_like(graphormer=True))
    assert model(graph).dtype == torch.float64
    twin.load_state_dict(model.float().state_dict())
    torch.testing.assert_close(twin.eval()(graph), model.eval()(graph))


def test_folded_model_holds_a_folded_stage_and_matches():
    torch.manual_seed(0)
    model = build_model(_zinc_model(se="rwse", se_k=6, se_dim=5, se_raw_norm=True))
    graph = dgl.batch(_zinc_like())
    model.train()
    model(graph)  # running statistics away from their initial values
    folded = fold_for_inference(model)
    assert isinstance(folded.encoder, FoldedEncoderStage)
    assert folded.node_encoder is model.node_encoder and folded.se_encoder is not model.se_encoder
    assert folded.encoder.se_encoder is folded.se_encoder and folded.encoder.input_dropout is None
    torch.testing.assert_close(folded(graph), model.eval()(graph), atol=1e-5, rtol=1e-5)


def test_hetero_model_holds_the_hetero_stage():
    torch.manual_seed(0)
    model = build_model(_hetero_config())
    assert isinstance(model.encoder, HeteroEncoderStage)
    assert model.node_encoders is model.encoder.node_encoders
    graphs, _ = author_paper_graphs(3, seed=1)
    assert model(dgl.batch(graphs)).shape[1] == 2


def test_readout_needs_the_input_branch_output_and_layerwise_refuses_the_graph_token():
    torch.manual_seed(0)
    model = build_model(get_preset("cora").model).eval()
    graph = dgl.rand_graph(12, 40)
    graph.ndata["feat"] = torch.rand(12, model.config.node_in_feats)
    layout = BatchLayout.from_graph(graph)
    encoded = model.encode(graph, layout)
    with pytest.raises(ValueError, match="give readout its output"):
        model.readout([encoded.nodes] * (len(model.layers) + 1), layout)
    token = build_model(_token_model()).eval()
    with pytest.raises(ValueError, match="graph_token adds one"):
        layerwise_forward(token, dgl.batch(_zinc_like(graphormer=True)[:1]), 4)


@pytest.mark.parametrize("convert", ["ours", "torch"])
def test_batchnorm_conversion_for_several_processes_reaches_the_stage(convert):
    """The part-by-part conversions (``named_children`` + ``add_module``) replace BatchNorms inside the parts,
    never a part itself: the stage and the model keep the same, converted, modules."""
    from geaet_dgl.training.distributed import DistributedBatchNorm, convert_sync_batchnorm

    model = build_model(_zinc_model(se="rwse", se_k=6, se_dim=5, se_raw_norm=True))
    if convert == "ours":
        model, kind = convert_sync_batchnorm(model, torch.device("cpu")), DistributedBatchNorm
    else:
        model, kind = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model), torch.nn.SyncBatchNorm
    assert isinstance(model.se_encoder.raw_norm, kind)
    for part in model.encoder.PARTS:
        assert getattr(model, part) is getattr(model.encoder, part)
