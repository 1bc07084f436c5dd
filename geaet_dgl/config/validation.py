"""Validation in one place: the values every setting accepts and the rules a configuration must keep.

The configuration dataclasses (:mod:`.model`, :mod:`.train`, :mod:`.run`) hold fields only; their
``validate()`` methods call the functions here:

- :func:`validate_model` (and :func:`validate_hetero` for ``model.hetero``), :func:`validate_train`,
  :func:`validate_run`: one-line :class:`~geaet_dgl.errors.ConfigError` naming the setting and the fix;
- :func:`check_numeric_ranges`: every numeric setting of :data:`NUMERIC_RANGES` (every ``*dropout``
  field included) in its range;
- :func:`check_run_source`, :func:`check_input_branch_takes_effect`: what a new run is given that it cannot
  use (an :class:`~geaet_dgl.errors.OptionConflict`, a usage error, or a :class:`~geaet_dgl.errors.ConfigError`).

The ``*_CHOICES`` tuples are the menus of the choice settings (``model.mpnn``, ``train.loss``, ...); the
data layer reads its own menus from here too (:data:`GRAPH_FILE`, :data:`GRAPH_FILE_TASKS`, :data:`NODE_TASKS`,
:data:`LAPLACIAN_NORMS`). This module imports neither torch nor the data layer: the checks that need them
sit where they are used (the model against the loaded data: :mod:`geaet_dgl.data.model_fit`; options that
depend on what the data is: :mod:`geaet_dgl.data.run_settings`; the CUDA device and TensorBoard:
:mod:`geaet_dgl.training.environment`). It reads the dataclasses through their fields only (it imports none
of them), so that each of them can call it.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import fields
from typing import Any, Dict, Optional

from ..errors import ConfigError, OptionConflict

#: ``data.dataset`` of the user's own graph file (``--dataset PATH.bin``; :mod:`geaet_dgl.data.own_files`).
GRAPH_FILE = "file"
#: The tasks a graph file of many graphs holds (``data.task``).
GRAPH_FILE_TASKS = ("graph-classification", "graph-regression", "node-classification")
#: The tasks of one graph with node masks (``data.task``).
NODE_TASKS = ("node-classification", "node-regression")
#: The Laplacians the (ES)LapPE eigenvectors come from (``data.laplacian_norm``): ``L = I - D^-1/2 A D^-1/2`` or
#: ``L = D - A``.
LAPLACIAN_NORMS = ("sym", "none")
MPNN_CHOICES = ("gatedgcn", "gcn", "sage", "gin", "gine", "gat", "pna", "genconv", "none")
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
INPUT_BRANCH_CHOICES = ("gcn", "mlp", "hops", "appnp")
INPUT_BRANCH_MIX_CHOICES = ("hidden", "logits")
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
TYPE_SCOPE_CHOICES = ("type", "all")
LOCAL_WEIGHT_CHOICES = ("relation", "typed")
HETERO_HEADS = ("graph", "mlp_graph", "node")
#: Node samplers that cut one graph with node masks into training batches (``data.sampler``,
#: :mod:`geaet_dgl.training.node_batches`).
SAMPLERS = ("full", "cluster", "random")
#: How each trainer of a partitioned run scores its share (``data.dist_scoring``; :mod:`geaet_dgl.distgraph.trainer`).
DIST_SCORING = ("auto", "halo", "parts")
DEVICE_CHOICES = ("cpu", "cuda")
#: Transforms of one graph's node features as read (``data.feature_norm``): none, or each row divided by its sum.
FEATURE_NORMS = ("none", "row")


#: Every numeric setting with a range, and the range in words (shown in the error). The dropouts are found
#: from the dataclasses (every ``*dropout`` field, nested ones included), so a new one is checked too.
NUMERIC_RANGES: Dict[str, str] = {
    "train.lr": "a finite number > 0",
    "train.weight_decay": "a finite number >= 0",
    "train.clip_grad_norm": "a finite number > 0, or null for no clipping",
}
DROPOUT_RANGE = "a probability in [0, 1) (1 would drop every value)"


def register_dropout_ranges(cls: type, prefix: str) -> None:
    """Add every ``*dropout`` field of the dataclass ``cls`` (nested sections walked) to :data:`NUMERIC_RANGES`
    under ``prefix`` (``model.``): called once by :mod:`.model` for :class:`~.model.ModelConfig`."""
    for item in fields(cls):
        kind = item.default_factory if item.default_factory is not dataclasses.MISSING else None
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            register_dropout_ranges(kind, f"{prefix}{item.name}.")
        elif item.name.endswith("dropout"):
            NUMERIC_RANGES[prefix + item.name] = DROPOUT_RANGE


def in_range(path: str, value: Any) -> bool:
    """Whether ``value`` of the setting ``path`` lies in its range of :data:`NUMERIC_RANGES`."""
    if path == "train.clip_grad_norm" and value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    if path.endswith("dropout"):
        return 0 <= value < 1
    return value >= 0 if path == "train.weight_decay" else value > 0


def check_numeric_ranges(config: Any, prefix: str) -> None:
    """Raise :class:`ConfigError` in one line for the first setting of :data:`NUMERIC_RANGES` out of its range.

    ``config`` is a :class:`~.model.ModelConfig` (``prefix`` ``model.``) or a
    :class:`~.train.TrainConfig` (``train.``); nested sections are walked.
    """
    for item in fields(config):
        value, path = getattr(config, item.name), prefix + item.name
        if dataclasses.is_dataclass(value):
            check_numeric_ranges(value, path + ".")
        elif path in NUMERIC_RANGES and not in_range(path, value):
            raise ConfigError(f"{path}={value!r} is out of range: it must be {NUMERIC_RANGES[path]}; fix that "
                              "value (--set, the option, the preset or the YAML)")


def check_choice(name: str, value: Any, choices) -> None:
    """Raise :class:`ConfigError` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(str, choices))}")


