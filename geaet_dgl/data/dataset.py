"""Graph datasets, split bundles, batching and seeded loaders."""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import dgl
import torch
from torch.utils.data import DataLoader, Dataset

from .errors import DataError
from .graph_batch import batch_graphs


LEVELS = ("graph", "node", "link")


class GraphDataset(Dataset):
    """A list of ``(DGLGraph, label)`` pairs as a torch ``Dataset``.

    Parameters
    ----------
    graphs : sequence of dgl.DGLGraph
        ``G`` graphs.
    labels : torch.Tensor
        ``level='graph'``: ``(G,)`` int64 class labels (or ``(G, ...)``
        targets). ``level='node'``: the graphs' per-node labels concatenated,
        ``(N_1 + ... + N_G,)`` (or ``(sum N_i, ...)``); item ``i`` then
        yields its own ``(N_i,)`` slice. ``level='link'``: the graphs' positive
        node pairs concatenated, ``(P_1 + ... + P_G, 2)`` int64 node ids of
        their own graph; item ``i`` yields its ``(P_i, 2)`` slice.
    level : {'graph', 'node', 'link'}
        What a label belongs to; decides how :func:`collate_for` batches them.
    counts : torch.Tensor, optional
        ``level='link'`` only: ``(G,)`` pairs per graph, ``P_i``.
    node_type : str, optional
        ``level='node'`` on heterographs: the node type the labels belong to
        (``N_i`` counts that type's nodes).
    """

    def __init__(self, graphs: Sequence[dgl.DGLGraph], labels: torch.Tensor, level: str = "graph",
                 counts: Optional[torch.Tensor] = None, node_type: Optional[str] = None):
        if level not in LEVELS:
            raise DataError(f"level={level!r} is not one of {', '.join(LEVELS)}")
        if (counts is None) == (level == "link"):
            raise DataError("pass counts (pairs per graph) with level='link', and only then")
        labels = torch.as_tensor(labels)
        self.graphs: List[dgl.DGLGraph] = list(graphs)
        self.level = level
        self.node_type = node_type
        if level == "node":
            sizes = self.node_counts()
            if int(sizes.sum()) != labels.shape[0]:
                raise DataError(f"{len(self.graphs)} graphs with {int(sizes.sum())} nodes but {labels.shape[0]} "
                                "node labels; pass one label per node, graphs concatenated")
            self.offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(sizes, 0)])
        elif level == "link":
            sizes = torch.as_tensor(counts, dtype=torch.int64).reshape(-1)
            if len(sizes) != len(self.graphs) or int(sizes.sum()) != labels.shape[0] or \
                    (labels.numel() and (labels.ndim != 2 or labels.shape[1] != 2)):
                raise DataError(f"{len(self.graphs)} graphs with {len(sizes)} pair counts (sum {int(sizes.sum())}) "
                                f"but labels of shape {tuple(labels.shape)}; pass (sum P_i, 2) pairs and one "
                                "count per graph")
            self.offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(sizes, 0)])
        elif len(self.graphs) != labels.shape[0]:
            raise DataError(f"{len(self.graphs)} graphs but {labels.shape[0]} labels; pass one label per graph")
        self.labels: torch.Tensor = labels

    def __len__(self) -> int:
        return len(self.graphs)

    def node_counts(self) -> torch.Tensor:
        """(G,) int64: the nodes each graph has labels for (all its nodes, or those of ``node_type``)."""
        node_type = getattr(self, "node_type", None)  # datasets pickled before node_type existed
        return torch.tensor([g.num_nodes(node_type) if node_type else g.num_nodes() for g in self.graphs],
                            dtype=torch.int64)

    def __getitem__(self, index: int) -> Tuple[dgl.DGLGraph, torch.Tensor]:
        if self.level in ("node", "link"):
            return self.graphs[index], self.labels[self.offsets[index]:self.offsets[index + 1]]
        return self.graphs[index], self.labels[index]

    def subset(self, count: Optional[int]) -> "GraphDataset":
        """The first ``count`` pairs (all if ``None``)."""
        if count is None:
            return self
        if self.level == "node":
            end = int(self.offsets[min(count, len(self.graphs))])
            return GraphDataset(self.graphs[:count], self.labels[:end], level="node", node_type=self.node_type)
        if self.level == "link":
            end = min(count, len(self.graphs))
            return GraphDataset(self.graphs[:count], self.labels[:int(self.offsets[end])], level="link",
                                counts=torch.diff(self.offsets[:end + 1]))
        return GraphDataset(self.graphs[:count], self.labels[:count])


