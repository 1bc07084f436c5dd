"""The full configuration of a training run, and loading the data it names.

A :class:`RunConfig` is a preset (model + training settings, after
``--set`` overrides) plus where the data comes from and where the run
executes. It is what ``config.json`` holds and what a checkpoint carries, so
a checkpoint alone is enough to rebuild the model and its data.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

import torch

from ..config import (ConfigError, ModelConfig, OptionConflict, TrainConfig, apply_overrides, from_dict,
                      parse_setting_value)
from ..data import DataError, DatasetSplits, load_dataset
from ..data.own_files.graph_files import GRAPH_FILE, TASKS, is_graph_file_name, split_indices
from ..data.own_files.hetero_files import inspect_file, is_heterograph
from ..data.identity import check_unchanged, file_identity, fingerprint_changes, splits_fingerprint
from ..data.input_transform import apply_input_transform, propagate_transform, row_normalize_transform
from ..data.nodes.node_graph import NODE_TASKS, NodeGraph, inspect_node_graph, is_node_graph_file
from ..data.nodes.node_sets import is_node_set, node_set_spec
from ..data.registry import LOADERS
from ..data.encodings.positional_encoding import LAPLACIAN_NORMS
from ..data.encodings.se_cache import StructuralSpec, attach_structural
from ..data.validation import check_labels, node_label_sizes, validate_splits, warn_label_gaps
from ..presets import get_preset, preset_names
from .node_batches import SAMPLERS
from ..threads import default_threads

DEVICE_CHOICES = ("cpu", "cuda")

#: Layout version of a run configuration (``config_version`` in ``config.json`` and checkpoints). 1: before
#: the key existed (no ``tensorboard``, ``threads``, ``model.geanet.variant``, ``data.laplacian_norm``, graph-file
#: fields); 2: this layout. :func:`migrate_run_dict` reads every older version.
CONFIG_VERSION = 2

#: Datasets without a preset of their own train with this preset by default.
DEFAULT_PRESETS = {"synthetic": "mnist", GRAPH_FILE: "geaet", "pcqm4mv2-subset": "pcqm4mv2",
                   "pcqm4mv2-inference": "pcqm4mv2"}
#: Transforms of one graph's node features as read (``data.feature_norm``): none, or each row divided by its sum.
FEATURE_NORMS = ("none", "row")

#: The default preset of a graph file holding one graph with node masks, and of a named node set
#: (``cora``, ``actor``, ...) that has no preset of its own.
NODE_GRAPH_PRESET = "geaet-node"


def default_preset(dataset: str) -> str:
    """The preset a run on ``dataset`` takes unless told: the dataset's own (a preset of the same name),
    else :data:`DEFAULT_PRESETS`' entry, else :data:`NODE_GRAPH_PRESET` for a named node set."""
    if dataset in DEFAULT_PRESETS:
        return DEFAULT_PRESETS[dataset]
    if is_node_set(dataset) and dataset.lower() not in preset_names():
        return NODE_GRAPH_PRESET
    return dataset


