"""Configuration dataclasses: one field per quantity, no global config.

A run is described by three dataclasses: :class:`ModelConfig` (the network),
:class:`TrainConfig` (optimisation and schedule) and the dataset name held by a
:class:`Preset`. Presets (``geaet_dgl.presets``) are values of these classes;
YAML/JSON only serialise them.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional

MPNN_CHOICES = ("gatedgcn", "gcn", "gin", "gine", "gat", "pna", "genconv", "none")
ATTENTION_CHOICES = ("transformer", "biased_transformer", "performer", "none")
PE_CHOICES = ("none", "eslappe", "lappe", "rwse", "signnet", "hkdiagse", "elstaticse")
#: Encodings concatenated to the node features (``pe_dim`` of the width).
CONCAT_PES = ("lappe", "rwse", "signnet", "hkdiagse", "elstaticse")
#: Encodings of precomputed per-node statistics, encoded by ``pe_model``.
KERNEL_PES = ("rwse", "hkdiagse", "elstaticse")
#: A second encoding concatenated after ``pe`` (``model.se``; GraphGPS's ``Atom+LapPE+RWSE``).
SE_CHOICES = ("none", "rwse")
#: The encodings ``model.se`` may follow.
PES_BEFORE_SE = ("none", "lappe", "signnet")
PE_MODEL_CHOICES = ("linear", "mlp")
SIGNNET_MODEL_CHOICES = ("deepset", "mlp")
NORM_CHOICES = ("batch", "layer", "node_layer", "none")
JK_CHOICES = ("none", "cat", "max")
SCOPE_CHOICES = ("graph", "batch")
GEANET_VARIANT_CHOICES = ("reference", "paper")
HEAD_CHOICES = ("graph", "mlp_graph", "san_graph", "node", "root", "link", "sequence")
POOLING_CHOICES = ("mean", "sum", "max", "first")
ENCODER_CHOICES = ("linear", "embedding", "constant", "typedict", "ast", "premp")
#: Edge encoders: also ``none`` (no parameters, zero edge features: graphgym's ``edge_encoder: False``).
EDGE_ENCODER_CHOICES = ENCODER_CHOICES + ("none",)
ACTIVATION_CHOICES = ("relu", "gelu")
LOSS_CHOICES = ("cross_entropy", "weighted_cross_entropy", "l1", "bce", "link_cross_entropy",
                "subtoken_cross_entropy")
METRIC_CHOICES = ("accuracy", "balanced_accuracy", "mae", "average_precision", "f1_macro", "mrr", "roc_auc",
                  "f1_subtoken")


class ConfigError(ValueError):
    """A configuration value is unknown, mistyped or impossible."""


class OptionConflict(ConfigError):
    """Options that cannot be given together (the command line shows it as a usage error)."""


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


TYPE_SCOPE_CHOICES = ("type", "all")
LOCAL_WEIGHT_CHOICES = ("relation", "typed")
HETERO_HEADS = ("graph", "mlp_graph", "node")


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
        _check_choice("hetero.geanet_type_scope", self.geanet_type_scope, TYPE_SCOPE_CHOICES)
        _check_choice("hetero.local_weights", self.local_weights, LOCAL_WEIGHT_CHOICES)
        if not self.ntypes:
            return
        if len(self.node_in_feats) != len(self.ntypes) or len(self.edge_in_feats) != len(self.etypes):
            raise ConfigError("hetero.node_in_feats (edge_in_feats) needs one width per node (edge) type")
        for rel in self.etypes:
            parts = rel.split(":")
            if len(parts) != 3 or parts[0] not in self.ntypes or parts[2] not in self.ntypes:
                raise ConfigError(f"hetero.etypes entry {rel!r} must be 'src:rel:dst' with src and dst among "
                                  f"{', '.join(self.ntypes)}")
        if model.jk != "none" or model.input_dropout or model.feature_dropout:
            raise ConfigError("a heterograph model has no model.jk, model.input_dropout or model.feature_dropout; "
                              "leave them at none / 0")
        if model.pe != "none":
            raise ConfigError(f"a heterograph model takes no positional encoding (model.pe={model.pe!r}); "
                              "set model.pe=none")
        if model.external and model.geanet.variant != "reference":
            raise ConfigError("a heterograph model has the reference's GEANet only; set model.geanet.variant=reference")
        _check_choice("model.head (heterograph)", model.head, HETERO_HEADS)
        if self.local_weights == "typed" and model.mpnn not in ("gatedgcn", "none"):
            raise ConfigError(f"hetero.local_weights=typed is a GatedGCN, but model.mpnn={model.mpnn!r}; set "
                              "model.mpnn=gatedgcn or hetero.local_weights=relation")
        if model.head == "node" and self.target_ntype not in self.ntypes:
            raise ConfigError(f"a node head on a heterograph needs data.target_ntype among "
                              f"{', '.join(self.ntypes)}, got {self.target_ntype!r}")


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
        if isinstance(self.pe, str) and "+" in self.pe:  # --set model.pe=lappe+rwse: the second is model.se
            first, _, second = self.pe.partition("+")
            if second not in SE_CHOICES[1:] or "+" in second:
                raise ConfigError(f"pe={self.pe!r}: a second encoding after '+' must be one of "
                                  f"{', '.join(SE_CHOICES[1:])} (model.se)")
            self.pe, self.se = first, second
        check_numeric_ranges(self, "model.")
        self.hetero.validate(self)
        _check_choice("mpnn", self.mpnn, MPNN_CHOICES)
        _check_choice("attention", self.attention, ATTENTION_CHOICES)
        _check_choice("pe", self.pe, PE_CHOICES)
        _check_choice("norm", self.norm, NORM_CHOICES)
        _check_choice("jk", self.jk, JK_CHOICES)
        for name in ("input_dropout", "feature_dropout", "local_dropout", "global_dropout", "external_dropout",
                     "ffn_dropout", "attn_dropout", "head_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name}={value} must be in [0, 1); fix that value (--set or preset)")
        if not 0.0 <= self.input_gcn_weight < 1.0:
            raise ConfigError(f"input_gcn_weight={self.input_gcn_weight} must be in [0, 1) (the GCN branch's share of "
                              "what the head reads; 0: no branch)")
        if self.input_gcn_weight > 0 and (self.node_encoder != "linear" or self.graphormer.graph_token):
            raise ConfigError("input_gcn_weight > 0 convolves float node features (node_encoder=linear) without a "
                              "graph token; set model.input_gcn_weight=0")
        _check_choice("geanet.scope", self.geanet.scope, SCOPE_CHOICES)
        _check_choice("head", self.head, HEAD_CHOICES)
        _check_choice("pooling", self.pooling, POOLING_CHOICES)
        _check_choice("node_encoder", self.node_encoder, ENCODER_CHOICES)
        _check_choice("edge_encoder", self.edge_encoder, EDGE_ENCODER_CHOICES)
        _check_choice("se", self.se, SE_CHOICES)
        if self.se != "none":
            _check_choice("se_model", self.se_model, PE_MODEL_CHOICES)
            if self.pe not in PES_BEFORE_SE:
                raise ConfigError(f"se={self.se!r} follows pe=lappe, signnet or none, not pe={self.pe!r}")
            if self.se_k < 1 or self.se_dim < 1 or self.se_layers < 1:
                raise ConfigError("se_k, se_dim and se_layers must be positive")
        if self.head == "sequence" and self.seq_len != 5:
            raise ConfigError(f"head=sequence predicts GraphGPS's max_seq_len=5 subtokens (ogbg-code2's loss and F1 "
                              f"read 5 positions); set seq_len=5 (got {self.seq_len})")
        if self.graphormer.graph_token and not self.graphormer.enable:
            raise ConfigError("graphormer.graph_token needs graphormer.enable=true")
        _check_choice("activation", self.activation, ACTIVATION_CHOICES)
        if self.hidden_dim <= 0 or self.num_layers <= 0:
            raise ConfigError("hidden_dim and num_layers must be positive; fix the preset or --set value")
        if self.mpnn == "pna" and self.hidden_dim > 128:
            raise ConfigError(f"mpnn=pna takes edge features of width min(128, hidden_dim) (the reference's "
                              f"edge_dim), so hidden_dim={self.hidden_dim} must be at most 128")
        if (self.attention != "none" or self.mpnn == "gat") and self.hidden_dim % self.num_heads:
            raise ConfigError(
                f"num_heads={self.num_heads} does not divide hidden_dim={self.hidden_dim}; "
                "choose a head count that divides the width"
            )
        _check_choice("geanet.variant", self.geanet.variant, GEANET_VARIANT_CHOICES)
        unit_size = self.geanet.unit_size
        if unit_size is not None and (not isinstance(unit_size, int) or isinstance(unit_size, bool)):
            raise ConfigError(f"geanet.unit_size must be an integer or null, got {unit_size!r}; "
                              "fix that value (--set or preset)")
        if self.external and (self.geanet.num_heads <= 0 or self.hidden_dim % self.geanet.num_heads):
            raise ConfigError(
                f"geanet.num_heads={self.geanet.num_heads} does not divide hidden_dim={self.hidden_dim}; "
                "choose a GEANet head count that divides the width"
            )
        if self.external and self.geanet.variant == "paper":
            if self.geanet_unit_size() <= 0:
                raise ConfigError(f"geanet.variant=paper needs geanet.unit_size={unit_size} > 0; fix it with --set")
        elif self.external and self.geanet_unit_size() * self.geanet.num_heads != self.hidden_dim:
            raise ConfigError(
                f"geanet.unit_size * geanet.num_heads = {unit_size}*{self.geanet.num_heads} "
                f"must equal hidden_dim={self.hidden_dim} (the reference's head layout); "
                f"set geanet.unit_size={self.hidden_dim // self.geanet.num_heads} or null (derived)"
            )
        if self.mpnn == "none" and self.attention == "none" and not self.external:
            raise ConfigError("a GEAET layer needs at least one branch: set mpnn, attention or external")
        _check_choice("pe_model", self.pe_model, PE_MODEL_CHOICES)
        _check_choice("signnet.model", self.signnet.model, SIGNNET_MODEL_CHOICES)
        if self.pe == "elstaticse" and self.pe_k != 10:
            raise ConfigError(f"pe=elstaticse has 10 statistics per node; set model.pe_k=10 (got {self.pe_k})")
        if self.pe == "signnet" and (self.signnet.phi_layers < 2 or self.signnet.rho_layers < 1):
            raise ConfigError("signnet.phi_layers must be >= 2 and signnet.rho_layers >= 1")
        if self.attention == "biased_transformer" and not (self.graphormer.enable and
                                                           not self.graphormer.degrees_only):
            raise ConfigError("attention=biased_transformer reads Graphormer's spatial bias; set "
                              "model.graphormer.enable=true and model.graphormer.degrees_only=false")
        if self.pe in CONCAT_PES and self.pe_dim >= self.hidden_dim:
            raise ConfigError(f"pe_dim={self.pe_dim} must be smaller than hidden_dim={self.hidden_dim}")
        if self.node_encoder == "ast" and (self.node_in_feats != 3 or len(self.node_vocab_sizes) != 3):
            raise ConfigError("node_encoder='ast' reads 3 columns (type, attribute, depth): set node_in_feats=3 and "
                              "three node_vocab_sizes")
        if self.head == "sequence" and self.head_layers != 1:
            raise ConfigError(f"head='sequence' has one linear layer per position (GraphGPS's ogb_code_graph); set "
                              f"head_layers=1 (got {self.head_layers})")
        if self.node_width() < 1:
            raise ConfigError(f"pe_dim + se_dim must be smaller than hidden_dim={self.hidden_dim}")
        if self.node_encoder == "embedding" and len(self.node_vocab_sizes) != self.node_in_feats:
            raise ConfigError("node_encoder='embedding' needs one vocabulary size per node feature column")
        if self.edge_encoder == "embedding" and len(self.edge_vocab_sizes) != self.edge_in_feats:
            raise ConfigError("edge_encoder='embedding' needs one vocabulary size per edge feature column")
        for side in ("node", "edge"):
            if getattr(self, f"{side}_encoder") == "typedict" and len(getattr(self, f"{side}_vocab_sizes")) != 1:
                raise ConfigError(f"{side}_encoder='typedict' embeds column 0 only: give one {side}_vocab_sizes entry")
        if self.head_layers < 1:
            raise ConfigError("head_layers must be at least 1")
        if self.head == "link" and self.out_feats != 1:
            raise ConfigError(f"head='link' scores a pair with one dot product, so out_feats must be 1, got "
                              f"{self.out_feats}")
        return self


@dataclass
class TrainConfig:
    """Optimisation: AdamW, cosine schedule with linear warm-up, clipping; optional early stopping."""

    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 1e-5
    epochs: int = 150
    warmup_epochs: int = 5
    clip_grad_norm: Optional[float] = 1.0
    loss: str = "cross_entropy"
    metric: str = "accuracy"
    seed: int = 0
    #: The best epoch is chosen among epochs 1, k, 2k, ... and the last (graphgym's ``train.eval_period``);
    #: every epoch is still scored and logged.
    eval_every: int = 1
    #: Learning-rate decay after the warm-up: ``cosine`` or ``linear`` (GraphGPS's ``linear_with_warmup``).
    schedule: str = "cosine"
    #: Batches whose gradients are summed before one optimiser step (graphgym's ``optim.batch_accumulation``).
    accumulate: int = 1
    #: Early stopping: end the run after this many epochs without validation improvement (0: off).
    patience: int = 0
    #: ``adamw`` (decoupled weight decay, graphgym's ``adamW``) or ``adam`` (coupled L2, graphgym's ``adam``,
    #: as GCN and GAT train on citation graphs).
    optimizer: str = "adamw"
    #: A checkpoint of ours (``best.pt``) whose model weights start the run; empty: a fresh initialisation.
    #: ``train --config`` on a GraphGPS file with ``pretrained.dir`` imports the folder's checkpoint to
    #: ``OUT-pretrained/best.pt`` and sets it.
    pretrained: str = ""
    #: Train the prediction head only, the rest stays as it starts (GraphGPS's ``pretrained.freeze_main``).
    freeze_main: bool = False

    def validate(self) -> "TrainConfig":
        check_numeric_ranges(self, "train.")
        _check_choice("loss", self.loss, LOSS_CHOICES)
        _check_choice("metric", self.metric, METRIC_CHOICES)
        if self.batch_size <= 0 or self.epochs <= 0 or self.lr <= 0:
            raise ConfigError("batch_size, epochs and lr must be positive")
        if self.warmup_epochs < 0:
            raise ConfigError("warmup_epochs must be >= 0")
        if self.eval_every < 1 or self.accumulate < 1:
            raise ConfigError("eval_every and accumulate must be >= 1")
        _check_choice("schedule", self.schedule, ("cosine", "linear"))
        _check_choice("optimizer", self.optimizer, ("adamw", "adam"))
        if self.patience < 0:
            raise ConfigError("train.patience must be >= 0 (epochs without validation improvement; 0: no early "
                              "stopping)")
        return self


@dataclass
class Preset:
    """A named configuration: one column of the paper's hyper-parameter table."""

    name: str
    dataset: str
    model: ModelConfig
    train: TrainConfig
    paper_params: Optional[int] = None
    note: str = ""
    #: Data options the preset sets unless the command line does (``{"feature_norm": "row"}``).
    data: Dict[str, Any] = field(default_factory=dict)


