"""Heterograph files: graphs of several node and edge types, written by ``dgl.save_graphs``.

The file
--------
Every graph has the same node types and canonical edge types (the schema),
with, per type and optional,

* ``g.nodes[t].data['feat']``: ``(N_t, F_t)`` float (``(N_t,)`` is read as
  ``(N_t, 1)``); on every graph or on none; a type without features gets a
  learned vector;
* ``g.edges[r].data['feat']``: ``(E_r, F_r)`` float, likewise;
* labels: ``{"label": ...}`` per graph as for homogeneous files
  (:mod:`.graph_files`), or ``g.nodes[t].data['label']`` ``(N_t,)`` int on
  one node type, the target (``--set data.target_ntype=t`` picks it when
  several types have labels).

Splits are the homogeneous files' (split file or seeded fractions); one
heterograph with ``train_mask``/``val_mask``/``test_mask`` on its target
type is a transductive node task read by :mod:`..nodes.node_graph`. The
first graph decides whether a file is read here (more than one node or edge
type) or by :mod:`.graph_files`: :func:`inspect_file` and :func:`load_file`
dispatch. Every problem is one :class:`DataError` line naming the file, the
graph and the fix.

Example
-------
>>> from geaet_dgl.data.generated.hetero import author_paper_graphs
>>> graphs, labels = author_paper_graphs(20)
>>> for g, y in zip(graphs, labels):
...     g.nodes['paper'].data['label'] = y
>>> dgl.save_graphs('/tmp/papers.bin', graphs)
>>> info = inspect_file('/tmp/papers.bin')
>>> info.task, info.schema.target_ntype
('node-classification', 'paper')
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import dgl
import torch

from ..dataset import DatasetSplits, GraphDataset
from ..errors import DataError
from .graph_files import (LABEL_KEY, SPLITS, TASKS, GraphFileInfo, PathLike, class_ids, graph_file_labels,
                          load_first_graph,
                          inspect_graph_file, load_graph_file, read_graph_file, run_split, split_fractions)
from ..options import LoadOptions
from ..validation import validate_splits

Relation = Tuple[str, str, str]


@dataclass(frozen=True)
class HeteroSchema:
    """Node types and their feature widths (0: none), relations and theirs, and the target node type."""

    ntypes: Tuple[str, ...]
    node_in_feats: Tuple[int, ...]
    canonical_etypes: Tuple[Relation, ...]
    edge_in_feats: Tuple[int, ...]
    target_ntype: str = ""

    @property
    def etype_names(self) -> List[str]:
        """The relations as ``"src:rel:dst"`` (how :class:`~geaet_dgl.config.HeteroConfig` stores them)."""
        return [":".join(r) for r in self.canonical_etypes]


@dataclass(frozen=True)
class HeteroFileInfo(GraphFileInfo):
    """:class:`~.graph_files.GraphFileInfo` of a heterograph file, with its :class:`HeteroSchema`."""

    schema: Optional[HeteroSchema] = None


def is_heterograph(graph: dgl.DGLGraph) -> bool:
    """More than one node type or edge type."""
    return len(graph.ntypes) > 1 or len(graph.canonical_etypes) > 1


def file_holds_heterographs(path: PathLike) -> bool:
    """Whether the file's first graph is a heterograph (reads that graph only)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    try:
        graphs, _ = load_first_graph(path)  # a damaged file can crash DGL: tried in a child first
    except Exception:  # a foreign, empty or damaged file: the homogeneous reader words the error
        return False
    return bool(graphs) and is_heterograph(graphs[0])


# ------------------------------------------------------------------------------------------------
# Schema and features
# ------------------------------------------------------------------------------------------------


def _schema_of(g: dgl.DGLGraph) -> Tuple[Tuple[str, ...], Tuple[Relation, ...]]:
    return tuple(g.ntypes), tuple(tuple(r) for r in g.canonical_etypes)