@dataclass
class DataOptions:
    """Which dataset, where it lives, and how much of each split to use.

    ``limit_*`` keep the first N graphs of a split (None: all of it).
    ``mnist_images`` / ``cifar_images`` are raw-image folders (MNIST IDX files,
    ``cifar-10-batches-py``) used only to build missing superpixel files.
    ``generate`` builds a missing PATTERN/CLUSTER dataset offline with the
    benchmark's SBM generator; ``depth`` is TreeNeighbourMatch's radius r.
    Set them with ``--set data.generate=true`` / ``--set data.depth=3``.

    ``dataset='file'``: the user's own graphs (``geaet_dgl.data.own_files.graph_files``)
    in ``data_file`` (absolute path), for ``task`` (recorded even when
    inferred), split by ``split_file`` or at random into the ``split``
    fractions (default 0.8/0.1/0.1) with ``split_seed``. ``target_ntype`` is
    the node type whose labels a heterograph file's node task predicts
    (``geaet_dgl.data.own_files.hetero_files``).

    What the run's data was, recorded when it starts and checked whenever the
    run reads its data again (``eval``, ``--resume``, ``predict``; see
    :mod:`geaet_dgl.data.identity`): ``file_identity`` (graph files: size,
    graph count, SHA-256 of the content), ``split_indices`` (graph files: the
    train/val/test indices, used instead of re-splitting) and ``fingerprint``
    (every dataset: per split the graph count and a hash of the graphs' sizes
    and labels). ``input_transform`` is what the loader did to the stored
    features (:mod:`geaet_dgl.data.input_transform`), applied again by
    ``predict`` to graphs as the dataset's files store them.

    ``laplacian_norm`` is the Laplacian the (ES)LapPE eigenvectors come from:
    ``sym`` or ``none`` (``L = D - A``); ``None`` leaves the loader's own
    default (the reference config's for that dataset). ``--config`` sets it
    from the file's ``posenc_LapPE.eigen.laplacian_norm``.

    ``sampler`` and ``num_parts`` cut one graph with node masks into training
    batches (:mod:`~.node_batches`): ``full`` (the whole graph every step),
    ``cluster`` (``num_parts`` METIS partitions, ``train.batch_size`` of them
    per step) or ``random`` (the nodes shuffled into ``num_parts`` parts,
    ``train.batch_size`` parts per step, their induced subgraph);
    ``num_parts=0`` takes parts of about 1,000 nodes. Graph-level data ignores both.

    ``split_index`` is the public split a named node set trains on (``cora``:
    its one split; ``actor``: 0..9 of geom-gcn's; see
    :mod:`geaet_dgl.data.nodes.node_sets`); the sets without a published split
    (Amazon, Coauthor) are split 60/20/20 at random with ``split_seed``.

    ``feature_norm`` transforms one graph's float node features as they are
    read: ``none``, or ``row`` (each node's features divided by their sum,
    GCN's preprocessing of bag-of-words features). ``feature_propagation=K``
    then replaces them by ``(D^-1/2 (A + I) D^-1/2)^K X`` (SGC's precomputed
    propagation: the encoder reads each node's smoothed neighbourhood). Both
    are recorded in ``input_transform`` and applied again by ``eval`` and
    ``predict``. A preset may set them (:attr:`~geaet_dgl.config.Preset.data`).
    """

    dataset: str = "mnist"
    data_dir: str = "data"
    mnist_images: Optional[str] = None
    cifar_images: Optional[str] = None
    limit_train: Optional[int] = None
    limit_val: Optional[int] = None
    limit_test: Optional[int] = None
    generate: bool = False
    depth: int = 3
    data_file: Optional[str] = None
    task: Optional[str] = None
    split_file: Optional[str] = None
    split: Optional[List[float]] = None
    split_seed: int = 0
    target_ntype: Optional[str] = None
    laplacian_norm: Optional[str] = None
    file_identity: Optional[Dict[str, Any]] = None
    split_indices: Optional[Dict[str, List[int]]] = None
    fingerprint: Optional[Dict[str, Any]] = None
    input_transform: Optional[Dict[str, Any]] = None
    sampler: str = "full"
    #: PascalVOC-SP / COCO-SP: whose input statistics standardise the features (None: the dataset's own;
    #: ``voc`` for GraphGPS's COCO config, which names VOC's encoders).
    statistics: Optional[str] = None
    num_parts: int = 0
    split_index: int = 0
    feature_norm: str = "none"
    feature_propagation: int = 0

    @property
    def name(self) -> str:
        """The dataset's name for run directories: the file's stem for a graph file; ``<set>-split<K>`` for
        public split K > 0 of a named node set."""
        if self.dataset == GRAPH_FILE and self.data_file:
            return os.path.splitext(os.path.basename(self.data_file))[0]
        if self.split_index:
            return f"{self.dataset}-split{self.split_index}"
        return self.dataset


