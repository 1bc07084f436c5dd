"""Read the reference's (GraphGPS / graphgym) YAML configuration files into our dataclasses.

``geaet-dgl train --config configs/GEAET/mnist.yaml`` runs what the reference's
``main.py --cfg configs/GEAET/mnist.yaml`` runs. The file is read as plain
YAML (no yacs); a key it leaves out means what it means in the reference:
graphgym's ``set_cfg`` defaults, then the reference's own
(``GEAET/config/*.py``), then graphgym's ``assert_cfg`` adjustments.

Every key falls in one of four groups:

- *mapped*: it changes the model, the data or the training, and becomes one
  of our fields (e.g. ``gt.dim_hidden`` -> ``model.hidden_dim``,
  ``GEANet.unit_size`` -> ``model.geanet.unit_size``, ``optim.base_lr`` ->
  ``train.lr``, ``posenc_LapPE.eigen.laplacian_norm`` ->
  ``data.laplacian_norm``); a value we cannot reproduce is a one-line
  :class:`~geaet_dgl.config.ConfigError` naming the key and what is supported;
- *ignored, logging or hardware* (``out_dir``, ``accelerator``, ``wandb.*``,
  ``train.ckpt_period``, ...): named in the log;
- *ignored, no effect on a GEAET network*: keys read only by other models,
  samplers or schedulers of graphgym (``gnn.agg``, ``gt.bigbird.*``,
  ``optim.momentum`` with AdamW, ...): named in the log;
- anything else is an unknown key: an error.

The fields of :class:`ModelConfig` that the built network does not read for
this configuration (the pooling of a node head, the PE sizes without a PE, the
dropout of a graphgym head) keep our dataclass defaults, so that a file and
the preset it was written from compare equal.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from ..data import schema as _schema
from ..errors import ConfigError, OptionConflict
from ..threads import default_threads
from ..config.model import GEANetConfig, GraphormerConfig, ModelConfig, SignNetConfig
from ..config.presets import Preset
from ..config.run import DataOptions, RunConfig, absolute_data_paths
from ..config.settings import apply_overrides, from_dict
from ..config.train import TrainConfig
from ..data.run_settings import check_graph_file_options, graph_file_data
from ..training.environment import check_environment

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class ReferencePreset:
    """The reference's configuration file (relative to its checkout) of one of our presets, and the input
    and output widths its ``main.py`` derives from the dataset (graphgym's ``cfg.share.dim_in`` / ``dim_out``)."""

    config_file: str
    dim_in: int
    dim_out: int


#: Our preset -> the reference's configuration of the same network: the one table that parity, timing
#: (``benchmark --against-pyg``) and ``compare`` read.
REFERENCE_PRESETS = {
    "mnist": ReferencePreset("configs/GEAET/mnist.yaml", 3, 10),
    "cifar10": ReferencePreset("configs/GEAET/CIFAR10.yaml", 5, 10),
    "pattern": ReferencePreset("configs/GEAET/pattern.yaml", 3, 1),  # graphgym: one logit for a binary task
    "peptides-struct": ReferencePreset("configs/GEAET/peptides-struct.yaml", 9, 11),
}

#: OGB's AtomEncoder / BondEncoder vocabularies (``ogb.utils.features.get_atom_feature_dims``).
OGB_ATOM_VOCAB = list(_schema.OGB_ATOM_VOCAB)
OGB_BOND_VOCAB = list(_schema.OGB_BOND_VOCAB)


@dataclass(frozen=True)
class _Dataset:
    """What the reference derives from a dataset: our name, input widths, outputs and task type.

    ``task`` is graphgym's ``dataset.task`` the reference's configs give it (``graph`` for the inductive
    datasets, ``node`` for the one-graph node sets)."""

    name: str
    node_in_feats: int
    edge_in_feats: int
    out_feats: int
    task_type: str
    node_encoders: Tuple[str, ...]  # the reference's base node encoder names that fit
    edge_encoders: Tuple[str, ...]
    task: str = "graph"


def _from_schema(name: str, node_encoders: Tuple[str, ...], edge_encoders: Tuple[str, ...]) -> _Dataset:
    """A reference dataset whose widths are our schema row's (:mod:`geaet_dgl.data.schema`)."""
    row = _schema.schema_of(name)
    return _Dataset(name, row.node_in_feats, row.edge_in_feats, row.out_feats, row.task_type,
                    node_encoders, edge_encoders, "node" if row.task == "transductive-node" else "graph")


_NODE_SET = (("LinearNode",), ("DummyEdge",))
#: (dataset.format, dataset.name) -> the dataset. ``out_feats`` is graphgym's ``share.dim_out``
#: (one logit for a binary task).
DATASETS: Dict[Tuple[str, str], _Dataset] = {
    ("PyG-GNNBenchmarkDataset", "MNIST"): _Dataset("mnist", 3, 1, 10, "classification", ("LinearNode",),
                                                   ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "CIFAR10"): _Dataset("cifar10", 5, 1, 10, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "PATTERN"): _Dataset("pattern", 3, 1, 1, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "CLUSTER"): _Dataset("cluster", 7, 1, 6, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("OGB", "peptides-structural"): _Dataset("peptides-struct", 9, 3, 11, "regression", ("Atom",), ("Bond",)),
    ("OGB", "peptides-functional"): _Dataset("peptides-func", 9, 3, 10, "classification_multilabel", ("Atom",),
                                             ("Bond",)),
    ("PyG-VOCSuperpixels", "edge_wt_region_boundary"): _Dataset("voc", 14, 2, 21, "classification",
                                                                ("VOCNode",), ("VOCEdge",)),
    # GraphGPS's COCO-SP config names VOC's encoders: they normalise the input with VOC's statistics
    ("PyG-COCOSuperpixels", "edge_wt_region_boundary"): _Dataset("coco", 14, 2, 81, "classification",
                                                                 ("COCONode", "VOCNode"), ("COCOEdge", "VOCEdge")),
    ("PyG-ZINC", "subset"): _Dataset("zinc", 1, 1, 1, "regression", ("TypeDictNode",), ("TypeDictEdge",)),
    ("OGB", "ogbg-molhiv"): _from_schema("ogbg-molhiv", ("Atom",), ("Bond",)),
    ("OGB", "ogbg-molpcba"): _from_schema("ogbg-molpcba", ("Atom",), ("Bond",)),
    ("OGB", "ogbg-ppa"): _from_schema("ogbg-ppa", ("PPANode",), ("PPAEdge",)),
    ("OGB", "ogbg-code2"): _from_schema("ogbg-code2", ("ASTNode",), ("ASTEdge",)),
    ("OGB", "PCQM4Mv2-full"): _from_schema("pcqm4mv2", ("Atom",), ("Bond",)),
    ("OGB", "PCQM4Mv2-subset"): _from_schema("pcqm4mv2-subset", ("Atom",), ("Bond",)),
    ("OGB", "PCQM4Mv2-inference"): _from_schema("pcqm4mv2-inference", ("Atom",), ("Bond",)),
    ("OGB", "PCQM4Mv2Contact-shuffle"): _from_schema("pcqm-contact", ("Atom",), ("Bond",)),
    ("PyG-MalNetTiny", "LocalDegreeProfile"): _from_schema("malnet-tiny", ("LinearNode",), ("DummyEdge",)),
    ("PyG-Actor", "none"): _from_schema("actor", *_NODE_SET),
    **{("PyG-WebKB", name): _from_schema(name, *_NODE_SET) for name in ("cornell", "texas", "wisconsin")},
    **{("PyG-WikipediaNetwork", name): _from_schema(name, *_NODE_SET) for name in ("chameleon", "squirrel")},
    **{("PyG-Planetoid", name): _from_schema(name.lower(), *_NODE_SET) for name in ("Cora", "CiteSeer", "PubMed")},
}
#: Datasets whose PyG graphs carry no ``edge_attr`` (Graphormer's path encoding is off there).
NO_EDGE_ATTR = ("pattern", "cluster")

#: graphgym's defaults (``torch_geometric.graphgym.config.set_cfg``, PyG 2.5.3) overwritten by the
#: reference's ``GEAET/config/*.py``, for every key the mapping reads.
REFERENCE_DEFAULTS: Dict[str, Any] = {
    "seed": 0, "metric_best": "auto", "metric_agg": "argmax", "run_multiple_splits": [],
    "dataset.format": "PyG", "dataset.name": "none", "dataset.task": "node", "dataset.task_type": "classification",
    "dataset.transductive": True, "dataset.split_mode": "standard", "dataset.split_index": 0,
    "dataset.node_encoder": False, "dataset.node_encoder_name": "Atom", "dataset.node_encoder_bn": True,
    "dataset.edge_encoder": False, "dataset.edge_encoder_name": "Bond", "dataset.edge_encoder_bn": True,
    "dataset.node_encoder_num_types": 0, "dataset.edge_encoder_num_types": 0, "dataset.slic_compactness": 10,
    "dataset.transform": "none", "dataset.remove_feature": False, "dataset.to_undirected": False,
    "dataset.infer_link_label": "None",
    "train.mode": "custom", "train.batch_size": 16, "train.eval_period": 10, "train.sampler": "full_batch",
    "val.sampler": "full_batch",
    "model.type": "gnn", "model.loss_fun": "cross_entropy", "model.size_average": "mean", "model.thresh": 0.5,
    "model.edge_decoding": "dot", "model.graph_pooling": "add",
    "gnn.head": "default", "gnn.layers_pre_mp": 0, "gnn.layers_post_mp": 0, "gnn.dim_inner": 16,
    "gnn.act": "relu", "gnn.dropout": 0.0, "gnn.l2norm": True,
    "gt.layer_type": "SANLayer", "gt.dropout": 0.0, "gt.use_ffn": True, "gt.layers": 3, "gt.n_heads": 8, "gt.dim_hidden": 64,
    "gt.ffn_dropout": 0.0, "gt.global_dropout": 0.0, "gt.local_dropout": 0.0, "gt.external_dropout": 0.0,
    "gt.local_out_act": False, "gt.attn_dropout": 0.0, "gt.layer_norm": False, "gt.batch_norm": True,
    "GEANet.edge_unit": False, "GEANet.shared_unit": False, "GEANet.n_heads": 4, "GEANet.unit_size": 4,
    "optim.optimizer": "adam", "optim.base_lr": 0.01, "optim.weight_decay": 5e-4, "optim.scheduler": "cos",
    "optim.max_epoch": 200, "optim.batch_accumulation": 1, "optim.num_warmup_epochs": 50,
    "optim.clip_grad_norm": False, "optim.clip_grad_norm_value": 1.0,
    "pretrained.dir": "",
    "posenc_GraphormerBias.enable": False, "posenc_GraphormerBias.node_degrees_only": False,
    "posenc_GraphormerBias.dim_pe": 0, "posenc_GraphormerBias.num_spatial_types": None,
    "posenc_GraphormerBias.num_in_degrees": None, "posenc_GraphormerBias.num_out_degrees": None,
    "graphormer.num_heads": 4, "graphormer.input_dropout": 0.0, "graphormer.use_graph_token": True,
    "posenc_SignNet.phi_out_dim": 4, "posenc_SignNet.phi_hidden_dim": 64,
}
for _pe in ("posenc_LapPE", "posenc_SignNet", "posenc_RWSE", "posenc_HKdiagSE", "posenc_ElstaticSE"):
    REFERENCE_DEFAULTS.update({f"{_pe}.enable": False, f"{_pe}.model": "none", f"{_pe}.dim_pe": 16,
                               f"{_pe}.layers": 3, f"{_pe}.n_heads": 4, f"{_pe}.post_layers": 0,
                               f"{_pe}.raw_norm_type": "none", f"{_pe}.pass_as_var": False})
for _pe in ("posenc_LapPE", "posenc_SignNet", "posenc_EquivStableLapPE"):
    REFERENCE_DEFAULTS.update({f"{_pe}.eigen.laplacian_norm": "sym", f"{_pe}.eigen.eigvec_norm": "L2",
                               f"{_pe}.eigen.max_freqs": 10})
for _pe in ("posenc_RWSE", "posenc_HKdiagSE", "posenc_ElstaticSE"):
    REFERENCE_DEFAULTS.update({f"{_pe}.kernel.times": [], f"{_pe}.kernel.times_func": ""})
REFERENCE_DEFAULTS.update({"posenc_EquivStableLapPE.enable": False, "posenc_EquivStableLapPE.raw_norm_type": "none",
                           "posenc_ElstaticSE.kernel.times_func": "range(10)"})
#: The reference's node-encoder name of each of our ``model.pe`` values.
PE_NAMES = {"EquivStableLapPE": "eslappe", "LapPE": "lappe", "RWSE": "rwse", "SignNet": "signnet",
            "HKdiagSE": "hkdiagse", "ElstaticSE": "elstaticse"}

#: Keys about output, logging, checkpoint files or hardware: they never change the result.
LOGGING_KEYS = {
    "out_dir", "cfg_dest", "print", "accelerator", "devices", "device", "num_workers", "num_threads", "round",
    "tensorboard_each_run", "tensorboard_agg", "view_emb", "gpu_mem", "benchmark", "name_tag", "run_dir",
    "run_id", "params", "custom_metrics", "mem.inplace", "dataset.dir", "dataset.cache_save",
    "dataset.cache_load", "train.ckpt_period", "train.enable_ckpt", "train.auto_resume", "train.epoch_resume",
    "train.ckpt_clean", "train.ckpt_best", "train.skip_train_eval", "train.eval_smoothing_metrics",
}
LOGGING_PREFIXES = ("wandb.", "share.")

#: Keys that a GEAET network with these settings never reads (other graphgym models, layers, samplers,
#: schedulers): ignored, and named in the log.
NO_EFFECT_KEYS = {
    "dataset.split", "dataset.shuffle_split", "dataset.split_dir", "dataset.encoder", "dataset.encoder_name", "dataset.encoder_bn",
    "dataset.encoder_dim", "dataset.edge_dim", "dataset.edge_train_mode", "dataset.edge_message_ratio",
    "dataset.edge_negative_sampling_ratio", "dataset.resample_disjoint", "dataset.resample_negative",
    "dataset.tu_simple", "dataset.location", "dataset.label_table", "dataset.label_column",
    "dataset.transductive",  # graphgym's assert_cfg forces False for graph tasks
    "train.sample_node", "train.node_per_graph", "train.radius", "train.iter_per_epoch", "train.walk_length",
    "train.neighbor_sizes", "val.sample_node", "val.node_per_graph", "val.radius",
    "model.match_upper",
    "gnn.layers_mp", "gnn.layer_type", "gnn.stage_type", "gnn.skip_every", "gnn.agg", "gnn.normalize_adj",
    "gnn.msg_direction", "gnn.self_msg", "gnn.att_heads", "gnn.att_final_linear", "gnn.att_final_linear_bn",
    "gnn.keep_edge", "gnn.clear_feature", "gnn.residual", "gnn.dim_edge",
    # graphgym's post-MP heads build their hidden blocks from a fresh LayerConfig (no BatchNorm, no dropout,
    # ReLU, L2 norm): these model settings never reach them
    "gnn.batchnorm", "gnn.l2norm",
    "gt.full_graph", "gt.gamma", "gt.pna_degrees", "gt.residual",
    "optim.momentum", "optim.steps", "optim.lr_decay", "optim.reduce_factor", "optim.schedule_patience",
    "optim.min_lr",  # read by the reduce-on-plateau scheduler only
    "bn.eps", "bn.mom",  # read by graphgym's encoder BatchNorm only (node/edge_encoder_bn, unsupported when on)
    "pretrained.freeze_main", "pretrained.reset_prediction_head",  # read only with a pretrained.dir
    "posenc_LapPE.n_heads",  # the Transformer PE model only
    "posenc_EquivStableLapPE.eigen.laplacian_norm",  # never read: the reference reads posenc_LapPE's
    "example_arg", "example_group.example_arg",
}
NO_EFFECT_PREFIXES = ("gt.bigbird.", "graphormer.", "posenc_SignNet.", "posenc_HKdiagSE.", "posenc_ElstaticSE.",
                      "posenc_GraphormerBias.")

_LOCAL = {"CustomGatedGCN": "gatedgcn", "GCN": "gcn", "GIN": "gin", "GINE": "gine", "GAT": "gat", "PNA": "pna",
          "GENConv": "genconv", "None": "none"}
_GLOBAL = {"Transformer": "transformer", "BiasedTransformer": "biased_transformer", "Performer": "performer",
           "None": "none"}
_EXTERNAL = {"GEANet": True, "None": False}
_HEADS = {"default": "graph", "graph": "graph", "mlp_graph": "mlp_graph", "san_graph": "san_graph",
          "inductive_node": "node", "node": "node", "inductive_edge": "link", "ogb_code_graph": "sequence"}
_POOLING = {"mean": "mean", "add": "sum", "max": "max", "graph_token": "first"}
_METRICS = {"accuracy": "accuracy", "accuracy-SBM": "balanced_accuracy", "mae": "mae", "ap": "average_precision",
            "f1": "f1_macro", "auc": "roc_auc", "mrr": "mrr"}
_MINIMISED = ("mae",)


@dataclass
class ReferenceConfig:
    """A reference YAML read into our configuration.

    ``preset`` holds the model and training settings; ``data`` the
    :class:`~geaet_dgl.config.DataOptions` fields it fixes (``dataset`` and,
    with a Laplacian PE, ``laplacian_norm``); ``ignored`` every key of
    the file we do not use, with the reason.
    """

    preset: Preset
    data: Dict[str, Any]
    ignored: List[Tuple[str, str]] = field(default_factory=list)
    #: ``pretrained.dir``'s folder (the reference's run: config.yaml, ckpt/), or None
    pretrained: Optional[str] = None
    #: graphgym's ``train.mode``: ``custom`` (train) or ``inference-only`` (evaluate the pretrained model)
    mode: str = "custom"


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``{"gt": {"layers": 5}}`` -> ``{"gt.layers": 5}`` (dicts only; lists are values)."""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _is_logging(key: str) -> bool:
    return key in LOGGING_KEYS or key.startswith(LOGGING_PREFIXES) or key.endswith(".pass_as_var")


def _is_no_effect(key: str) -> bool:
    return key in NO_EFFECT_KEYS or key.startswith(NO_EFFECT_PREFIXES)


def _same_kind(value: Any, default: Any) -> bool:
    """Whether ``value`` has the type of the reference's ``default`` (an int may stand for a float)."""
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        if isinstance(value, str):  # YAML 1.1 reads 1e-5 as text; the reference's yacs takes it as a number
            try:
                number = float(value)
            except ValueError:
                return False
            return isinstance(default, float) or number.is_integer()
        return isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (isinstance(default, float) or isinstance(value, int))
    return isinstance(value, type(default))


def _kind_name(default: Any) -> str:
    return {bool: "true or false", int: "an integer", float: "a number", str: "text", list: "a list",
            dict: "a mapping"}.get(type(default), type(default).__name__)


class _Reader:
    """The file's values over the reference's defaults; records every key read."""

    def __init__(self, values: Dict[str, Any], where: str):
        self.values, self.where, self.used, self.last = values, where, set(), ""

    def __call__(self, key: str) -> Any:
        self.used.add(key)
        self.last = key
        if key not in self.values:
            if key not in REFERENCE_DEFAULTS:
                raise ConfigError(f"{self.where}: {key} is missing; the reference's configs set it (see its "
                                  "configs/GEAET/*.yaml)")
            return REFERENCE_DEFAULTS[key]
        value, default = self.values[key], REFERENCE_DEFAULTS.get(key)
        if default is not None and not _same_kind(value, default):
            raise ConfigError(f"{self.where}: {key}={value!r} must be {_kind_name(default)} like the reference's "
                              f"default {default!r}")
        return value

    def given(self, key: str) -> bool:
        return key in self.values

    def fail(self, key: str, message: str) -> ConfigError:
        value = self(key)
        return ConfigError(f"{self.where}: {key}={value!r} {message}")

    def require(self, key: str, allowed: Tuple[Any, ...], why: str = "geaet-dgl reproduces only") -> Any:
        value = self(key)
        if value not in allowed:
            raise self.fail(key, f"changes the result and is not supported; {why} "
                                 f"{' / '.join(repr(a) for a in allowed)}")
        return value


def read_reference_config(path: "os.PathLike | str") -> ReferenceConfig:
    """Read a reference / GraphGPS YAML file (see the module docstring).

    Raises
    ------
    ConfigError
        The file cannot be read, has a key the reference does not know, or a
        result-changing value geaet-dgl cannot reproduce (one line naming it).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            tree = yaml.safe_load(handle)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--config {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                          f"{exc.start}); save it as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read --config {path} ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path} is not valid YAML ({' '.join(str(exc).split())[:200]})") from exc
    if not isinstance(tree, Mapping):
        raise ConfigError(f"--config {path} must hold a mapping of reference keys (e.g. gt: {{layers: 5}})")
    values = flatten(tree)
    for key, value in values.items():
        if not isinstance(value, Mapping) and any(default.startswith(f"{key}.") for default in REFERENCE_DEFAULTS):
            raise ConfigError(f"{os.path.basename(path)}: {key} must be a section of settings (e.g. {key}: "
                              f"{{layers: 5}}), got {value!r}; compare with the reference's configs/GEAET/*.yaml")
    return config_from_values(values, where=os.path.basename(path), base_dir=os.path.dirname(path))


#: What GraphGPS's ``load_pretrained_model_cfg`` takes from the pretrained run's config.yaml: every
#: ``posenc_*`` and ``gt.*`` key, and ``gnn.*`` but the head's four; these must agree with the file.
PRETRAINED_STRICT = ("model.type", "dataset.node_encoder", "dataset.node_encoder_name", "dataset.node_encoder_bn",
                     "dataset.edge_encoder", "dataset.edge_encoder_name", "dataset.edge_encoder_bn", "gnn.act")
PRETRAINED_KEEP = ("gnn.head", "gnn.layers_post_mp", "gnn.act", "gnn.dropout")


def pretrained_folder(values: Mapping[str, Any], where: str, base_dir: str = "") -> Optional[str]:
    """The folder ``pretrained.dir`` names (relative: to the working directory, else the config's folder),
    checked to hold the reference's ``config.yaml`` and ``ckpt/``; None when the file names none."""
    name = values.get("pretrained.dir") or ""
    if not name:
        return None
    if not isinstance(name, str):
        raise ConfigError(f"{where}: pretrained.dir={name!r} must be text (a folder)")
    candidates = [name] if os.path.isabs(name) else [name, os.path.join(base_dir, name)]
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "config.yaml")) and _has_checkpoint_folder(folder):
            return os.path.abspath(folder)
    raise ConfigError(f"{where}: pretrained.dir={name!r} is not a reference run folder here (it needs config.yaml "
                      f"and <seed>/ckpt/<epoch>.ckpt or ckpt/<epoch>.ckpt; looked in {', '.join(os.path.abspath(c) for c in candidates)}); "
                      "download GraphGPS's pretrained model into it or fix the path")


def _has_checkpoint_folder(folder: str) -> bool:
    """``folder/ckpt/`` (a graphgym run) or ``folder/<seed>/ckpt/`` (GraphGPS's pretrained layout) exists."""
    if os.path.isdir(os.path.join(folder, "ckpt")):
        return True
    return os.path.isdir(folder) and any(entry.isdigit() and os.path.isdir(os.path.join(folder, entry, "ckpt"))
                                         for entry in os.listdir(folder))


def _with_pretrained(values: Dict[str, Any], where: str, folder: str) -> Dict[str, Any]:
    """``values`` with the pretrained run's model settings merged in, as GraphGPS's
    ``load_pretrained_model_cfg`` merges them."""
    path = os.path.join(folder, "config.yaml")
    try:
        with open(path) as handle:
            pretrained = flatten(yaml.safe_load(handle) or {})
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: pretrained.dir: cannot read {path} ({' '.join(str(exc).split())[:160]})") \
            from exc
    for key in PRETRAINED_STRICT:
        mine, theirs = values.get(key, REFERENCE_DEFAULTS.get(key)), pretrained.get(key, REFERENCE_DEFAULTS.get(key))
        if mine != theirs:
            raise ConfigError(f"{where}: {key}={mine!r} differs from the pretrained model's {theirs!r} "
                              f"({path}); GraphGPS requires them equal")
    merged = {k: v for k, v in values.items() if not k.startswith(("posenc_", "gt."))
              and not (k.startswith("gnn.") and k not in PRETRAINED_KEEP)}
    merged.update({k: v for k, v in pretrained.items() if k.startswith(("posenc_", "gt."))
                   or (k.startswith("gnn.") and k not in PRETRAINED_KEEP)})
    return merged


def config_from_values(values: Dict[str, Any], where: str = "config", base_dir: str = "") -> ReferenceConfig:
    """Dotted reference keys -> :class:`ReferenceConfig` (see :func:`read_reference_config`).

    A ``pretrained.dir`` (relative: to the working directory, else ``base_dir``) must hold the reference's
    run (``config.yaml``, ``ckpt/``): its model settings are merged in as GraphGPS does, and
    ``data['pretrained']`` names the folder."""
    folder = pretrained_folder(values, where, base_dir)
    if folder is not None:
        values = _with_pretrained(values, where, folder)
    get = _Reader(values, where)
    if folder is not None:
        get.used.update({"pretrained.dir", "pretrained.reset_prediction_head", "pretrained.freeze_main"})
    try:
        ref = _config_from_values(values, where, get)
        if folder is not None:
            ref.pretrained = folder
            ref.preset.train.freeze_main = bool(values.get("pretrained.freeze_main", False))
        return ref
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        shown = f" (near {get.last}={values.get(get.last)!r})" if get.last in values else ""
        raise ConfigError(f"{where}: a value has the wrong type{shown}: {' '.join(str(exc).split())[:160]}; "
                          "compare with the reference's configs/GEAET/*.yaml") from exc


def _config_from_values(values: Dict[str, Any], where: str, get: "_Reader") -> ReferenceConfig:
    dataset = _dataset(get)
    model, data = _model(get, dataset), {"dataset": dataset.name}
    laplacian = _laplacian_norm(get, model)
    if laplacian is not None:
        data["laplacian_norm"] = laplacian
    train = _train(get, dataset)
    index = get("dataset.split_index")
    if index:
        data["split_index"] = index
    encoders = (str(get("dataset.node_encoder_name")).split("+")[0], get("dataset.edge_encoder_name"))
    if dataset.name == "coco" and encoders != ("COCONode", "COCOEdge"):
        if encoders != ("VOCNode", "VOCEdge"):
            raise get.fail("dataset.edge_encoder_name", "must come from the node encoder's dataset (VOCNode with "
                                                        "VOCEdge, COCONode with COCOEdge)")
        data["statistics"] = "voc"  # VOC's encoders standardise with PascalVOC-SP's statistics
    ignored = []
    for key in sorted(values):
        if key in get.used:
            continue
        if _is_logging(key):
            ignored.append((key, "logging/hardware"))
        elif _is_no_effect(key) or key in REFERENCE_DEFAULTS:
            ignored.append((key, "no effect on this GEAET network"))
        else:
            raise ConfigError(f"{where}: unknown key {key!r}: not a reference/graphgym setting geaet-dgl knows; "
                              "remove it or check its spelling")
    preset = Preset(name=dataset.name, dataset=dataset.name, model=model.validate(), train=train.validate(),
                    note=f"read from the reference's {where}")
    return ReferenceConfig(preset=preset, data=data, ignored=ignored, mode=get("train.mode"))


def _dataset(get: _Reader) -> _Dataset:
    key = (get("dataset.format"), get("dataset.name"))
    if key not in DATASETS:
        known = ", ".join(f"{f}/{n}" for f, n in DATASETS)
        raise ConfigError(f"{get.where}: dataset.format/name={key[0]}/{key[1]} is not a dataset --config "
                          f"supports; supported: {known}")
    dataset = DATASETS[key]
    get.require("dataset.task", (dataset.task,), f"GraphGPS marks {dataset.name}")
    if get("dataset.task_type") != dataset.task_type:
        raise get.fail("dataset.task_type", f"does not match {dataset.name} (it is {dataset.task_type!r})")
    get.require("dataset.split_mode", ("standard",), "the datasets' own splits:")
    splits = _schema.schema_of(dataset.name).num_splits
    index = get("dataset.split_index")
    if not isinstance(index, int) or not 0 <= index < splits:
        raise get.fail("dataset.split_index", f"must be 0 .. {splits - 1}: {dataset.name} has "
                                              f"{splits} public split{'s' if splits > 1 else ''}")
    get.require("run_multiple_splits", ([],))
    get.require("dataset.transform", ("none",))
    get.require("dataset.remove_feature", (False,))
    get.require("dataset.to_undirected", (False,))
    get.require("dataset.infer_link_label", ("None",))
    if dataset.name in ("voc", "coco"):
        get.require("dataset.slic_compactness", (30,), "the LRGB files geaet-dgl reads are built with")
    else:
        get.used.add("dataset.slic_compactness")
    get.require("train.sampler", ("full_batch",))
    get.require("val.sampler", ("full_batch",))
    return dataset


def _pe(get: _Reader) -> Tuple[str, str, bool]:
    """(base node encoder name, our pe, GraphormerBias on) from ``dataset.node_encoder_name`` and the
    ``posenc_*`` switches."""
    if not get("dataset.node_encoder"):  # no encoder: graphgym's GNNPreMP (layers_pre_mp) reads the raw features
        get.used.update({"dataset.node_encoder_name", "dataset.node_encoder_bn"})
        for name in ("posenc_EquivStableLapPE", "posenc_LapPE", "posenc_RWSE", "posenc_SignNet", "posenc_HKdiagSE",
                     "posenc_ElstaticSE", "posenc_GraphormerBias"):
            if get(f"{name}.enable"):
                raise get.fail(f"{name}.enable", "needs dataset.node_encoder: True (the PE is a node encoder)")
        if get("gnn.layers_pre_mp") != 1:
            raise get.fail("gnn.layers_pre_mp", "must be 1 without a node encoder (GraphGPS needs the features "
                                                "mapped to gt.dim_hidden; geaet-dgl builds one pre-MP layer)")
        return "PreMP", "none", False
    get.require("dataset.node_encoder_bn", (False,))
    parts = str(get("dataset.node_encoder_name")).split("+")
    graphormer = "GraphormerBias" in parts
    named = [p for p in parts if p in PE_NAMES]
    bases = [p for p in parts if p not in PE_NAMES and p != "GraphormerBias"]
    # GraphGPS concatenates up to three encoders in the file's order: <Base>, then each PE's channels
    two = len(named) == 2 and named[0] in ("LapPE", "SignNet") and named[1] == "RWSE" and not graphormer
    if (len(named) > 1 and not two) or len(bases) > 1 or parts.count("GraphormerBias") > 1 or \
            (graphormer and parts.index("GraphormerBias") != len(bases)) or \
            (named and parts.index(named[0]) < len(bases)):
        raise get.fail("dataset.node_encoder_name", f"is not supported; use <Base>, <Base>+<PE>, <PE>, "
                                                    f"<Base>+LapPE+RWSE, <Base>+SignNet+RWSE or "
                                                    f"<Base>+GraphormerBias[+<PE>], a PE of {', '.join(PE_NAMES)}")
    for name in ("posenc_EquivStableLapPE", "posenc_LapPE", "posenc_RWSE", "posenc_SignNet", "posenc_HKdiagSE",
                 "posenc_ElstaticSE", "posenc_GraphormerBias"):
        wanted = name in {f"posenc_{n}" for n in named} or (graphormer and name == "posenc_GraphormerBias")
        if bool(get(f"{name}.enable")) != wanted:
            raise get.fail(f"{name}.enable", f"disagrees with dataset.node_encoder_name="
                                             f"{get('dataset.node_encoder_name')!r} (set it to {wanted})")
    pe = "+".join(PE_NAMES[n] for n in named) if named else "none"
    return (bases[0] if bases else "LinearNode"), pe, graphormer


def _laplacian_norm(get: _Reader, model: ModelConfig) -> Optional[str]:
    """The Laplacian the data must be decomposed with: the reference reads ``posenc_LapPE.eigen.laplacian_norm``
    for LapPE *and* EquivStableLapPE."""
    if model.pe not in ("eslappe", "lappe", "signnet"):
        return None
    key = "posenc_SignNet.eigen.laplacian_norm" if model.pe == "signnet" else "posenc_LapPE.eigen.laplacian_norm"
    norm = str(get(key)).lower()
    if norm not in ("sym", "none"):
        raise get.fail(key, "is not supported; use sym or none")
    return norm


def _model(get: _Reader, dataset: _Dataset) -> ModelConfig:
    gps = get.require("model.type", ("GEAET", "GPSModel"), "--config reads GEAET and GraphGPS configurations:") \
        == "GPSModel"
    config = ModelConfig()  # fields the network does not read keep these defaults
    config.node_in_feats, config.edge_in_feats, config.out_feats = (dataset.node_in_feats, dataset.edge_in_feats,
                                                                    dataset.out_feats)
    base, pe, graphormer = _pe(get)
    config.pe, _, second = pe.partition("+")
    if base not in dataset.node_encoders and base != "PreMP":
        raise get.fail("dataset.node_encoder_name", f"does not fit {dataset.name}; use "
                                                    f"{' or '.join(dataset.node_encoders)} (with a PE)")
    if base == "Atom":
        config.node_encoder, config.node_vocab_sizes = "embedding", list(OGB_ATOM_VOCAB)
    elif base == "TypeDictNode":
        config.node_encoder, config.node_vocab_sizes = "typedict", [get("dataset.node_encoder_num_types")]
    elif base == "PPANode":  # one learned vector for every node (ogbg-ppa's nodes carry no features)
        config.node_encoder = "constant"
    elif base == "PreMP":  # graphgym's GNNPreMP: Linear without bias -> BatchNorm -> activation
        if not get("gnn.batchnorm") or get("gnn.act") != "relu" or get("gnn.dropout"):
            raise get.fail("gnn.batchnorm", "geaet-dgl builds the pre-MP layer with BatchNorm, ReLU and no dropout "
                                            "(gnn.batchnorm: True, gnn.act: relu, gnn.dropout: 0.0)")
        if not get("gnn.l2norm"):
            raise get.fail("gnn.l2norm", "geaet-dgl's pre-MP layer scales each node's features to unit L2 norm, as "
                                         "graphgym's default gnn.l2norm: True does; set it to True")
        config.node_encoder = "premp"
    elif base == "ASTNode":  # type, attribute, depth (capped at 20) embeddings, summed
        config.node_encoder, config.node_vocab_sizes = "embedding", list(_schema.CODE2_NODE_VOCAB)
    edge = get("dataset.edge_encoder_name")
    if not get("dataset.edge_encoder"):  # graphgym builds no edge encoder: GCN and friends read no edges
        config.edge_encoder = "none"
        get.used.update({"dataset.edge_encoder_bn"})
    else:
        get.require("dataset.edge_encoder_bn", (False,))
        if edge not in dataset.edge_encoders:
            raise get.fail("dataset.edge_encoder_name", f"does not fit {dataset.name}; use "
                                                        f"{' or '.join(dataset.edge_encoders)}")
        if edge == "DummyEdge":
            config.edge_encoder = "constant"
        elif edge == "Bond":
            config.edge_encoder, config.edge_vocab_sizes = "embedding", list(OGB_BOND_VOCAB)
        elif edge == "TypeDictEdge":
            config.edge_encoder, config.edge_vocab_sizes = "typedict", [get("dataset.edge_encoder_num_types")]
        elif edge == "ASTEdge":  # AST or next-token edge, direction
            config.edge_encoder, config.edge_vocab_sizes = "embedding", list(_schema.CODE2_EDGE_VOCAB)
    _pe_settings(get, config)
    if second:  # <Base>+LapPE+RWSE: the kernel encoding's settings go to model.se_*
        kernel = ModelConfig(pe=second)
        _pe_settings(get, kernel)
        config.se, config.se_k, config.se_dim = second, kernel.pe_k, kernel.pe_dim
        config.se_raw_norm, config.se_model = kernel.pe_raw_norm, kernel.pe_model
        config.se_layers = kernel.pe_layers if kernel.pe_model == "mlp" else 1

    layer_type = str(get("gt.layer_type")).split("+")
    shape, parts = ("LOCAL+GLOBAL", 2) if gps else ("LOCAL+GLOBAL+EXTERNAL", 3)
    if len(layer_type) != parts or layer_type[0] not in _LOCAL or layer_type[1] not in _GLOBAL \
            or (not gps and layer_type[2] not in _EXTERNAL):
        raise get.fail("gt.layer_type", f"is not supported; use {shape} with LOCAL one of {', '.join(_LOCAL)}; "
                                        f"GLOBAL one of {', '.join(_GLOBAL)}"
                                        + ("" if gps else "; EXTERNAL GEANet or None"))
    config.mpnn, config.attention = _LOCAL[layer_type[0]], _GLOBAL[layer_type[1]]
    config.external = False if gps else _EXTERNAL[layer_type[2]]
    _graphormer(get, config, dataset, graphormer)
    config.performer_pad_keys = config.attention == "performer"  # the reference pads graphs to a dense batch
    config.hidden_dim, config.num_layers, config.num_heads = get("gt.dim_hidden"), get("gt.layers"), get("gt.n_heads")
    if get("gnn.dim_inner") != config.hidden_dim:
        raise get.fail("gnn.dim_inner", f"must equal gt.dim_hidden={config.hidden_dim} (the reference refuses "
                                        "anything else)")
    get.require("gnn.layers_pre_mp", (1,) if config.node_encoder == "premp" else (0,))
    if gps:  # GraphGPS's GPSLayer: one gt.dropout after every branch and in the FFN (and inside GatedGCN)
        dropout = float(get("gt.dropout"))
        config.local_dropout = config.global_dropout = config.ffn_dropout = dropout
        config.attn_dropout = float(get("gt.attn_dropout"))
    else:
        for ours, theirs in (("local_dropout", "local_dropout"), ("global_dropout", "global_dropout"),
                             ("external_dropout", "external_dropout"), ("ffn_dropout", "ffn_dropout"),
                             ("attn_dropout", "attn_dropout")):
            setattr(config, ours, float(get(f"gt.{theirs}")))
        config.use_ffn, config.local_out_act = bool(get("gt.use_ffn")), bool(get("gt.local_out_act"))
    norms = (bool(get("gt.batch_norm")), bool(get("gt.layer_norm")))
    if norms == (True, True) or (norms == (False, False) and not gps):
        raise get.fail("gt.batch_norm", f"with gt.layer_norm={norms[1]} is not supported; set exactly one of "
                                        "gt.batch_norm and gt.layer_norm to True"
                                        + ("" if gps else " (GEAET's layer normalises every branch)"))
    config.norm = "batch" if norms[0] else "layer" if norms[1] else "none"  # GPSLayer: neither is no norm
    config.activation = get.require("gnn.act", ("relu", "gelu"))
    _head(get, config)
    if gps:
        return config
    heads, unit_size = get("GEANet.n_heads"), get("GEANet.unit_size")
    if isinstance(heads, int) and isinstance(unit_size, int) and heads * unit_size == config.hidden_dim:
        unit_size = None  # what our configuration derives from the width, as the presets leave it
    config.geanet = GEANetConfig(num_heads=heads, unit_size=unit_size,
                                 edge_unit=bool(get("GEANet.edge_unit")),
                                 shared_unit=bool(get("GEANet.shared_unit")), scope="batch")
    if config.external and config.geanet.shared_unit and not config.geanet.edge_unit:
        raise get.fail("GEANet.shared_unit", "without GEANet.edge_unit fails in the reference (it builds share_U "
                                             "only with the edge unit); set GEANet.edge_unit: True")
    return config


def _graphormer(get: _Reader, config: ModelConfig, dataset: _Dataset, enabled: bool) -> None:
    """Graphormer's encodings (``...+GraphormerBias`` in ``dataset.node_encoder_name``)."""
    if not enabled:
        if config.attention == "biased_transformer":
            raise get.fail("gt.layer_type", "reads Graphormer's attention bias; add +GraphormerBias to "
                                            "dataset.node_encoder_name and set posenc_GraphormerBias.enable: True")
        return
    degrees_only = bool(get("posenc_GraphormerBias.node_degrees_only"))
    get.require("posenc_GraphormerBias.dim_pe", (0,), "GraphormerBias adds no PE channels:")
    graph_token = bool(get("graphormer.use_graph_token"))
    sizes = {}
    for key in ("num_spatial_types", "num_in_degrees", "num_out_degrees"):
        value = get(f"posenc_GraphormerBias.{key}")
        if key == "num_spatial_types" and degrees_only:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise get.fail(f"posenc_GraphormerBias.{key}", "must be a positive integer (the reference needs it)")
        sizes[key] = value
    if not degrees_only:
        if config.attention != "biased_transformer":
            get.used.update({"graphormer.num_heads"})  # the bias is computed and never read
        elif get("graphormer.num_heads") != config.num_heads:
            raise get.fail("graphormer.num_heads", f"must equal gt.n_heads={config.num_heads} (the bias has one "
                                                   "row per attention head)")
        if dataset.name not in NO_EDGE_ATTR + ("zinc",):
            raise get.fail("posenc_GraphormerBias.node_degrees_only", f"on {dataset.name} also encodes the edge "
                                                                      "features along shortest paths, which the "
                                                                      "reference reads as one integer type per "
                                                                      "edge (ZINC's) and fails on these; set it "
                                                                      "to True")
        if dataset.name == "zinc":  # its bond types, encoded along the shortest paths
            sizes["num_edge_types"] = get("dataset.edge_encoder_num_types")
            if not isinstance(sizes["num_edge_types"], int) or sizes["num_edge_types"] < 1:
                raise get.fail("dataset.edge_encoder_num_types", "must be a positive integer (the reference's "
                                                                 "path encoding embeds ZINC's bond types)")
    config.graphormer = GraphormerConfig(enable=True, degrees_only=degrees_only,
                                         spatial_types=sizes.get("num_spatial_types", 20),
                                         num_in_degrees=sizes["num_in_degrees"],
                                         num_out_degrees=sizes["num_out_degrees"],
                                         num_edge_types=sizes.get("num_edge_types", 0),
                                         input_dropout=float(get("graphormer.input_dropout")),
                                         graph_token=graph_token)
    if graph_token and config.pe != "none":
        raise get.fail("graphormer.use_graph_token", "with a PE after GraphormerBias fails in the reference (the "
                                                     "token adds a row per graph the PE does not have); set it "
                                                     "to False or drop the PE")



def _pe_settings(get: _Reader, config: ModelConfig) -> None:
    if config.pe == "eslappe":
        config.pe_k = config.pe_dim = get("posenc_EquivStableLapPE.eigen.max_freqs")
        get.require("posenc_EquivStableLapPE.eigen.eigvec_norm", ("L2",))
        get.require("posenc_EquivStableLapPE.raw_norm_type", ("none",))
    elif config.pe == "lappe":
        get.require("posenc_LapPE.model", ("DeepSet",))
        get.require("posenc_LapPE.eigen.eigvec_norm", ("L2",))
        get.require("posenc_LapPE.raw_norm_type", ("none",))
        get.require("posenc_LapPE.post_layers", (0,))
        config.pe_k, config.pe_dim = get("posenc_LapPE.eigen.max_freqs"), get("posenc_LapPE.dim_pe")
        config.pe_layers = get("posenc_LapPE.layers")
    elif config.pe == "signnet":
        model = str(get("posenc_SignNet.model"))
        if model not in ("DeepSet", "MLP"):
            raise get.fail("posenc_SignNet.model", "is not supported; use DeepSet or MLP")
        get.require("posenc_SignNet.eigen.eigvec_norm", ("L2",))
        config.pe_k, config.pe_dim = get("posenc_SignNet.eigen.max_freqs"), get("posenc_SignNet.dim_pe")
        config.signnet = SignNetConfig(model=model.lower(), phi_layers=max(2, get("posenc_SignNet.layers")),
                                       phi_hidden_dim=get("posenc_SignNet.phi_hidden_dim"),
                                       phi_out_dim=get("posenc_SignNet.phi_out_dim"),
                                       rho_layers=get("posenc_SignNet.post_layers"))
        if config.signnet.rho_layers < 1:
            raise get.fail("posenc_SignNet.post_layers", "must be >= 1 (the reference refuses 0: rho needs a layer)")
        get.used.update({"posenc_SignNet.raw_norm_type", "posenc_SignNet.n_heads"})  # SignNet reads neither
    elif config.pe in ("rwse", "hkdiagse", "elstaticse"):
        name = {"rwse": "posenc_RWSE", "hkdiagse": "posenc_HKdiagSE", "elstaticse": "posenc_ElstaticSE"}[config.pe]
        model = str(get(f"{name}.model")).lower()
        if model not in ("linear", "mlp"):
            raise get.fail(f"{name}.model", "is not supported; use Linear or mlp")
        config.pe_model, config.pe_dim = model, get(f"{name}.dim_pe")
        config.pe_k = _kernel_times(get, name, start=None if config.pe == "elstaticse" else 1)
        if config.pe == "elstaticse" and config.pe_k != 10:
            raise get.fail(f"{name}.kernel.times_func", "must give 10 times: the reference's ElstaticSE encoder "
                                                        "reads its 10 statistics through len(kernel.times)")
        raw = str(get(f"{name}.raw_norm_type")).lower()
        if raw not in ("none", "batchnorm"):
            raise get.fail(f"{name}.raw_norm_type", "is not supported; use none or BatchNorm")
        config.pe_raw_norm = raw == "batchnorm"
        if model == "mlp":
            config.pe_layers = get(f"{name}.layers")
        get.used.update({f"{name}.layers", f"{name}.n_heads", f"{name}.post_layers"})  # read by other models only


def _kernel_times(get: _Reader, name: str, start: Optional[int] = 1) -> int:
    """Number of kernel times of ``name``: ``kernel.times`` or ``kernel.times_func``; they must be
    ``start, start + 1, ...`` (RWSE and HKdiagSE: steps/times 1..K); ``start=None``: only counted (ElstaticSE)."""
    times = list(get(f"{name}.kernel.times") or [])
    func = str(get(f"{name}.kernel.times_func") or "")
    if not times:
        match = re.fullmatch(r"\s*range\(\s*(?:(-?\d+)\s*,\s*)?(-?\d+)\s*\)\s*", func)
        if match is None:
            raise get.fail(f"{name}.kernel.times_func", f"is not supported; use range({start or 1},K+{start or 1})")
        times = list(range(int(match.group(1) or 0), int(match.group(2))))
    if start is None and times:
        return len(times)
    if not times or times != list(range(start, start + len(times))):
        raise get.fail(f"{name}.kernel.times", f"is not supported; geaet-dgl uses times {start}..K "
                                               f"(times_func: range({start},K+{start}))")
    return len(times)


def _head(get: _Reader, config: ModelConfig) -> None:
    head = get("gnn.head")
    if head not in _HEADS:
        raise get.fail("gnn.head", f"is not supported; use one of {', '.join(_HEADS)}")
    config.head = _HEADS[head]
    # graphgym's assert_cfg raises layers_post_mp to at least 1
    config.head_layers = max(1, int(get("gnn.layers_post_mp")))
    if config.head == "sequence":
        if config.head_layers != 1:
            raise get.fail("gnn.layers_post_mp", "must be 1: GraphGPS's ogb_code_graph head has one linear map "
                                                 "per position")
        config.seq_len = int(_schema.CODE2_SEQ_LEN)
    if config.head == "san_graph":  # GraphGPS builds it with its default L=2, whatever layers_post_mp says
        config.head_layers = 3
        get.used.add("gnn.layers_post_mp")
    if config.head in ("graph", "mlp_graph", "san_graph", "sequence"):
        pooling = get("model.graph_pooling")
        if pooling not in _POOLING:
            raise get.fail("model.graph_pooling", f"is not supported; use one of {', '.join(_POOLING)}")
        config.pooling = _POOLING[pooling]
    if config.head == "mlp_graph":  # GraphGPS's mlp_graph head is the only one that reads gnn.dropout
        config.head_dropout = float(get("gnn.dropout"))
    else:
        get.used.add("gnn.dropout")


def _train(get: _Reader, dataset: _Dataset) -> TrainConfig:
    train = TrainConfig()
    modes = ("custom", "inference-only") if get("pretrained.dir") else ("custom",)
    get.require("train.mode", modes, "the reference's custom training loop (or, with pretrained.dir, "
                                     "inference-only):")
    eval_period = get("train.eval_period")
    if not isinstance(eval_period, int) or isinstance(eval_period, bool) or eval_period < 1:
        raise get.fail("train.eval_period", "must be a positive integer")
    inference = get("train.mode") == "inference-only"  # nothing is optimised: the optimiser is not read
    optimizer = get.require("optim.optimizer", ("adamW", "adam"))  # graphgym's adam: torch's Adam, coupled L2
    train.optimizer = "adam" if optimizer == "adam" else "adamw"
    scheduler = get.require("optim.scheduler", ("cosine_with_warmup", "linear_with_warmup")
                            + (("cos",) if inference else ()))
    train.schedule = "cosine" if scheduler == "cosine_with_warmup" else "linear"
    accumulate = get("optim.batch_accumulation")
    if not isinstance(accumulate, int) or isinstance(accumulate, bool) or accumulate < 1:
        raise get.fail("optim.batch_accumulation", "must be a positive integer")
    train.accumulate = accumulate
    get.require("model.size_average", ("mean",))
    get.require("model.thresh", (0.5,))
    get.require("model.edge_decoding", ("dot",))
    train.batch_size, train.seed = get("train.batch_size"), get("seed")
    train.lr, train.weight_decay = float(get("optim.base_lr")), float(get("optim.weight_decay"))
    train.epochs, train.warmup_epochs = get("optim.max_epoch"), get("optim.num_warmup_epochs")
    train.eval_every = eval_period
    train.clip_grad_norm = float(get("optim.clip_grad_norm_value")) if get("optim.clip_grad_norm") else None
    if not get("optim.clip_grad_norm"):
        get.used.add("optim.clip_grad_norm_value")
    loss = get("model.loss_fun")
    if loss == "cross_entropy":
        loss = {"classification_multilabel": "bce", "subtoken_prediction": "subtoken_cross_entropy"}.get(
            dataset.task_type, "cross_entropy")
        if _schema.schema_of(dataset.name).task == "link":  # GraphGPS's inductive_edge: scored pairs
            loss = "link_cross_entropy"
    elif loss not in ("weighted_cross_entropy", "l1"):
        raise get.fail("model.loss_fun", "is not supported; use cross_entropy, weighted_cross_entropy or l1")
    train.loss = loss
    metric = get("metric_best")
    if metric not in _METRICS:
        raise get.fail("metric_best", f"is not supported (auto picks the epoch by validation loss); use one of "
                                      f"{', '.join(_METRICS)}")
    train.metric = _METRICS[metric]
    if dataset.name == "ogbg-code2" and metric == "f1":  # OGB's F1 of the predicted subtokens
        train.metric = "f1_subtoken"
    direction = "argmin" if train.metric in _MINIMISED else "argmax"
    if get("metric_agg") != direction:
        raise get.fail("metric_agg", f"does not fit metric_best={metric!r}; use {direction}")
    return train


def reference_run_config(path: "os.PathLike | str", overrides: Optional[Mapping[str, Any]] = None,
                         data: Optional[Mapping[str, Any]] = None, device: str = "cpu", workers: int = 0,
                         checkpoint_every: int = 0, threads: Optional[int] = None, sync_bn: bool = True,
                         tensorboard: bool = False):
    """A :class:`~geaet_dgl.config.RunConfig` from a reference YAML, then ``--set``-style ``overrides``.

    ``data`` gives the :class:`~geaet_dgl.config.DataOptions` fields the file
    does not fix (``data_dir``, ``limit_*``, ...); the ignored keys are logged. ``device`` to
    ``tensorboard``: the RunConfig fields of the same names.
    """
    if (data or {}).get("data_file") is not None:
        raise OptionConflict(f"--config {os.fspath(path)} trains on its own dataset; --data-file does not replace "
                             "it: pass the graph file as --dataset PATH.bin with --config (its model then reads "
                             "the file), or drop --config")
    ref = read_reference_config(path)
    data = dict(data or {})
    overrides = dict(overrides or {})
    data_settings = {k[len("data."):]: v for k, v in overrides.items() if k.startswith("data.")}
    file_options, file_settings = graph_file_data(data.get("dataset"), {k: v for k, v in data.items()
                                                                        if k != "dataset"}, ref.preset)
    if file_options is not None:  # the user's own graph file replaces the file's dataset
        if ref.preset.model.edge_encoder == "none":  # the file's model reads no edges: it stays so
            file_settings = {k: v for k, v in file_settings.items()
                             if k not in ("model.edge_encoder", "model.edge_vocab_sizes")}
        fixed = {"laplacian_norm": ref.data["laplacian_norm"]} if "laplacian_norm" in ref.data else {}
        data = {**dataclasses.asdict(file_options), **fixed}
        ref.data = {}
    for reason in ("logging/hardware", "no effect on this GEAET network"):
        keys = [k for k, why in ref.ignored if why == reason]
        if keys:
            log.info("--config %s: ignored (%s): %s", os.path.basename(os.fspath(path)), reason, ", ".join(keys))
    preset = apply_overrides(ref.preset, {**file_settings,
                                          **{k: v for k, v in overrides.items() if not k.startswith("data.")}})
    options = absolute_data_paths(from_dict(DataOptions, {**ref.data, **data, **data_settings}, where="data."))
    check_graph_file_options(options)
    run = RunConfig(preset=preset.name, model=preset.model, train=preset.train, data=options, device=device,
                    workers=workers, checkpoint_every=checkpoint_every,
                    threads=default_threads() if threads is None else threads, sync_bn=sync_bn,
                    tensorboard=tensorboard)
    return check_environment(run.validate())