def validate_model(model: Any) -> Any:
    """Check a :class:`~.model.ModelConfig` (``model.pe='lappe+rwse'`` is split into ``pe`` and ``se``
    first); return it."""
    if isinstance(model.pe, str) and "+" in model.pe:  # --set model.pe=lappe+rwse: the second is model.se
        first, _, second = model.pe.partition("+")
        if second not in SE_CHOICES[1:] or "+" in second:
            raise ConfigError(f"pe={model.pe!r}: a second encoding after '+' must be one of "
                              f"{', '.join(SE_CHOICES[1:])} (model.se)")
        model.pe, model.se = first, second
    check_numeric_ranges(model, "model.")
    validate_hetero(model.hetero, model)
    check_choice("mpnn", model.mpnn, MPNN_CHOICES)
    check_choice("attention", model.attention, ATTENTION_CHOICES)
    check_choice("pe", model.pe, PE_CHOICES)
    check_choice("norm", model.norm, NORM_CHOICES)
    check_choice("jk", model.jk, JK_CHOICES)
    for name in ("input_dropout", "feature_dropout", "local_dropout", "global_dropout", "external_dropout",
                 "ffn_dropout", "attn_dropout", "head_dropout"):
        value = getattr(model, name)
        if not 0.0 <= value < 1.0:
            raise ConfigError(f"{name}={value} must be in [0, 1); fix that value (--set or preset)")
    if not 0.0 <= model.input_gcn_weight < 1.0:
        raise ConfigError(f"input_gcn_weight={model.input_gcn_weight} must be in [0, 1) (the GCN branch's share of "
                          "what the head reads; 0: no branch)")
    check_choice("input_branch", model.input_branch, INPUT_BRANCH_CHOICES)
    check_choice("input_branch_mix", model.input_branch_mix, INPUT_BRANCH_MIX_CHOICES)
    if model.input_branch_hops < 1:
        raise ConfigError(f"input_branch_hops={model.input_branch_hops} must be at least 1 (the farthest "
                          "neighbourhood model.input_branch=hops reads)")
    if model.input_gcn_weight > 0 and model.input_branch_mix == "logits" and model.head != "node":
        raise ConfigError(f"input_branch_mix=logits mixes per-node outputs, but head={model.head!r}; set "
                          "model.input_branch_mix=hidden")
    if model.input_gcn_weight > 0 and (model.node_encoder != "linear" or model.graphormer.graph_token):
        raise ConfigError("input_gcn_weight > 0 convolves float node features (node_encoder=linear) without a "
                          "graph token; set model.input_gcn_weight=0")
    check_choice("geanet.scope", model.geanet.scope, SCOPE_CHOICES)
    check_choice("head", model.head, HEAD_CHOICES)
    check_choice("pooling", model.pooling, POOLING_CHOICES)
    check_choice("node_encoder", model.node_encoder, ENCODER_CHOICES)
    check_choice("edge_encoder", model.edge_encoder, EDGE_ENCODER_CHOICES)
    check_choice("se", model.se, SE_CHOICES)
    if model.se != "none":
        check_choice("se_model", model.se_model, PE_MODEL_CHOICES)
        if model.pe not in PES_BEFORE_SE:
            raise ConfigError(f"se={model.se!r} follows pe=lappe, signnet or none, not pe={model.pe!r}")
        if model.se_k < 1 or model.se_dim < 1 or model.se_layers < 1:
            raise ConfigError("se_k, se_dim and se_layers must be positive")
    if model.head == "sequence" and model.seq_len != 5:
        raise ConfigError(f"head=sequence predicts GraphGPS's max_seq_len=5 subtokens (ogbg-code2's loss and F1 "
                          f"read 5 positions); set seq_len=5 (got {model.seq_len})")
    if model.graphormer.graph_token and not model.graphormer.enable:
        raise ConfigError("graphormer.graph_token needs graphormer.enable=true")
    check_choice("activation", model.activation, ACTIVATION_CHOICES)
    if model.hidden_dim <= 0 or model.num_layers <= 0:
        raise ConfigError("hidden_dim and num_layers must be positive; fix the preset or --set value")
    if model.mpnn == "pna" and model.hidden_dim > 128:
        raise ConfigError(f"mpnn=pna takes edge features of width min(128, hidden_dim) (the reference's "
                          f"edge_dim), so hidden_dim={model.hidden_dim} must be at most 128")
    if (model.attention != "none" or model.mpnn == "gat") and model.hidden_dim % model.num_heads:
        raise ConfigError(
            f"num_heads={model.num_heads} does not divide hidden_dim={model.hidden_dim}; "
            "choose a head count that divides the width"
        )
    check_choice("geanet.variant", model.geanet.variant, GEANET_VARIANT_CHOICES)
    unit_size = model.geanet.unit_size
    if unit_size is not None and (not isinstance(unit_size, int) or isinstance(unit_size, bool)):
        raise ConfigError(f"geanet.unit_size must be an integer or null, got {unit_size!r}; "
                          "fix that value (--set or preset)")
    if model.external and (model.geanet.num_heads <= 0 or model.hidden_dim % model.geanet.num_heads):
        raise ConfigError(
            f"geanet.num_heads={model.geanet.num_heads} does not divide hidden_dim={model.hidden_dim}; "
            "choose a GEANet head count that divides the width"
        )
    if model.external and model.geanet.variant == "paper":
        if model.geanet_unit_size() <= 0:
            raise ConfigError(f"geanet.variant=paper needs geanet.unit_size={unit_size} > 0; fix it with --set")
    elif model.external and model.geanet_unit_size() * model.geanet.num_heads != model.hidden_dim:
        raise ConfigError(
            f"geanet.unit_size * geanet.num_heads = {unit_size}*{model.geanet.num_heads} "
            f"must equal hidden_dim={model.hidden_dim} (the reference's head layout); "
            f"set geanet.unit_size={model.hidden_dim // model.geanet.num_heads} or null (derived)"
        )
    if model.mpnn == "none" and model.attention == "none" and not model.external:
        raise ConfigError("a GEAET layer needs at least one branch: set mpnn, attention or external")
    check_choice("pe_model", model.pe_model, PE_MODEL_CHOICES)
    check_choice("signnet.model", model.signnet.model, SIGNNET_MODEL_CHOICES)
    if model.pe == "elstaticse" and model.pe_k != 10:
        raise ConfigError(f"pe=elstaticse has 10 statistics per node; set model.pe_k=10 (got {model.pe_k})")
    if model.pe == "signnet" and (model.signnet.phi_layers < 2 or model.signnet.rho_layers < 1):
        raise ConfigError("signnet.phi_layers must be >= 2 and signnet.rho_layers >= 1")
    if model.attention == "biased_transformer" and not (model.graphormer.enable and
                                                       not model.graphormer.degrees_only):
        raise ConfigError("attention=biased_transformer reads Graphormer's spatial bias; set "
                          "model.graphormer.enable=true and model.graphormer.degrees_only=false")
    if model.pe in CONCAT_PES and model.pe_dim >= model.hidden_dim:
        raise ConfigError(f"pe_dim={model.pe_dim} must be smaller than hidden_dim={model.hidden_dim}")
    if model.node_encoder == "ast" and (model.node_in_feats != 3 or len(model.node_vocab_sizes) != 3):
        raise ConfigError("node_encoder='ast' reads 3 columns (type, attribute, depth): set node_in_feats=3 and "
                          "three node_vocab_sizes")
    if model.head == "sequence" and model.head_layers != 1:
        raise ConfigError(f"head='sequence' has one linear layer per position (GraphGPS's ogb_code_graph); set "
                          f"head_layers=1 (got {model.head_layers})")
    if model.node_width() < 1:
        raise ConfigError(f"pe_dim + se_dim must be smaller than hidden_dim={model.hidden_dim}")
    if model.node_encoder == "embedding" and len(model.node_vocab_sizes) != model.node_in_feats:
        raise ConfigError("node_encoder='embedding' needs one vocabulary size per node feature column")
    if model.edge_encoder == "embedding" and len(model.edge_vocab_sizes) != model.edge_in_feats:
        raise ConfigError("edge_encoder='embedding' needs one vocabulary size per edge feature column")
    for side in ("node", "edge"):
        if getattr(model, f"{side}_encoder") == "typedict" and len(getattr(model, f"{side}_vocab_sizes")) != 1:
            raise ConfigError(f"{side}_encoder='typedict' embeds column 0 only: give one {side}_vocab_sizes entry")
    if model.head_layers < 1:
        raise ConfigError("head_layers must be at least 1")
    if model.head == "link" and model.out_feats != 1:
        raise ConfigError(f"head='link' scores a pair with one dot product, so out_feats must be 1, got "
                          f"{model.out_feats}")
    return model


