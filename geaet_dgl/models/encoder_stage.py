"""The encoder stage: input features -> the (N, d) node and (E, d) edge states the first layer reads.

As GraphGPS's ``FeatureEncoder`` (and DGL-LifeSci's predictors) keep the encoder apart from the
network, the readout and the head, :class:`EncoderStage` is the one module that turns a batch's
``ndata`` / ``edata`` into the network's input: the node encoder, the edge encoder, the positional
and structural encodings concatenated after the node encoding, Graphormer's degree embeddings and
spatial bias, and the graph token. :class:`~.geaet.GEAET`, its folded inference copy
(:class:`~geaet_dgl.inference.geaet.FoldedGEAET`) and :class:`~.hetero_geaet.HeteroGEAET`
(with :class:`HeteroEncoderStage`) each hold one.

Parameter names. A model holds its stage through :class:`StagedNetwork`, which registers the stage's
parts on the model under their own names: the parameters are ``node_encoder.*``, ``pe_encoder.*``,
..., as they were before the stage was a module, not ``encoder.node_encoder.*``. Run folders,
checkpoints, the reference-name maps (:mod:`geaet_dgl.interop.reference_names`) and the export
read those names unchanged, and the parts keep their place in ``parameters()`` (first), so an
optimiser's saved state still fits.
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

import dgl
import torch
from torch import nn

from ..config import KERNEL_PES, ModelConfig
from ..nn import sparse_input
from ..nn.batch_layout import BatchLayout
from ..nn.biased_attention import ATTENTION_BIAS
from ..nn.gated_gcn import pe_square_distance
from ..nn.graphormer_bias import GraphormerBias, GraphormerDegreeEncoder
from ..nn.hetero_view import HeteroView
from .encoders import ConstantEncoder, LinearEncoder, build_encoder
from .graph_token import GraphToken
from .positional import EquivStableLapPEEncoder, KernelSEEncoder, LapPEDeepSetEncoder
from .signnet import SignNetEncoder

#: ndata field of each kernel structural encoding.
KERNEL_FIELDS = {"rwse": "rwse", "hkdiagse": "hkdiag_se", "elstaticse": "elstatic_se"}

#: The local MPNNs that read the EquivStableLapPE (``model.pe=eslappe``): the reference's GatedGCN only.
MPNNS_READING_ESLAPPE = ("gatedgcn",)

#: Local MPNNs that never read edge features (they pass them through).
MPNNS_IGNORING_EDGES = ("gcn", "sage", "gin", "none")


def reads_edge_states(config: ModelConfig) -> bool:
    """Whether any layer reads the (E, d) edge states: the MPNN, or GEANet's edge unit."""
    return config.mpnn not in MPNNS_IGNORING_EDGES or (config.external and config.geanet.edge_unit)


class Encoded(NamedTuple):
    """What :class:`EncoderStage` gives the network.

    ``nodes`` (N, d); ``edges`` (E, d), or None where no layer reads them (:func:`reads_edge_states`);
    ``pe_dist`` (E, 1) squared ESLapPE distances, or None; ``graph`` and ``layout`` the batch the
    layers run on (with the graph token: N + B nodes); ``branch`` the input branch's output on the
    input features (``model.input_gcn_weight``), or None.
    """
    nodes: torch.Tensor
    edges: Optional[torch.Tensor]
    pe_dist: Optional[torch.Tensor]
    graph: dgl.DGLGraph
    layout: BatchLayout
    branch: Optional[torch.Tensor]


