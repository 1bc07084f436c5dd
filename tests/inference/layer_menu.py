"""The layer menu as small models: one entry per combination the inference tests check against the model's eval forward.

``MENU`` entries change fields of a small :class:`~geaet_dgl.config.ModelConfig`; together they set every
value of the layer menu at least once. :func:`menu_model` builds one with weights and norm statistics far
from their initial values, :func:`menu_graphs` the random graphs carrying every input an entry reads.
"""
import dgl
import torch
from torch import nn

from geaet_dgl.config import GEANetConfig, GraphormerConfig, ModelConfig
from geaet_dgl.config.model import SignNetConfig
from geaet_dgl.data.encodings.se_cache import StructuralSpec, attach_structural
from geaet_dgl.models import build_model
from geaet_dgl.models.geaet import set_degree_statistics
from geaet_dgl.nn.norm import GraphLayerNorm


def trained_looking(model: nn.Module, seed: int = 0) -> nn.Module:
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


#: One small model per entry, ModelConfig fields changed from _MENU_BASE; together they set every value of the
#: layer menu (local MPNNs, attentions, GEANet variants / scopes / units / per-head units, norms, jk, residual,
#: FFN, activations, encodings, Graphormer, node and graph heads) at least once.
MENU = {
    "gatedgcn-transformer": {},
    "gatedgcn-eslappe-performer-layernorm": dict(pe="eslappe", attention="performer", norm="layer"),
    "gatedgcn-eslappe-gelu-noresidual": dict(pe="eslappe", activation="gelu", residual=False),
    "gatedgcn-batchscope-edgeunits-shared": dict(geanet=dict(scope="batch", edge_unit=True, shared_unit=True)),
    "gatedgcn-8heads-edgeunits": dict(geanet=dict(num_heads=8, unit_size=3, edge_unit=True)),
    "gatedgcn-8heads-shared-batchscope": dict(geanet=dict(num_heads=8, unit_size=3, shared_unit=True, scope="batch")),
    "gatedgcn-no-external": dict(external=False),
    "gatedgcn-no-node-unit": dict(geanet=dict(node_unit=False, edge_unit=True, shared_unit=True)),
    "gcn-paper-node-jkcat": dict(mpnn="gcn", geanet=dict(variant="paper", unit_size=6), head="node", jk="cat"),
    "gat-biased-graphormer-jkmax": dict(mpnn="gat", attention="biased_transformer", jk="max",
                                        graphormer=dict(enable=True, spatial_types=20,
                                                        num_in_degrees=16, num_out_degrees=16)),
    "gine-graph-token": dict(mpnn="gine", attention="biased_transformer", pooling="first",
                             graphormer=dict(enable=True, spatial_types=20, num_in_degrees=16, num_out_degrees=16,
                                             graph_token=True)),
    "gine-performer-paper-batchscope": dict(mpnn="gine", attention="performer",
                                            geanet=dict(variant="paper", scope="batch", edge_unit=True)),
    "gin-nodelayer-noresidual-node": dict(mpnn="gin", attention="none", norm="node_layer", residual=False,
                                          head="node"),
    "gin-local-out-act-gelu": dict(mpnn="gin", local_out_act=True, activation="gelu"),
    "pna-no-norm-no-ffn": dict(mpnn="pna", norm="none", use_ffn=False),
    "pna-batchnorm-no-ffn-node": dict(mpnn="pna", use_ffn=False, head="node", residual=False),
    "genconv-san-head": dict(mpnn="genconv", head="san_graph", pooling="sum"),
    "attention-only-rwse-rawnorm": dict(mpnn="none", external=False, pe="rwse", pe_raw_norm=True),
    "geanet-only-lappe-node": dict(mpnn="none", attention="none", pe="lappe", head="node"),
    "gcn-lappe-then-rwse": dict(mpnn="gcn", pe="lappe", se="rwse", se_k=4, se_dim=4, se_raw_norm=True),
    "gatedgcn-mlp-head": dict(head="mlp_graph", norm="layer", geanet=dict(edge_unit=True)),
    "gatedgcn-dropouts": dict(local_dropout=0.3, global_dropout=0.3, external_dropout=0.3, ffn_dropout=0.3,
                              attn_dropout=0.3, input_dropout=0.3, feature_dropout=0.3),
    "gin-rwse-mlp-encoder": dict(mpnn="gin", pe="rwse", pe_model="mlp", pe_raw_norm=True),
    "gine-signnet-mlp": dict(mpnn="gine", pe="signnet", signnet=dict(model="mlp", phi_layers=4, phi_hidden_dim=8,
                                                                     phi_out_dim=3, rho_layers=2)),
    "gin-signnet-deepset": dict(mpnn="gin", pe="signnet", signnet=dict(model="deepset", phi_layers=2,
                                                                       phi_hidden_dim=8, rho_layers=1)),
}
_MENU_BASE = dict(node_in_feats=3, edge_in_feats=1, out_feats=3, hidden_dim=24, num_layers=2, num_heads=4, pe="none",
                  pe_k=4, pe_dim=4, pe_layers=2)


def menu_config(changes):
    changes = dict(changes)
    geanet = GEANetConfig(**{"num_heads": 4, "unit_size": 6, **changes.pop("geanet", {})})
    graphormer = GraphormerConfig(**changes.pop("graphormer", {}))
    signnet = SignNetConfig(**changes.pop("signnet", {}))
    return ModelConfig(**{**_MENU_BASE, **changes}, geanet=geanet, graphormer=graphormer,
                       signnet=signnet).validate()


def menu_graphs(sizes=(7, 11, 5), seed=0):
    """Random graphs without self-loops carrying every input a menu entry reads."""
    gen = torch.Generator().manual_seed(seed)
    graphs = []
    for n in sizes:
        src, dst = torch.randint(0, n, (2, 3 * n), generator=gen)
        keep = src != dst
        g = dgl.graph((src[keep], dst[keep]), num_nodes=n)
        g.ndata["feat"] = torch.randn(n, 3, generator=gen)
        g.edata["feat"] = torch.randn(g.num_edges(), 1, generator=gen)
        g.ndata["lap_pe"] = torch.randn(n, 4, generator=gen)
        g.ndata["lap_eigval"] = torch.rand(n, 4, generator=gen)
        g.ndata["rwse"] = torch.rand(n, 4, generator=gen)
        graphs.append(g)
    attach_structural(graphs, StructuralSpec(spatial_types=20, degrees=True, path_types=True), None, False)
    return graphs


def menu_model(changes) -> nn.Module:
    torch.manual_seed(0)
    model = build_model(menu_config(changes))
    set_degree_statistics(model, menu_graphs())
    model = trained_looking(model)
    if model.bias_encoder is not None:  # Graphormer's attention bias as large as trained ones get, so that it shows
        with torch.no_grad():
            for table in model.bias_encoder.parameters():
                table.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(1))
    return model.eval()
