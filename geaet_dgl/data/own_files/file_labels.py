"""A graph file's labels and task: graph classes, graph regression targets or per-node classes.

:func:`infer_task` picks one of :data:`TASKS` from the labels; :func:`graph_file_labels`
returns the targets and the number of outputs. Part of :mod:`.graph_files`' reading of a file.
"""
from __future__ import annotations

import os
from typing import Dict, Sequence, Tuple, Union

import dgl
import numpy as np
import torch

from ...config.validation import GRAPH_FILE_TASKS as TASKS  # data.task of a graph file
from ..errors import DataError
from .file_features import feature_kind

PathLike = Union[str, os.PathLike]

LABEL_KEY = "label"
SAVE_HINT = "write it with dgl.save_graphs(PATH, graphs, {'label': labels})"


def infer_task(graphs: Sequence[dgl.DGLGraph], labels: Dict[str, torch.Tensor], path: PathLike) -> str:
    """Graph labels: integer -> 'graph-classification', float -> 'graph-regression';
    else ``ndata['label']`` on the graphs -> 'node-classification'."""
    path = os.fspath(path)
    if LABEL_KEY in labels:
        values = labels[LABEL_KEY]
        return "graph-classification" if values.dtype == torch.bool or feature_kind(values) == "int" \
            else "graph-regression"
    if any(LABEL_KEY in g.ndata for g in graphs):
        return "node-classification"
    found = f" (it has {', '.join(repr(k) for k in labels)})" if labels else ""
    raise DataError(f"{path} has no labels{found}; {SAVE_HINT} (per graph), or store per-node classes as "
                    "g.ndata['label']")


def graph_file_labels(graphs: Sequence[dgl.DGLGraph], labels: Dict[str, torch.Tensor], path: PathLike,
                      task: str) -> Tuple[torch.Tensor, int]:
    """The targets of ``task`` -> (labels, outputs).

    'graph-classification': ``(G,)`` int64 and the number of classes (largest
    label + 1, at least 2); 'graph-regression': ``(G,)`` or ``(G, T)`` float32
    and ``T``; 'node-classification': ``(N_1 + ... + N_G,)`` int64 (the
    graphs' ``ndata['label']`` concatenated, then removed from the graphs) and
    the number of classes.
    """
    path = os.fspath(path)
    if task not in TASKS:
        raise DataError(f"task {task!r} is not one of {', '.join(TASKS)}")
    if task == "node-classification":
        parts = []
        for index, g in enumerate(graphs):
            if LABEL_KEY not in g.ndata:
                raise DataError(f"{path}: graph {index} has no ndata['label']; node classification needs a class "
                                "per node on every graph")
            parts.append(g.ndata.pop(LABEL_KEY).reshape(g.num_nodes(), -1))
        values = torch.cat(parts)
        if values.shape[1] != 1:
            raise DataError(f"{path}: ndata['label'] has {values.shape[1]} columns; store one class per node, shape "
                            "(N,)")
        return class_ids(values.reshape(-1), path, "ndata['label']", graphs)
    if LABEL_KEY not in labels:
        found = f" (it has {', '.join(repr(k) for k in labels)})" if labels else ""
        raise DataError(f"{path} has no graph labels{found}; {SAVE_HINT}")
    values = labels[LABEL_KEY]
    if values.ndim == 0 or values.shape[0] != len(graphs):
        count = 1 if values.ndim == 0 else values.shape[0]
        raise DataError(f"{path} has {len(graphs)} graphs but {count} labels; pass one label (row) per graph, in "
                        "the order of the graphs")
    if task == "graph-classification":
        return class_ids(values, path, "label", None)
    values = values.float()
    bad = ~torch.isfinite(values.reshape(len(graphs), -1)).all(dim=1)
    if bool(bad.any()):
        raise DataError(f"{path}: graph {int(bad.nonzero()[0])} has a NaN/inf regression target; fix or drop "
                        "that graph")
    return values, 1 if values.ndim == 1 else int(np.prod(values.shape[1:]))


def class_ids(values: torch.Tensor, path: str, where: str, graphs) -> Tuple[torch.Tensor, int]:
    """``values`` (one label per graph or node, read from ``where`` of file ``path``) checked as class ids 0..C-1
    -> (int64 ids, C); a one-line :class:`DataError` names the first bad one (``graphs``: to name its graph)."""
    if values.ndim != 1:
        raise DataError(f"{path}: {where} has shape {tuple(values.shape)}; classification needs one class id per "
                        "graph, shape (G,) (or use --task graph-regression)")
    if values.is_floating_point():
        if not bool(torch.isfinite(values).all()) or not bool((values == values.round()).all()):
            raise DataError(f"{path}: {where} holds values that are not class ids; store int64 classes 0..C-1, "
                            "or use --task graph-regression")
    values = values.long()
    if bool((values < 0).any()):
        row = int((values < 0).nonzero()[0])
        owner = _owner(row, graphs)
        raise DataError(f"{path}: {owner} has class {int(values[row])}; classes are 0..C-1")
    return values, max(2, int(values.max()) + 1)


def _owner(row: int, graphs) -> str:
    if graphs is None:
        return f"graph {row}"
    sizes = np.cumsum([g.num_nodes() for g in graphs])
    graph = int(np.searchsorted(sizes, row, side="right"))
    return f"graph {graph} (node {row - (int(sizes[graph - 1]) if graph else 0)})"