def check_schema(graphs: Sequence[dgl.DGLGraph], path: str, ntypes: Sequence[str],
                 canonical_etypes: Sequence[Relation], source: str = "graph 0") -> None:
    """Every graph has exactly these node types and relations."""
    expected = (tuple(ntypes), tuple(tuple(r) for r in canonical_etypes))
    for index, g in enumerate(graphs):
        found = _schema_of(g)
        if found != expected:
            missing = [t for t in expected[0] if t not in found[0]] + [":".join(r) for r in expected[1]
                                                                     if r not in found[1]]
            extra = [t for t in found[0] if t not in expected[0]] + [":".join(r) for r in found[1]
                                                                   if r not in expected[1]]
            detail = "; ".join(part for part in (f"lacks {', '.join(missing)}" if missing else "",
                                                 f"has {', '.join(extra)} too" if extra else "") if part)
            raise DataError(f"{path}: graph {index}'s types differ from {source}'s ({detail or 'other order'}); give "
                            "every graph the same node and edge types (a type may have 0 nodes or edges)")


def _feature_width(frames, path: str, unit: str, name: str) -> int:
    """Width of ``feat`` on type ``name`` over all graphs (0 if no graph has it)."""
    where = f"{'nodes' if unit == 'node' else 'edges'}[{name!r}].data['feat']"
    present = ["feat" in frame for frame in frames]
    if not any(present):
        return 0
    if not all(present):
        index = present.index(False)
        raise DataError(f"{path}: graph {index} has no {where} but graph {present.index(True)} has; give the type "
                        "features on every graph or on none")
    width = None
    for index, frame in enumerate(frames):
        values = frame["feat"]
        if values.ndim > 2 or not values.is_floating_point():
            raise DataError(f"{path}: graph {index} has {where} of shape {tuple(values.shape)} and type "
                            f"{values.dtype}; store (rows, F) float features per type")
        this = 1 if values.ndim == 1 else values.shape[1]
        width = this if width is None else width
        if this != width:
            raise DataError(f"{path}: graph {index} has {this} features in {where} but the graphs before it have "
                            f"{width}; give every graph's {where} the same width")
    return int(width)


def infer_schema(graphs: Sequence[dgl.DGLGraph], path: PathLike, target_ntype: Optional[str] = None) -> HeteroSchema:
    """The file's :class:`HeteroSchema`, checked over all graphs (target left empty: see :func:`node_target`)."""
    path = os.fspath(path)
    ntypes, etypes = _schema_of(graphs[0])
    check_schema(graphs, path, ntypes, etypes)
    node_widths = tuple(_feature_width([g.nodes[t].data for g in graphs], path, "node", t) for t in ntypes)
    edge_widths = tuple(_feature_width([g.edges[r].data for g in graphs], path, "edge", ":".join(r))
                        for r in etypes)
    if target_ntype and target_ntype not in ntypes:
        raise DataError(f"{path}: data.target_ntype={target_ntype!r} is not a node type of the graphs "
                        f"({', '.join(ntypes)}); pass one of them")
    return HeteroSchema(ntypes, node_widths, etypes, edge_widths, target_ntype or "")


def conform_hetero_graphs(graphs: Sequence[dgl.DGLGraph], path: PathLike, schema: HeteroSchema,
                          trained_on: str = "") -> None:
    """Check ``graphs`` against ``schema`` and store their features as float32 ``(rows, F)`` (in place).

    Raises DataError for another schema, a missing feature, another width, a
    NaN/inf value, or a graph without nodes.
    """
    path = os.fspath(path)
    source = f"the model's ({trained_on})" if trained_on else "graph 0"
    check_schema(graphs, path, schema.ntypes, schema.canonical_etypes, source)
    check_same_hetero_fields(graphs, path)
    for index, g in enumerate(graphs):
        if g.num_nodes() == 0:
            raise DataError(f"{path}: graph {index} has no nodes; remove it from the file")
        for frame, name, width in ([(g.nodes[t].data, t, w) for t, w in zip(schema.ntypes, schema.node_in_feats)]
                                   + [(g.edges[r].data, ":".join(r), w)
                                      for r, w in zip(schema.canonical_etypes, schema.edge_in_feats)]):
            if not width:
                continue
            if "feat" not in frame:
                raise DataError(f"{path}: graph {index} has no features on {name!r}, but the model reads {width}; "
                                f"store them as data['feat'] on that type")
            values = frame["feat"]
            values = values.reshape(values.shape[0], -1).float() if values.is_floating_point() else values
            if not values.is_floating_point() or values.shape[1] != width:
                raise DataError(f"{path}: graph {index} has {name!r} features of shape {tuple(values.shape)} "
                                f"({values.dtype}); the model reads (rows, {width}) floats there")
            if not bool(torch.isfinite(values).all()):
                raise DataError(f"{path}: graph {index} has a NaN/inf in the {name!r} features; replace them "
                                "before saving the graphs")
            frame["feat"] = values


