"""The user's own graphs: a DGL graph file (``dgl.save_graphs``) as a dataset, or as graphs to predict on.

The file
--------
``dgl.save_graphs(PATH, graphs, {"label": labels})`` with, on every graph,

* ``ndata['feat']``: ``(N_i, F)`` float features (read by a linear encoder),
  or ``(N_i, F)`` integer types (one embedding per column; vocabulary = the
  column's largest value in the file + 1); ``(N_i,)`` is read as ``(N_i, 1)``;
* ``edata['feat']`` (optional, on every graph or none): ``(E_i, F_e)`` float
  or integer, as above; without it every edge gets one learned vector;
* the labels: ``{"label": (G,) int}`` graph classes, ``{"label": (G,) or
  (G, T) float}`` graph regression targets, or ``ndata['label']`` ``(N_i,)``
  int on every graph (node classification). Graph labels win when both are
  there, unless the task is stated.

Tasks are :data:`TASKS`; :func:`infer_task` picks one from the labels.
Splits come from a split file (JSON or NPZ with ``train`` / ``val`` (or
``valid``) / ``test`` lists of graph indices; graphs in no list are unused) or
a seeded random split of the given fractions (:func:`split_indices`).

This module reads the file and loads it; the checks live beside it, one job each:
:mod:`.file_features` (widths, vocabularies), :mod:`.file_labels` (labels, task),
:mod:`.file_splits` (the split); their names are re-exported here.

Every problem raises :class:`DataError` in one line naming the file, the graph
index and the fix. The model-side settings these facts imply (widths,
encoders, head, loss) are made by :mod:`geaet_dgl.data.run_settings`.

Example
-------
>>> import dgl, torch
>>> graphs = [dgl.rand_graph(5, 12) for _ in range(10)]
>>> for g in graphs:
...     g.ndata['feat'] = torch.randn(5, 3)
>>> dgl.save_graphs('/tmp/example.bin', graphs, {'label': torch.arange(10) % 2})
>>> inspect_graph_file('/tmp/example.bin').task
'graph-classification'
"""
from __future__ import annotations

import faulthandler
import functools
import gc
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import dgl
import numpy as np
import torch

from ...config.validation import GRAPH_FILE  # data.dataset of a run on a graph file
from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp
from ..encodings.pe_cache import writable_cache_dir
from ..errors import DataError, first_line
from ..fresh_process import fork_available, run_apart
from ..identity import check_unchanged, file_identity, identity_changes
from ..options import FileSplit, LoadOptions
from ..validation import validate_splits
from .file_features import FeatureSpec, check_same_fields, conform_graphs, infer_feature_spec
from .file_labels import LABEL_KEY, SAVE_HINT, TASKS, class_ids, graph_file_labels, infer_task
from .file_splits import (DEFAULT_SPLIT, SPLITS, read_split_file, recorded_split, split_fractions, split_indices,
                          split_sizes)

PathLike = Union[str, os.PathLike]



@dataclass(frozen=True)
class GraphFileInfo:
    """What a graph file holds: ``num_graphs``, its ``task``, ``num_outputs``
    (classes, or regression targets per graph) and the :class:`FeatureSpec`."""

    path: str
    num_graphs: int
    task: str
    num_outputs: int
    features: FeatureSpec


def is_graph_file_name(name: str) -> bool:
    """Whether a ``--dataset`` value names a graph file (``*.bin``, or an existing file) rather than a dataset."""
    return str(name).lower().endswith(".bin") or os.path.isfile(name)


