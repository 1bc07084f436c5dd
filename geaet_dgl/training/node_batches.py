"""Training batches cut from one graph with node masks: the whole graph, METIS clusters, or random node sets.

A batch is a :class:`dgl.DGLGraph`: a subgraph carrying, for its own nodes,
every ``ndata`` field of the :class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`
(``feat``, positional encodings, ``label`` and the three masks) and
``edata['feat']``. So MPNN, GEANet and the global attention run on it as on
any graph, and the training step counts only the nodes whose ``train_mask``
is set (:func:`masked_rows`).

=========  ============================================================================
sampler    a step trains on
=========  ============================================================================
full       the whole graph (one step per epoch)
cluster    ``batch_size`` of ``num_parts`` METIS partitions (DGL's
           :class:`dgl.dataloading.ClusterGCNSampler`), the subgraph they induce
random     ``batch_size`` of ``num_parts`` equal parts of a random permutation of the
           nodes, the subgraph they induce (as SGFormer and Polynormer train)
=========  ============================================================================

The order of epoch ``e`` is a pure function of ``(seed, e)`` and a loader can
start at any step (:func:`~.batching.make_epoch_loader`), so a resumed run sees
the batches an uninterrupted one would. METIS partitions are computed once and
cached beside the graph file (``geaet_cache/<stem>-metis-K-<stamp>.pkl``).

Example
-------
>>> import dgl, torch
>>> from geaet_dgl.data.nodes.node_graph import NodeGraph
>>> g = dgl.rand_graph(100, 600)
>>> g.ndata['feat'] = torch.randn(100, 3); g.ndata['label'] = torch.arange(100) % 2
>>> for i, m in enumerate(('train_mask', 'val_mask', 'test_mask')):
...     g.ndata[m] = torch.arange(100) % 3 == i
>>> sampler = make_node_sampler(NodeGraph(g, 'node-classification', 2, 'toy'), 'random', num_parts=10)
>>> batches = sampler.epoch_batches(batch_size=2, seed=0, epoch=0)
>>> batches.total, next(iter(batches)).num_nodes()
(5, 20)
"""
from __future__ import annotations

import hashlib
import logging
import math
import pickle
import tempfile
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import dgl
import torch

from ..atomic import atomic_path
from ..config import SAMPLERS, ConfigError
from ..data.errors import DataError
from ..data.fresh_process import run_apart
from ..data.nodes.node_graph import MASKS, NodeGraph, cache_tag, node_frame
from .batching import epoch_sampler, make_epoch_loader

log = logging.getLogger(__name__)

#: ``num_parts=0`` cuts the graph into parts of about this many nodes ...
NODES_PER_PART = 1000
#: ... or into fewer, larger parts where labels are sparse: so that a batch holds about this many training nodes
#: (a step on ~10 labelled nodes, all of one or two classes as METIS parts of a homophilous graph are, is a noisy,
#: biased step: docs/node-classification.md#a-digit-graph-with-200-labels) ...
TRAIN_NODES_PER_BATCH = 64
#: ... but parts of at most this many times :data:`NODES_PER_PART` nodes (bounding a batch's memory).
MAX_PART_GROWTH = 10


def default_num_parts(num_nodes: int, train_nodes: Optional[int] = None, batch_size: Optional[int] = None) -> int:
    """Parts of about :data:`NODES_PER_PART` nodes (at least one); given the graph's ``train_nodes`` and the
    parts per step ``batch_size``, fewer where labels are sparse, so that a batch of ``batch_size`` parts holds
    about :data:`TRAIN_NODES_PER_BATCH` training nodes, with parts of at most
    ``MAX_PART_GROWTH * NODES_PER_PART`` nodes."""
    parts = max(1, round(num_nodes / NODES_PER_PART))
    if train_nodes is None or batch_size is None:
        return parts
    for_labels = batch_size * train_nodes // TRAIN_NODES_PER_BATCH
    fewest = math.ceil(num_nodes / (MAX_PART_GROWTH * NODES_PER_PART))
    return max(1, min(parts, max(for_labels, fewest)))


class EpochBatches:
    """The batches of one epoch from step ``start_step`` on: iterate for the batch graphs.

    ``total`` is the epoch's number of steps; :meth:`batch_indices` names what
    step ``i`` is made of (partition ids, node ids or ``[0]`` for the full
    graph), for error messages.
    """

    def __init__(self, loader, total: int, describe):
        self._loader = loader
        self.total = total
        self._describe = describe

    def batch_indices(self, step: int) -> List[int]:
        return self._describe(step)

    def __iter__(self) -> Iterator[dgl.DGLGraph]:
        return iter(self._loader)

    def __len__(self) -> int:
        return len(self._loader)