def check_same_hetero_fields(graphs: Sequence[dgl.DGLGraph], path: PathLike) -> None:
    """Raise a one-line DataError unless every graph has graph 0's fields on every node and edge type, each of
    graph 0's row shape and type (``feat``: checked by width later). DGL batches only such graphs: otherwise
    training stopped at the first mixed batch with a DGLError about schemas."""
    path = os.fspath(path)
    first = graphs[0] if graphs else None
    for index, g in enumerate(graphs[1:], start=1):
        frames = [(f"nodes[{t!r}].data", first.nodes[t].data, g.nodes[t].data) for t in first.ntypes]
        frames += [(f"edges[{':'.join(r)!r}].data", first.edges[r].data, g.edges[r].data)
                   for r in first.canonical_etypes]
        for where, theirs, ours in frames:
            for key in sorted(set(theirs.keys()) | set(ours.keys())):
                if key in theirs and key in ours:
                    if key != "feat" and (theirs[key].shape[1:], theirs[key].dtype) != (ours[key].shape[1:],
                                                                                          ours[key].dtype):
                        raise DataError(f"{path}: graph {index} has {where}[{key!r}] of row shape "
                                        f"{tuple(ours[key].shape[1:])} and type {ours[key].dtype} but graph 0 "
                                        f"{tuple(theirs[key].shape[1:])} and {theirs[key].dtype}; give the field "
                                        "one shape and type on every graph")
                    continue
                has, lacks = (index, 0) if key in ours else (0, index)
                fix = (f"node masks split the nodes of one graph: save one heterograph with {key} on its target "
                       "type, or drop the masks" if key.endswith("_mask") else
                       f"store {where}[{key!r}] on every graph or on none (DGL batches only graphs with the same "
                       "fields)")
                raise DataError(f"{path}: graph {has} has {where}[{key!r}] but graph {lacks} has not; {fix}")


# ------------------------------------------------------------------------------------------------
# Labels
# ------------------------------------------------------------------------------------------------


def node_target(graphs: Sequence[dgl.DGLGraph], path: str, target_ntype: str) -> str:
    """The node type carrying ``data['label']``: ``target_ntype``, else the only labelled type."""
    labelled = [t for t in graphs[0].ntypes if LABEL_KEY in graphs[0].nodes[t].data]
    if target_ntype:
        if target_ntype not in labelled:
            raise DataError(f"{path}: node type {target_ntype!r} has no data['label'] (labelled types: "
                            f"{', '.join(labelled) or 'none'}); store g.nodes[{target_ntype!r}].data['label']")
        return target_ntype
    if not labelled:
        raise DataError(f"{path} has no labels; pass {{'label': labels}} per graph to dgl.save_graphs, or store "
                        "per-node classes as g.nodes[TYPE].data['label'] on one node type")
    if len(labelled) > 1:
        raise DataError(f"{path}: node types {', '.join(labelled)} all have data['label']; say which one to "
                        f"predict with --set data.target_ntype={labelled[0]}")
    return labelled[0]


def infer_hetero_task(labels: Dict[str, torch.Tensor], path: str) -> str:
    """Graph labels -> their task; else 'node-classification' (the target type is found by :func:`node_target`)."""
    if LABEL_KEY in labels:
        return "graph-classification" if not labels[LABEL_KEY].is_floating_point() else "graph-regression"
    return "node-classification"


def hetero_labels(graphs: Sequence[dgl.DGLGraph], labels: Dict[str, torch.Tensor], path: str, task: str,
                  target: str) -> Tuple[torch.Tensor, int]:
    """The targets of ``task`` -> (labels, outputs); node labels of ``target`` concatenated graph by graph."""
    if task not in TASKS:
        raise DataError(f"task {task!r} is not one of {', '.join(TASKS)}")
    if task != "node-classification":
        return graph_file_labels(graphs, labels, path, task)
    parts = []
    for index, g in enumerate(graphs):
        data = g.nodes[target].data
        if LABEL_KEY not in data:
            raise DataError(f"{path}: graph {index} has no nodes[{target!r}].data['label']; node classification "
                            "needs a class per target node on every graph")
        parts.append(data.pop(LABEL_KEY).reshape(-1))
    return class_ids(torch.cat(parts), path, f"nodes[{target!r}].data['label']", None)