def read_graph_file(path: PathLike) -> Tuple[List[dgl.DGLGraph], Dict[str, torch.Tensor]]:
    """``dgl.load_graphs(path)`` -> (graphs, label dict), with one-line errors for a missing or foreign file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise DataError(f"graph file {path} does not exist; pass the path of a file written by dgl.save_graphs")
    _trial_load(path)
    try:
        graphs, labels = dgl.load_graphs(path)
    except Exception as exc:  # DGLError for a foreign file; other types for truncated ones
        raise DataError(f"{path} is not a DGL graph file (dgl.load_graphs failed: "
                        f"{first_line(exc)}); {SAVE_HINT}") from exc
    if not graphs:
        raise DataError(f"{path} holds no graphs; {SAVE_HINT} with at least one graph")
    # Saved with int32 ids (half the file and load of a large graph): DGL's METIS and the project's id tensors
    # are int64, so the graph continues as int64, one graph at a time (the int32 copy is freed as it goes).
    graphs = list(graphs)
    for index, graph in enumerate(graphs):
        if graph.idtype == torch.int32:
            graphs[index] = graph.long()
    del graph
    return graphs, dict(labels or {})


def _trial_load(path: str, idx: Optional[List[int]] = None) -> None:
    """Load ``path`` (graphs ``idx``, default all) once in a forked child: DGL aborts or crashes the whole process
    (C++ ``terminate``, a segmentation fault; no Python error) on some damaged files, e.g. a size field that asks
    for 10^17 bytes; here that is a one-line DataError instead."""
    if not fork_available():  # pragma: no cover - Windows: no child to try it in
        return
    try:
        run_apart(functools.partial(_load_silently, path, idx), f"a trial load of {path}", announce=False)
    except DataError as exc:  # only the child dying raises DataError here: DGL aborted
        raise DataError(f"{path} is damaged: DGL aborted while reading it ({first_line(exc).split(';')[0]}); "
                        f"{SAVE_HINT}") from exc
    except Exception:  # noqa: BLE001 - a Python error: the load in this process reports it in words
        pass


def _load_silently(path: str, idx: Optional[List[int]] = None) -> None:
    """In the trial child: load with stderr closed (DGL's abort prints a C++ backtrace there)."""
    faulthandler.disable()  # its report of the abort would go to a saved copy of stderr
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    graphs, labels = dgl.load_graphs(path, idx)
    for g in graphs:  # touch what was read, then free it: damage that corrupts memory crashes here, not later
        for ntype in g.ntypes:
            dict(g.nodes[ntype].data)
        for etype in g.canonical_etypes:
            dict(g.edges[etype].data)
            g.edges(etype=etype)
    del graphs, labels
    gc.collect()


def load_first_graph(path: PathLike) -> Tuple[List[dgl.DGLGraph], Dict[str, torch.Tensor]]:
    """``dgl.load_graphs(path, [0])`` after a trial load of that graph in a child (see :func:`_trial_load`):
    DataError for a file that crashes DGL, DGL's own exception otherwise."""
    _trial_load(os.fspath(path), [0])
    return dgl.load_graphs(os.fspath(path), [0])


# ------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------


def inspect_graph_file(path: PathLike, task: Optional[str] = None) -> GraphFileInfo:
    """Read ``path`` and say what it holds (task inferred unless given); all the file's checks run."""
    graphs, labels = read_graph_file(path)
    task = task or infer_task(graphs, labels, path)
    features = infer_feature_spec(graphs, path)
    conform_graphs(graphs, path, features)
    _, outputs = graph_file_labels(graphs, labels, path, task)
    return GraphFileInfo(path=os.fspath(path), num_graphs=len(graphs), task=task, num_outputs=outputs,
                         features=features)


def run_split(num_graphs: int, path: Path, file_split: FileSplit) -> Dict[str, List[int]]:
    """The split of a run on the file: the run's recorded ``indices`` (after checking the file against its
    ``identity``), else :func:`split_indices` (``legacy_split``: cut as runs from before the recorded split
    were; also for heterograph files, :mod:`.hetero_files`)."""
    given = file_split
    if given.identity is not None:
        check_unchanged(f"graph file {path}", identity_changes(given.identity, file_identity(path, num_graphs)),
                        given.allow_changed, "restore the file the run was trained on")
    if given.indices is not None:
        return recorded_split(given.indices, num_graphs, path)
    return split_indices(num_graphs, path, given.split_file, given.split, given.split_seed, legacy=given.legacy_split)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_graph_file(options: LoadOptions) -> DatasetSplits:
    """A graph file as train / val / test splits, with positional encodings cached beside it.

    Parameters
    ----------
    options : LoadOptions
        ``data_file``: written by ``dgl.save_graphs`` (see the module docstring). ``task``: one of
        :data:`TASKS`; default inferred from the labels. ``file_split``: how to split the file (default:
        at random, 0.8/0.1/0.1, seed 0), or the split a run recorded (see :class:`FileSplit`).
        ``pe_k`` (default 0), ``rwse_k``, ``laplacian_norm`` (default ``'sym'``): encodings the one path after
        the loader attaches
        (``ndata['lap_pe']``/``['lap_eigval']``, ``['rwse']``), cached in ``geaet_cache/`` beside the
        file (a folder that cannot be written: ``$GEAET_DGL_CACHE`` or ``~/.cache/geaet-dgl``), keyed by
        the file's size and mtime and by each split's indices. ``limit_train``, ``limit_val``,
        ``limit_test``: keep the first N graphs of a split.

    Returns
    -------
    DatasetSplits
        ``name`` = the file name; ``num_classes`` = classes, or regression
        targets per graph; node-level datasets for node classification.
    """
    path = Path(options.data_file)
    graphs, labels = read_graph_file(path)
    task = options.task or infer_task(graphs, labels, path)
    spec = infer_feature_spec(graphs, path)
    conform_graphs(graphs, path, spec)
    targets, outputs = graph_file_labels(graphs, labels, path, task)
    file_split = options.file_split
    chosen = run_split(len(graphs), path, file_split)  # a run from before the split was recorded keeps its cut
    limits = options.limit_of
    node_offsets = None
    if task == "node-classification":
        node_offsets = np.concatenate([[0], np.cumsum([g.num_nodes() for g in graphs])])
    stamp = file_stamp(path)
    stem = re.sub(r"[^A-Za-z0-9.-]+", "-", path.stem)
    cache_dir = path.parent / "geaet_cache"
    if options.encodings(default_norm=DEFAULT_LAPLACIAN_NORM):  # beside the file, or (read-only) the user's cache
        where = hashlib.sha1(os.fspath(path.resolve()).encode()).hexdigest()[:10]
        cache_dir = writable_cache_dir(cache_dir, f"{stem}-{where}")
    datasets, caches = {}, {}
    for name in SPLITS:
        indices = chosen[name][:limits[name]] if limits[name] is not None else chosen[name]
        split_graphs = [graphs[i] for i in indices]
        digest = hashlib.sha1(json.dumps(chosen[name]).encode()).hexdigest()[:12]
        caches[name] = EncodingCache(cache_dir, f"{stem}-{name}-{digest}", stamp)
        if node_offsets is None:
            datasets[name] = GraphDataset(split_graphs, targets[indices])
        else:
            rows = torch.cat([targets[node_offsets[i]:node_offsets[i + 1]] for i in indices])
            datasets[name] = GraphDataset(split_graphs, rows, level="node")
    how = f"split file {file_split.split_file}" if file_split.split_file is not None else \
        f"random split {list(split_fractions(file_split.split))} seed {file_split.split_seed}"
    splits = DatasetSplits(train=datasets["train"], val=datasets["val"], test=datasets["test"],
                           num_classes=outputs, name=path.name, source=f"graph file {path} ({task}, {how})",
                           encoding_plan=EncodingPlan(caches, default_norm=DEFAULT_LAPLACIAN_NORM))
    return validate_splits(splits)


__all__ = ["GRAPH_FILE", "TASKS", "LABEL_KEY", "SPLITS", "DEFAULT_SPLIT", "FileSplit", "FeatureSpec",
           "GraphFileInfo", "is_graph_file_name", "read_graph_file", "load_first_graph", "inspect_graph_file",
           "run_split", "load_graph_file", "infer_feature_spec", "conform_graphs", "check_same_fields", "infer_task",
           "graph_file_labels", "class_ids", "split_indices", "recorded_split", "split_sizes", "split_fractions",
           "read_split_file"]
