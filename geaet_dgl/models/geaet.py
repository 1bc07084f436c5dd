"""The GEAET model: encoder stage (:mod:`.encoder_stage`) -> L GEAET layers -> readout and head."""
from __future__ import annotations

import logging
from typing import Optional

import dgl
import torch
from torch import nn

from ..config import ModelConfig
from ..nn.batch_layout import BatchLayout
from ..nn.branches import build_attention, build_geanet, build_mpnn
from ..nn.geaet_layer import GEAETLayer
from ..nn.hetero_mpnn import RelationMPNN
from ..nn.pna import PNALayer, degree_histogram
from .encoder_stage import MPNNS_READING_ESLAPPE, Encoded, EncoderStage, StagedNetwork
from .input_gcn import build_input_branch
from .heads import GraphHead, LinkHead, NodeHead, RootHead, SequenceHead

log = logging.getLogger(__name__)


def build_layer(config: ModelConfig) -> GEAETLayer:
    """One GEAET layer as ``config`` describes it: its branch modules, built by name, then the layer.

    GatedGCN's internal dropout is ``ffn_dropout`` (as in the reference). The branches are built in
    the order local, global, external, so that a seed gives the same initial weights as ever.
    """
    g = config.geanet
    local = build_mpnn(config.mpnn, config.hidden_dim, config.ffn_dropout, config.activation,
                       equivstable_pe=config.pe == "eslappe" and config.mpnn in MPNNS_READING_ESLAPPE,
                       num_heads=config.num_heads)
    attention = build_attention(config.attention, config.hidden_dim, config.num_heads, config.attn_dropout,
                                performer_pad_keys=config.performer_pad_keys)
    external = None
    if config.external:
        external = build_geanet(g.variant, config.hidden_dim, g.num_heads, g.unit_size, node_unit=g.node_unit,
                                edge_unit=g.edge_unit, shared_unit=g.shared_unit, scope=g.scope)
    return GEAETLayer(config.hidden_dim, local, attention, external, local_dropout=config.local_dropout,
                      global_dropout=config.global_dropout, external_dropout=config.external_dropout,
                      ffn_dropout=config.ffn_dropout, norm=config.norm, use_ffn=config.use_ffn,
                      local_out_act=config.local_out_act, activation=config.activation,
                      residual=config.residual)


class JumpingKnowledge(nn.Module):
    """The head's input from the encoder's and every layer's node features (Xu et al., 2018).

    ``cat``: ``Linear((L + 1) d -> d)`` of their concatenation; ``max``: their
    element-wise maximum (no parameters). Input: a list of L + 1 tensors (N, d);
    output (N, d).
    """

    def __init__(self, mode: str, hidden_dim: int, num_layers: int):
        super().__init__()
        if mode not in ("cat", "max"):
            raise ValueError(f"jk={mode!r} is not one of cat, max")
        self.mode = mode
        self.linear = nn.Linear((num_layers + 1) * hidden_dim, hidden_dim) if mode == "cat" else None

    def forward(self, features) -> torch.Tensor:
        if self.mode == "cat":
            return self.linear(torch.cat(list(features), dim=-1))
        return torch.stack(list(features), dim=0).amax(dim=0)


class GEAETNetwork(StagedNetwork):
    """Encoder stage -> L GEAET layers -> readout: the forward that :class:`GEAET` and its folded inference copy
    (:class:`~geaet_dgl.inference.geaet.FoldedGEAET`) share.

    A subclass mounts an :class:`~.encoder_stage.EncoderStage` and sets ``layers``, ``head``, ``jk``,
    ``input_gcn`` and ``feature_dropout`` (None where the config has none).
    """

    def encode(self, graph: dgl.DGLGraph, layout: BatchLayout) -> Encoded:
        """The encoder stage on the batch, with this model's input branch (``model.input_gcn_weight``)."""
        return self.encoder(graph, layout, self.input_gcn)

    def forward(self, graph: dgl.DGLGraph, layout: Optional[BatchLayout] = None) -> torch.Tensor:
        """Batched graph -> (B, out_feats) graph predictions or (N, out_feats) node predictions."""
        if graph.num_nodes() == 0:
            raise ValueError("the batch has no nodes; drop empty graphs from the dataset")
        layout = layout if layout is not None else BatchLayout.from_graph(graph)
        encoded = self.encode(graph, layout)
        h, e = encoded.nodes, encoded.edges
        last = len(self.layers) - 1
        outputs = [h]
        for i, layer in enumerate(self.layers):
            # The last layer's edge output feeds nothing: skip computing it.
            h, e = layer(encoded.graph, self.dropped(h), e, encoded.pe_dist, encoded.layout, edge_output=i < last)
            outputs.append(h)
        return self.readout(outputs, encoded.layout, encoded.branch)

    def dropped(self, h: torch.Tensor) -> torch.Tensor:
        """``model.feature_dropout`` on the (N, d) node features a layer or the head reads."""
        return self.feature_dropout(h) if self.feature_dropout is not None else h

    def readout(self, outputs, layout: BatchLayout, branch: Optional[torch.Tensor] = None) -> torch.Tensor:
        """The head on the last of ``outputs`` (the encoder's and each layer's (N, d) node features), or on
        their jumping-knowledge combination (``model.jk``), mixed with ``branch``, the input branch's output
        (:attr:`Encoded.branch`), where the model has one."""
        h = self.jk(outputs) if self.jk is not None else outputs[-1]
        if self.input_gcn is None:
            return self.head(self.dropped(h), layout)
        if branch is None:
            raise ValueError("the model has an input branch (model.input_gcn_weight): give readout its output, "
                             "Encoded.branch of encode() on the same batch")
        w = self.config.input_gcn_weight
        if self.config.input_branch_mix == "logits":
            return (1.0 - w) * self.head(self.dropped(h), layout) + w * branch
        return self.head(self.dropped((1.0 - w) * h + w * branch), layout)