def build_encoders(config: ModelConfig) -> Dict[str, Optional[nn.Module]]:
    """The stage's parts for ``config``, by name (None where the config has none), built in the order of
    :attr:`EncoderStage.PARTS`, so that a seed gives the same initial weights as ever."""
    d, node_width = config.hidden_dim, config.node_width()
    parts: Dict[str, Optional[nn.Module]] = dict.fromkeys(EncoderStage.PARTS)
    parts["node_encoder"] = build_encoder(config.node_encoder, config.node_in_feats, node_width,
                                          config.node_vocab_sizes)
    if config.edge_encoder != "none":
        parts["edge_encoder"] = build_encoder(config.edge_encoder, config.edge_in_feats, d, config.edge_vocab_sizes)
    if config.pe == "eslappe":
        parts["pe_encoder"] = EquivStableLapPEEncoder(config.pe_k, d)
    elif config.pe == "lappe":
        parts["pe_encoder"] = LapPEDeepSetEncoder(config.pe_k, config.pe_dim, config.pe_layers)
    elif config.pe in KERNEL_PES:
        parts["pe_encoder"] = KernelSEEncoder(config.pe_k, config.pe_dim, config.pe_raw_norm, config.pe_model,
                                              config.pe_layers)
    elif config.pe == "signnet":
        s = config.signnet
        parts["pe_encoder"] = SignNetEncoder(config.pe_k, config.pe_dim, s.model, s.phi_layers, s.phi_hidden_dim,
                                             s.phi_out_dim, s.rho_layers)
    if config.se != "none":  # concatenated after pe: GraphGPS's Concat3NodeEncoder (<Base>+LapPE+RWSE)
        parts["se_encoder"] = KernelSEEncoder(config.se_k, config.se_dim, config.se_raw_norm, config.se_model,
                                              config.se_layers)
    gr = config.graphormer
    if gr.enable:
        parts["degree_encoder"] = GraphormerDegreeEncoder(node_width, gr.num_in_degrees, gr.num_out_degrees,
                                                          gr.input_dropout)
        if not gr.degrees_only:
            parts["bias_encoder"] = GraphormerBias(config.num_heads, gr.spatial_types, gr.num_edge_types)
        if gr.graph_token:
            parts["graph_token"] = GraphToken(node_width, config.num_heads, gr.input_dropout)
    if config.input_dropout > 0:
        parts["input_dropout"] = nn.Dropout(config.input_dropout)
    return parts