#: Every numeric setting with a range, and the range in words (shown in the error). The dropouts are found
#: from the dataclasses (every ``*dropout`` field, nested ones included), so a new one is checked too.
NUMERIC_RANGES: Dict[str, str] = {
    "train.lr": "a finite number > 0",
    "train.weight_decay": "a finite number >= 0",
    "train.clip_grad_norm": "a finite number > 0, or null for no clipping",
}
_DROPOUT_RANGE = "a probability in [0, 1) (1 would drop every value)"


def _in_range(path: str, value: Any) -> bool:
    if path == "train.clip_grad_norm" and value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if path.endswith("dropout"):
        return 0 <= value < 1
    return value >= 0 if path == "train.weight_decay" else value > 0


def check_numeric_ranges(config: Any, prefix: str) -> None:
    """Raise :class:`ConfigError` in one line for the first setting of :data:`NUMERIC_RANGES` out of its range.

    ``config`` is a :class:`ModelConfig` (``prefix`` ``model.``) or a
    :class:`TrainConfig` (``train.``); nested sections are walked.
    """
    for item in fields(config):
        value, path = getattr(config, item.name), prefix + item.name
        if dataclasses.is_dataclass(value):
            check_numeric_ranges(value, path + ".")
        elif path in NUMERIC_RANGES and not _in_range(path, value):
            raise ConfigError(f"{path}={value!r} is out of range: it must be {NUMERIC_RANGES[path]}; fix that "
                              "value (--set, the option, the preset or the YAML)")


