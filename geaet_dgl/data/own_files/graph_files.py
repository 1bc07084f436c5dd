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
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import dgl
import numpy as np
import torch

from ...config.validation import GRAPH_FILE, GRAPH_FILE_TASKS as TASKS  # data.dataset and data.task of a file
from ..dataset import DatasetSplits, GraphDataset
from ..encodings.pe_cache import attach_pe, cached_split_pe, writable_cache_dir
from ..errors import DataError
from ..fresh_process import fork_available, run_apart
from ..identity import check_unchanged, file_identity, identity_changes
from ..validation import validate_splits

PathLike = Union[str, os.PathLike]

LABEL_KEY = "label"
SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = (0.8, 0.1, 0.1)
_SAVE_HINT = "write it with dgl.save_graphs(PATH, graphs, {'label': labels})"


@dataclass(frozen=True)
class FileSplit:
    """How a run splits a graph file into train / val / test, and what the run recorded of the file.

    ``split_file``, ``split`` (fractions) and ``split_seed`` cut a new split
    (:func:`split_indices`). ``identity`` and ``indices`` are a run's record of
    the file (:func:`~..identity.file_identity`) and of its split
    (``{'train': [...], 'val': [...], 'test': [...]}``): the split is then
    ``indices``, and a file whose identity differs is refused (DataError)
    unless ``allow_changed``. Without ``indices``, ``legacy_split`` cuts the
    random split as runs that predate the record did. The fields are the
    ``load_dataset('file', ...)`` keywords of the same names.
    """

    split_file: Optional[PathLike] = None
    split: Optional[Sequence[float]] = None
    split_seed: int = 0
    identity: Optional[Dict[str, Any]] = None
    indices: Optional[Dict[str, List[int]]] = None
    allow_changed: bool = False
    legacy_split: bool = False

    @classmethod
    def pop_from(cls, options: Dict[str, Any]) -> "FileSplit":
        """The split given among ``options`` (keywords of a file loader), taken out of them."""
        return cls(**{item.name: options.pop(item.name) for item in fields(cls) if item.name in options})


@dataclass(frozen=True)
class FeatureSpec:
    """What the model reads from a graph: feature widths and, for integer types, vocabulary sizes.

    ``node_vocab_sizes`` / ``edge_vocab_sizes`` are ``None`` for float
    features; ``edge_in_feats == 0`` means the graphs have no edge features.
    """

    node_in_feats: int
    node_vocab_sizes: Optional[Tuple[int, ...]] = None
    edge_in_feats: int = 0
    edge_vocab_sizes: Optional[Tuple[int, ...]] = None


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
                        f"{_first_line(exc)}); {_SAVE_HINT}") from exc
    if not graphs:
        raise DataError(f"{path} holds no graphs; {_SAVE_HINT} with at least one graph")
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
        raise DataError(f"{path} is damaged: DGL aborted while reading it ({_first_line(exc).split(';')[0]}); "
                        f"{_SAVE_HINT}") from exc
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    match = re.search(r"Check failed: [^\n]*?: ([^\n]+)", text)
    if match:
        return match.group(1).strip()
    return (text.splitlines() or [type(exc).__name__])[0][:160]


# ------------------------------------------------------------------------------------------------
# Features
# ------------------------------------------------------------------------------------------------


def _as_columns(values: torch.Tensor, path: str, index: int, where: str) -> torch.Tensor:
    if values.ndim == 1:
        return values.unsqueeze(1)
    if values.ndim != 2:
        raise DataError(f"{path}: graph {index} has {where} of shape {tuple(values.shape)}; store (rows, F) "
                        "features, one row per node (edge)")
    return values


def _feature_kind(values: torch.Tensor) -> str:
    if values.dtype == torch.bool or values.is_complex():
        return "other"
    return "float" if values.is_floating_point() else "int"


