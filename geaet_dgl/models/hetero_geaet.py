"""GEAET on heterographs: per-type encoders and a type embedding (the encoder stage,
:class:`~.encoder_stage.HeteroEncoderStage`) -> L hetero GEAET layers -> head.

For a node :math:`i` of type :math:`t` with features :math:`x_i` (width
:math:`F_t`, possibly 0) and an edge of relation :math:`r`:

.. math::
    h_i^0 = W_t x_i + b_t + \\tau_t, \\qquad e^0 = W_r x_e + b_r + \\rho_r,

with learned type embeddings :math:`\\tau, \\rho` (a type without features
gets one learned vector). The layers are
:class:`~geaet_dgl.nn.hetero_geaet_layer.HeteroGEAETLayer` on the batch's
graph-major view; a graph head pools all nodes of each graph, a node head
reads the nodes of ``config.hetero.target_ntype`` (in the heterograph's
order, i.e. graph by graph).
"""
from __future__ import annotations

from typing import Optional

import dgl
import torch
from torch import nn

from ..config import ModelConfig
from ..nn.hetero_geaet_layer import HeteroGEAETLayer
from ..nn.hetero_view import HeteroView
from .encoder_stage import HeteroEncoderStage, StagedNetwork
from .geaet import build_head


class HeteroGEAET(StagedNetwork):
    """The GEAET network for batched heterographs of one schema (``config.hetero``).

    Reads ``graph.nodes[t].data['feat']`` (N_t, F_t) and
    ``graph.edges[r].data['feat']`` (E_r, F_r) where the schema gives the type a
    width. Returns (B, out_feats) for graph heads, (N_target, out_feats) for a
    node head.

    Example
    -------
    >>> from geaet_dgl.config import HeteroConfig, ModelConfig, GEANetConfig
    >>> schema = HeteroConfig(ntypes=['a', 'b'], node_in_feats=[3, 0], etypes=['a:r:b', 'b:s:a'],
    ...                       edge_in_feats=[0, 0])
    >>> model = HeteroGEAET(ModelConfig(hidden_dim=8, num_layers=1, pe='none', out_feats=2,
    ...                                 geanet=GEANetConfig(unit_size=2), hetero=schema))
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        config.validate()
        schema = config.hetero
        if not schema.ntypes:
            raise ValueError("HeteroGEAET needs config.hetero.ntypes; use GEAET for homogeneous graphs")
        self.config = config
        d = config.hidden_dim
        self.ntypes = list(schema.ntypes)
        self.canonical_etypes = schema.canonical_etypes
        self.mount_encoder(HeteroEncoderStage(config))
        g = config.geanet
        self.layers = nn.ModuleList(
            HeteroGEAETLayer(
                d, self.ntypes, self.canonical_etypes, mpnn=config.mpnn, attention=config.attention,
                external=config.external, num_heads=config.num_heads, geanet_heads=g.num_heads,
                geanet_unit_size=g.unit_size, geanet_node_unit=g.node_unit, geanet_edge_unit=g.edge_unit,
                geanet_shared_unit=g.shared_unit, geanet_scope=g.scope, geanet_type_scope=schema.geanet_type_scope,
                local_weights=schema.local_weights, attn_dropout=config.attn_dropout, ffn_dropout=config.ffn_dropout,
                activation=config.activation, local_dropout=config.local_dropout,
                global_dropout=config.global_dropout, external_dropout=config.external_dropout, norm=config.norm,
                use_ffn=config.use_ffn, local_out_act=config.local_out_act)
            for _ in range(config.num_layers))
        self.head = build_head(config)
        self.target = self.ntypes.index(schema.target_ntype) if config.head == "node" else None

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def check_schema(self, graph: dgl.DGLGraph) -> None:
        """Raise ValueError naming the difference if ``graph``'s types are not the model's."""
        if list(graph.ntypes) != self.ntypes or [tuple(r) for r in graph.canonical_etypes] != list(
                self.canonical_etypes):
            raise ValueError(f"the graph's types (nodes {list(graph.ntypes)}, edges {graph.canonical_etypes}) are not "
                             f"the model's (nodes {self.ntypes}, edges {list(self.canonical_etypes)}); give graphs "
                             "of the schema the model was trained on")

    def forward(self, graph: dgl.DGLGraph, layout: Optional[HeteroView] = None) -> torch.Tensor:
        """Batched heterograph -> (B, out_feats) graph or (N_target, out_feats) node predictions."""
        self.check_schema(graph)
        if graph.num_nodes() == 0:
            raise ValueError("the batch has no nodes; drop empty graphs from the dataset")
        view = layout if isinstance(layout, HeteroView) else HeteroView.from_heterograph(graph)
        h, e = self.encoder(graph, view)
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            h, e = layer(view, h, e, edge_output=i < last)
        if self.target is not None:
            return self.head(h[view.node_index[self.target]], view.layout)
        return self.head(h, view.layout)
