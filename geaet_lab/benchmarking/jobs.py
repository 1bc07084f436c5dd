"""What a benchmark measures, as small dataclasses: one job per kind, run by :func:`.api.run_benchmark`.

* :class:`ModelJob`: a preset's model (or a reference YAML's) on synthetic graphs shaped like its
  dataset: the step table (training and inference graphs/s, peak memory per batch size), where a
  step's time goes, whole epochs and layer scaling, optionally beside the PyG reference
  (``geaet-dgl benchmark``). Its parts: :class:`EpochJob`, :class:`ScalingJob`, :class:`Reference`.
* :class:`NodeScalingJob`: node classification on one graph of growing size
  (``geaet-dgl benchmark --node-scaling``).
* :class:`HeteroJob`: the heterograph model's two local MPNNs against each other
  (``benchmarks/hetero_local_weights.py``).
* :class:`NodeBaselinesJob`: GEAET beside a 2-layer GCN and MLP on node files
  (``benchmarks/node_vs_baselines.py``).

Every job carries a :class:`Timing`: how its measurements are taken (device, threads, repeats,
seed, one process per measurement, the allocator). ``geaet-dgl benchmark`` is where the options
that fill these jobs are declared (:mod:`geaet_lab.commands.benchmark`); the jobs' defaults are
the command's.

The measuring processes (:mod:`.worker`) receive jobs as JSON: :func:`encode` and :func:`decode`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from geaet_dgl.threads import resolve_threads

#: the components :class:`ScalingJob` can time (see :data:`.scaling.COMPONENTS`)
SCALING_COMPONENTS = ("geanet", "geaet_layer", "performer", "transformer")
#: node counts of :class:`ScalingJob`
SCALING_SIZES = (10**3, 10**4, 10**5, 10**6)


@dataclass(frozen=True)
class Timing:
    """How every measurement of a job is taken.

    device : 'cpu' or 'cuda'.
    threads : torch intra-op threads in this and every measuring process (None: the cores this
        process may use, see :mod:`geaet_dgl.threads`).
    repeats, warmup : timed and untimed steps per phase.
    min_time : where contenders are timed side by side (``--against-pyg``, ``--exported``), more rounds past
        ``repeats`` until each has run this many seconds (:func:`~.exported.interleaved_rates`).
    num_batches : distinct pre-built batches cycled over per batch size.
    seed : weights and graphs.
    isolate : each measurement in a fresh process (its own peak RSS).
    allocator : 'hugetlb', 'system' or 'keep' in the measuring processes (None: ``$GEAET_DGL_ALLOCATOR``,
        else 'hugetlb'; see :mod:`geaet_dgl.allocator`).
    """

    device: str = "cpu"
    threads: Optional[int] = None
    repeats: int = 5
    warmup: int = 2
    min_time: float = 2.0
    num_batches: int = 2
    seed: int = 0
    isolate: bool = True
    allocator: Optional[str] = None

    def resolved(self) -> "Timing":
        """This timing with ``threads`` checked, or the default count when None."""
        return dataclasses.replace(self, threads=resolve_threads(self.threads))


@dataclass(frozen=True)
class Reference:
    """The PyG reference a job runs beside.

    ref_dir : a checkout of icm1018/GEAET (its dependencies importable here, or in ``python``).
    force : time even when parity fails.
    config_file : a reference (GEAET or GraphGPS) YAML whose model :class:`ModelJob` compares instead of
        its preset's (step table and breakdown only).
    python : the interpreter with the reference's packages for :class:`NodeScalingJob` (None: this one).
    """

    ref_dir: str
    force: bool = False
    config_file: Optional[str] = None
    python: Optional[str] = None


@dataclass(frozen=True)
class EpochJob:
    """Whole epochs, data loading and batching included.

    Alone: one training and one inference epoch through ``make_loader`` over ``num_graphs``
    synthetic graphs (batch ``batch_size``, default the preset's; ``workers`` loader processes).
    Beside a :class:`Reference`: whole epochs of both sides, each through its own data path and
    training loop, alternated ``rounds`` times at every batch size of the :class:`ModelJob`, on
    ``dataset`` ('synthetic': ``limit_train`` or ``num_graphs`` graphs shaped like the preset's; or
    the real 'mnist' / 'cifar10' files in ``data_dir``, first ``limit_train`` / ``limit_val`` graphs).
    """

    num_graphs: int = 512
    batch_size: Optional[int] = None
    workers: int = 0
    dataset: str = "synthetic"
    data_dir: Optional[str] = None
    limit_train: Optional[int] = None
    limit_val: Optional[int] = None
    rounds: int = 3

    @property
    def picks_graphs(self) -> bool:
        """Whether any option of the epoch comparison's graphs differs from its default."""
        return bool(self.dataset != "synthetic" or self.data_dir is not None or self.limit_train or self.limit_val)


@dataclass(frozen=True)
class ScalingJob:
    """GEANet, the GEAET layer (no attention), Performer and full attention on single kNN graphs.

    ``sizes`` up to ``max_nodes`` nodes (each node ``k`` in-edges); per phase ``warmup`` untimed calls,
    then at least ``repeats`` timed ones, more (up to ``max_repeats``) until ``min_time_s`` seconds are
    timed; forward+backward too when ``backward``. A size whose predicted peak memory exceeds
    ``memory_fraction`` of the available memory is skipped. See :mod:`.scaling`.
    """

    max_nodes: int = 10**6
    sizes: Tuple[int, ...] = SCALING_SIZES
    components: Tuple[str, ...] = SCALING_COMPONENTS
    repeats: int = 3
    min_time_s: float = 1.0
    k: int = 8
    warmup: int = 1
    backward: bool = True
    memory_fraction: float = 0.7
    max_repeats: int = 50


@dataclass(frozen=True)
class ModelJob:
    """A preset's model on synthetic graphs shaped like its dataset; one report.

    preset : a preset with a synthetic generator (mnist, cifar10, pattern, ...).
    batch_sizes : the step table's (and the breakdown's, the epoch comparison's) batch sizes (empty: none).
    throughput : time the training and inference steps at every batch size (the step table).
    breakdown : split a training step into forward per branch, backward and optimizer step, at every
        batch size, in this process (beside the reference's with ``reference``).
    epoch : whole epochs (:class:`EpochJob`); beside ``reference`` it replaces the step table.
    scaling : layer scaling with graph size (:class:`ScalingJob`).
    reference : time beside the PyG reference: parity first, then both interleaved on the same batches
        (CPU only); the throughput columns then come from that run, peak RSS still from one process per
        batch size.
    fold : time inference on the folded model (what evaluation runs); False: the model as trained.
    timing : how every measurement is taken.
    config_file : a reference (GEAET or GraphGPS) YAML whose model is timed instead of ``preset``'s, alone
        (step table and breakdown; beside the reference it is ``reference.config_file``).
    exported : 'torchscript', 'onnx': the step table's model also exported and its files' inference timed
        beside ours (and the reference's), interleaved in one process, after their parity (:mod:`.exported`).
    force : time the exported files even when they differ from the model (the reference: ``reference.force``).
    """

    preset: str = "mnist"
    batch_sizes: Tuple[int, ...] = (16, 64, 128)
    throughput: bool = True
    breakdown: bool = False
    epoch: Optional[EpochJob] = None
    scaling: Optional[ScalingJob] = None
    reference: Optional[Reference] = None
    fold: bool = True
    timing: Timing = Timing()
    config_file: Optional[str] = None
    exported: Tuple[str, ...] = ()
    force: bool = False

    @property
    def model_file(self) -> Optional[str]:
        """The YAML whose model is timed (beside the reference or alone), or None: the preset's."""
        return self.reference.config_file if self.reference is not None else self.config_file

    @property
    def epochs_against_reference(self) -> bool:
        """Whole epochs of both sides (which replace the step table)."""
        return self.epoch is not None and self.reference is not None


@dataclass(frozen=True)
class NodeScalingJob:
    """Node classification on one graph of growing size: a training epoch and a full-graph evaluation.

    max_nodes, sizes : graph sizes (``sizes`` up to ``max_nodes``, and ``max_nodes``; None: 10k, 30k, 100k,
        300k, 1M).
    methods : ours 'full' and 'cluster', with ``reference`` also 'ref-none', 'ref-transformer',
        'ref-performer' (None: all that apply).
    graph_kind : 'knn' (random points) or 'planted' (planted partitions).
    memory_limit_gib : address space each measuring process may take.
    epochs : timed epochs (and evaluations) per point; the fastest is kept.
    timing : its ``threads``, ``seed`` and ``allocator`` apply (CPU, one process per point).
    See :mod:`.node_scaling`.
    """

    max_nodes: int = 10**6
    sizes: Optional[Tuple[int, ...]] = None
    methods: Optional[Tuple[str, ...]] = None
    graph_kind: str = "knn"
    memory_limit_gib: float = 12.0
    epochs: int = 1
    reference: Optional[Reference] = None
    timing: Timing = Timing()


@dataclass(frozen=True)
class HeteroJob:
    """The heterograph model's local MPNNs, per relation and with typed weights, on random heterographs.

    etypes : relation counts to time (node types: ``min(relations, 4)``).
    batch_size, nodes_per_type, edges_per_relation : the batches.
    memory : also each model's peak RSS from a process of its own.
    timing : its ``device``, ``threads``, ``repeats``, ``warmup`` and ``seed`` apply. See :mod:`.hetero`.
    """

    etypes: Tuple[int, ...] = (2, 4, 6, 10)
    batch_size: int = 32
    nodes_per_type: int = 20
    edges_per_relation: int = 40
    memory: bool = True
    timing: Timing = Timing(threads=1, repeats=10)


@dataclass(frozen=True)
class NodeBaselinesJob:
    """GEAET with a dataset's defaults beside a 2-layer GCN and a 2-layer MLP, on node files.

    files : graph files with node masks; out : folder of the GEAET runs and of node_baselines.md / .json.
    dataset, data_dir, splits : instead of files, the named node set ``dataset`` read from DGL's ``raw_dir``
    ``data_dir``, its public splits ``splits`` (all when empty) written to ``out``/graphs; preset: the set's.
    seeds, preset, overrides : the GEAET runs (preset None: the file default); hidden : the baselines' width.
    skip_geaet : the baselines only. threads : CPU threads. See :mod:`.node_baselines`.
    """

    files: Tuple[str, ...]
    out: str
    dataset: Optional[str] = None
    data_dir: Optional[str] = None
    splits: Tuple[int, ...] = ()
    seeds: Tuple[int, ...] = (0, 1, 2)
    preset: Optional[str] = None
    overrides: Dict[str, str] = field(default_factory=dict)
    hidden: int = 64
    threads: int = 1
    skip_geaet: bool = False


_JOB_TYPES = {cls.__name__: cls for cls in (Timing, Reference, EpochJob, ScalingJob, ModelJob, NodeScalingJob,
                                            HeteroJob, NodeBaselinesJob)}


def encode(value: Any) -> Dict[str, Any]:
    """``json.dumps(..., default=encode)``: a job as ``{"__job__": class name, field: value, ...}``."""
    if dataclasses.is_dataclass(value) and type(value).__name__ in _JOB_TYPES:
        return {"__job__": type(value).__name__,
                **{f.name: getattr(value, f.name) for f in dataclasses.fields(value)}}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def decode(obj: Dict[str, Any]) -> Any:
    """``json.loads(..., object_hook=decode)``: the job :func:`encode` wrote (lists back to tuples)."""
    name = obj.get("__job__")
    if name is None:
        return obj
    values = {key: tuple(value) if isinstance(value, list) else value for key, value in obj.items()
              if key != "__job__"}
    return _JOB_TYPES[name](**values)
