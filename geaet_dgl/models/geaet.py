"""The GEAET model: encoders -> L GEAET layers -> head."""
from __future__ import annotations

import logging
from typing import Optional

import dgl
import torch
from torch import nn

from ..config import CONCAT_PES, KERNEL_PES, ModelConfig
from ..nn import sparse_input
from ..nn.batch_layout import BatchLayout
from ..nn.gated_gcn import pe_square_distance
from ..nn.branches import build_attention, build_geanet, build_mpnn
from ..nn.geaet_layer import GEAETLayer
from ..nn.biased_attention import ATTENTION_BIAS
from ..nn.graphormer_bias import GraphormerBias, GraphormerDegreeEncoder
from ..nn.hetero_mpnn import RelationMPNN
from ..nn.pna import PNALayer, degree_histogram
from .encoders import LinearEncoder, build_encoder
from .input_gcn import INPUT_GCN_KEY, build_input_branch
from .heads import GraphHead, LinkHead, NodeHead, RootHead, SequenceHead
from .positional import EquivStableLapPEEncoder, KernelSEEncoder, LapPEDeepSetEncoder
from .signnet import SignNetEncoder

#: ndata field of each kernel structural encoding.
KERNEL_FIELDS = {"rwse": "rwse", "hkdiagse": "hkdiag_se", "elstaticse": "elstatic_se"}


log = logging.getLogger(__name__)

#: The local MPNNs that read the EquivStableLapPE (``model.pe=eslappe``): the reference's GatedGCN only.
MPNNS_READING_ESLAPPE = ("gatedgcn",)


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


#: Local MPNNs that never read edge features (they pass them through).
MPNNS_IGNORING_EDGES = ("gcn", "sage", "gin", "none")


def reads_edge_states(config: ModelConfig) -> bool:
    """Whether any layer reads the (E, d) edge states: the MPNN, or GEANet's edge unit."""
    return config.mpnn not in MPNNS_IGNORING_EDGES or (config.external and config.geanet.edge_unit)


