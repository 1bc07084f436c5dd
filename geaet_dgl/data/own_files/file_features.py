"""A graph file's features: their widths and integer vocabularies (:class:`FeatureSpec`), checked and conformed.

``ndata['feat']`` / ``edata['feat']`` are float features (a linear encoder) or
integer types (one embedding per column); ``(N,)`` is read as ``(N, 1)``. Every
graph must carry graph 0's fields. Part of :mod:`.graph_files`' reading of a file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import dgl
import torch

from ..errors import DataError

PathLike = Union[str, os.PathLike]


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



def _as_columns(values: torch.Tensor, path: str, index: int, where: str) -> torch.Tensor:
    if values.ndim == 1:
        return values.unsqueeze(1)
    if values.ndim != 2:
        raise DataError(f"{path}: graph {index} has {where} of shape {tuple(values.shape)}; store (rows, F) "
                        "features, one row per node (edge)")
    return values


def feature_kind(values: torch.Tensor) -> str:
    """``'float'``, ``'int'`` or ``'other'`` (bool, complex): how a feature (or label) tensor is read."""
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
        this_kind = feature_kind(values)
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
        if feature_kind(values) == "other":
            raise DataError(f"{path}: graph {index} has {where} of type {values.dtype}; store float features")
        values = values.float()
        bad = ~torch.isfinite(values)
        if bool(bad.any()):
            row = int(bad.any(dim=1).nonzero()[0])
            raise DataError(f"{path}: graph {index} has a non-finite value in {where} ({unit} {row}); replace "
                            "NaN/inf before saving the graphs")
        return values
    if feature_kind(values) != "int":
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
