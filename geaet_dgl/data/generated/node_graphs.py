"""Single graphs with node masks for node tasks, generated offline: planted partitions and kNN graphs.

* :func:`planted_partition`: a stochastic block model (nodes in ``k`` blocks,
  an edge inside a block with probability ``p_in``, across with ``p_out``)
  whose node features are a weak, noisy hint of the block: the graph is what
  makes the task learnable.
* :func:`knn_graph`: the ``k`` nearest neighbours of every row of a feature
  matrix (Euclidean), made symmetric: a "real" graph of any data set.
* :func:`two_circles`: two noisy concentric circles (not linearly
  separable), a small data set for :func:`knn_graph`.
* :func:`with_masks`: attach ``feat``, ``label`` and random disjoint
  ``train_mask`` / ``val_mask`` / ``test_mask``.

All are seeded and need nothing but torch and DGL.

Example
-------
>>> g = planted_partition(300, 3, p_in=0.05, p_out=0.005, seed=0)
>>> g.num_nodes(), sorted(k for k in g.ndata.keys())
(300, ['feat', 'label', 'test_mask', 'train_mask', 'val_mask'])
"""
from __future__ import annotations

import math
from typing import Sequence

import dgl
import torch

DEFAULT_FRACTIONS = (0.5, 0.25, 0.25)


def with_masks(graph: dgl.DGLGraph, feat: torch.Tensor, label: torch.Tensor,
               fractions: Sequence[float] = DEFAULT_FRACTIONS, seed: int = 0) -> dgl.DGLGraph:
    """Store ``feat``, ``label`` and a seeded random split of the nodes into train/val/test masks (in place)."""
    n = graph.num_nodes()
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + 1))
    bounds = [0]
    for fraction in fractions:
        bounds.append(min(n, bounds[-1] + int(round(fraction * n))))
    graph.ndata["feat"] = feat
    graph.ndata["label"] = label
    for (start, stop), name in zip(zip(bounds, bounds[1:]), ("train_mask", "val_mask", "test_mask")):
        mask = torch.zeros(n, dtype=torch.bool)
        mask[order[start:stop]] = True
        graph.ndata[name] = mask
    return graph


def planted_partition(num_nodes: int, num_classes: int, p_in: float, p_out: float, feat_dim: int = 8,
                      signal: float = 0.5, seed: int = 0,
                      fractions: Sequence[float] = DEFAULT_FRACTIONS) -> dgl.DGLGraph:
    """A symmetric SBM graph with ``num_classes`` blocks, block labels and noisy features, masks attached.

    Node ``i`` has a uniformly drawn block ``y_i``; each unordered pair inside a
    block is an edge with probability about ``p_in``, across blocks ``p_out``
    (edge counts drawn per block pair, endpoints uniform: memory linear in the
    edges). Features: ``signal * c_{y_i} + N(0, I)``, with ``c`` standard
    normal class centres in ``feat_dim`` dimensions.
    """
    gen = torch.Generator().manual_seed(seed)
    label = torch.randint(0, num_classes, (num_nodes,), generator=gen)
    members = [torch.nonzero(label == c).squeeze(1) for c in range(num_classes)]
    sources, targets = [], []
    for a in range(num_classes):
        for b in range(a, num_classes):
            na, nb = len(members[a]), len(members[b])
            pairs = na * (na - 1) / 2 if a == b else na * nb
            p = p_in if a == b else p_out
            count = int(torch.binomial(torch.tensor(float(pairs)), torch.tensor(p), generator=gen)) if pairs else 0
            if count == 0:
                continue
            u = members[a][torch.randint(0, na, (count,), generator=gen)]
            v = members[b][torch.randint(0, nb, (count,), generator=gen)]
            keep = u != v
            sources.append(u[keep])
            targets.append(v[keep])
    src = torch.cat(sources) if sources else torch.zeros(0, dtype=torch.int64)
    dst = torch.cat(targets) if targets else torch.zeros(0, dtype=torch.int64)
    graph = _symmetric_simple(src, dst, num_nodes)
    centres = torch.randn(num_classes, feat_dim, generator=gen)
    feat = signal * centres[label] + torch.randn(num_nodes, feat_dim, generator=gen)
    return with_masks(graph, feat, label, fractions, seed)


def knn_graph(points: torch.Tensor, k: int, chunk: int = 2048) -> dgl.DGLGraph:
    """Edges ``i <-> j`` for each of the ``k`` nearest other rows ``j`` of every row ``i`` (Euclidean), both ways.

    Distances are computed ``chunk`` rows at a time: memory ``chunk x N``.
    """
    points = points.float()
    n = points.shape[0]
    if not 0 < k < n:
        raise ValueError(f"k={k} must be between 1 and the number of points - 1 ({n - 1})")
    sources, targets = [], []
    for start in range(0, n, chunk):
        rows = torch.arange(start, min(start + chunk, n))
        dist = torch.cdist(points[rows], points)
        dist[torch.arange(len(rows)), rows] = math.inf
        nearest = dist.topk(k, dim=1, largest=False).indices
        sources.append(rows.repeat_interleave(k))
        targets.append(nearest.reshape(-1))
    return _symmetric_simple(torch.cat(sources), torch.cat(targets), n)


def two_circles(num_points: int, noise: float = 0.1, seed: int = 0):
    """(num_points, 2) points on two concentric circles (radius 1 for class 0, 0.5 for class 1) plus Gaussian
    noise, and their (num_points,) circle: no line separates the classes."""
    gen = torch.Generator().manual_seed(seed)
    label = torch.randint(0, 2, (num_points,), generator=gen)
    angle = torch.rand(num_points, generator=gen) * 2 * math.pi
    radius = 1.0 - 0.5 * label.float()
    points = radius.unsqueeze(1) * torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    return points + noise * torch.randn(num_points, 2, generator=gen), label


def _symmetric_simple(src: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> dgl.DGLGraph:
    """Both directions of every pair, each edge once, no self-loops, sorted by (dst, src)."""
    both_src, both_dst = torch.cat([src, dst]), torch.cat([dst, src])
    keep = both_src != both_dst
    key = torch.unique(both_dst[keep] * num_nodes + both_src[keep])
    return dgl.graph((key % num_nodes, key // num_nodes), num_nodes=num_nodes)
