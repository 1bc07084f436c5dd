"""The reference's (GraphGPS / graphgym) configuration keys as tables, and the reader that looks them up.

:data:`REFERENCE_PRESETS` (our preset -> the reference's config file), :data:`DATASETS` (the reference's
``dataset.format`` / ``dataset.name`` -> our dataset and its widths), :data:`REFERENCE_DEFAULTS` (graphgym's
defaults under the reference's), and the keys the reader ignores (:data:`LOGGING_KEYS`, :data:`NO_EFFECT_KEYS`).
:class:`KeyReader` reads a file's values over those defaults, checking each value's type and recording every
key read; :mod:`.reference_fields` maps what it reads to our fields, :mod:`.reference_yaml` reads the file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from ..data import schema as _schema
from ..errors import ConfigError


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
class ReferenceDataset:
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


def _from_schema(name: str, node_encoders: Tuple[str, ...], edge_encoders: Tuple[str, ...]) -> ReferenceDataset:
    """A reference dataset whose widths are our schema row's (:mod:`geaet_dgl.data.schema`)."""
    row = _schema.schema_of(name)
    return ReferenceDataset(name, row.node_in_feats, row.edge_in_feats, row.out_feats, row.task_type,
                    node_encoders, edge_encoders, "node" if row.task == "transductive-node" else "graph")


_NODE_SET = (("LinearNode",), ("DummyEdge",))
#: (dataset.format, dataset.name) -> the dataset. ``out_feats`` is graphgym's ``share.dim_out``
#: (one logit for a binary task).
DATASETS: Dict[Tuple[str, str], ReferenceDataset] = {
    ("PyG-GNNBenchmarkDataset", "MNIST"): ReferenceDataset("mnist", 3, 1, 10, "classification", ("LinearNode",),
                                                   ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "CIFAR10"): ReferenceDataset("cifar10", 5, 1, 10, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "PATTERN"): ReferenceDataset("pattern", 3, 1, 1, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("PyG-GNNBenchmarkDataset", "CLUSTER"): ReferenceDataset("cluster", 7, 1, 6, "classification", ("LinearNode",),
                                                     ("LinearEdge", "DummyEdge")),
    ("OGB", "peptides-structural"): ReferenceDataset("peptides-struct", 9, 3, 11, "regression", ("Atom",), ("Bond",)),
    ("OGB", "peptides-functional"): ReferenceDataset("peptides-func", 9, 3, 10, "classification_multilabel", ("Atom",),
                                             ("Bond",)),
    ("PyG-VOCSuperpixels", "edge_wt_region_boundary"): ReferenceDataset("voc", 14, 2, 21, "classification",
                                                                ("VOCNode",), ("VOCEdge",)),
    # GraphGPS's COCO-SP config names VOC's encoders: they normalise the input with VOC's statistics
    ("PyG-COCOSuperpixels", "edge_wt_region_boundary"): ReferenceDataset("coco", 14, 2, 81, "classification",
                                                                 ("COCONode", "VOCNode"), ("COCOEdge", "VOCEdge")),
    ("PyG-ZINC", "subset"): ReferenceDataset("zinc", 1, 1, 1, "regression", ("TypeDictNode",), ("TypeDictEdge",)),
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


class KeyReader:
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
