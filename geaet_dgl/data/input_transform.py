"""Transforms a loader applies to the graphs' inputs, as plain data a run records and ``predict`` re-applies.

A transform is a dict (JSON-ready, stored in the run configuration as
``data.input_transform``); today one kind:

``{"standardize": {"node_mean": [F], "node_std": [F], "edge_mean": [F_e], "edge_std": [F_e]}}``
    ``feat <- (feat - mean) / std`` on ``ndata['feat']`` and ``edata['feat']``
    (float32), as the VOC/COCO loaders do with the reference's statistics.

``{"row_normalize": {}}``
    ``feat_i <- feat_i / sum_j |feat_ij|`` on ``ndata['feat']`` (float32; a
    row of zeros stays as it is): for non-negative bag-of-words features GCN's
    row normalisation (Kipf & Welling); signed features keep their signs and
    never blow up. Asked for with ``data.feature_norm=row``.

``{"propagate": {"hops": K}}``
    ``feat <- (D^-1/2 (A + I) D^-1/2)^K feat`` on ``ndata['feat']`` (float32;
    GCN's normalisation with one self-loop per node, in-degrees): SGC's
    precomputed propagation, so the encoder reads each node's smoothed
    neighbourhood (applied after ``row_normalize``). Asked for with
    ``data.feature_propagation=K``.

Positional encodings and dtype casts are not listed here: they follow from
the model configuration (``model.pe``, ``model.pe_k``, ``data.laplacian_norm``,
the encoders' vocabularies) and ``predict`` derives them from it.

Example
-------
>>> import dgl, torch
>>> g = dgl.graph(([0], [1]))
>>> g.ndata['feat'], g.edata['feat'] = torch.tensor([[1.0], [3.0]]), torch.tensor([[2.0]])
>>> spec = standardize_transform([2.0], [1.0], [0.0], [2.0])
>>> apply_input_transform([g], spec)
>>> g.ndata['feat'].tolist(), g.edata['feat'].tolist()
([[-1.0], [1.0]], [[1.0]])
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import dgl
import torch

from .errors import DataError


def standardize_transform(node_mean: Sequence[float], node_std: Sequence[float], edge_mean: Sequence[float],
                          edge_std: Sequence[float]) -> Dict[str, Any]:
    """The record of a standardisation with these statistics."""
    return {"standardize": {"node_mean": [float(v) for v in node_mean], "node_std": [float(v) for v in node_std],
                            "edge_mean": [float(v) for v in edge_mean], "edge_std": [float(v) for v in edge_std]}}


def row_normalize_transform() -> Dict[str, Any]:
    """The record of a row normalisation of the node features."""
    return {"row_normalize": {}}


def propagate_transform(hops: int) -> Dict[str, Any]:
    """The record of ``hops`` rounds of GCN-normalised propagation of the node features."""
    return {"propagate": {"hops": int(hops)}}


def propagate(graph: dgl.DGLGraph, values: torch.Tensor, hops: int) -> torch.Tensor:
    """(N, F) -> (N, F) float32: ``hops`` times ``D^-1/2 (A + I) D^-1/2 @ values`` on ``graph``'s edges.

    The self-loops are one per node (existing ones are replaced), the degrees count
    them, as in GCN; cost ``O(hops * (E + N) * F)``, memory two (N, F) tensors.
    """
    values = values.float()
    if hops <= 0:
        return values
    src, dst = graph.edges()
    keep = src != dst
    n = graph.num_nodes()
    loops = torch.arange(n, device=src.device)
    looped = dgl.graph((torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])), num_nodes=n)
    norm = looped.in_degrees().float().clamp(min=1).pow(-0.5).to(values.device).unsqueeze(1)
    for _ in range(hops):
        values = dgl.ops.copy_u_sum(looped, values * norm) * norm
    return values


def row_normalize(values: torch.Tensor) -> torch.Tensor:
    """(N, F) -> (N, F) float32, each row divided by the sum of its absolute values (zero rows unchanged)."""
    values = values.float()
    total = values.abs().sum(dim=1, keepdim=True)
    return values / torch.where(total == 0, torch.ones_like(total), total)


def standardize(values: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """``(values - mean) / std`` per column, float32."""
    return (values.float() - torch.tensor(mean, dtype=torch.float32)) / torch.tensor(std, dtype=torch.float32)


def apply_input_transform(graphs: Sequence[dgl.DGLGraph], transform: Optional[Dict[str, Any]]) -> None:
    """Apply a recorded transform to ``graphs`` (in place); ``None`` does nothing.

    Raises
    ------
    DataError
        An unknown transform (a run of a newer geaet-dgl), or features whose
        width differs from the statistics'.
    """
    if not transform:
        return
    unknown = sorted(set(transform) - {"standardize", "row_normalize", "propagate"})
    if unknown:
        raise DataError(f"the run records input transform(s) {', '.join(unknown)} that this geaet-dgl does not know; "
                        "upgrade geaet-dgl")
    if "row_normalize" in transform:
        for index, g in enumerate(graphs):
            values = g.ndata["feat"]
            if values.ndim != 2:
                raise DataError(f"graph {index}: node features of shape {tuple(values.shape)}; row normalisation "
                                "needs (N, F) float features")
            g.ndata["feat"] = row_normalize(values)
    if "propagate" in transform:
        for index, g in enumerate(graphs):
            values = g.ndata["feat"]
            if values.ndim != 2 or not values.is_floating_point():
                raise DataError(f"graph {index}: node features of shape {tuple(values.shape)} and dtype {values.dtype}; "
                                "propagation needs (N, F) float features")
            g.ndata["feat"] = propagate(g, values, transform["propagate"]["hops"])
    if "standardize" not in transform:
        return
    stats = transform["standardize"]
    for index, g in enumerate(graphs):
        for frame, unit in ((g.ndata, "node"), (g.edata, "edge")):
            mean, std = stats[f"{unit}_mean"], stats[f"{unit}_std"]
            values = frame["feat"]
            if values.ndim != 2 or values.shape[1] != len(mean):
                raise DataError(f"graph {index}: {unit} features of shape {tuple(values.shape)}, but the run "
                                f"standardised {len(mean)} columns; give the graphs the dataset's raw features")
            frame["feat"] = standardize(values, mean, std)
