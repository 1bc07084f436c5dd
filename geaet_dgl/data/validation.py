"""Load-time checks of graph datasets: bad data is refused before training starts.

Every check raises :class:`DataError` with one line naming the split, the
graph index (its position in the split), what is wrong and the fix:

* a graph with no nodes (nothing to predict from);
* NaN or infinite values in any floating-point node or edge field
  (``ndata['feat']``, ``edata['feat']``, ``ndata['lap_pe']``, ``ndata['rwse']``, ...);
* labels that are not finite, or (for class labels) outside ``0..C-1``.

The feature checks are vectorised per split (one concatenation per field),
so validating the 70k MNIST graphs takes a fraction of a second.

Example
-------
>>> import dgl, torch
>>> from geaet_dgl.data import GraphDataset
>>> g = dgl.graph(([0], [1])); g.ndata['feat'] = torch.tensor([[0.0], [float('nan')]])
>>> validate_dataset(GraphDataset([g], torch.tensor([0])), 'train', 'toy')
Traceback (most recent call last):
...
geaet_dgl.data.errors.DataError: the train split of 'toy': graph 0 has a non-finite value (nan) in ...
"""
from __future__ import annotations

import logging
from typing import Dict, List, Optional, Sequence

import dgl
import numpy as np
import torch

from .dataset import DatasetSplits, GraphDataset
from .errors import DataError

log = logging.getLogger(__name__)

SPLIT_NAMES = ("train", "val", "test")


def _where(split: str, dataset_name: str) -> str:
    return f"the {split} split of {dataset_name!r}"


def _fix(dataset_name: str) -> str:
    return (f"fix or drop that graph in the source files of {dataset_name!r} "
            "(for a local MNIST build: delete its data folder to rebuild)")


def _graph_of(position: int, sizes: torch.Tensor) -> tuple:
    """Row ``position`` of the concatenated field -> (graph index, row inside that graph)."""
    ends = torch.cumsum(sizes, 0)
    graph = int(torch.searchsorted(ends, torch.tensor(position), right=True))
    start = int(ends[graph - 1]) if graph > 0 else 0
    return graph, position - start


def check_no_empty_graphs(graphs: Sequence[dgl.DGLGraph], split: str, dataset_name: str) -> None:
    """Refuse graphs without nodes (the model has nothing to read for them)."""
    for index, g in enumerate(graphs):
        if g.num_nodes() == 0:
            raise DataError(f"{_where(split, dataset_name)}: graph {index} has no nodes; {_fix(dataset_name)}")


def check_finite_fields(graphs: Sequence[dgl.DGLGraph], split: str, dataset_name: str) -> None:
    """Refuse NaN/inf in any floating-point ``ndata`` / ``edata`` field of any graph."""
    if not graphs:
        return
    for kind, frames, counts in (
        ("ndata", [g.ndata for g in graphs], torch.tensor([g.num_nodes() for g in graphs])),
        ("edata", [g.edata for g in graphs], torch.tensor([g.num_edges() for g in graphs])),
    ):
        keys = sorted(set().union(*(frame.keys() for frame in frames)))
        unit = "node" if kind == "ndata" else "edge"
        for key in keys:
            parts = [frame[key] for frame in frames if key in frame]
            if len(parts) != len(frames) or not all(isinstance(p, torch.Tensor) and p.is_floating_point()
                                                    for p in parts):  # a dict: a heterograph's (checked on load)
                continue
            values = torch.cat([p.reshape(p.shape[0], int(np.prod(p.shape[1:]))) for p in parts])  # 0 rows too
            finite = torch.isfinite(values).all(dim=1)
            if bool(finite.all()):
                continue
            row = int((~finite).nonzero()[0])
            graph, local = _graph_of(row, counts)
            bad = values[row][~torch.isfinite(values[row])][0].item()
            raise DataError(
                f"{_where(split, dataset_name)}: graph {graph} has a non-finite value ({bad}) in "
                f"{kind}[{key!r}] ({unit} {local}); {_fix(dataset_name)}"
            )


def _label_owner(row: int, node_sizes: Optional[torch.Tensor]) -> str:
    """Words for label row ``row``: ``graph i`` (graph labels) or ``graph i (node j)`` (node labels)."""
    if node_sizes is None:
        return f"graph {row}"
    graph, local = _graph_of(row, node_sizes)
    return f"graph {graph} (node {local})"


