"""Throughput benchmarks and the side-by-side comparison with the PyG reference.

``run_benchmark`` (in :mod:`.api`) ties the pieces together: :mod:`.throughput`
(graphs/s on pre-built batches, one process per batch size), :mod:`.epoch`
(whole epochs through the loader), :mod:`.scaling` (GEANet / GEAET layer vs
graph size), :mod:`.against_pyg` (interleaved timing against the reference)
and :mod:`.report` (table, JSON, PNG). The reference itself (its network built in this
process, our graphs as PyG batches, its configuration files) is reached through
:mod:`geaet_dgl.interop`.
"""
from .api import run_benchmark

__all__ = ["run_benchmark"]