def infer_feature_spec(graphs: Sequence[dgl.DGLGraph], path: PathLike) -> FeatureSpec:
    """Widths (and vocabularies of integer types) of ``ndata['feat']`` / ``edata['feat']``, checked across graphs.

    Raises
    ------
    DataError
        A graph without ``ndata['feat']``, edge features on some graphs only,
        or a width or type (float / integer) other than graph 0's.
    """
    path = os.fspath(path)
    for index, g in enumerate(graphs):
        if not g.is_homogeneous:  # a heterograph among graphs of one type (or a file read as homogeneous)
            raise DataError(f"{path}: graph {index} is a heterograph (node types {', '.join(g.ntypes)}) read among "
                            "graphs of one node type; a file holds graphs of one node and edge type, or heterographs "
                            "that all have the same types (and a readable first graph): store them apart")
    node_width, node_vocab = _infer_one(graphs, path, "node")
    has_edges = ["feat" in g.edata for g in graphs]
    if any(has_edges) and not all(has_edges):
        index = has_edges.index(False) if has_edges[0] else has_edges.index(True)
        state = "lacks" if has_edges[0] else "has"
        raise DataError(f"{path}: graph {index} {state} edata['feat'] but graph 0 "
                        f"{'has' if has_edges[0] else 'lacks'} it; give every graph edge features or none")
    edge_width, edge_vocab = _infer_one(graphs, path, "edge") if all(has_edges) else (0, None)
    return FeatureSpec(node_width, node_vocab, edge_width, edge_vocab)


def _infer_one(graphs: Sequence[dgl.DGLGraph], path: str, unit: str) -> Tuple[int, Optional[Tuple[int, ...]]]:
    field = "ndata" if unit == "node" else "edata"
    where = f"{field}['feat']"
    width = kind = None
    maxima = None
    for index, g in enumerate(graphs):
        frame = g.ndata if unit == "node" else g.edata
        if "feat" not in frame:
            raise DataError(f"{path}: graph {index} has no {where}; store the {unit} features of every graph "
                            f"as g.{field}['feat'] before dgl.save_graphs")
        values = _as_columns(frame["feat"], path, index, where)
        this_kind = _feature_kind(values)
        if this_kind == "other":
            raise DataError(f"{path}: graph {index} has {where} of type {values.dtype}; store float features or "
                            "integer types")
        if width is None:
            width, kind = values.shape[1], this_kind
        if values.shape[1] != width:
            raise DataError(f"{path}: graph {index} has {values.shape[1]} {unit} features but graph 0 has {width}; "
                            f"give every graph's {where} the same width")
        if this_kind != kind:
            raise DataError(f"{path}: graph {index} has {this_kind} {where} but graph 0 has {kind}; use one type "
                            "in every graph (float features, or integer types)")
        if kind == "int" and values.shape[0]:
            if bool((values < 0).any()):
                raise DataError(f"{path}: graph {index} has a negative integer in {where}; integer features are "
                                "types 0, 1, 2, ... (embedded); shift them or store floats")
            column_max = values.max(dim=0).values.long()
            maxima = column_max if maxima is None else torch.maximum(maxima, column_max)
    if kind == "int":
        sizes = (maxima + 1).tolist() if maxima is not None else [1] * width
        return width, tuple(int(s) for s in sizes)
    return width, None


def conform_graphs(graphs: Sequence[dgl.DGLGraph], path: PathLike, spec: FeatureSpec, trained_on: str = "") -> None:
    """Check ``graphs`` against ``spec`` and store their features as the model reads them (in place).

    ``ndata['feat']`` becomes ``(N_i, F)`` float32 (or int64 types),
    ``edata['feat']`` ``(E_i, F_e)`` likewise, or ``(E_i, 1)`` zeros where
    ``spec`` has no edge features (one learned edge vector reads nothing).
    ``trained_on`` names what fixed ``spec`` (e.g. a checkpoint) in the errors.

    Raises
    ------
    DataError
        An empty graph, a missing field, a width or type other than ``spec``'s,
        an integer type outside the vocabulary, or a NaN/inf value.
    """
    path = os.fspath(path)
    source = f" ({trained_on})" if trained_on else ""
    for index, g in enumerate(graphs):
        if not g.is_homogeneous:
            raise DataError(f"{path}: graph {index} is a heterograph (node types {', '.join(g.ntypes)}; edge types "
                            f"{', '.join(g.etypes)}), but the model{source or ''} reads graphs of one node and one "
                            "edge type; pass graphs like those it was trained on (or train on the heterographs)")
        if g.num_nodes() == 0:
            raise DataError(f"{path}: graph {index} has no nodes; remove it from the file (an empty graph has "
                            "nothing to predict from)")
        g.ndata["feat"] = _conform_one(g.ndata, path, index, "node", spec.node_in_feats, spec.node_vocab_sizes,
                                       source)
        if spec.edge_in_feats:
            g.edata["feat"] = _conform_one(g.edata, path, index, "edge", spec.edge_in_feats, spec.edge_vocab_sizes,
                                           source)
        else:
            g.edata["feat"] = torch.zeros(g.num_edges(), 1)
    check_same_fields(graphs, path)