class EncoderStage(nn.Module):
    """Input features -> :class:`Encoded` (node states, edge states, ESLapPE distances, the batch).

    Reads ``graph.ndata['feat']`` (N, F_n), ``graph.edata['feat']`` (E, F_e) and the encodings
    ``config.pe`` / ``config.se`` / ``config.graphormer`` name (``ndata['lap_pe']`` (N, k),
    ``['lap_eigval']``, ``['rwse']``, ``['in_degree']``, ``['spatial_types']`` ...).

    Parameters
    ----------
    config : ModelConfig
    parts : dict or None
        The encoders by name (:attr:`PARTS`; a missing name is None); None: built from ``config``
        (:func:`build_encoders`). The folded inference copy passes its folded parts.

    Example
    -------
    >>> from geaet_dgl.config.presets import get_preset
    >>> stage = EncoderStage(get_preset('mnist').model)
    >>> [name for name, _ in stage.named_children()]
    ['node_encoder', 'edge_encoder', 'pe_encoder']
    """

    #: The parts, in the order they are built and registered.
    PARTS = ("node_encoder", "edge_encoder", "pe_encoder", "se_encoder", "degree_encoder", "bias_encoder",
             "graph_token", "input_dropout")

    def __init__(self, config: ModelConfig, parts: Optional[Dict[str, Optional[nn.Module]]] = None):
        super().__init__()
        self.config = config
        parts = build_encoders(config) if parts is None else parts
        for name in self.PARTS:
            self.add_module(name, parts.get(name))

    def forward(self, graph: dgl.DGLGraph, layout: BatchLayout, input_branch: Optional[nn.Module] = None
                ) -> Encoded:
        """The batch encoded; ``input_branch`` (the model's ``input_gcn``) runs on the input features right
        after the node encoder (where its dropout draws its random numbers, as ever)."""
        encoded = self.encode_features(graph, layout, input_branch)
        if self.graph_token is None:
            return encoded
        bias = self.attention_bias(graph, layout)
        graph, h, layout = self.graph_token(graph, encoded.nodes, layout)
        if bias is not None:  # read by every biased attention layer of this forward
            layout.cached(ATTENTION_BIAS, lambda: self.graph_token.pad_bias(bias, layout))
        return encoded._replace(nodes=h, graph=graph, layout=layout)

    def encode_features(self, graph: dgl.DGLGraph, layout: BatchLayout, input_branch: Optional[nn.Module] = None
                        ) -> Encoded:
        """:meth:`forward` without the graph token: the (N, d) node states of the batch's own nodes."""
        cfg = self.config
        feat = graph.ndata["feat"]
        if type(self.node_encoder) is LinearEncoder:  # mostly-zero features (bag-of-words) as a sparse matrix
            feat = sparse_input.sparse_features(feat)
        feat = sparse_input.dropout(feat, self.input_dropout)
        h = self.node_encoder(feat)
        branch = input_branch(graph, feat, layout) if input_branch is not None else None
        if self.degree_encoder is not None:
            h = self.degree_encoder(h, required_field(graph, "in_degree"), required_field(graph, "out_degree"))
        e = None  # no (E, d) edge states where no layer reads them (GCN, GIN, GEANet without edge units)
        if reads_edge_states(cfg) and self.edge_encoder is None:
            e = h.new_zeros(1, cfg.hidden_dim).expand(graph.num_edges(), -1)  # graphgym's edge_encoder: False
        elif reads_edge_states(cfg):
            edge_in = graph.edata["feat"] if "feat" in graph.edata else \
                torch.zeros(graph.num_edges(), cfg.edge_in_feats, device=h.device)
            e = self.edge_encoder(edge_in)
        pe_dist = None
        if cfg.pe == "eslappe" and cfg.mpnn in MPNNS_READING_ESLAPPE:
            # The gate reads only ||p_i - p_j||^2, identical in every layer: computed once here.
            pe_dist = self.pe_distance(graph, required_field(graph, "lap_pe"), layout)
        elif cfg.pe == "lappe":
            pe = self.pe_encoder(required_field(graph, "lap_pe"), required_field(graph, "lap_eigval"), layout)
            h = torch.cat([h, pe], dim=-1)
        elif cfg.pe in KERNEL_PES:
            h = torch.cat([h, self.pe_encoder(required_field(graph, KERNEL_FIELDS[cfg.pe]))], dim=-1)
        elif cfg.pe == "signnet":
            h = torch.cat([h, self.pe_encoder(graph, required_field(graph, "lap_pe"), layout)], dim=-1)
        if self.se_encoder is not None:
            h = torch.cat([h, self.se_encoder(required_field(graph, KERNEL_FIELDS[cfg.se]))], dim=-1)
        if self.bias_encoder is not None and self.graph_token is None:  # read by every biased attention layer
            layout.cached(ATTENTION_BIAS, lambda: self.attention_bias(graph, layout))
        return Encoded(h, e, pe_dist, graph, layout, branch)

    def attention_bias(self, graph: dgl.DGLGraph, layout: BatchLayout) -> Optional[torch.Tensor]:
        """(B * H, W, W) Graphormer spatial bias for ``attention=biased_transformer``, else None."""
        if self.bias_encoder is None:
            return None
        paths = required_field(graph, "path_types") if self.config.graphormer.num_edge_types else None
        return self.bias_encoder(required_field(graph, "spatial_types"), layout, paths)

    def pe_distance(self, graph: dgl.DGLGraph, eigvecs: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, k) eigenvectors -> (E, 1) squared distances ||p_j - p_i||^2 of their ESLapPE encodings."""
        return pe_square_distance(graph, self.pe_encoder(eigvecs))


def _type_encoder(in_feats: int, out_feats: int) -> nn.Module:
    return LinearEncoder(in_feats, out_feats) if in_feats else ConstantEncoder(out_feats)


class HeteroEncoderStage(nn.Module):
    """The heterograph model's encoder stage: per-type encoders and a type embedding.

    For a node :math:`i` of type :math:`t` with features :math:`x_i` (width :math:`F_t`, possibly 0)
    and an edge of relation :math:`r`: :math:`h_i^0 = W_t x_i + b_t + \\tau_t`,
    :math:`e^0 = W_r x_e + b_r + \\rho_r` (a type without features gets one learned vector).
    Reads ``graph.nodes[t].data['feat']`` (N_t, F_t) and ``graph.edges[r].data['feat']`` (E_r, F_r);
    returns the (N, d) nodes and (E, d) edges of the batch's graph-major view.
    """

    #: The parts, in the order they are built and registered.
    PARTS = ("node_encoders", "edge_encoders", "node_type_embedding", "edge_type_embedding")

    def __init__(self, config: ModelConfig):
        super().__init__()
        schema, d = config.hetero, config.hidden_dim
        self.ntypes, self.canonical_etypes = list(schema.ntypes), schema.canonical_etypes
        self.node_encoders = nn.ModuleList(_type_encoder(f, d) for f in schema.node_in_feats)
        self.edge_encoders = nn.ModuleList(_type_encoder(f, d) for f in schema.edge_in_feats)
        self.node_type_embedding = nn.Embedding(len(self.ntypes), d)
        self.edge_type_embedding = nn.Embedding(max(1, len(self.canonical_etypes)), d)

    def forward(self, graph: dgl.DGLGraph, view: HeteroView) -> Tuple[torch.Tensor, torch.Tensor]:
        """Per-type input features -> (N, d) view nodes and (E, d) view edges."""
        nodes = []
        for t, (ntype, encoder) in enumerate(zip(self.ntypes, self.node_encoders)):
            data = graph.nodes[ntype].data
            feat = data["feat"] if "feat" in data else torch.zeros(graph.num_nodes(ntype), 1, device=graph.device)
            nodes.append(encoder(feat) + self.node_type_embedding.weight[t])
        h = view.gather_nodes(nodes)
        if not self.canonical_etypes:
            return h, h.new_zeros(0, h.shape[1])
        edges = []
        for r, (etype, encoder) in enumerate(zip(self.canonical_etypes, self.edge_encoders)):
            data = graph.edges[etype].data
            feat = data["feat"] if "feat" in data else torch.zeros(graph.num_edges(etype), 1, device=graph.device)
            edges.append(encoder(feat) + self.edge_type_embedding.weight[r])
        return h, view.gather_edges(edges)


class StagedNetwork(nn.Module):
    """A network that holds an encoder stage (:meth:`mount_encoder`) with the stage's parts registered on
    itself under their own names (``node_encoder``, not ``encoder.node_encoder``: see the module docstring).

    ``self.encoder`` is the stage; ``self.node_encoder`` ... are its parts, the same modules. The stage is
    not a registered child (its parts would be registered twice, under two names), so a part is replaced
    through a new stage and :meth:`mount_encoder`, never by assigning it on the network.
    """

    def mount_encoder(self, stage: nn.Module) -> None:
        """Hold ``stage`` as ``self.encoder`` and register its parts (``stage.PARTS``) on this network."""
        if any(True for _ in stage.parameters(recurse=False)) or any(True for _ in stage.buffers(recurse=False)):
            raise ValueError("an encoder stage keeps its tensors in its parts; mounting it would lose its own")
        object.__setattr__(self, "_encoder_stage", stage)
        for name in stage.PARTS:
            self.add_module(name, getattr(stage, name))

    @property
    def encoder(self) -> nn.Module:
        return self.__dict__["_encoder_stage"]

    def train(self, mode: bool = True):
        super().train(mode)
        self.encoder.training = mode  # its parts are this network's children: set already
        return self


def required_field(graph: dgl.DGLGraph, key: str) -> torch.Tensor:
    """``graph.ndata[key]``, or ValueError naming the encoding the model needs."""
    if key not in graph.ndata:
        raise ValueError(
            f"the model's positional encoding needs graph.ndata[{key!r}]; load the dataset with that "
            "encoding (geaet_dgl.data) or set model.pe=none"
        )
    return graph.ndata[key]