def _check_choice(name: str, value: Any, choices) -> None:
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(str, choices))}")


def to_dict(obj) -> Dict[str, Any]:
    """Dataclass -> nested plain dict (JSON/YAML friendly)."""
    return dataclasses.asdict(obj)


def from_dict(cls, data: Dict[str, Any], where: str = ""):
    """Nested dict -> dataclass, rejecting unknown keys and wrong types.

    Raises :class:`ConfigError` naming the offending key and the valid ones.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where.rstrip('.') or cls.__name__} must be a mapping, got {type(data).__name__}; "
                          f"set its fields instead (e.g. {where or 'model.'}<field>=...)")
    data = _without_retired_fields(cls, data, where)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(where + k for k in unknown)}; valid keys: {', '.join(sorted(known))}"
        )
    kwargs = {}
    defaults = cls() if _has_all_defaults(cls) else None
    for key, value in data.items():
        default = getattr(defaults, key) if defaults is not None else None
        if value is None and default is not None and "Optional" not in str(known[key].type):
            raise ConfigError(f"{where}{key} cannot be null; give a value like {default!r} (--set or preset)")
        if dataclasses.is_dataclass(default):
            kwargs[key] = from_dict(type(default), value, where=f"{where}{key}.")
        else:
            kwargs[key] = _coerce(f"{where}{key}", value, default)
    return cls(**kwargs)


#: Fields that configurations written by older versions hold but no code ever read: dropped on reading
#: when they hold the value they always had in effect, refused otherwise.
RETIRED_FIELDS = {"ModelConfig": {"head_batchnorm": False}}


def _without_retired_fields(cls, data: Dict[str, Any], where: str) -> Dict[str, Any]:
    retired = RETIRED_FIELDS.get(cls.__name__, {})
    if not retired.keys() & data.keys():
        return data
    for key, inert in retired.items():
        if key in data and data[key] != inert:
            raise ConfigError(f"{where}{key}={data[key]!r} was never applied (no code read it) and is gone; "
                              "remove it from the configuration")
    return {key: value for key, value in data.items() if key not in retired}


def _has_all_defaults(cls) -> bool:
    return all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING  # type: ignore[misc]
        for f in fields(cls)
    )


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Check ``value`` against the type of ``default`` (ints may stand for floats)."""
    if default is None or value is None:
        return value
    if isinstance(default, list):
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and not v.lstrip("-").isdigit()
                                                               for v in value):
            return list(value)  # names (hetero.ntypes, hetero.etypes)
        return _coerce_int_list(name, value)
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"{name} must be true or false, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ConfigError(f"{name} must be an integer, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{name} must be a number, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise ConfigError(f"{name} must be a string, got {value!r}; fix that value (--set or preset)")
    return value


