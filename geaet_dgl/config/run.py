"""The full configuration of a training run.

A :class:`RunConfig` is a preset (model + training settings, after
``--set`` overrides) plus where the data comes from (:class:`DataOptions`)
and where the run executes. It is what ``config.json`` holds and what a
checkpoint carries, so a checkpoint alone is enough to rebuild the model and
its data (:func:`geaet_dgl.data.run_splits.load_splits` loads it).
:func:`migrate_run_dict` reads the layouts older versions wrote. The rules a
run must keep are in :mod:`.validation`. A new run is resolved from a dataset,
a preset and overrides by :func:`geaet_dgl.training.new_run.make_run_config`
(which reads the data to know what it fixes).
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ..errors import ConfigError
from .model import ModelConfig
from .settings import from_dict
from .train import TrainConfig
from .validation import GRAPH_FILE, validate_run

#: Layout version of a run configuration (``config_version`` in ``config.json`` and checkpoints). 1: before
#: the key existed (no ``tensorboard``, ``threads``, ``model.geanet.variant``, ``data.laplacian_norm``, graph-file
#: fields); 2: this layout. :func:`migrate_run_dict` reads every older version.
CONFIG_VERSION = 2

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
    batches (:mod:`geaet_dgl.training.node_batches`): ``full`` (the whole graph every step),
    ``cluster`` (``num_parts`` METIS partitions, ``train.batch_size`` of them
    per step) or ``random`` (the nodes shuffled into ``num_parts`` parts,
    ``train.batch_size`` parts per step, their induced subgraph);
    ``num_parts=0`` takes parts of about 1,000 nodes. Graph-level data ignores both.

    ``dist_scoring`` is how each trainer of a partitioned run (``--partitions``)
    scores its share of the nodes every epoch (:mod:`geaet_dgl.distgraph.trainer`):
    ``halo`` (one pass over the share and its in-neighbours), ``parts`` (its
    METIS parts, ``train.batch_size`` of them per pass, as it trains: memory
    bounded by a batch) or ``auto`` (``halo`` while the in-neighbours outside
    the share are at most half its nodes, else ``parts``).

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
    dist_scoring: str = "auto"
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


#: DataOptions fields that name folders; a run records them absolute (:func:`absolute_data_paths`).
DATA_FOLDERS = ("data_dir", "mnist_images", "cifar_images")


def absolute_data_paths(options: DataOptions) -> DataOptions:
    """Make ``options``' folders (:data:`DATA_FOLDERS`) absolute, so that ``eval`` and ``--resume`` of the run
    find its data from any working directory; -> ``options``."""
    for name in DATA_FOLDERS:
        value = getattr(options, name)
        if value:
            setattr(options, name, os.path.abspath(os.path.expanduser(str(value))))
    return options


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
        """Check every setting (:func:`~.validation.validate_run`); return ``self``."""
        return validate_run(self)

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
