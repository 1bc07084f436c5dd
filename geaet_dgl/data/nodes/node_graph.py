"""One graph with train / val / test node masks: a transductive node task (Cora's layout).

The file
--------
``dgl.save_graphs(PATH, [g])`` with one graph ``g`` carrying

* ``ndata['feat']`` ``(N, F)`` float features or integer types (as in
  :mod:`..own_files.graph_files`), ``edata['feat']`` optional;
* ``ndata['label']``: ``(N,)`` integer classes (node classification) or
  ``(N,)`` / ``(N, T)`` float targets (node regression); nodes outside the
  three masks may hold anything (e.g. -1);
* ``ndata['train_mask']``, ``['val_mask']``, ``['test_mask']``: ``(N,)``
  ``torch.bool`` (``dgl.save_graphs`` writes them as 0/1 ``uint8``, read back as
  bool), disjoint, none empty (``dgl.data.CoraGraphDataset``'s
  convention). Nodes in no mask are unlabelled context: the model reads them,
  the loss and the metrics do not.

Or one heterograph (:mod:`..own_files.hetero_files`) with the label and the three masks
in ``g.nodes[t].data`` of its target type ``t`` (``data.target_ntype``, or
the only labelled type): the same checks run on that type's nodes, and the
model predicts them.

:func:`has_node_masks` tells such a file from a file of many graphs;
:func:`load_node_graph` reads it into a :class:`NodeGraph`. Every problem is a
one-line :class:`DataError` naming the fix.

Example
-------
>>> import dgl, torch
>>> g = dgl.rand_graph(30, 120)
>>> g.ndata['feat'] = torch.randn(30, 4)
>>> g.ndata['label'] = torch.arange(30) % 3
>>> for i, name in enumerate(('train_mask', 'val_mask', 'test_mask')):
...     g.ndata[name] = torch.arange(30) % 3 == i
>>> dgl.save_graphs('/tmp/one_graph.bin', [g])
>>> data = load_node_graph(LoadOptions(data_file='/tmp/one_graph.bin'))
>>> data.task, data.num_classes, data.sizes()
('node-classification', 3, {'train': 10, 'val': 10, 'test': 10})
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

import dgl
import numpy as np
import torch

from ...config.validation import NODE_TASKS  # the menu of data.task on one graph with node masks
from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp
from ..encodings.pe_cache import writable_cache_dir
from ..errors import DataError
from ..identity import check_unchanged, file_identity, identity_changes
from ..options import LoadOptions
from ..own_files.graph_files import (GraphFileInfo, conform_graphs, infer_feature_spec, load_first_graph,
                                     read_graph_file)
from ..own_files.hetero_files import HeteroFileInfo, HeteroSchema, conform_hetero_graphs, infer_schema, is_heterograph, node_target

PathLike = Union[str, os.PathLike]

MASKS = {"train": "train_mask", "val": "val_mask", "test": "test_mask"}
LABEL_KEY = "label"
_SAVE_HINT = ("store three disjoint torch.bool masks of shape (N,): g.ndata['train_mask'], g.ndata['val_mask'], "
              "g.ndata['test_mask']")


def node_frame(graph: dgl.DGLGraph, ntype: Optional[str] = None):
    """``graph.ndata``, or ``graph.nodes[ntype].data`` (a heterograph's target node type)."""
    return graph.nodes[ntype].data if ntype else graph.ndata


def frame_name(ntype: Optional[str]) -> str:
    """How messages name the frame: ``ndata``, or ``nodes[ntype].data``."""
    return f"nodes[{ntype!r}].data" if ntype else "ndata"


def has_node_masks(graphs: Sequence[dgl.DGLGraph]) -> bool:
    """Whether the file's graphs carry any of the masks, on any node type (then they must be one graph with
    all three, on the target type)."""
    return any(name in g.nodes[t].data for g in graphs for t in g.ntypes for name in MASKS.values())


class NodeGraph:
    """One graph whose nodes are split by masks: the data of a transductive node task.

    Stands where graph-level runs have a :class:`~..dataset.DatasetSplits`:
    same ``name``, ``source``, ``num_classes``, ``sizes()`` and feature widths,
    but one graph for every split.

    Attributes
    ----------
    graph : dgl.DGLGraph
        ``N`` nodes with ``ndata['feat']`` (model input, conformed), the
        positional encodings the model reads, ``ndata['label']`` ``(N,)`` int64
        classes or ``(N,)``/``(N, T)`` float32 targets, and the ``(N,)`` bool
        masks ``train_mask`` / ``val_mask`` / ``test_mask``; ``edata['feat']``.
        Subgraphs cut from it (:mod:`geaet_dgl.training.node_batches`) carry
        all of these for their own nodes.
    task : {'node-classification', 'node-regression'}
    num_classes : int
        Classes (largest labelled class + 1, at least 2), or targets per node.
    name, source : str
    target_ntype : str
        A heterograph's node type that carries the label and masks (the
        model predicts its nodes); ``""`` for a graph of one node type.
    """

    level = "transductive"
    #: What the loader did to the stored features (:mod:`..input_transform`): nothing.
    input_transform = None

    def __init__(self, graph: dgl.DGLGraph, task: str, num_classes: int, name: str, source: str = "",
                 cache_dir: Optional[PathLike] = None, stamp: str = "", target_ntype: str = ""):
        if task not in NODE_TASKS:
            raise DataError(f"task {task!r} is not one of {', '.join(NODE_TASKS)}")
        self.graph = graph
        self.task = task
        self.num_classes = int(num_classes)
        self.name = name
        self.source = source
        self.target_ntype = target_ntype
        #: Where samplers may cache work on this graph (METIS partitions), and a stamp of the file's version.
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.stamp = stamp
        #: Where the one path after the loader (:func:`~..encodings.apply.encode_splits`) caches the graph's
        #: positional encodings (``{'graph': EncodingCache}``); ``None``: nothing to attach.
        self.encoding_plan = None

    def mask(self, split: str) -> torch.Tensor:
        """``(N,)`` bool mask of ``split`` ('train', 'val' or 'test')."""
        if split not in MASKS:
            raise ValueError(f"split={split!r} is not one of {', '.join(MASKS)}")
        return node_frame(self.graph, self.target_ntype)[MASKS[split]]

    def nodes(self, split: str) -> torch.Tensor:
        """``(n,)`` int64 ids of the nodes of ``split``, increasing."""
        return self.mask(split).nonzero().squeeze(1)

    def labels(self, split: str) -> torch.Tensor:
        """The targets of ``split``'s nodes, in :meth:`nodes` order."""
        return node_frame(self.graph, self.target_ntype)[LABEL_KEY][self.mask(split)]

    def sizes(self) -> Dict[str, int]:
        """``{'train': nodes, 'val': nodes, 'test': nodes}``."""
        return {split: int(self.mask(split).sum()) for split in MASKS}

    @property
    def node_feat_dim(self) -> int:
        return int(self.graph.ndata["feat"].shape[1])

    @property
    def edge_feat_dim(self) -> int:
        return int(self.graph.edata["feat"].shape[1])

    @property
    def pe_dim(self) -> int:
        return int(self.graph.ndata["lap_pe"].shape[1]) if "lap_pe" in self.graph.ndata else 0

    def first_graph(self) -> dgl.DGLGraph:
        """The graph (what :meth:`DatasetSplits.first_graph` offers for the model-fit checks)."""
        return self.graph

    def split_fingerprints(self, limits: Optional[Dict[str, Optional[int]]] = None) -> Dict[str, Dict]:
        """Per split ``{"graphs": its node count, "limit": --limit-<split>, "sha256": ..., "size": [N, E],
        "split_sha256": ...}``: ``sha256`` over the graph's size, the split's node ids and their labels (the record
        a run keeps, see :mod:`..identity`), ``split_sha256`` over the node ids and labels alone, so that a graph
        whose edges changed under the same masks and labels is told apart (``size``: its nodes and edges)."""
        limits = dict(limits or {})
        result = {}
        size = [self.graph.num_nodes(), self.graph.num_edges()]
        for split in MASKS:
            digest, split_digest = hashlib.sha256(), hashlib.sha256()
            digest.update(np.array(size, dtype=np.int64).tobytes())
            nodes, labels = self.nodes(split), self.labels(split).detach().cpu().contiguous()
            for part in (nodes.numpy().tobytes(),
                         str(labels.dtype).encode() + str(tuple(labels.shape)).encode() + labels.numpy().tobytes()):
                digest.update(part)
                split_digest.update(part)
            result[split] = {"graphs": len(nodes), "limit": limits.get(split), "sha256": digest.hexdigest()[:32],
                             "size": list(size), "split_sha256": split_digest.hexdigest()[:32]}
        return result

    def __repr__(self) -> str:
        return (f"NodeGraph({self.name!r}, {self.task}, {self.graph.num_nodes()} nodes, "
                f"{self.graph.num_edges()} edges, splits {self.sizes()})")


def check_masks(graphs: Sequence[dgl.DGLGraph], path: PathLike, ntype: Optional[str] = None) -> None:
    """Refuse masks that do not split one graph's nodes (of node type ``ntype`` in a heterograph): several
    graphs, a missing, non-boolean, wrongly shaped or empty mask, or a node in two masks."""
    path = os.fspath(path)
    if len(graphs) != 1:
        holder = next(i for i, g in enumerate(graphs) if has_node_masks([g]))
        raise DataError(f"{path}: graph {holder} has node masks but the file holds {len(graphs)} graphs; masks "
                        "split the nodes of one graph: save one graph (dgl.batch(graphs)) or drop the masks and "
                        "split the graphs with --split")
    g = graphs[0]
    frame, where = node_frame(g, ntype), frame_name(ntype)
    num_nodes = g.num_nodes(ntype)
    nodes = f"{ntype!r} nodes" if ntype else "nodes"
    for name in MASKS.values():
        if name not in frame:
            present = [n for n in MASKS.values() if n in frame]
            hint = _SAVE_HINT.replace("g.ndata", f"g.{where}") if ntype else _SAVE_HINT
            raise DataError(f"{path}: the graph has {', '.join(present)} but no {name}; {hint}")
        mask = frame[name]
        # dgl.save_graphs stores torch.bool as uint8: read back 0/1 bytes as the booleans they were.
        if mask.dtype == torch.uint8 and bool(((mask == 0) | (mask == 1)).all()):
            mask = frame[name] = mask.bool()
        if mask.dtype != torch.bool:
            raise DataError(f"{path}: {where}[{name!r}] has type {mask.dtype}; store it as torch.bool "
                            f"(g.{where}[{name!r}] = mask.bool())")
        if tuple(mask.shape) != (num_nodes,):
            raise DataError(f"{path}: {where}[{name!r}] has shape {tuple(mask.shape)} but the graph has {num_nodes} "
                            f"{nodes}; store one flag per node, shape ({num_nodes},)")
        if not bool(mask.any()):
            raise DataError(f"{path}: {where}[{name!r}] selects no node; put at least one node in every split")
    names = list(MASKS.values())
    for i, first in enumerate(names):
        for second in names[i + 1:]:
            both = frame[first] & frame[second]
            if bool(both.any()):
                node = int(both.nonzero()[0])
                raise DataError(f"{path}: node {node} is in both {first} and {second}; each node belongs to one "
                                "split at most: make the masks disjoint")


def node_labels(graph: dgl.DGLGraph, path: PathLike, task: Optional[str] = None, ntype: Optional[str] = None
                ) -> tuple:
    """``ndata['label']`` (``nodes[ntype].data['label']`` of a heterograph) checked on the masked nodes
    -> (task, classes or targets per node).

    Integer labels mean classification, float labels regression, unless
    ``task`` says otherwise. The graph keeps the labels, as int64
    classes (unmasked nodes clipped to 0) or float32 targets.
    """
    path = os.fspath(path)
    frame, where = node_frame(graph, ntype), frame_name(ntype)
    if LABEL_KEY not in frame:
        raise DataError(f"{path}: the graph has masks but no {where}['label']; store a class (int) or target "
                        f"(float) per node as g.{where}['label']")
    values = frame[LABEL_KEY]
    if values.dtype == torch.bool or values.is_complex():
        raise DataError(f"{path}: {where}['label'] has type {values.dtype}; store int64 classes or float targets")
    if task is None:
        task = "node-regression" if values.is_floating_point() else "node-classification"
    if task not in NODE_TASKS:
        raise DataError(f"{path} is one graph with node masks: its task is one of {', '.join(NODE_TASKS)}, not "
                        f"{task!r}; drop --task or pick one of those")
    labelled = frame["train_mask"] | frame["val_mask"] | frame["test_mask"]
    if task == "node-regression":
        values = values.float()
        if not bool(torch.isfinite(values[labelled]).all()):
            node = int((~torch.isfinite(values.reshape(len(values), -1)).all(dim=1) & labelled).nonzero()[0])
            raise DataError(f"{path}: node {node} (in a mask) has a NaN/inf target; fix it or take it out of the "
                            "masks")
        frame[LABEL_KEY] = values
        return task, 1 if values.ndim == 1 else int(values[0].numel())
    if values.ndim != 1:
        raise DataError(f"{path}: {where}['label'] has shape {tuple(values.shape)}; classification needs one class "
                        "per node, shape (N,) (or store float targets for regression)")
    if values.is_floating_point() and not bool((values[labelled] == values[labelled].round()).all()):
        raise DataError(f"{path}: {where}['label'] holds values that are not class ids; store int64 classes 0..C-1, "
                        "or use --task node-regression")
    values = values.long()
    bad = labelled & (values < 0)
    if bool(bad.any()):
        node = int(bad.nonzero()[0])
        raise DataError(f"{path}: node {node} (in a mask) has class {int(values[node])}; classes are 0..C-1 "
                        "(give unlabelled nodes any value but keep them out of the masks)")
    frame[LABEL_KEY] = torch.where(labelled, values, torch.zeros_like(values))
    return task, max(2, int(values[labelled].max()) + 1)


def limit_masks(graph: dgl.DGLGraph, limits: Dict[str, Optional[int]], ntype: Optional[str] = None) -> None:
    """Keep the first ``limits[split]`` nodes (lowest ids) of each mask, in place (``None``: all)."""
    frame = node_frame(graph, ntype)
    for split, count in limits.items():
        if count is None:
            continue
        mask = frame[MASKS[split]]
        keep = mask.nonzero().squeeze(1)[:count]
        limited = torch.zeros_like(mask)
        limited[keep] = True
        frame[MASKS[split]] = limited


def cache_tag(path: PathLike) -> str:
    """A file-name-safe stem of ``path`` for cache files beside it."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", Path(path).stem)


def is_node_graph_file(path: PathLike) -> bool:
    """Whether the graph file's first graph carries node masks (read alone: cheap for big files)."""
    try:
        first, _ = load_first_graph(path)  # a damaged file can crash DGL: tried in a child first
    except Exception:  # a missing, foreign or damaged file: the graph-file reader names the problem
        return False
    return has_node_masks(first)


def _hetero_target(graphs: Sequence[dgl.DGLGraph], path: str, target_ntype: Optional[str]) -> str:
    """The heterograph's target type (:func:`~..own_files.hetero_files.node_target`), refusing masks on another type."""
    target = node_target(graphs, path, target_ntype or "")
    for ntype in graphs[0].ntypes:
        if ntype != target and any(name in graphs[0].nodes[ntype].data for name in MASKS.values()):
            raise DataError(f"{path}: node type {ntype!r} has node masks but the target type (with the labels) is "
                            f"{target!r}; store the masks on g.nodes[{target!r}].data, or pick the type with "
                            f"--set data.target_ntype")
    return target


def _read(path: PathLike, task: Optional[str], target_ntype: Optional[str] = None):
    """-> (graph, feature spec or heterograph schema, task, outputs, target node type or '')."""
    graphs, _ = read_graph_file(path)
    path = os.fspath(path)
    if not is_heterograph(graphs[0]):
        if target_ntype:
            raise DataError(f"{path} holds one graph of one node type with node masks; data.target_ntype is for "
                            "heterographs: drop it")
        check_masks(graphs, path)
        spec = infer_feature_spec(graphs, path)
        conform_graphs(graphs, path, spec)
        task, outputs = node_labels(graphs[0], path, task)
        return graphs[0], spec, task, outputs, ""
    schema = infer_schema(graphs, path, target_ntype)
    target = _hetero_target(graphs, path, target_ntype)
    check_masks(graphs, path, target)
    schema = HeteroSchema(schema.ntypes, schema.node_in_feats, schema.canonical_etypes, schema.edge_in_feats, target)
    conform_hetero_graphs(graphs, path, schema)
    task, outputs = node_labels(graphs[0], path, task, target)
    return graphs[0], schema, task, outputs, target


def inspect_node_graph(path: PathLike, task: Optional[str] = None, target_ntype: Optional[str] = None
                       ) -> GraphFileInfo:
    """What a one-graph file with masks holds (task, outputs, feature widths, or a heterograph's
    :class:`~..own_files.hetero_files.HeteroFileInfo`); all its checks run."""
    graph, spec, task, outputs, target = _read(path, task, target_ntype)
    if target:
        return HeteroFileInfo(path=os.fspath(path), num_graphs=1, task=task, num_outputs=outputs, features=None,
                              schema=spec)
    return GraphFileInfo(path=os.fspath(path), num_graphs=1, task=task, num_outputs=outputs, features=spec)


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_node_graph(options: LoadOptions) -> NodeGraph:
    """A one-graph file with node masks as a :class:`NodeGraph`, positional encodings cached beside it.

    Parameters
    ----------
    options : LoadOptions
        ``data_file``: written by ``dgl.save_graphs(PATH, [g])`` (see the module docstring).
        ``task`` (``'node-classification'`` / ``'node-regression'``): default from the labels' type.
        ``pe_k`` (default 0), ``rwse_k``, ``laplacian_norm`` (default ``'sym'``): encodings the one path after
        the loader attaches
        (``ndata['lap_pe']``/``['lap_eigval']``, ``['rwse']``), cached in ``geaet_cache/`` beside the
        file, keyed by its size and mtime. ``limit_train``, ``limit_val``, ``limit_test``: keep the first
        N nodes of a mask (the graph itself stays whole). ``identity``: a run's record of the file
        (:func:`~..identity.file_identity`): a file whose identity differs is refused (DataError) unless
        ``allow_changed``. ``split_file`` and ``split`` are refused (the masks are the split);
        ``split_seed``, ``indices`` and ``legacy_split`` are unused (a graph file's recorded split and its
        old cut; the masks are this one's). ``target_ntype``: a heterograph's node type with the labels
        and masks (default: the only labelled type); heterographs take no positional encoding.
    """
    path = Path(options.data_file)
    file_split = options.file_split
    request = options.encodings(default_norm=DEFAULT_LAPLACIAN_NORM)
    if file_split.split_file is not None or file_split.split is not None:
        raise DataError(f"{path} carries its own node masks, which are the split; drop --split / --split-file "
                        "(or remove the masks from the graph)")
    graph, _, task, outputs, target = _read(path, options.task, options.target_ntype)
    if target and (request.k or request.rwse_k):
        raise DataError("heterograph models take no positional encoding; set model.pe=none")
    if file_split.identity is not None:
        check_unchanged(f"graph file {path}", identity_changes(file_split.identity, file_identity(path, 1)),
                        file_split.allow_changed,
                        "restore the file the run was trained on",
                        going_on="going on only if its node masks and their labels are still the run's split "
                                 "(checked against the run's record)")
    limit_masks(graph, options.limit_of, target)
    stamp = file_stamp(path)
    where = hashlib.sha1(os.fspath(path.resolve()).encode()).hexdigest()[:10]
    cache_dir = writable_cache_dir(path.parent / "geaet_cache", f"{cache_tag(path)}-{where}")  # PE, METIS parts
    if target:
        return NodeGraph(graph, task, outputs, name=path.name, cache_dir=cache_dir, stamp=stamp, target_ntype=target,
                         source=f"heterograph file {path} ({task} of {target!r} nodes, node masks)")
    data = NodeGraph(graph, task, outputs, name=path.name, source=f"graph file {path} ({task}, node masks)",
                     cache_dir=cache_dir, stamp=stamp)
    data.encoding_plan = EncodingPlan({"graph": EncodingCache(cache_dir, f"{cache_tag(path)}-graph", stamp)},
                                      default_norm=DEFAULT_LAPLACIAN_NORM)
    return data