class NodeSampler:
    """Cuts a :class:`NodeGraph` into training batches; build with :func:`make_node_sampler`.

    Attributes
    ----------
    kind : {'full', 'cluster', 'random'}
    num_parts : int
        Partitions (``cluster``) or parts of each epoch's permutation
        (``random``); 1 for ``full``.
    """

    def __init__(self, data: NodeGraph, kind: str, num_parts: int, cluster=None):
        self.data, self.kind, self.num_parts, self._cluster = data, kind, num_parts, cluster

    @property
    def graph(self) -> dgl.DGLGraph:
        return self.data.graph

    def steps_per_epoch(self, batch_size: int) -> int:
        return 1 if self.kind == "full" else math.ceil(self.num_parts / batch_size)

    def max_batch_nodes(self, batch_size: int) -> int:
        """The most nodes a batch can hold (for memory and dense-attention checks)."""
        n = self.graph.num_nodes()
        if self.kind == "full":
            return n
        if self.kind == "random":
            return min(n, batch_size * math.ceil(n / self.num_parts))
        sizes = torch.diff(torch.as_tensor(self._cluster.partition_offset)).sort(descending=True).values
        return int(sizes[:batch_size].sum())

    def epoch_batches(self, batch_size: int, seed: int, epoch: int, start_step: int = 0,
                      workers: int = 0) -> EpochBatches:
        """The batches of ``epoch`` (order fixed by ``(seed, epoch)``), from ``start_step`` on."""
        if batch_size < 1:
            raise DataError(f"batch_size must be >= 1, got {batch_size}; pass a positive --batch-size")
        graph = self.graph
        if self.kind == "full":
            return EpochBatches([graph][start_step:], 1, lambda step: [0])
        if self.kind == "cluster":
            cluster = self._cluster
            loader = make_epoch_loader(_Ids(self.num_parts), lambda ids: cluster.sample(graph, torch.tensor(ids)),
                                       epoch_sampler(self.num_parts, batch_size, shuffle=True, seed=seed, epoch=epoch,
                                                     start_step=start_step), workers=workers)
        else:
            per_part = math.ceil(graph.num_nodes() / self.num_parts)
            loader = make_epoch_loader(_Ids(graph.num_nodes()), lambda ids: _induced(graph, ids),
                                       epoch_sampler(graph.num_nodes(), batch_size * per_part, shuffle=True, seed=seed,
                                                     epoch=epoch, start_step=start_step), workers=workers)
        sampler = loader.batch_sampler
        return EpochBatches(loader, sampler.total, sampler.batch_indices)


class _OnePart:
    """The cluster "sampler" of one part: every node, in order (what ClusterGCN would give for one part)."""

    def __init__(self, num_nodes: int):
        self.partition_offset = [0, num_nodes]

    def sample(self, graph: dgl.DGLGraph, part_ids: torch.Tensor) -> dgl.DGLGraph:
        return dgl.node_subgraph(graph, torch.arange(graph.num_nodes()))