def validate_hetero(hetero: Any, model: Any) -> None:
    """Check ``model.hetero`` (a :class:`~.model.HeteroConfig`) and what a heterograph model leaves out."""
    check_choice("hetero.geanet_type_scope", hetero.geanet_type_scope, TYPE_SCOPE_CHOICES)
    check_choice("hetero.local_weights", hetero.local_weights, LOCAL_WEIGHT_CHOICES)
    if not hetero.ntypes:
        return
    if len(hetero.node_in_feats) != len(hetero.ntypes) or len(hetero.edge_in_feats) != len(hetero.etypes):
        raise ConfigError("hetero.node_in_feats (edge_in_feats) needs one width per node (edge) type")
    for rel in hetero.etypes:
        parts = rel.split(":")
        if len(parts) != 3 or parts[0] not in hetero.ntypes or parts[2] not in hetero.ntypes:
            raise ConfigError(f"hetero.etypes entry {rel!r} must be 'src:rel:dst' with src and dst among "
                              f"{', '.join(hetero.ntypes)}")
    if model.jk != "none" or model.input_dropout or model.feature_dropout:
        raise ConfigError("a heterograph model has no model.jk, model.input_dropout or model.feature_dropout; "
                          "leave them at none / 0")
    if model.pe != "none":
        raise ConfigError(f"a heterograph model takes no positional encoding (model.pe={model.pe!r}); "
                          "set model.pe=none")
    if model.external and model.geanet.variant != "reference":
        raise ConfigError("a heterograph model has the reference's GEANet only; set model.geanet.variant=reference")
    check_choice("model.head (heterograph)", model.head, HETERO_HEADS)
    if hetero.local_weights == "typed" and model.mpnn not in ("gatedgcn", "none"):
        raise ConfigError(f"hetero.local_weights=typed is a GatedGCN, but model.mpnn={model.mpnn!r}; set "
                          "model.mpnn=gatedgcn or hetero.local_weights=relation")
    if model.head == "node" and hetero.target_ntype not in hetero.ntypes:
        raise ConfigError(f"a node head on a heterograph needs data.target_ntype among "
                          f"{', '.join(hetero.ntypes)}, got {hetero.target_ntype!r}")