def check_same_fields(graphs: Sequence[dgl.DGLGraph], path: PathLike) -> None:
    """Raise a one-line DataError unless every graph has graph 0's node and edge fields, each with graph 0's
    shape per row and type (DGL batches only such graphs: otherwise training would stop at the first mixed batch)."""
    path = os.fspath(path)
    for field in ("ndata", "edata"):
        first = None
        for index, g in enumerate(graphs):
            frame = getattr(g, field)
            schema = {key: (tuple(value.shape[1:]), value.dtype) for key, value in frame.items()}
            if first is None:
                first = schema
                continue
            for key in sorted(set(schema) | set(first)):
                if key not in first or key not in schema:
                    has, lacks = (index, 0) if key in schema else (0, index)
                    raise DataError(f"{path}: graph {has} has {field}[{key!r}] but graph {lacks} has not; store "
                                    f"{field}[{key!r}] on every graph or on none (DGL batches only graphs with the "
                                    "same fields)")
                if schema[key] != first[key]:
                    raise DataError(f"{path}: graph {index} has {field}[{key!r}] of row shape {schema[key][0]} and "
                                    f"type {schema[key][1]} but graph 0 {first[key][0]} and {first[key][1]}; give "
                                    "the field one shape and type on every graph")


def _conform_one(frame, path: str, index: int, unit: str, width: int, vocab: Optional[Sequence[int]],
                 source: str) -> torch.Tensor:
    field = "ndata" if unit == "node" else "edata"
    where = f"{field}['feat']"
    kind = "integer types" if vocab is not None else "float features"
    if "feat" not in frame:
        raise DataError(f"{path}: graph {index} has no {where}, but the model reads {width} {unit} {kind}{source}; "
                        f"store them as g.{field}['feat']")
    values = _as_columns(frame["feat"], path, index, where)
    if values.shape[1] != width:
        raise DataError(f"{path}: graph {index} has {values.shape[1]} {unit} features but the model reads "
                        f"{width}{source}; give the graphs {where} of shape (rows, {width}) like the training data")
    if vocab is None:
        if _feature_kind(values) == "other":
            raise DataError(f"{path}: graph {index} has {where} of type {values.dtype}; store float features")
        values = values.float()
        bad = ~torch.isfinite(values)
        if bool(bad.any()):
            row = int(bad.any(dim=1).nonzero()[0])
            raise DataError(f"{path}: graph {index} has a non-finite value in {where} ({unit} {row}); replace "
                            "NaN/inf before saving the graphs")
        return values
    if _feature_kind(values) != "int":
        raise DataError(f"{path}: graph {index} has {values.dtype} {where} but the model embeds integer types"
                        f"{source}; store integer types like the training data")
    values = values.long()
    limit = torch.tensor(list(vocab), dtype=torch.int64)
    bad = (values < 0) | (values >= limit)
    if bool(bad.any()):
        row, column = (int(i) for i in bad.nonzero()[0])
        raise DataError(f"{path}: graph {index} has type {int(values[row, column])} in column {column} of {where} "
                        f"({unit} {row}); the model knows types 0..{vocab[column] - 1} there{source}; map unseen "
                        "types to known ones")
    return values


# ------------------------------------------------------------------------------------------------
# Labels and task
# ------------------------------------------------------------------------------------------------