class GEAET(nn.Module):
    """Graph External Attention Enhanced Transformer on batched DGL graphs.

    Reads ``graph.ndata['feat']`` (N, F_n), ``graph.edata['feat']`` (E, F_e) and,
    depending on ``config.pe``, ``ndata['lap_pe']`` / ``ndata['lap_eigval']`` /
    ``ndata['rwse']`` (N, k). Returns (B, out_feats) for graph heads,
    (N, out_feats) for node heads and (N, hidden_dim) pair embeddings for the
    link head (:class:`~.heads.LinkHead`).

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
        d = config.hidden_dim
        node_width = config.node_width()
        self.node_encoder = build_encoder(config.node_encoder, config.node_in_feats, node_width,
                                          config.node_vocab_sizes)
        self.edge_encoder = None if config.edge_encoder == "none" else \
            build_encoder(config.edge_encoder, config.edge_in_feats, d, config.edge_vocab_sizes)
        self.pe_encoder: Optional[nn.Module] = None
        if config.pe == "eslappe":
            self.pe_encoder = EquivStableLapPEEncoder(config.pe_k, d)
        elif config.pe == "lappe":
            self.pe_encoder = LapPEDeepSetEncoder(config.pe_k, config.pe_dim, config.pe_layers)
        elif config.pe in KERNEL_PES:
            self.pe_encoder = KernelSEEncoder(config.pe_k, config.pe_dim, config.pe_raw_norm, config.pe_model,
                                              config.pe_layers)
        elif config.pe == "signnet":
            s = config.signnet
            self.pe_encoder = SignNetEncoder(config.pe_k, config.pe_dim, s.model, s.phi_layers, s.phi_hidden_dim,
                                             s.phi_out_dim, s.rho_layers)
        self.se_encoder: Optional[nn.Module] = None
        if config.se != "none":  # concatenated after pe: GraphGPS's Concat3NodeEncoder (<Base>+LapPE+RWSE)
            self.se_encoder = KernelSEEncoder(config.se_k, config.se_dim, config.se_raw_norm, config.se_model,
                                              config.se_layers)
        gr = config.graphormer
        self.degree_encoder: Optional[nn.Module] = None
        self.bias_encoder: Optional[nn.Module] = None
        self.graph_token: Optional[GraphToken] = None
        if gr.enable:
            self.degree_encoder = GraphormerDegreeEncoder(node_width, gr.num_in_degrees, gr.num_out_degrees,
                                                          gr.input_dropout)
            if not gr.degrees_only:
                self.bias_encoder = GraphormerBias(config.num_heads, gr.spatial_types, gr.num_edge_types)
            if gr.graph_token:
                self.graph_token = GraphToken(node_width, config.num_heads, gr.input_dropout)

        self.layers = nn.ModuleList(build_layer(config) for _ in range(config.num_layers))
        self.head = build_head(config)
        # Built after the layers and the head, so that a seed gives the same initial weights as before.
        self.input_dropout = nn.Dropout(config.input_dropout) if config.input_dropout > 0 else None
        self.feature_dropout = nn.Dropout(config.feature_dropout) if config.feature_dropout > 0 else None
        self.jk = JumpingKnowledge(config.jk, d, config.num_layers) if config.jk != "none" else None
        self.input_gcn = build_input_branch(config)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def encode(self, graph: dgl.DGLGraph, layout: BatchLayout):
        """Input features -> (N, d) nodes, (E, d) edges (None where no layer reads them,
        :func:`reads_edge_states`) and the (E, 1) ESLapPE distances (or None)."""
        cfg = self.config
        feat = graph.ndata["feat"]
        if type(self.node_encoder) is LinearEncoder:  # mostly-zero features (bag-of-words) as a sparse matrix
            feat = sparse_input.sparse_features(feat)
        feat = sparse_input.dropout(feat, self.input_dropout)
        h = self.node_encoder(feat)
        if getattr(self, "input_gcn", None) is not None:  # read by the readout of this forward
            layout.cached(INPUT_GCN_KEY, lambda: self.input_gcn(graph, feat, layout))
        if self.degree_encoder is not None:
            h = self.degree_encoder(h, _require(graph, "in_degree"), _require(graph, "out_degree"))
        e = None  # no (E, d) edge states where no layer reads them (GCN, GIN, GEANet without edge units)
        if reads_edge_states(cfg) and getattr(self, "edge_encoder", None) is None:
            e = h.new_zeros(1, cfg.hidden_dim).expand(graph.num_edges(), -1)  # graphgym's edge_encoder: False
        elif reads_edge_states(cfg):
            edge_in = graph.edata["feat"] if "feat" in graph.edata else \
                torch.zeros(graph.num_edges(), cfg.edge_in_feats, device=h.device)
            e = self.edge_encoder(edge_in)
        pe_dist = None
        if cfg.pe == "eslappe" and cfg.mpnn in MPNNS_READING_ESLAPPE:
            # The gate reads only ||p_i - p_j||^2, identical in every layer: computed once here.
            pe_dist = self.pe_distance(graph, _require(graph, "lap_pe"), layout)
        elif cfg.pe == "lappe":
            pe = self.pe_encoder(_require(graph, "lap_pe"), _require(graph, "lap_eigval"), layout)
            h = torch.cat([h, pe], dim=-1)
        elif cfg.pe in KERNEL_PES:
            h = torch.cat([h, self.pe_encoder(_require(graph, KERNEL_FIELDS[cfg.pe]))], dim=-1)
        elif cfg.pe == "signnet":
            h = torch.cat([h, self.pe_encoder(graph, _require(graph, "lap_pe"), layout)], dim=-1)
        if getattr(self, "se_encoder", None) is not None:  # (the folded inference model has none)
            h = torch.cat([h, self.se_encoder(_require(graph, KERNEL_FIELDS[cfg.se]))], dim=-1)
        if self.bias_encoder is not None and getattr(self, "graph_token", None) is None:  # read by every biased attention layer of this forward
            layout.cached(ATTENTION_BIAS, lambda: self.attention_bias(graph, layout))
        return h, e, pe_dist

    def attention_bias(self, graph: dgl.DGLGraph, layout: BatchLayout) -> Optional[torch.Tensor]:
        """(B * H, W, W) Graphormer spatial bias for ``attention=biased_transformer``, else None."""
        if self.bias_encoder is None:
            return None
        paths = _require(graph, "path_types") if self.config.graphormer.num_edge_types else None
        return self.bias_encoder(_require(graph, "spatial_types"), layout, paths)

    def pe_distance(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) eigenvectors -> (E, 1) squared distances ||p_j - p_i||^2 of their ESLapPE encodings."""
        return pe_square_distance(graph, self.pe_encoder(eigvecs))

    def forward(self, graph: dgl.DGLGraph, layout: Optional[BatchLayout] = None) -> torch.Tensor:
        """Batched graph -> (B, out_feats) graph predictions or (N, out_feats) node predictions."""
        if graph.num_nodes() == 0:
            raise ValueError("the batch has no nodes; drop empty graphs from the dataset")
        layout = layout if layout is not None else BatchLayout.from_graph(graph)
        h, e, pe_dist = self.encode(graph, layout)
        if getattr(self, "graph_token", None) is not None:
            bias = self.attention_bias(graph, layout)
            graph, h, layout = self.graph_token(graph, h, layout)
            if bias is not None:
                layout.cached(ATTENTION_BIAS, lambda: self.graph_token.pad_bias(bias, layout))
        last = len(self.layers) - 1
        outputs = [h]
        for i, layer in enumerate(self.layers):
            # The last layer's edge output feeds nothing: skip computing it.
            h, e = layer(graph, self.dropped(h), e, pe_dist, layout, edge_output=i < last)
            outputs.append(h)
        return self.readout(outputs, layout)

    def dropped(self, h: torch.Tensor) -> torch.Tensor:
        """``model.feature_dropout`` on the (N, d) node features a layer or the head reads."""
        return self.feature_dropout(h) if self.feature_dropout is not None else h

    def readout(self, outputs, layout: BatchLayout) -> torch.Tensor:
        """The head on the last of ``outputs`` (the encoder's and each layer's (N, d) node features), or on
        their jumping-knowledge combination (``model.jk``)."""
        h = self.jk(outputs) if self.jk is not None else outputs[-1]
        if getattr(self, "input_gcn", None) is None:
            return self.head(self.dropped(h), layout)
        w, branch = self.config.input_gcn_weight, layout.cached(INPUT_GCN_KEY, _missing_input_gcn)
        if self.config.input_branch_mix == "logits":
            return (1.0 - w) * self.head(self.dropped(h), layout) + w * branch
        return self.head(self.dropped((1.0 - w) * h + w * branch), layout)