def validate_train(train: Any) -> Any:
    """Check a :class:`~.train.TrainConfig`; return it."""
    check_numeric_ranges(train, "train.")
    check_choice("loss", train.loss, LOSS_CHOICES)
    check_choice("metric", train.metric, METRIC_CHOICES)
    if train.batch_size <= 0 or train.epochs <= 0 or train.lr <= 0:
        raise ConfigError("batch_size, epochs and lr must be positive")
    if train.warmup_epochs < 0:
        raise ConfigError("warmup_epochs must be >= 0")
    if train.eval_every < 1 or train.accumulate < 1:
        raise ConfigError("eval_every and accumulate must be >= 1")
    check_choice("schedule", train.schedule, ("cosine", "linear", "constant"))
    check_choice("optimizer", train.optimizer, ("adamw", "adam"))
    if train.patience < 0:
        raise ConfigError("train.patience must be >= 0 (epochs without validation improvement; 0: no early "
                          "stopping)")
    return train


def validate_run(run: Any) -> Any:
    """Check a :class:`~.run.RunConfig`: its model and training settings, device, processes, threads and
    data options; return it. Whether this machine has the CUDA device and the TensorBoard package the run
    asks for is checked where it runs (:func:`geaet_dgl.training.environment.check_environment`)."""
    validate_model(run.model)
    validate_train(run.train)
    if run.device not in DEVICE_CHOICES:
        raise ConfigError(f"device={run.device!r} is not one of {', '.join(DEVICE_CHOICES)}")
    if run.world_size < 1:
        raise ConfigError(f"world_size={run.world_size} must be at least 1")
    link = (run.model.head == "link", run.train.loss == "link_cross_entropy", run.train.metric == "mrr")
    if any(link) and not all(link):
        raise ConfigError(f"link prediction needs model.head=link, train.loss=link_cross_entropy and "
                          f"train.metric=mrr together (got head={run.model.head}, loss={run.train.loss}, "
                          f"metric={run.train.metric}); set all three or none")
    if run.threads is not None and (isinstance(run.threads, bool) or not isinstance(run.threads, int)
                                     or run.threads < 1):
        raise ConfigError(f"threads={run.threads!r} must be an integer >= 1 (--threads N; leave it out for "
                          "the cores this process may use)")
    if run.workers < 0 or run.checkpoint_every < 0 or run.train.seed < 0:
        raise ConfigError("workers, checkpoint_every and train.seed must be >= 0")
    if run.data.laplacian_norm is not None and run.data.laplacian_norm not in LAPLACIAN_NORMS:
        raise ConfigError(f"data.laplacian_norm={run.data.laplacian_norm!r} is not one of "
                          f"{', '.join(LAPLACIAN_NORMS)}")
    for name in ("limit_train", "limit_val", "limit_test"):
        value = getattr(run.data, name)
        if value is not None and value < 1:
            raise ConfigError(f"{name}={value} must be at least 1 (leave it out to use the whole split)")
    if run.data.task is not None and run.data.task not in GRAPH_FILE_TASKS + NODE_TASKS:
        raise ConfigError(f"data.task={run.data.task!r} is not one of {', '.join(GRAPH_FILE_TASKS + NODE_TASKS)}")
    if run.data.sampler not in SAMPLERS:
        raise ConfigError(f"data.sampler={run.data.sampler!r} is not one of {', '.join(SAMPLERS)} "
                          "(--sampler)")
    if isinstance(run.data.split_index, bool) or not isinstance(run.data.split_index, int) or \
            run.data.split_index < 0:
        raise ConfigError(f"data.split_index={run.data.split_index!r} must be an integer >= 0 (--split-index)")
    hops = run.data.feature_propagation
    if not isinstance(hops, int) or isinstance(hops, bool) or not 0 <= hops <= 16:
        raise ConfigError(f"data.feature_propagation={hops!r} must be an integer in 0..16 (rounds of GCN-normalised "
                          "propagation of the node features; 0: none)")
    if run.data.feature_norm not in FEATURE_NORMS:
        raise ConfigError(f"data.feature_norm={run.data.feature_norm!r} is not one of {', '.join(FEATURE_NORMS)}")
    if run.data.dist_scoring not in DIST_SCORING:
        raise ConfigError(f"data.dist_scoring={run.data.dist_scoring!r} is not one of {', '.join(DIST_SCORING)} "
                          "(how each trainer of a partitioned run scores its nodes)")
    if isinstance(run.data.num_parts, bool) or not isinstance(run.data.num_parts, int) or \
            run.data.num_parts < 0:
        raise ConfigError(f"data.num_parts={run.data.num_parts!r} must be an integer >= 0 (0: parts of about "
                          "1,000 nodes)")
    return run