@dataclass
class RunConfig:
    """Everything that defines a run.

    ``checkpoint_every`` > 0 also writes ``last.pt`` every that many training
    steps inside an epoch (0: only at the end of each epoch).
    ``world_size`` is the number of data-parallel processes that train the run
    (set by the launcher; ``train.batch_size`` is per process) and ``sync_bn``
    whether they synchronise BatchNorm statistics (see ``distributed.py``).
    ``threads`` is the CPU threads the run computes with, all its processes
    together (torch, DGL and BLAS pools; see :mod:`geaet_dgl.threads`); ``None``
    until resolved to the cores the training process may use.
    ``tensorboard`` also writes TensorBoard event files to the run directory
    (see ``tensorboard_log.py``).
    """

    preset: str = "mnist"
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    data: DataOptions = field(default_factory=DataOptions)
    device: str = "cpu"
    workers: int = 0
    checkpoint_every: int = 0
    world_size: int = 1
    sync_bn: bool = True
    threads: Optional[int] = None
    tensorboard: bool = False

    def validate(self) -> "RunConfig":
        self.model.validate()
        self.train.validate()
        if self.device not in DEVICE_CHOICES:
            raise ConfigError(f"device={self.device!r} is not one of {', '.join(DEVICE_CHOICES)}")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError("device=cuda but no CUDA device is available; use --device cpu")
        if self.world_size < 1:
            raise ConfigError(f"world_size={self.world_size} must be at least 1")
        link = (self.model.head == "link", self.train.loss == "link_cross_entropy", self.train.metric == "mrr")
        if any(link) and not all(link):
            raise ConfigError(f"link prediction needs model.head=link, train.loss=link_cross_entropy and "
                              f"train.metric=mrr together (got head={self.model.head}, loss={self.train.loss}, "
                              f"metric={self.train.metric}); set all three or none")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or self.threads < 1):
            raise ConfigError(f"threads={self.threads!r} must be an integer >= 1 (--threads N; leave it out for "
                              "the cores this process may use)")
        if self.workers < 0 or self.checkpoint_every < 0 or self.train.seed < 0:
            raise ConfigError("workers, checkpoint_every and train.seed must be >= 0")
        if self.data.laplacian_norm is not None and self.data.laplacian_norm not in LAPLACIAN_NORMS:
            raise ConfigError(f"data.laplacian_norm={self.data.laplacian_norm!r} is not one of "
                              f"{', '.join(LAPLACIAN_NORMS)}")
        for name in ("limit_train", "limit_val", "limit_test"):
            value = getattr(self.data, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name}={value} must be at least 1 (leave it out to use the whole split)")
        if self.data.task is not None and self.data.task not in TASKS + NODE_TASKS:
            raise ConfigError(f"data.task={self.data.task!r} is not one of {', '.join(TASKS + NODE_TASKS)}")
        if self.data.sampler not in SAMPLERS:
            raise ConfigError(f"data.sampler={self.data.sampler!r} is not one of {', '.join(SAMPLERS)} "
                              "(--sampler)")
        if isinstance(self.data.split_index, bool) or not isinstance(self.data.split_index, int) or \
                self.data.split_index < 0:
            raise ConfigError(f"data.split_index={self.data.split_index!r} must be an integer >= 0 (--split-index)")
        hops = self.data.feature_propagation
        if not isinstance(hops, int) or isinstance(hops, bool) or not 0 <= hops <= 16:
            raise ConfigError(f"data.feature_propagation={hops!r} must be an integer in 0..16 (rounds of GCN-normalised "
                              "propagation of the node features; 0: none)")
        if self.data.feature_norm not in FEATURE_NORMS:
            raise ConfigError(f"data.feature_norm={self.data.feature_norm!r} is not one of {', '.join(FEATURE_NORMS)}")
        if isinstance(self.data.num_parts, bool) or not isinstance(self.data.num_parts, int) or \
                self.data.num_parts < 0:
            raise ConfigError(f"data.num_parts={self.data.num_parts!r} must be an integer >= 0 (0: parts of about "
                              "1,000 nodes)")
        if self.tensorboard:
            from .tensorboard_log import require_tensorboard

            require_tensorboard()
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The configuration as nested dicts, with its layout's ``config_version``."""
        return {"config_version": CONFIG_VERSION, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunConfig":
        """Read a configuration of any layout version (see :func:`migrate_run_dict`) and validate it."""
        return from_dict(cls, migrate_run_dict(data)).validate()


def migrate_run_dict(data: Mapping[str, Any]) -> Dict[str, Any]:
    """A run configuration of layout ``config_version`` 1 or :data:`CONFIG_VERSION` -> the fields of this layout.

    Version 1 differs only by fields added since: they read as their defaults
    (``tensorboard`` off, ``threads`` resolved when the run continues,
    ``model.geanet.variant='reference'``, ``data.laplacian_norm`` the loader's),
    which is what those runs computed. ``config_version`` itself is dropped.

    Raises
    ------
    ConfigError
        A version newer than this package reads, or not a mapping.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"a run configuration must be a mapping, got {type(data).__name__}")
    data = dict(data)
    version = data.pop("config_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= CONFIG_VERSION:
        raise ConfigError(f"run configuration version {version!r} is not one this geaet-dgl reads "
                          f"(1..{CONFIG_VERSION}); a newer geaet-dgl wrote it: upgrade geaet-dgl")
    return data


def normalised_run_dict(data: Mapping[str, Any]) -> Dict[str, Any]:
    """``data`` (any layout version) as this version writes it, in JSON form (lists, not tuples), every field
    present: two configurations compare equal exactly when they describe the same run."""
    run = from_dict(RunConfig, migrate_run_dict(data))
    return json.loads(json.dumps(run.to_dict(), default=str))


def _data_dependent_settings(options: DataOptions, preset_name: str, preset: Optional[Any] = None) -> Dict[str, Any]:
    """Model settings the data fixes: TreeNeighbourMatch of depth r has 2^r classes and, as Alon & Yahav
    train it, r + 1 layers (so messages from every leaf reach the root); a graph file fixes the widths,
    encoders, head and loss (:func:`~.graph_file_run.graph_file_settings`) and its task is recorded."""
    if options.dataset.lower() == "tree" and preset_name == "tree":
        return {"model.out_feats": 2 ** options.depth, "model.num_layers": options.depth + 1}
    if is_node_set(options.dataset):
        return _node_set_settings(options, preset_name)
    if options.dataset == GRAPH_FILE:
        from .graph_file_run import graph_file_settings

        if not options.data_file:
            raise ConfigError("dataset 'file' needs the graph file: pass --dataset PATH.bin or --data-file PATH")
        masked = is_node_graph_file(options.data_file)  # one graph with node masks: they are the split
        if masked:
            info = inspect_node_graph(options.data_file, options.task, options.target_ntype)
        else:
            info = inspect_file(options.data_file, options.task, options.target_ntype)
        options.task = info.task
        options.file_identity = file_identity(options.data_file, info.num_graphs)  # the run is pinned to this file
        if not masked:
            options.split_indices = split_indices(info.num_graphs, options.data_file, options.split_file,
                                                  options.split, options.split_seed)
        return graph_file_settings(info, preset if preset is not None else get_preset(preset_name))
    return {}


def graph_file_data(dataset: Optional[str], data: Dict[str, Any], preset: Any) -> Tuple[DataOptions, Dict[str, Any]]:
    """(data options, model settings the file fixes) when ``dataset`` / ``data['data_file']`` name a graph file
    that replaces the data of ``preset`` (a reference config's); ``(None, {})`` otherwise."""
    data = dict(data)
    name = _graph_file_options(dataset, data)
    if name != GRAPH_FILE:
        return None, {}
    options = from_dict(DataOptions, {**data, "dataset": GRAPH_FILE}, where="data.")
    check_graph_file_options(options)
    return options, _data_dependent_settings(options, preset.name, preset)


def _node_set_settings(options: DataOptions, preset_name: str) -> Dict[str, Any]:
    """A named node set fixes what a graph file fixes (input width, classes, ``head=node``; see
    :func:`~.graph_file_run.graph_file_settings`) and its metric (ROC-AUC for the binary heterophilous sets).
    The graph is read here (DGL's loader; kept for the run's own read) and the split index checked."""
    from ..data.own_files.graph_files import FeatureSpec, GraphFileInfo
    from ..data.nodes.node_sets import node_set_shape
    from .graph_file_run import graph_file_settings

    options.dataset = options.dataset.lower()
    width, classes = node_set_shape(options.dataset, options.data_dir, options.split_index)
    info = GraphFileInfo(path=options.dataset, num_graphs=1, task="node-classification", num_outputs=classes,
                         features=FeatureSpec(node_in_feats=width))
    settings = graph_file_settings(info, get_preset(preset_name))
    settings["train.metric"] = node_set_spec(options.dataset).metric
    return settings


def _graph_file_options(dataset: Optional[str], data: Dict[str, Any]) -> str:
    """``dataset`` as a DataOptions name: a graph file path becomes ``'file'`` with ``data['data_file']``;
    the file paths are made absolute, so a checkpoint finds them from any folder."""
    if dataset is not None and dataset.lower() not in LOADERS and is_graph_file_name(dataset):
        if data.get("data_file") not in (None, dataset):
            raise ConfigError(f"--dataset {dataset} and --data-file {data['data_file']} both name a graph file; "
                              "pass one of them")
        data["data_file"], dataset = dataset, GRAPH_FILE
    elif data.get("data_file") is not None:
        if dataset not in (GRAPH_FILE, None):
            raise ConfigError(f"--data-file trains on a graph file but --dataset names {dataset!r}; drop one of them")
        dataset = GRAPH_FILE
    for key in ("data_file", "split_file"):
        if data.get(key) is not None:
            data[key] = os.path.abspath(os.path.expanduser(str(data[key])))
    return dataset


#: DataOptions fields that only a graph file reads, and how the user sets each.
GRAPH_FILE_OPTIONS = {"task": "--task", "split_file": "--split-file", "split": "--split",
                      "split_seed": "data.split_seed"}


def check_graph_file_options(options: DataOptions) -> None:
    """Refuse graph-file options on a named dataset (its split and task are fixed): they would be dropped.
    A named node set takes ``split_index`` (and the seeded-split sets ``split_seed``); no other dataset does."""
    defaults = DataOptions()
    if options.split_index != defaults.split_index and not is_node_set(options.dataset):
        raise OptionConflict(f"--split-index picks a public split of a named node set (cora, actor, ...; see "
                             f"`geaet-dgl datasets`), but the run trains on {options.name!r}; drop it")
    if options.dataset == GRAPH_FILE:
        return
    seeded = is_node_set(options.dataset) and node_set_spec(options.dataset).seeded
    given = [flag for name, flag in GRAPH_FILE_OPTIONS.items() if getattr(options, name) != getattr(defaults, name)
             and not (name == "split_seed" and seeded)]
    if options.data_file is not None:
        given.insert(0, "--data-file")
    if given:
        raise OptionConflict(f"{', '.join(given)} apply only to a graph file, but the run trains on {options.dataset!r}, "
                             "whose split and task are fixed; drop them (or train on a graph file: --dataset "
                             "PATH.bin)")


#: Named datasets of many graphs: the node samplers (``--sampler``, ``data.num_parts``) do not apply to them.
MANY_GRAPH_DATASETS = ("mnist", "cifar10", "synthetic", "pattern", "cluster", "zinc", "tree", "voc", "coco",
                       "peptides-func", "peptides-struct", "pcqm-contact")


def check_sampler_options(options: DataOptions) -> None:
    """Refuse ``--sampler`` / ``data.num_parts`` where no one graph with node masks is cut (they would be dropped)."""
    defaults = DataOptions()
    given = [flag for name, flag in (("sampler", "--sampler"), ("num_parts", "data.num_parts"))
             if getattr(options, name) != getattr(defaults, name)]
    if not given:
        return
    if options.dataset == GRAPH_FILE and options.data_file and os.path.isfile(options.data_file) \
            and not is_node_graph_file(options.data_file):
        where = f"{options.data_file} holds graphs without node masks (a graph-level task or per-graph node labels)"
    elif options.dataset in MANY_GRAPH_DATASETS:
        where = f"{options.dataset!r} is a dataset of many graphs"
    else:
        return
    raise OptionConflict(f"{', '.join(given)} cut one graph with train/val/test node masks into batches, but "
                         f"{where}, batched whole with --batch-size; drop {', '.join(given)}")


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


def make_run_config(dataset: str, preset: Optional[str] = None, overrides: Optional[Mapping[str, Any]] = None,
                    data: Optional[Mapping[str, Any]] = None, device: str = "cpu", workers: int = 0,
                    checkpoint_every: int = 0, threads: Optional[int] = None, sync_bn: bool = True,
                    tensorboard: bool = False) -> RunConfig:
    """Resolve a run: the preset (default: the dataset's own), dotted overrides, data options.

    Parameters
    ----------
    dataset : str
        Name for ``geaet_dgl.data.load_dataset``, or the path of a DGL graph
        file (``*.bin``; same as ``dataset='file'`` with ``data_file``).
    preset : str, optional
        Preset name; default ``dataset`` itself (``mnist`` for ``synthetic``,
        ``geaet`` for a graph file).
    overrides : mapping, optional
        ``{"model.hidden_dim": "64", "train.epochs": 3}`` style values.
    data : mapping, optional
        Fields of :class:`DataOptions` other than ``dataset``.
    threads : int, optional
        CPU threads (see :mod:`geaet_dgl.threads`); ``None``: the cores this
        process may use (or $OMP_NUM_THREADS), resolved and recorded here.
    device, workers, checkpoint_every, sync_bn, tensorboard
        The :class:`RunConfig` fields of the same names.
    """
    overrides = dict(overrides or {})
    data = dict(data or {})
    for key in [k for k in overrides if k.startswith("data.")]:  # --set data.depth=3
        data[key[len("data."):]] = parse_setting_value(overrides.pop(key))
    dataset = _graph_file_options(dataset, data)
    preset_name = preset or default_preset(dataset)
    if preset is None and dataset == GRAPH_FILE and data.get("data_file") and is_node_graph_file(data["data_file"]):
        preset_name = NODE_GRAPH_PRESET
    preset_data = {key: value for key, value in get_preset(preset_name).data.items() if key not in data}
    options = from_dict(DataOptions, {"dataset": dataset, **preset_data, **data}, where="data.")
    check_graph_file_options(options)
    check_sampler_options(options)
    overrides = {**_data_dependent_settings(options, preset_name), **overrides}  # explicit --set wins
    resolved = apply_overrides(get_preset(preset_name), overrides)
    run = RunConfig(preset=resolved.name, model=resolved.model, train=resolved.train, data=options,
                    device=device, workers=workers, checkpoint_every=checkpoint_every,
                    threads=default_threads() if threads is None else threads, sync_bn=sync_bn,
                    tensorboard=tensorboard)
    return run.validate()


def data_pe_sizes(model: Union[ModelConfig, int]) -> Tuple[int, Optional[int]]:
    """``(Laplacian eigenpairs, RWSE steps or None)`` the data must carry for ``model``.

    ``model.pe`` 'eslappe'/'lappe' asks for ``model.pe_k`` eigenpairs
    (``ndata['lap_pe']``/``ndata['lap_eigval']``), 'rwse' for ``ndata['rwse']``
    with ``model.pe_k`` steps; other encodings for neither (no eigen-decomposition
    is paid for: about 20 ms a graph). An int stands for ``pe_k`` alone (no RWSE).
    """
    if isinstance(model, ModelConfig):
        laplacian = model.pe_k if model.pe in ("eslappe", "lappe", "signnet") else 0
        if model.pe == "rwse":
            return laplacian, model.pe_k
        return laplacian, model.se_k if model.se == "rwse" else None
    return int(model), None


def structural_spec(model: Union[ModelConfig, int]) -> StructuralSpec:
    """The structural encodings (:mod:`geaet_dgl.data.encodings.se_cache`) the data must carry for ``model``:
    HKdiagSE at times 1..``pe_k``, ElstaticSE, Graphormer's degrees and spatial types."""
    if not isinstance(model, ModelConfig):
        return StructuralSpec()
    graphormer = model.graphormer
    return StructuralSpec(
        hk_times=tuple(float(t) for t in range(1, model.pe_k + 1)) if model.pe == "hkdiagse" else (),
        elstatic=model.pe == "elstaticse",
        spatial_types=graphormer.spatial_types if graphormer.enable and not graphormer.degrees_only else 0,
        degrees=graphormer.enable,
        path_types=graphormer.enable and not graphormer.degrees_only and graphormer.num_edge_types > 0)


def attach_structural_splits(splits: DatasetSplits, model: Union[ModelConfig, int], cache_dir: Optional[str],
                             progress: bool = True) -> None:
    """Store the structural encodings ``model`` reads on every split's graphs (cached under ``cache_dir``)."""
    spec = structural_spec(model)
    if not spec:
        return
    if isinstance(splits, NodeGraph):  # one graph with node masks
        attach_structural([splits.graph], spec, cache_dir, progress)
        return
    for name in ("train", "val", "test"):
        attach_structural(getattr(splits, name).graphs, spec, cache_dir, progress)


def load_splits(options: DataOptions, model: Union[ModelConfig, int], progress: bool = True,
                allow_changed_data: bool = False) -> DatasetSplits:
    """Load the dataset of ``options`` with the encodings ``model`` reads, and validate it.

    Data that differs from what ``options`` recorded (``file_identity``,
    ``fingerprint``) is refused with a DataError, or with
    ``allow_changed_data`` logged (a graph file's recorded ``split_indices``
    are used either way).

    ``model`` is the run's :class:`ModelConfig` (or just the number of
    Laplacian eigenvectors). The graphs are checked at load time (no empty
    graph, no NaN/inf field, labels in range: see
    :mod:`geaet_dgl.data.validation`), so bad data fails before training.
    """
    pe_k, rwse_k = data_pe_sizes(model)
    extra: Dict[str, Any] = {} if rwse_k is None else {"rwse_k": rwse_k}
    if options.dataset == GRAPH_FILE:
        extra.update(data_file=options.data_file, task=options.task, split_file=options.split_file,
                     split=options.split, split_seed=options.split_seed, identity=options.file_identity,
                     indices=options.split_indices, allow_changed=allow_changed_data,
                     legacy_split=options.split_indices is None,  # a run from before the split was recorded
                     target_ntype=options.target_ntype)
    if options.statistics is not None:
        if options.dataset not in ("voc", "coco") or options.statistics not in ("voc", "coco"):
            raise ConfigError(f"data.statistics={options.statistics!r} standardises PascalVOC-SP / COCO-SP only; "
                              "use voc or coco with --dataset voc or coco, or leave it unset")
        extra["statistics"] = options.statistics
    if is_node_set(options.dataset):
        extra.update(split_index=options.split_index, split_seed=options.split_seed)
    if options.laplacian_norm is not None and pe_k:  # passed only when set: loaders keep their own default
        extra["laplacian_norm"] = options.laplacian_norm
    splits = load_dataset(options.dataset, options.data_dir, mnist_images=options.mnist_images,
                          cifar_images=options.cifar_images, pe_k=pe_k,
                          limit_train=options.limit_train, limit_val=options.limit_val,
                          limit_test=options.limit_test, progress=progress, generate=options.generate,
                          depth=options.depth, **extra)
    cache = os.path.join(options.data_dir, "geaet_cache") if options.data_dir else None
    attach_structural_splits(splits, model, cache, progress)
    apply_feature_transforms(splits, options.feature_norm, options.feature_propagation)
    if not isinstance(splits, NodeGraph):  # one graph with node masks is checked as it is read
        splits = validate_splits(splits)
    if options.dataset == GRAPH_FILE and options.fingerprint is None:  # a new run on the user's file
        warn_label_gaps(split_labels(splits), options.data_file)
    recorded = options.input_transform
    if recorded is not None and json.loads(json.dumps(splits.input_transform)) != json.loads(json.dumps(recorded)):
        raise DataError(f"the {options.dataset} loader now transforms the input features otherwise than when the "
                        "run was trained (data.input_transform); score the run with the geaet-dgl version that "
                        "trained it")
    if options.fingerprint is not None:
        changes = fingerprint_changes(options.fingerprint, splits_fingerprint(splits, data_limits(options)))
        where = options.data_file if options.dataset == GRAPH_FILE else f"{options.dataset} in {options.data_dir}"
        if changes and isinstance(splits, NodeGraph) and allow_changed_data:
            raise DataError(f"the node masks or their labels in {where} changed since the run was trained "
                            f"({'; '.join(changes)}): the file's masks are the split, so the run's own split cannot "
                            "be restored from it (--allow-changed-data goes on only where the masks and their labels "
                            "are unchanged); restore the file the run was trained on, or start a new run on this one")
        check_unchanged(f"the data ({where})", changes, allow_changed_data,
                        "rebuild or restore the files the run was trained on")
    return splits


def split_labels(splits: DatasetSplits) -> Dict[str, Optional[torch.Tensor]]:
    """``{split: labels}`` of a node graph's masked nodes (classification only) or of each split's graphs."""
    if isinstance(splits, NodeGraph):
        if not splits.task.endswith("classification"):
            return {}
        return {split: splits.labels(split) for split in ("train", "val", "test")}
    return {split: getattr(splits, split).labels for split in ("train", "val", "test")}


def apply_feature_transforms(splits: DatasetSplits, feature_norm: str, feature_propagation: int = 0) -> None:
    """Transform the node features of one graph with node masks as ``data.feature_norm`` and
    ``data.feature_propagation`` say, and record it as the data's ``input_transform`` (``predict`` applies it
    again to the graphs it reads)."""
    changed = {key: (value, off) for key, value, off in (("feature_norm", feature_norm, "none"),
                                                         ("feature_propagation", feature_propagation, 0))
               if value != off}
    if not changed:
        return
    asked = " and ".join(f"data.{key}={value}" for key, (value, _) in changed.items())
    resets = " and ".join(f"data.{key}={off}" for key, (_, off) in changed.items())
    if not isinstance(splits, NodeGraph) or not splits.graph.is_homogeneous:
        raise ConfigError(f"{asked} transforms the features of one graph with node masks "
                          f"(of one node type); set {resets} for this dataset")
    if not splits.graph.ndata["feat"].is_floating_point():
        raise ConfigError(f"{asked} transforms float features, but {splits.name} has integer (type) "
                          f"node features; set {resets}")
    transform: Dict[str, Any] = {}
    if feature_norm == "row":
        transform.update(row_normalize_transform())
    if feature_propagation:
        transform.update(propagate_transform(feature_propagation))
    apply_input_transform([splits.graph], transform)
    splits.input_transform = transform


def data_limits(options: DataOptions) -> Dict[str, Optional[int]]:
    """``{'train': limit_train, 'val': limit_val, 'test': limit_test}``."""
    return {"train": options.limit_train, "val": options.limit_val, "test": options.limit_test}


def record_data(options: DataOptions, splits: DatasetSplits) -> None:
    """Store the fingerprint of the loaded ``splits`` and their loader's input transform in ``options`` (a new
    run, before its config is written)."""
    options.fingerprint = splits_fingerprint(splits, data_limits(options))
    options.input_transform = splits.input_transform


#: ndata fields each positional encoding reads.
PE_FIELDS = {"none": (), "eslappe": ("lap_pe",), "lappe": ("lap_pe", "lap_eigval"), "rwse": ("rwse",),
             "signnet": ("lap_pe",), "hkdiagse": ("hkdiag_se",), "elstaticse": ("elstatic_se",)}


def check_data_fits(model: ModelConfig, splits: DatasetSplits) -> None:
    """Raise ConfigError if the model's input/output widths do not match the data."""
    node_graph = isinstance(splits, NodeGraph)
    for name in ("train", "val", "test"):
        if node_graph:
            break
        if len(getattr(splits, name)) == 0:
            raise ConfigError(f"the {name} split of {splits.name!r} is empty; raise --limit-{name}")
    problems = []
    if is_heterograph(splits.first_graph()) != bool(model.hetero.ntypes):
        problems.append("the graphs are heterographs but the model is not (or the other way round); train on the "
                        "file with its own settings (train --dataset FILE.bin)")
    elif model.hetero.ntypes:  # the heterograph reader checked the schema and widths against the file
        pass
    elif splits.node_feat_dim != model.node_in_feats:
        problems.append(f"model.node_in_feats={model.node_in_feats} but the graphs have "
                        f"{splits.node_feat_dim} node features")
    if not model.hetero.ntypes and splits.edge_feat_dim != model.edge_in_feats:
        problems.append(f"model.edge_in_feats={model.edge_in_feats} but the graphs have "
                        f"{splits.edge_feat_dim} edge features")
    example = splits.first_graph()
    missing = [key for key in PE_FIELDS[model.pe] if key not in example.ndata]
    if missing:
        problems.append(f"model.pe={model.pe!r} reads ndata[{missing[0]!r}], which the graphs lack "
                        f"(load them with load_splits(options, model), or set model.pe=none)")
    elif model.pe in ("eslappe", "lappe", "signnet") and splits.pe_dim != model.pe_k:
        problems.append(f"model.pe_k={model.pe_k} but the graphs carry {splits.pe_dim} Laplacian eigenvectors")
    elif model.pe == "rwse" and example.ndata["rwse"].shape[1] != model.pe_k:
        problems.append(f"model.pe_k={model.pe_k} but the graphs carry {example.ndata['rwse'].shape[1]} "
                        "random-walk steps")
    if model.se == "rwse" and "rwse" not in example.ndata:
        problems.append("model.se='rwse' reads ndata['rwse'], which the graphs lack (load them with "
                        "load_splits(options, model), or set model.se=none)")
    elif model.se == "rwse" and example.ndata["rwse"].shape[1] != model.se_k:
        problems.append(f"model.se_k={model.se_k} but the graphs carry {example.ndata['rwse'].shape[1]} "
                        "random-walk steps")
    if node_graph and model.head != "node":
        problems.append(f"model.head={model.head!r} but {splits.name!r} is one graph with node masks (use "
                        "model.head=node)")
    link_data = not node_graph and getattr(splits.train, "level", "graph") == "link"
    if link_data != (model.head == "link"):
        problems.append(f"model.head={model.head!r} but the dataset's targets are "
                        f"{'node pairs (use model.head=link)' if link_data else 'not node pairs'}")
    classes = splits.num_classes
    if node_graph and splits.task == "node-regression" and model.out_feats != classes:
        problems.append(f"model.out_feats={model.out_feats} but {splits.name!r} has {classes} targets per node")
    elif model.out_feats != classes and not (model.out_feats == 1 and classes == 2):
        problems.append(f"model.out_feats={model.out_feats} but {splits.name!r} has {classes} classes")
    if problems:
        raise ConfigError(f"the model does not fit dataset {splits.name!r}: {'; '.join(problems)}; "
                          "pick the dataset's preset or fix these with --set")
    if node_graph:  # labels checked as the graph was read
        return
    model_classes = 2 if model.out_feats == 1 else model.out_feats
    for name in ("train", "val", "test"):
        dataset = getattr(splits, name)
        if link_data:  # node pairs, checked against their graphs when loaded
            continue
        check_labels(dataset.labels, name, splits.name, model_classes, what=f"model.out_feats={model.out_feats}",
                     node_sizes=node_label_sizes(dataset))