def _coerce_int_list(name: str, value: Any) -> List[int]:
    """A list of integers, given as a list or as text such as ``"119,5,12"`` / ``"[119, 5, 12]"``."""
    items = value
    if isinstance(value, str):
        text = value.strip().strip("[]").strip()
        items = [part.strip() for part in text.split(",")] if text else []
    if isinstance(items, (list, tuple)):
        parsed = []
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool):
                parsed.append(item)
            elif isinstance(item, str) and item.lstrip("-").isdigit():
                parsed.append(int(item))
            else:
                break
        else:
            return parsed
    raise ConfigError(f"{name} must be a list of integers (e.g. 119,5,12), got {value!r}; "
                      "fix that value (--set or preset)")


def apply_overrides(preset: Preset, overrides: Dict[str, str]) -> Preset:
    """Apply ``{"model.hidden_dim": "64", "train.lr": "5e-4"}`` style overrides.

    Keys are dotted paths into the preset (``model.geanet.scope``); values are
    strings parsed with the type of the field they replace.
    """
    data = {"model": to_dict(preset.model), "train": to_dict(preset.train)}
    for path, raw in overrides.items():
        parts = path.split(".")
        if parts[0] not in data:
            parts = ["model"] + parts if _is_model_key(parts[0]) else ["train"] + parts
        node = data
        for p in parts[:-1]:
            if p not in node or not isinstance(node[p], dict):
                raise ConfigError(f"unknown setting {path!r}; use keys like model.hidden_dim or train.lr")
            node = node[p]
        if parts[-1] not in node:
            raise ConfigError(f"unknown setting {path!r}; valid keys here: {', '.join(sorted(node))}")
        node[parts[-1]] = parse_setting_value(raw)
    _paper_variant_scope(data["model"], overrides)
    model = from_dict(ModelConfig, data["model"], where="model.").validate()
    train = from_dict(TrainConfig, data["train"], where="train.").validate()
    return dataclasses.replace(preset, model=model, train=train)