def check_run_source(dataset: Optional[str], data_file: Optional[str], config: Optional[str],
                     preset: Optional[str], allow_changed_data: bool = False) -> None:
    """A new run needs its data (a dataset, a graph file or a reference config); a config excludes a preset;
    a new run reads its data as it is now (nothing changed since it trained)."""
    if allow_changed_data:
        raise OptionConflict("--allow-changed-data only concerns --resume (and eval); a new run reads its data as "
                             "it is now: drop it")
    if dataset is None and data_file is None and config is None:
        raise OptionConflict("--dataset is required (or --data-file PATH, --config FILE.yaml, or --resume RUN_DIR)")
    if config is not None and preset is not None:
        raise OptionConflict("--config gives the whole configuration; drop --preset")


def check_input_branch_takes_effect(model: Any, given: Any = ()) -> None:
    """Refuse raw-feature branch settings of a new run that would have no effect; ``given``: the setting names the
    user set (``model.input_branch``, ...): only those are refused, a preset's own are left as they are (with
    ``model.input_gcn_weight=0`` the preset's branch is simply off). A run's saved configuration is not checked:
    runs trained before this check still load. ``model``: a :class:`~.model.ModelConfig`."""
    given = {str(key).split(".")[-1] for key in given if str(key).startswith("model.") or "." not in str(key)}
    if "input_branch_hops" in given and model.input_branch not in ("hops", "appnp"):
        raise ConfigError(f"model.input_branch_hops={model.input_branch_hops} is read by model.input_branch=hops "
                          f"or appnp only, but input_branch={model.input_branch}; set model.input_branch=hops or "
                          "appnp, or drop input_branch_hops")
    if model.input_gcn_weight == 0:
        unused = [f"model.{name}={getattr(model, name)}" for name in ("input_branch", "input_branch_hops",
                                                                      "input_branch_mix") if name in given]
        if unused:
            raise ConfigError(f"{' and '.join(unused)} {'has' if len(unused) == 1 else 'have'} no effect: "
                              f"model.input_gcn_weight={model.input_gcn_weight} builds no raw-feature branch; give "
                              "the branch a weight (e.g. --set model.input_gcn_weight=0.5), or drop "
                              f"{' and '.join(u.split('=')[0] for u in unused)}")