@dataclass
class DatasetSplits:
    """Train / validation / test datasets of one benchmark.

    Attributes
    ----------
    train, val, test : GraphDataset
    num_classes : int
    name : str
        E.g. ``"mnist"``.
    source : str
        Human-readable provenance (published pickles, local build, synthetic).
    input_transform : dict, optional
        What the loader did to the stored features (see
        :mod:`.input_transform`); recorded by a run, re-applied by ``predict``.
    encoding_plan : EncodingPlan, optional
        Set by the loader: where the one path after it (:func:`~.encodings.apply.encode_splits`) caches
        each split's positional encodings; ``None``: nothing to attach.
    """

    train: GraphDataset
    val: GraphDataset
    test: GraphDataset
    num_classes: int
    name: str
    source: str = ""
    input_transform: Optional[dict] = None
    encoding_plan: Optional[Any] = field(default=None, repr=False, compare=False)

    def first_graph(self) -> dgl.DGLGraph:
        """The first graph of the first split that has one: what every graph's feature widths are read from."""
        for split in (self.train, self.val, self.test):
            if len(split):
                return split.graphs[0]
        raise DataError(f"dataset {self.name!r} has no graphs in any split; raise the limits")

    @property
    def node_feat_dim(self) -> int:
        """Width of ``ndata['feat']``."""
        return int(self.first_graph().ndata["feat"].shape[1])

    @property
    def edge_feat_dim(self) -> int:
        """Width of ``edata['feat']``."""
        return int(self.first_graph().edata["feat"].shape[1])

    @property
    def pe_dim(self) -> int:
        """Width of ``ndata['lap_pe']`` (0 if absent)."""
        g = self.first_graph()
        return int(g.ndata["lap_pe"].shape[1]) if "lap_pe" in g.ndata else 0

    def sizes(self) -> dict:
        """``{'train': n, 'val': n, 'test': n}``."""
        return {"train": len(self.train), "val": len(self.val), "test": len(self.test)}


def collate(samples: Sequence[Tuple[dgl.DGLGraph, torch.Tensor]]) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """Batch ``(graph, label)`` pairs.

    Returns
    -------
    batch : dgl.DGLGraph
        The graphs batched (node/edge data concatenated): :func:`~.graph_batch.batch_graphs`,
        equal to ``dgl.batch`` at a fraction of its cost.
    labels : torch.Tensor
        ``(B,)`` (labels stacked).
    """
    if len(samples) == 0:
        raise DataError("cannot collate an empty batch; use batch_size >= 1 on a non-empty dataset")
    graphs, labels = zip(*samples)
    return batch_graphs(graphs), torch.stack([torch.as_tensor(y) for y in labels])


def collate_nodes(samples: Sequence[Tuple[dgl.DGLGraph, torch.Tensor]]) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """Batch ``(graph, per-node labels)`` pairs: -> (``dgl.batch``, ``(N_1 + ... + N_B,)`` labels concatenated).

    The labels line up with the batched graph's nodes (``dgl.batch`` keeps
    each graph's nodes together, in order).
    """
    if len(samples) == 0:
        raise DataError("cannot collate an empty batch; use batch_size >= 1 on a non-empty dataset")
    graphs, labels = zip(*samples)
    return batch_graphs(graphs), torch.cat([torch.as_tensor(y) for y in labels])


def collate_links(samples: Sequence[Tuple[dgl.DGLGraph, torch.Tensor]]) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """Batch ``(graph, (P_i, 2) positive pairs)``: -> (``dgl.batch``, ``(P, 4)`` int64 link targets).

    Row ``p`` of the targets is ``(src, dst, first, num_nodes)``: the pair's
    node ids in the batched graph (its graph's ids shifted by the nodes of the
    graphs before it) and the node range ``first .. first + num_nodes - 1``
    of its graph, the candidates it is ranked against and negatives are drawn
    from (:func:`geaet_dgl.training.losses.link_cross_entropy`,
    :func:`geaet_dgl.training.metrics.link_ranking_table`).
    """
    if len(samples) == 0:
        raise DataError("cannot collate an empty batch; use batch_size >= 1 on a non-empty dataset")
    graphs, pairs = zip(*samples)
    sizes = torch.tensor([g.num_nodes() for g in graphs], dtype=torch.int64)
    firsts = torch.cumsum(sizes, 0) - sizes
    rows = [torch.cat([torch.as_tensor(p, dtype=torch.int64).reshape(-1, 2) + first,
                       torch.stack([first, size]).expand(len(p), 2)], dim=1)
            for p, first, size in zip(pairs, firsts, sizes)]
    return batch_graphs(graphs), torch.cat(rows)


def collate_for(dataset: Dataset):
    """The collate function of ``dataset``: :func:`collate_nodes` for node-level labels,
    :func:`collate_links` for link-level ones, else :func:`collate`."""
    return {"node": collate_nodes, "link": collate_links}.get(getattr(dataset, "level", "graph"), collate)


def make_loader(
    dataset: Dataset, batch_size: int, shuffle: bool, seed: int = 0, num_workers: int = 0, drop_last: bool = False
) -> DataLoader:
    """A ``DataLoader`` of batched graphs whose shuffling is fixed by ``seed``.

    Parameters
    ----------
    dataset : Dataset
        Yields ``(graph, label)``.
    batch_size : int
    shuffle : bool
    seed : int
        Seeds the loader's own ``torch.Generator`` (and so the order of
        every epoch, reproducibly, independent of the global RNG).
    num_workers : int
    drop_last : bool

    Returns
    -------
    torch.utils.data.DataLoader
        Yields ``(dgl.DGLGraph batch, labels (B,))``.
    """
    if batch_size < 1:
        raise DataError(f"batch_size must be >= 1, got {batch_size}; pass a positive batch size")
    generator = torch.Generator()
    generator.manual_seed(int(seed))
    return DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=shuffle,
        collate_fn=collate_for(dataset),
        num_workers=num_workers,
        generator=generator,
        drop_last=drop_last,
        persistent_workers=num_workers > 0,
    )