def infer_task(graphs: Sequence[dgl.DGLGraph], labels: Dict[str, torch.Tensor], path: PathLike) -> str:
    """Graph labels: integer -> 'graph-classification', float -> 'graph-regression';
    else ``ndata['label']`` on the graphs -> 'node-classification'."""
    path = os.fspath(path)
    if LABEL_KEY in labels:
        values = labels[LABEL_KEY]
        return "graph-classification" if values.dtype == torch.bool or _feature_kind(values) == "int" \
            else "graph-regression"
    if any(LABEL_KEY in g.ndata for g in graphs):
        return "node-classification"
    found = f" (it has {', '.join(repr(k) for k in labels)})" if labels else ""
    raise DataError(f"{path} has no labels{found}; {_SAVE_HINT} (per graph), or store per-node classes as "
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
        raise DataError(f"{path} has no graph labels{found}; {_SAVE_HINT}")
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


# ------------------------------------------------------------------------------------------------
# Splits
# ------------------------------------------------------------------------------------------------


def split_indices(num_graphs: int, path: PathLike, split_file: Optional[PathLike] = None,
                  fractions: Optional[Sequence[float]] = None, seed: int = 0,
                  legacy: bool = False) -> Dict[str, List[int]]:
    """``{'train', 'val', 'test'}`` -> sorted graph indices, from ``split_file`` or a seeded random split.

    ``fractions`` (default 0.8/0.1/0.1) are positive and add up to 1; the
    random split is a permutation seeded by ``seed``, cut into
    :func:`split_sizes` graphs for train, val and test. ``legacy``: the cut
    of runs that predate the recorded split (``data.split_indices``):
    ``round(f * G)`` for val and test, the rest for train (or ``round(f * G)``
    where the fractions add up to less than 1), so those runs keep their split.
    """
    if split_file is not None:
        return read_split_file(split_file, num_graphs, path)
    if legacy:
        fractions = split_fractions(fractions, allow_unused=True)
        n_val, n_test = (int(round(f * num_graphs)) for f in fractions[1:])
        n_train = num_graphs - n_val - n_test if sum(fractions) > 1 - 1e-6 else int(round(fractions[0] * num_graphs))
    else:
        fractions = split_fractions(fractions)
        n_train, n_val, n_test = split_sizes(num_graphs, fractions)
    if min(n_train, n_val, n_test) < 1:
        raise DataError(f"{os.fspath(path)} has {num_graphs} graphs: too few for the split {list(fractions)} "
                        f"({n_train}/{n_val}/{n_test}); every split needs a graph: add graphs or pass a --split-file")
    order = torch.randperm(num_graphs, generator=torch.Generator().manual_seed(int(seed))).tolist()
    cuts = {"train": order[:n_train], "val": order[n_train:n_train + n_val],
            "test": order[n_train + n_val:n_train + n_val + n_test]}
    return {name: sorted(indices) for name, indices in cuts.items()}


def recorded_split(indices: Dict[str, List[int]], num_graphs: int, path: PathLike) -> Dict[str, List[int]]:
    """A run's recorded split, checked against the file as it is now (every index still a graph of it)."""
    if not isinstance(indices, dict) or any(not isinstance(indices.get(name), list) for name in SPLITS):
        raise DataError(f"the run's recorded split of {os.fspath(path)} is damaged (data.split_indices must map "
                        "train/val/test to index lists); use another checkpoint of the run")
    for name in SPLITS:
        outside = [i for i in indices[name] if not isinstance(i, int) or not 0 <= i < num_graphs]
        if outside:
            raise DataError(f"the run's {name} split names graph {outside[0]} but {os.fspath(path)} now holds "
                            f"{num_graphs} graphs; restore the file the run was trained on")
    return {name: list(indices[name]) for name in SPLITS}


def split_sizes(num_graphs: int, fractions: Sequence[float]) -> Tuple[int, int, int]:
    """Graphs per split: ``floor(f * G)`` each, the graphs left over go to the largest remainders, ties to test,
    then val (so rounding never shrinks an evaluation split below its share: 25 graphs at 0.8/0.1/0.1 give
    20/2/3, not 21/2/2)."""
    exact = [f * num_graphs for f in fractions]
    sizes = [int(np.floor(x + 1e-9)) for x in exact]
    order = sorted(range(3), key=lambda i: (-(exact[i] - sizes[i]), -i))  # largest remainder; ties: test, val
    for i in order[:max(0, num_graphs - sum(sizes))]:
        sizes[i] += 1
    return sizes[0], sizes[1], sizes[2]


def split_fractions(fractions: Union[None, str, Sequence[float]], allow_unused: bool = False
                    ) -> Tuple[float, float, float]:
    """``(train, val, test)`` fractions: default 0.8/0.1/0.1; text such as ``"0.7,0.2,0.1"`` (``--set``) is parsed.

    Raises DataError unless there are three positive numbers adding up to 1 (fewer would leave graphs in no
    split without a word: list the graphs to use in a split file instead); ``allow_unused``: at most 1.
    """
    if fractions is None:
        fractions = DEFAULT_SPLIT
    elif isinstance(fractions, str):
        fractions = [part for part in re.split(r"[,\s]+", fractions.strip("[] ")) if part]
    try:
        parsed = tuple(float(f) for f in fractions)
    except (TypeError, ValueError):
        parsed = ()
    if len(parsed) != 3 or min(parsed) <= 0 or sum(parsed) > 1 + 1e-6:
        raise DataError(f"split fractions {fractions!r} must be three positive numbers (train val test) adding "
                        "up to 1, e.g. --split 0.8 0.1 0.1")
    if sum(parsed) < 1 - 1e-6 and not allow_unused:
        raise DataError(f"split fractions {' '.join(map(str, parsed))} add up to {sum(parsed):g}: "
                        f"{1 - sum(parsed):.0%} of the graphs would be in no split; make them add up to 1, or list "
                        "the graphs to use in a --split-file")
    return parsed  # type: ignore[return-value]


def read_split_file(split_file: PathLike, num_graphs: int, path: PathLike) -> Dict[str, List[int]]:
    """Read and check a split file: JSON ``{"train": [...], "val": [...], "test": [...]}`` or an NPZ with those keys.

    ``valid`` is read as ``val``. Indices must be integers in ``0..G-1``, none
    twice, no index in two splits, no split empty.
    """
    split_file = os.fspath(split_file)
    if not os.path.isfile(split_file):
        raise DataError(f"split file {split_file} does not exist; pass a JSON or NPZ file with train/val/test "
                        "index lists")
    try:
        if split_file.lower().endswith(".npz"):
            with np.load(split_file, allow_pickle=False) as archive:
                raw = {key: archive[key].tolist() for key in archive.files}
        else:
            with open(split_file) as handle:
                raw = json.load(handle)
    except Exception as exc:  # noqa: BLE001 - OSError, bad JSON, and whatever numpy / zipfile raise on a damaged NPZ
        raise DataError(f"split file {split_file} cannot be read ({type(exc).__name__}: {_first_line(exc)}); write "
                        "JSON {\"train\": [...], \"val\": [...], \"test\": [...]} or np.savez(train=..., val=..., "
                        "test=...)") from exc
    if not isinstance(raw, dict):
        raise DataError(f"split file {split_file} holds a {type(raw).__name__}; it must map train/val/test to "
                        "index lists")
    if "val" not in raw and "valid" in raw:
        raw["val"] = raw.pop("valid")
    missing = [name for name in SPLITS if name not in raw]
    if missing:
        raise DataError(f"split file {split_file} has no {', '.join(missing)} list (it has "
                        f"{', '.join(map(str, raw)) or 'nothing'}); give train, val and test index lists")
    owner: Dict[int, str] = {}
    result = {}
    for name in SPLITS:
        values = raw[name]
        if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise DataError(f"split file {split_file}: {name} must be a list of integer graph indices")
        if not values:
            raise DataError(f"split file {split_file}: the {name} list is empty; give every split at least one graph")
        for position, index in enumerate(values):
            if not 0 <= index < num_graphs:
                raise DataError(f"split file {split_file}: {name}[{position}] = {index} is out of range for "
                                f"{os.fspath(path)} ({num_graphs} graphs, indices 0..{num_graphs - 1}); fix the index")
            if index in owner:
                where = "twice in " + name if owner[index] == name else f"in both {owner[index]} and {name}"
                raise DataError(f"split file {split_file}: graph {index} is {where}; each graph belongs to one "
                                "split at most")
            owner[index] = name
        result[name] = sorted(values)
    return result


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


def load_graph_file(data_file: PathLike, task: Optional[str] = None, file_split: Optional[FileSplit] = None,
                    pe_k: int = 0, limit_train: Optional[int] = None, limit_val: Optional[int] = None,
                    limit_test: Optional[int] = None, progress: bool = True, *, rwse_k: Optional[int] = None,
                    laplacian_norm: str = "sym") -> DatasetSplits:
    """A graph file as train / val / test splits, with positional encodings cached beside it.

    Parameters
    ----------
    data_file : path-like
        Written by ``dgl.save_graphs`` (see the module docstring).
    task : str, optional
        One of :data:`TASKS`; default inferred from the labels.
    file_split : FileSplit, optional
        How to split the file (default: at random, 0.8/0.1/0.1, seed 0), or
        the split a run recorded (see :class:`FileSplit`).
    pe_k, rwse_k, laplacian_norm
        Encodings to attach (``ndata['lap_pe']``/``['lap_eigval']``, ``['rwse']``),
        cached in ``geaet_cache/`` beside the file (a folder that cannot be
        written: ``$GEAET_DGL_CACHE`` or ``~/.cache/geaet-dgl``), keyed by the
        file's size and mtime and by each split's indices.
    limit_train, limit_val, limit_test : int, optional
        Keep the first N graphs of a split.

    Returns
    -------
    DatasetSplits
        ``name`` = the file name; ``num_classes`` = classes, or regression
        targets per graph; node-level datasets for node classification.
    """
    path = Path(data_file)
    graphs, labels = read_graph_file(path)
    task = task or infer_task(graphs, labels, path)
    spec = infer_feature_spec(graphs, path)
    conform_graphs(graphs, path, spec)
    targets, outputs = graph_file_labels(graphs, labels, path, task)
    file_split = file_split or FileSplit()
    chosen = run_split(len(graphs), path, file_split)  # a run from before the split was recorded keeps its cut
    limits = {"train": limit_train, "val": limit_val, "test": limit_test}
    node_offsets = None
    if task == "node-classification":
        node_offsets = np.concatenate([[0], np.cumsum([g.num_nodes() for g in graphs])])
    stat = path.stat()
    stamp = f"{stat.st_size}:{stat.st_mtime_ns}"
    stem = re.sub(r"[^A-Za-z0-9.-]+", "-", path.stem)
    cache_dir = path.parent / "geaet_cache"
    if pe_k or rwse_k is not None:  # beside the file, or (a read-only folder) in the user's cache
        where = hashlib.sha1(os.fspath(path.resolve()).encode()).hexdigest()[:10]
        cache_dir = writable_cache_dir(cache_dir, f"{stem}-{where}")
    datasets = {}
    for name in SPLITS:
        indices = chosen[name][:limits[name]] if limits[name] is not None else chosen[name]
        split_graphs = [graphs[i] for i in indices]
        digest = hashlib.sha1(json.dumps(chosen[name]).encode()).hexdigest()[:12]
        pe = cached_split_pe(split_graphs, cache_dir, tag=f"{stem}-{name}-{digest}", k=pe_k,
                             norm=laplacian_norm, rwse_k=rwse_k, stamp=stamp, progress=progress)
        attach_pe(split_graphs, pe)
        if node_offsets is None:
            datasets[name] = GraphDataset(split_graphs, targets[indices])
        else:
            rows = torch.cat([targets[node_offsets[i]:node_offsets[i + 1]] for i in indices])
            datasets[name] = GraphDataset(split_graphs, rows, level="node")
    how = f"split file {file_split.split_file}" if file_split.split_file is not None else \
        f"random split {list(split_fractions(file_split.split))} seed {file_split.split_seed}"
    splits = DatasetSplits(train=datasets["train"], val=datasets["val"], test=datasets["test"],
                           num_classes=outputs, name=path.name, source=f"graph file {path} ({task}, {how})")
    return validate_splits(splits)