def _missing_input_gcn():
    raise RuntimeError("the readout found no input GCN output: encode() must run on the same layout first")


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


class GraphToken(nn.Module):
    """Graphormer's graph token as GraphGPS adds it (``graphormer.use_graph_token``).

    One learned (d,) vector is put in front of every graph's nodes (after the degree embeddings, then the
    input dropout), and one learned bias per head stands for every attention score to or from it.
    GraphGPS adds the token to the node features and the batch vector only: the edge list keeps its
    node numbers, which now count the tokens too, so the local MPNN reads the node that sits at the old
    number in the new order. That is reproduced: the returned graph has N + B nodes and the same
    (src, dst) numbers. The new order is GraphGPS's too: tokens and nodes sorted by graph with
    ``torch.sort``, which is not stable, so within a graph the token is not always first (the bias still
    gives row and column 0 the token's bias, and the graph-token pooling reads row 0, as in GraphGPS).

    Shapes: ``graph`` (N nodes, B graphs), ``node_feat`` (N, d) -> a graph of N + B nodes, (N + B, d),
    its layout; :meth:`pad_bias` (B * H, W, W) -> (B * H, W', W') for the new layout's width W'.
    """

    def __init__(self, hidden_dim: int, num_heads: int, input_dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.node_token = nn.Parameter(torch.zeros(1, hidden_dim))
        self.bias_token = nn.Parameter(torch.zeros(1, num_heads, 1))
        self.input_dropout = nn.Dropout(input_dropout)
        nn.init.normal_(self.node_token, std=0.02)
        nn.init.normal_(self.bias_token, std=0.02)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, layout: BatchLayout):
        sizes = layout.num_nodes_per_graph
        batch = sizes.shape[0]
        graph_ids = torch.arange(batch, device=node_feat.device)
        # GraphGPS's add_graph_token: the B tokens, then the nodes, reordered by torch.sort of their graph ids,
        # which is not stable: within a graph the token and the nodes come out in the order the sort leaves
        # them (not token first), and the graph-token pooling reads whichever row is first. Reproduced with the
        # same call on the same ids.
        _, order = torch.sort(torch.cat([graph_ids, torch.repeat_interleave(graph_ids, sizes)]))
        h = torch.cat([self.input_dropout(self.node_token.expand(batch, -1)), node_feat])[order]
        src, dst = graph.edges()
        tokened = dgl.graph((src, dst), num_nodes=h.shape[0], idtype=graph.idtype, device=graph.device)
        tokened.set_batch_num_nodes(sizes + 1)
        tokened.set_batch_num_edges(graph.batch_num_edges())
        return tokened, h, BatchLayout.from_graph(tokened)

    def pad_bias(self, bias: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """Row and column 0 of every graph's (H, W, W) bias become the token's per-head bias."""
        heads, width = self.num_heads, layout.dense_width
        old = bias.view(-1, heads, bias.shape[-2], bias.shape[-1])
        padded = old.new_zeros(old.shape[0], heads, width, width)
        size = min(old.shape[-1], width - 1)
        padded[:, :, 1:1 + size, 1:1 + size] = old[:, :, :size, :size]
        token = self.bias_token.to(old.dtype)  # (1, H, 1)
        padded[:, :, 1:, 0] = token
        padded[:, :, 0, :] = token
        return padded.reshape(-1, width, width)


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


def _require(graph: dgl.DGLGraph, key: str) -> torch.Tensor:
    if key not in graph.ndata:
        raise ValueError(
            f"the model's positional encoding needs graph.ndata[{key!r}]; load the dataset with that "
            "encoding (geaet_dgl.data) or set model.pe=none"
        )
    return graph.ndata[key]
