"""Benchmarks: throughput, step breakdown, epochs, scaling, and the side-by-side comparison with the PyG reference.

One front door: a job of :mod:`.jobs` (a small dataclass: :class:`~.jobs.ModelJob` with its
:class:`~.jobs.EpochJob`, :class:`~.jobs.ScalingJob` and :class:`~.jobs.Reference` parts,
:class:`~.jobs.NodeScalingJob`, :class:`~.jobs.HeteroJob`, :class:`~.jobs.NodeBaselinesJob`, each with
its :class:`~.jobs.Timing`) passed to :func:`run_benchmark` (in :mod:`.api`), which ties the pieces
together: :mod:`.throughput` (graphs/s on pre-built batches, one process per batch size),
:mod:`.breakdown` (a step by branch), :mod:`.epoch` (whole epochs through the loader),
:mod:`.scaling` (GEANet / GEAET layer vs graph size), :mod:`.node_scaling`, :mod:`.hetero`,
:mod:`.node_baselines`, :mod:`.against_pyg` and :mod:`.epoch_against_pyg` (interleaved timing against
the reference), :mod:`.worker` (one measurement per process) and :mod:`.report` (table, JSON, PNG).
``geaet-dgl benchmark`` builds the job from its options. The reference itself (its network built in
this process, our graphs as PyG batches, its configuration files) is reached through
:mod:`geaet_dgl.interop`.
"""
from .api import run_benchmark
from .jobs import EpochJob, HeteroJob, ModelJob, NodeBaselinesJob, NodeScalingJob, Reference, ScalingJob, Timing

__all__ = ["EpochJob", "HeteroJob", "ModelJob", "NodeBaselinesJob", "NodeScalingJob", "Reference", "ScalingJob",
           "Timing", "run_benchmark"]