#: Command-line options that set a training value directly: option -> dotted setting.
TRAIN_OPTION_SETTINGS = {"epochs": "train.epochs", "batch_size": "train.batch_size", "lr": "train.lr",
                         "seed": "train.seed"}


def settings_with_options(settings: Mapping[str, str], **options: Any) -> Dict[str, str]:
    """``--set`` pairs plus the options of :data:`TRAIN_OPTION_SETTINGS` that were given (not None).

    Values are strings, as :func:`apply_overrides` parses them (``str`` of an int or
    float parses back to the same number); an option wins over ``--set`` of the same key.
    """
    pairs = dict(settings)
    for name, value in options.items():
        if value is not None:
            pairs[TRAIN_OPTION_SETTINGS[name]] = str(value)
    return pairs


def _paper_variant_scope(model: Dict[str, Any], overrides: Dict[str, str]) -> None:
    """``geanet.variant=paper`` means the paper's per-graph normalisation unless the same call sets the scope."""
    keys = {path.split(".", 1)[1] if path.startswith("model.") else path for path in overrides}
    if "geanet.variant" in keys and "geanet.scope" not in keys and model["geanet"].get("variant") == "paper":
        model["geanet"]["scope"] = "graph"


def _is_model_key(key: str) -> bool:
    return key in {f.name for f in fields(ModelConfig)}


def parse_setting_value(raw: Any) -> Any:
    """A ``--set`` value as YAML would read it: ``true``/``false``, ``null``, an int, a float, else the string."""
    if not isinstance(raw, str):
        return raw
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            continue
    return raw


def _register_dropouts(cls: type, prefix: str) -> None:
    for item in fields(cls):
        kind = item.default_factory if item.default_factory is not dataclasses.MISSING else None
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            _register_dropouts(kind, f"{prefix}{item.name}.")
        elif item.name.endswith("dropout"):
            NUMERIC_RANGES[prefix + item.name] = _DROPOUT_RANGE


_register_dropouts(ModelConfig, "model.")