# ------------------------------------------------------------------------------------------------
# Loading (and the dispatch between homogeneous and heterograph files)
# ------------------------------------------------------------------------------------------------


def _read(path: PathLike, task: Optional[str], target_ntype: Optional[str]):
    graphs, labels = read_graph_file(path)
    path = os.fspath(path)
    schema = infer_schema(graphs, path, target_ntype)
    task = task or infer_hetero_task(labels, path)
    target = node_target(graphs, path, target_ntype or "") if task == "node-classification" else ""
    schema = HeteroSchema(schema.ntypes, schema.node_in_feats, schema.canonical_etypes, schema.edge_in_feats, target)
    conform_hetero_graphs(graphs, path, schema)
    targets, outputs = hetero_labels(graphs, labels, path, task, target)
    return graphs, schema, task, targets, outputs


def _homogeneous_only(path: PathLike, target_ntype: Optional[str]) -> None:
    if target_ntype:
        raise DataError(f"data.target_ntype={target_ntype!r} is for heterograph files, but {os.fspath(path)} holds "
                        "graphs of one node and edge type; drop the setting")


def inspect_file(path: PathLike, task: Optional[str] = None, target_ntype: Optional[str] = None) -> GraphFileInfo:
    """What a graph file holds: :class:`HeteroFileInfo` for heterographs, else
    :func:`~.graph_files.inspect_graph_file`'s answer."""
    if not file_holds_heterographs(path):
        _homogeneous_only(path, target_ntype)
        return inspect_graph_file(path, task)
    graphs, schema, task, _, outputs = _read(path, task, target_ntype)
    return HeteroFileInfo(path=os.fspath(path), num_graphs=len(graphs), task=task, num_outputs=outputs,
                          features=None, schema=schema)


def load_file(options: LoadOptions) -> DatasetSplits:
    """The graph file ``options.data_file`` as train / val / test splits: heterographs here, the rest by
    :func:`~.graph_files.load_graph_file` (the same options, plus ``target_ntype``). ``options.file_split``
    (:class:`~..options.FileSplit`) is the split, or the file and split a run recorded
    (:func:`~.graph_files.run_split`).

    Heterograph models read no positional encoding: ``pe_k`` and ``rwse_k`` must be 0 / None.
    """
    data_file, target_ntype = options.data_file, options.target_ntype
    if not file_holds_heterographs(data_file):
        _homogeneous_only(data_file, target_ntype)
        return load_graph_file(options)
    if options.pe_k or options.rwse_k:
        raise DataError("heterograph models take no positional encoding; set model.pe=none")
    path = Path(data_file)
    graphs, schema, task, targets, outputs = _read(path, options.task, target_ntype)
    # heterograph files came after runs recorded their split: no legacy cut here
    file_split = dataclasses.replace(options.file_split, legacy_split=False)
    chosen = run_split(len(graphs), path, file_split)
    limits = options.limit_of
    node_level = task == "node-classification"
    if node_level:
        sizes = torch.tensor([0] + [g.num_nodes(schema.target_ntype) for g in graphs])
        offsets = torch.cumsum(sizes, 0)
    datasets = {}
    for name in SPLITS:
        indices = chosen[name][:limits[name]] if limits[name] is not None else chosen[name]
        split_graphs = [graphs[i] for i in indices]
        if node_level:
            rows = torch.cat([targets[offsets[i]:offsets[i + 1]] for i in indices])
            datasets[name] = GraphDataset(split_graphs, rows, level="node", node_type=schema.target_ntype)
        else:
            datasets[name] = GraphDataset(split_graphs, targets[indices])
    how = f"split file {file_split.split_file}" if file_split.split_file is not None else \
        f"random split {list(split_fractions(file_split.split))} seed {file_split.split_seed}"
    splits = DatasetSplits(train=datasets["train"], val=datasets["val"], test=datasets["test"], num_classes=outputs,
                           name=path.name, source=f"heterograph file {path} ({task}, {how})")
    return validate_splits(splits)


__all__ = ["HeteroSchema", "HeteroFileInfo", "is_heterograph", "file_holds_heterographs", "infer_schema",
           "conform_hetero_graphs", "inspect_file", "load_file"]