def check_labels(labels: torch.Tensor, split: str, dataset_name: str, num_classes: Optional[int] = None,
                 what: str = "", node_sizes: Optional[torch.Tensor] = None) -> None:
    """Labels must be finite; integer class labels must lie in ``0..num_classes-1``.

    Parameters
    ----------
    labels : torch.Tensor
        ``(G,)`` or ``(G, T)``.
    num_classes : int, optional
        ``C``; no range check if None or if the labels are floating point
        (regression targets; NaN there means "unlabelled" and is allowed).
    what : str
        Names the setting that fixed ``C`` (e.g. ``"model.out_feats=10"``).
    node_sizes : torch.Tensor, optional
        ``(G,)`` nodes per graph when the labels are per node (concatenated).
    """
    if labels.numel() == 0:
        return
    rows = labels.reshape(labels.shape[0], -1)
    if labels.is_floating_point():
        bad = torch.isinf(rows).any(dim=1)
        if bool(bad.any()):
            owner = _label_owner(int(bad.nonzero()[0]), node_sizes)
            raise DataError(f"{_where(split, dataset_name)}: {owner} has an infinite target; "
                            f"{_fix(dataset_name)}")
        return
    if num_classes is None:
        return
    bad = ((rows < 0) | (rows >= num_classes)).any(dim=1)
    if bool(bad.any()):
        index = int(bad.nonzero()[0])
        value = rows[index].tolist()
        value = value[0] if len(value) == 1 else value
        because = f" for {what}" if what else ""
        raise DataError(
            f"{_where(split, dataset_name)}: {_label_owner(index, node_sizes)} has label {value}, "
            f"outside 0..{num_classes - 1}{because}; fix the labels, or set model.out_feats to the number of classes"
        )


def validate_dataset(dataset: GraphDataset, split: str, dataset_name: str,
                     num_classes: Optional[int] = None) -> None:
    """All checks on one split (see the module docstring)."""
    check_no_empty_graphs(dataset.graphs, split, dataset_name)
    check_finite_fields(dataset.graphs, split, dataset_name)
    if getattr(dataset, "level", "graph") == "link":
        check_link_pairs(dataset, split, dataset_name)
    else:
        check_labels(dataset.labels, split, dataset_name, num_classes, node_sizes=node_label_sizes(dataset))


def check_link_pairs(dataset: GraphDataset, split: str, dataset_name: str) -> None:
    """Link-level targets: each graph's ``(P_i, 2)`` pairs must be node ids of that graph."""
    if dataset.labels.numel() == 0:
        return
    counts = torch.diff(dataset.offsets)
    nodes = torch.tensor([g.num_nodes() for g in dataset.graphs], dtype=torch.int64)
    limit = torch.repeat_interleave(nodes, counts).unsqueeze(1)
    bad = ((dataset.labels < 0) | (dataset.labels >= limit)).any(dim=1)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        graph = int(torch.searchsorted(dataset.offsets, torch.tensor(row), right=True)) - 1
        raise DataError(f"{_where(split, dataset_name)}: graph {graph} has the pair {dataset.labels[row].tolist()} "
                        f"outside its nodes 0..{int(nodes[graph]) - 1}; {_fix(dataset_name)}")


def node_label_sizes(dataset: GraphDataset) -> Optional[torch.Tensor]:
    """``(G,)`` nodes per graph if ``dataset`` holds per-node labels, else None."""
    if getattr(dataset, "level", "graph") != "node":
        return None
    return dataset.node_counts()


def validate_splits(splits: DatasetSplits) -> DatasetSplits:
    """Check every split of ``splits`` (labels against ``splits.num_classes``); return it.

    Raises
    ------
    DataError
        Naming the split, the graph index, the problem and the fix.
    """
    for split in SPLIT_NAMES:
        validate_dataset(getattr(splits, split), split, splits.name, splits.num_classes)
    return splits


def _ids(values) -> str:
    values = list(values)
    shown = ", ".join(str(v) for v in values[:5])
    return shown + (f", ... ({len(values)} in all)" if len(values) > 5 else "")


def warn_label_gaps(split_labels: Dict[str, Optional[torch.Tensor]], where: str) -> List[str]:
    """Warn (and return the warnings) when integer class labels leave gaps or a class never appears in training.

    ``split_labels`` maps ``train``/``val``/``test`` to the labels of that split's graphs or (masked) nodes;
    float and boolean labels are not classes and are skipped, as are negative (unlabelled) entries. The model
    gets one output per class id ``0..max``: an outlier id of 200,000 makes a 200,001-class model.
    """
    labels = {name: values.flatten() for name, values in split_labels.items()
              if values is not None and values.numel() and not values.is_floating_point()
              and values.dtype != torch.bool}
    labels = {name: values[values >= 0] for name, values in labels.items()}
    labels = {name: values for name, values in labels.items() if values.numel()}
    if not labels:
        return []
    present = torch.unique(torch.cat(list(labels.values())))
    num_classes = int(present.max()) + 1
    warnings = []
    if len(present) < num_classes:
        gaps = sorted(set(range(num_classes)) - set(present.tolist())) if num_classes <= 10**6 else []
        warnings.append(f"{where}: the labels use {len(present):,} of the class ids 0..{num_classes - 1:,} "
                        f"({num_classes - len(present):,} never appear{': ' + _ids(gaps) if gaps else ''}); the "
                        f"model gets {num_classes:,} outputs, one per id: relabel the classes 0..K-1 unless the "
                        "gaps are meant")
    if "train" in labels:
        absent = sorted(set(present.tolist()) - set(torch.unique(labels["train"]).tolist()))
        if absent:
            warnings.append(f"{where}: class(es) {_ids(absent)} appear in val/test but never in the training split; "
                            "the model cannot learn them: move some of their examples into training")
    for line in warnings:
        log.warning("%s", line)
    return warnings
