"""The network's configuration: :class:`ModelConfig` and its sections, one field per quantity.

:class:`ModelConfig` (encoders, ``num_layers`` GEAET layers and a head) holds
:class:`GEANetConfig` (external attention), :class:`SignNetConfig`,
:class:`GraphormerConfig` and :class:`HeteroConfig` (heterograph input).
The accepted values and the rules live in :mod:`.validation`; ``validate()``
applies them. Presets (:mod:`.presets`) are values of these classes;
YAML/JSON only serialise them (:mod:`.settings`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional

from .validation import CONCAT_PES, register_dropout_ranges, validate_hetero, validate_model


@dataclass
class GEANetConfig:
    """Graph external attention (GEANet) settings.

    ``unit_size`` is S, the number of external memory slots per head; the
    reference ties it to the per-head width, so ``unit_size * num_heads`` must
    equal the hidden width: left None it is ``hidden_dim // num_heads``
    (:meth:`ModelConfig.geanet_unit_size`).

    ``variant`` picks the layer: ``reference`` (the reference's code, what
    produced the paper's numbers) or ``paper`` (the paper's equations: S free,
    key/value units of (S, d/H) shared by the heads, no biases, an output
    projection W_o; see docs/model.md). Setting ``variant=paper`` by
    :func:`apply_overrides` also sets ``scope=graph`` (the paper's per-graph
    normalisation) unless ``scope`` is set in the same call.
    """

    num_heads: int = 4
    unit_size: Optional[int] = None
    node_unit: bool = True
    edge_unit: bool = False
    shared_unit: bool = False
    scope: str = "graph"
    variant: str = "reference"



@dataclass
class HeteroConfig:
    """The schema of heterograph input; empty ``ntypes`` means homogeneous graphs.

    ``ntypes`` and ``node_in_feats`` (float feature width per node type, 0 for
    a type without features), ``etypes`` (canonical edge types written
    ``"src:rel:dst"``) and ``edge_in_feats`` likewise. ``target_ntype`` is the
    node type a node head predicts for. ``geanet_type_scope`` is where GEANet
    normalises: within each node (edge) type (``type``) or over all of them
    (``all``); see :mod:`geaet_dgl.nn.hetero_external_attention`.
    ``local_weights`` is the local MPNN: one per relation, averaged per
    destination type (``relation``), or one GatedGCN with typed weights on
    the whole graph (``typed``); see :mod:`geaet_dgl.nn.hetero_geaet_layer`.
    """

    ntypes: List[str] = field(default_factory=list)
    node_in_feats: List[int] = field(default_factory=list)
    etypes: List[str] = field(default_factory=list)
    edge_in_feats: List[int] = field(default_factory=list)
    target_ntype: str = ""
    geanet_type_scope: str = "type"
    local_weights: str = "relation"

    @property
    def canonical_etypes(self) -> List[tuple]:
        return [tuple(r.split(":")) for r in self.etypes]

    def validate(self, model: "ModelConfig") -> None:
        """Check these settings and what a heterograph ``model`` leaves out (:func:`~.validation.validate_hetero`)."""
        validate_hetero(self, model)


@dataclass
class SignNetConfig:
    """SignNet (``model.pe=signnet``): rho(phi(v) + phi(-v)) over ``pe_k`` eigenvectors, see docs/model.md."""

    model: str = "deepset"
    phi_layers: int = 3
    phi_hidden_dim: int = 64
    phi_out_dim: int = 4
    rho_layers: int = 1


@dataclass
class GraphormerConfig:
    """Graphormer's encodings: in/out-degree embeddings added to the node features and, for
    ``attention=biased_transformer``, a learned per-head bias per capped shortest-path length, plus
    (``num_edge_types > 0``) the encoded edge types along a shortest path (``edata['feat'][:, 0]``)."""

    enable: bool = False
    degrees_only: bool = False
    spatial_types: int = 20
    num_edge_types: int = 0
    num_in_degrees: int = 64
    num_out_degrees: int = 64
    input_dropout: float = 0.0
    #: GraphGPS's graph token (``graphormer.use_graph_token``): one learned virtual node per graph, attended
    #: to and from every node at a learned per-head bias, pooled with the nodes.
    graph_token: bool = False


@dataclass
class ModelConfig:
    """The GEAET network: encoders, ``num_layers`` GEAET layers and a head."""

    node_in_feats: int = 3
    edge_in_feats: int = 1
    out_feats: int = 10
    node_encoder: str = "linear"
    edge_encoder: str = "linear"
    node_vocab_sizes: List[int] = field(default_factory=list)
    edge_vocab_sizes: List[int] = field(default_factory=list)
    pe: str = "eslappe"
    pe_k: int = 8
    pe_dim: int = 8
    pe_layers: int = 2
    pe_raw_norm: bool = False
    pe_model: str = "linear"
    #: A kernel structural encoding concatenated after ``pe`` (``'rwse'``), with its own steps, width,
    #: BatchNorm of the raw statistics, model and depth: GraphGPS's ``<Base>+LapPE+RWSE``.
    se: str = "none"
    se_k: int = 16
    se_dim: int = 16
    se_raw_norm: bool = False
    se_model: str = "linear"
    se_layers: int = 1
    signnet: SignNetConfig = field(default_factory=SignNetConfig)
    graphormer: GraphormerConfig = field(default_factory=GraphormerConfig)
    hidden_dim: int = 40
    num_layers: int = 5
    mpnn: str = "gatedgcn"
    attention: str = "transformer"
    #: Performer only: count the padding keys of the reference's dense batch (see nn/performer.py).
    performer_pad_keys: bool = False
    external: bool = True
    num_heads: int = 4
    geanet: GEANetConfig = field(default_factory=GEANetConfig)
    local_dropout: float = 0.0
    global_dropout: float = 0.0
    external_dropout: float = 0.0
    ffn_dropout: float = 0.0
    attn_dropout: float = 0.0
    norm: str = "batch"
    #: Dropout on the raw float node features, before the node encoder (GCN's input dropout).
    input_dropout: float = 0.0
    #: Dropout on the node features each layer reads and on what the head reads.
    feature_dropout: float = 0.0
    #: Residual (skip) connection around each branch: ``X + Branch(X)``; false: ``Branch(X)``.
    residual: bool = True
    #: Jumping knowledge: the head reads the last layer (``none``), a linear map of the concatenated
    #: encoder and layer outputs (``cat``) or their element-wise maximum (``max``).
    jk: str = "none"
    use_ffn: bool = True
    #: Weight w of a 2-layer GCN on the raw float node features mixed into what the head reads:
    #: ``(1 - w) * stack + w * GCN(X)`` (SGFormer's graph branch; models/input_gcn.py). 0: no such branch.
    input_gcn_weight: float = 0.0
    #: What that raw-feature branch is: ``gcn`` (two GCN convolutions), ``mlp`` (the same two layers without
    #: the graph, for sets where a node's own features beat its neighbours') or ``hops`` (the node's own and its
    #: 1..K-hop neighbours' embeddings kept apart, H2GCN's separation; chosen on WebKB) or ``appnp`` (a 2-layer
    #: MLP whose output is propagated K steps by personalised PageRank, APPNP).
    input_branch: str = "gcn"
    #: K, the farthest neighbourhood ``input_branch=hops`` reads; the propagation steps of ``appnp``.
    input_branch_hops: int = 1
    #: Where that branch joins: ``hidden`` (its (N, d) output mixed into what the head reads) or ``logits`` (its
    #: second layer maps straight to the outputs, mixed with the head's: ``(1 - w) * head(stack) + w * branch``;
    #: node heads only). On Cora a GCN whose second layer feeds another linear map is ~1.7 points under a plain
    #: 2-layer GCN (docs/node-classification.md).
    input_branch_mix: str = "hidden"
    local_out_act: bool = False
    activation: str = "relu"
    head: str = "graph"
    pooling: str = "mean"
    head_layers: int = 2
    head_dropout: float = 0.0
    #: ``head='sequence'`` (ogbg-code2): positions predicted, each over ``out_feats`` tokens.
    seq_len: int = 5
    hetero: HeteroConfig = field(default_factory=HeteroConfig)

    def node_width(self) -> int:
        """Width of the encoded node features before the concatenated encodings (``pe``, then ``se``)."""
        return self.hidden_dim - (self.pe_dim if self.pe in CONCAT_PES else 0) - \
            (self.se_dim if self.se != "none" else 0)

    def geanet_unit_size(self) -> int:
        """GEANet's slots per head: ``geanet.unit_size``, or ``hidden_dim // geanet.num_heads`` when None."""
        if self.geanet.unit_size is not None:
            return self.geanet.unit_size
        return self.hidden_dim // max(self.geanet.num_heads, 1)

    def validate(self) -> "ModelConfig":
        """Check every setting (:func:`~.validation.validate_model`); return ``self``."""
        return validate_model(self)


#: Every ``*dropout`` field is range-checked (:data:`~.validation.NUMERIC_RANGES`), a new one too.
register_dropout_ranges(ModelConfig, "model.")