class _Ids:
    """``range(n)`` as a map-style dataset: item ``i`` is ``i``."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return index


def _induced(graph: dgl.DGLGraph, ids: List[int]) -> dgl.DGLGraph:
    """The subgraph induced by node ids ``ids`` (kept in increasing order)."""
    return dgl.node_subgraph(graph, torch.tensor(sorted(ids), dtype=torch.int64))


def make_node_sampler(data: NodeGraph, kind: str = "full", num_parts: int = 0,
                      cache_dir: Optional[Path] = None, batch_size: Optional[int] = None) -> NodeSampler:
    """The sampler ``kind`` ('full', 'cluster' or 'random') of ``data``'s graph.

    ``num_parts`` 0 takes parts of about :data:`NODES_PER_PART` nodes, or, given
    the parts per step ``batch_size``, fewer where the graph has few training
    nodes (:func:`default_num_parts`). For
    ``cluster`` the METIS partition is cached in ``cache_dir`` (default the
    graph file's ``geaet_cache/``, else a temporary folder), keyed by the
    file's stamp and ``num_parts``.
    """
    if kind not in SAMPLERS:
        raise ValueError(f"sampler={kind!r} is not one of {', '.join(SAMPLERS)}")
    if data.target_ntype and kind != "full":
        raise ConfigError(f"--sampler {kind} cuts graphs of one node type; a heterograph with node masks trains on "
                          "the whole graph: use --sampler full")
    num_nodes = data.graph.num_nodes()
    if kind == "full":
        return NodeSampler(data, kind, 1)
    if num_parts:
        parts = num_parts
    else:
        train_nodes = int(data.graph.ndata[MASKS["train"]].sum())
        parts = default_num_parts(num_nodes, train_nodes, batch_size)
        if batch_size is not None and parts < default_num_parts(num_nodes):
            log.info("data.num_parts=0: %d parts of about %d nodes, not %d of %d, so that a batch of %d parts "
                     "holds about %d of the %d training nodes (--set data.num_parts=K to choose)", parts,
                     round(num_nodes / parts), default_num_parts(num_nodes), NODES_PER_PART, batch_size,
                     round(batch_size * train_nodes / parts), train_nodes)
    if parts > num_nodes:
        raise DataError(f"data.num_parts={parts} is more than the graph's {num_nodes} nodes; pass "
                        f"--set data.num_parts=K with K <= {num_nodes}")
    if kind == "random":
        return NodeSampler(data, kind, parts)
    if parts == 1:  # METIS cannot cut a graph into one part (it divides by zero: SIGFPE); the part is the graph
        log.info("--sampler cluster with one part (data.num_parts=1, a graph under %d nodes, or few training "
                 "nodes): every step trains on the whole graph; set data.num_parts=K for smaller batches",
                 int(1.5 * NODES_PER_PART))
        return NodeSampler(data, kind, 1, _OnePart(num_nodes))
    folder = Path(cache_dir or data.cache_dir or tempfile.gettempdir())
    folder.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha1(f"{data.stamp}:{num_nodes}:{data.graph.num_edges()}".encode()).hexdigest()[:12]
    path = folder / f"{cache_tag(data.name)}-metis-{parts}-{key}.pkl"
    # METIS reads a graph without features; the sampler then cuts the graph that carries them.
    structure = dgl.graph(data.graph.edges(), num_nodes=num_nodes)
    return NodeSampler(data, kind, parts, metis_cluster_sampler(structure, parts, path, data.name))


def metis_cluster_sampler(structure: dgl.DGLGraph, parts: int, path: Path,
                          name: str) -> dgl.dataloading.ClusterGCNSampler:
    """DGL's ``ClusterGCNSampler`` of ``structure`` in ``parts`` METIS parts, cached in the file ``path``.

    METIS runs in a forked child (:func:`~geaet_dgl.data.fresh_process.run_apart`) that writes the cache
    (DGL's own format) atomically; this process then reads it. In this process METIS could not be stopped:
    METIS catches SIGTERM itself and returns "other errors" (a traceback), and a Ctrl-C waited until it ended
    (7 minutes at ogbn-products' size); its working memory, about twice the graph's, also stays with the child.
    A cache that DGL refuses (another graph, a damaged file) is computed again."""
    if path.is_file():
        try:
            return dgl.dataloading.ClusterGCNSampler(structure, parts, cache_path=str(path))
        except (dgl.DGLError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError) as exc:  # DGL reads its cache with pickle and checks only some of what can go wrong
            log.warning("the METIS cache %s does not fit this graph (%s); computing the parts again", path,
                        str(exc).splitlines()[0][:120])
            path.unlink(missing_ok=True)
    run_apart(lambda: _write_metis_cache(structure, parts, path), f"the METIS parts of {name}", announce=False,
              fix="METIS takes about 95 bytes a stored edge (docs/performance.md); free memory, or train with "
                  "--sampler random, which needs no METIS")
    return dgl.dataloading.ClusterGCNSampler(structure, parts, cache_path=str(path))


def _write_metis_cache(structure: dgl.DGLGraph, parts: int, path: Path) -> None:
    """METIS by DGL's sampler into a temp file next to ``path``, moved onto it when complete
    (:func:`~geaet_dgl.atomic.atomic_path`)."""
    with atomic_path(path) as temp:
        dgl.dataloading.ClusterGCNSampler(structure, parts, cache_path=str(temp))


def masked_rows(graph: dgl.DGLGraph, output: torch.Tensor, split: str = "train", ntype: str = ""
                ) -> Tuple[torch.Tensor, torch.Tensor]:
    """The outputs and targets of the batch's nodes in ``split``'s mask: -> ``(output[m], label[m])``
    (of a heterograph's target type ``ntype``, whose nodes the model's rows are)."""
    frame = node_frame(graph, ntype)
    mask = frame[MASKS[split]]
    return output[mask], frame["label"][mask]
