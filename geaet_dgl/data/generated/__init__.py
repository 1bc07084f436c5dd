"""Datasets whose graphs follow a published generating recipe, so they can be made offline.

Nothing here downloads: PATTERN / CLUSTER read the published files if they are in ``data_dir``
and are generated on request; TreeNeighbourMatch and the synthetic, node and
heterograph sets are always generated.

:mod:`.sbm`
    PATTERN / CLUSTER (Benchmarking GNNs, node-level): DGL's ``PATTERNDataset`` /
    ``CLUSTERDataset`` read ``SBM_*.bin`` files (DGL's ``SBM_PATTERN.zip`` /
    ``SBM_CLUSTER.zip``); with ``generate=True`` missing files are generated
    here with the stochastic-block-model recipe of the Benchmarking-GNNs
    notebooks and written in DGL's format and place.
:mod:`.tree`
    TreeNeighbourMatch (Alon & Yahav 2021, graph-level at the root): complete
    binary trees of depth ``r``, always generated, never read from disk.
:mod:`.synthetic`
    Random graphs shaped like the MNIST superpixel graphs (positions, kNN
    edges with DGL's weights, a learnable label), for tests and benchmarks.
:mod:`.node_graphs`
    Single graphs with node masks (planted partitions, kNN graphs of a feature
    matrix) for node tasks, seeded, for tests, examples and benchmarks.
:mod:`.hetero`
    Heterographs: author-paper graphs whose paper classes need the ``writes``
    edges, and random schemas for timing the heterograph model.
:mod:`.families`
    Random graphs of a few shape families (molecules, region superpixels, ASTs, call graphs,
    one-graph node sets), with each real dataset's columns, for the benchmark's synthetic datasets
    (which family and sizes per dataset: :mod:`geaet_lab.benchmarking.shapes`).
"""

from .sbm import load_sbm
from .synthetic import synthetic_mnist_like, synthetic_splits
from .tree import load_tree

__all__ = ["load_sbm", "load_tree", "synthetic_mnist_like", "synthetic_splits"]