class GEAET(GEAETNetwork):
    """Graph External Attention Enhanced Transformer on batched DGL graphs.

    Reads ``graph.ndata['feat']`` (N, F_n), ``graph.edata['feat']`` (E, F_e) and,
    depending on ``config.pe``, ``ndata['lap_pe']`` / ``ndata['lap_eigval']`` /
    ``ndata['rwse']`` (N, k) (:class:`~.encoder_stage.EncoderStage`, ``self.encoder``).
    Returns (B, out_feats) for graph heads, (N, out_feats) for node heads and
    (N, hidden_dim) pair embeddings for the link head (:class:`~.heads.LinkHead`).

    Example
    -------
    >>> from geaet_dgl.config.presets import get_preset
    >>> model = GEAET(get_preset('mnist').model)
    >>> sum(p.numel() for p in model.parameters())
    113155
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        config.validate()
        self.config = config
        if config.pe == "eslappe" and config.mpnn not in MPNNS_READING_ESLAPPE:
            log.warning("model.pe=eslappe: mpnn=%s does not read the EquivStableLapPE (only %s does); it is "
                        "encoded but unused", config.mpnn, ", ".join(MPNNS_READING_ESLAPPE))
        self.mount_encoder(EncoderStage(config))
        self.layers = nn.ModuleList(build_layer(config) for _ in range(config.num_layers))
        self.head = build_head(config)
        # Built after the layers and the head, so that a seed gives the same initial weights as before.
        self.feature_dropout = nn.Dropout(config.feature_dropout) if config.feature_dropout > 0 else None
        self.jk = JumpingKnowledge(config.jk, config.hidden_dim, config.num_layers) if config.jk != "none" else None
        self.input_gcn = build_input_branch(config)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def build_head(config: ModelConfig) -> nn.Module:
    """The prediction head ``config.head`` names."""
    d = config.hidden_dim
    if config.head == "node":
        return NodeHead(d, config.out_feats, config.head_layers)
    if config.head == "root":
        return RootHead(d, config.out_feats, config.head_layers)
    if config.head == "link":
        return LinkHead(d, config.head_layers)
    if config.head == "sequence":
        return SequenceHead(d, config.out_feats, config.head_layers, config.pooling, config.seq_len)
    style = {"mlp_graph": "dropout_mlp", "san_graph": "san"}.get(config.head, "graphgym")
    return GraphHead(d, config.out_feats, config.head_layers, config.pooling, style, config.activation,
                     config.head_dropout)


def set_degree_statistics(model: nn.Module, graphs) -> None:
    """Give every PNA layer of ``model`` the in-degree histogram of ``graphs`` (the training split), as the
    reference builds PNA from ``gt.pna_degrees``; nothing to do without PNA layers. On heterographs each
    relation's PNA (:class:`~geaet_dgl.nn.hetero_mpnn.RelationMPNN`) gets its relation's histogram."""
    layers = [m for m in model.modules() if isinstance(m, PNALayer)]
    graphs = list(graphs)
    if layers and graphs and not graphs[0].is_homogeneous:
        for module in model.modules():
            if isinstance(module, RelationMPNN):
                for relation, conv in zip(graphs[0].canonical_etypes, module.convs):
                    if isinstance(conv, PNALayer):
                        conv.set_degree_histogram(degree_histogram(graphs, relation))
    elif layers:
        histogram = degree_histogram(graphs)
        for layer in layers:
            layer.set_degree_histogram(histogram)
