"""Structural encodings of GraphGPS's menu, computed per graph as the reference does.

Follows ``GEAET/transform/posenc_stats.py`` and ``GEAET/encoder/graphormer_encoder.py``:

* HKdiagSE: the diagonals of the heat kernels
  ``H_t = sum_{i: lambda_i >= 1e-8} exp(-t lambda_i) phi_i phi_i^T`` of the
  combinatorial Laplacian ``L = D - A`` (undirected edge set, no self loops),
  one column per diffusion time ``t``.
* ElstaticSE: ten statistics of the "electrostatic" kernel
  ``V = L^+ - 1 diag(L^+)^T`` (``V[i, j] = L^+[i, j] - L^+[j, j]``): min, max,
  mean, std of each column; min of each row, max of each column again (the
  reference's code repeats it), mean, std of each row; the column and row
  sums of ``D^-1 A * V``.
* Graphormer's shortest-path distances (spatial types) on the directed edges as
  stored, capped as the reference caps them, and the in/out degrees of the
  directed simple graph (duplicate edges counted once).

Where the reference divides by zero (the std of a one-node graph, ``D^-1`` of an
isolated node), it produces NaN; these functions give 0 there instead.
"""
from __future__ import annotations

from collections import deque
from typing import List, Sequence, Tuple

import numpy as np

from .positional_encoding import laplacian_matrix, undirected_adjacency

#: Number of ElstaticSE statistics per node.
ELSTATIC_DIM = 10


def heat_kernel_diag_from_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int,
                                times: Sequence[float]) -> np.ndarray:
    """Heat-kernel diagonals (HKdiagSE).

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` endpoints; direction is ignored.
    num_nodes : int
    times : sequence of float
        Diffusion times ``t``.

    Returns
    -------
    np.ndarray
        ``(N, len(times))`` float32, ``[j, k] = sum_i exp(-t_k lambda_i) phi_i[j]^2``
        over the eigenpairs of ``D - A`` with ``lambda_i >= 1e-8``.
    """
    out = np.zeros((num_nodes, len(times)), dtype=np.float32)
    if num_nodes == 0 or not len(times):
        return out
    vals, vecs = np.linalg.eigh(laplacian_matrix(undirected_adjacency(src, dst, num_nodes), "none"))
    vecs = vecs / np.clip(np.linalg.norm(vecs, axis=0, keepdims=True), 1e-12, None)
    keep = vals >= 1e-8
    vals, squares = vals[keep], vecs[:, keep] ** 2
    for k, t in enumerate(times):
        out[:, k] = squares @ np.exp(-float(t) * vals)
    return out


def electrostatic_se_from_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """Electrostatic-kernel statistics (ElstaticSE), see the module docstring.

    Returns
    -------
    np.ndarray
        ``(N, 10)`` float32.
    """
    if num_nodes == 0:
        return np.zeros((0, ELSTATIC_DIM), dtype=np.float32)
    adj = undirected_adjacency(src, dst, num_nodes)
    lap = laplacian_matrix(adj, "none")
    deg = adj.sum(axis=1)
    with np.errstate(divide="ignore"):
        walk = np.where(deg[:, None] > 0, adj / np.where(deg > 0, deg, 1.0)[:, None], 0.0)  # D^-1 A
    pinv = np.linalg.pinv(lap)
    v = pinv - np.diag(pinv)[None, :]
    ddof = 1 if num_nodes > 1 else 0  # torch.std is unbiased; one node: 0 instead of NaN
    stats = [v.min(axis=0), v.max(axis=0), v.mean(axis=0), v.std(axis=0, ddof=ddof),
             v.min(axis=1), v.max(axis=0), v.mean(axis=1), v.std(axis=1, ddof=ddof),
             (walk * v).sum(axis=0), (walk * v).sum(axis=1)]
    return np.stack(stats, axis=1).astype(np.float32)


def _directed_adjacency_lists(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> List[List[int]]:
    """Successors of each node in first-seen edge order, duplicates dropped (networkx DiGraph order)."""
    succ: List[dict] = [dict() for _ in range(num_nodes)]
    for u, v in zip(src.tolist(), dst.tolist()):
        succ[u][v] = None
    return [list(s) for s in succ]


def graphormer_degrees(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(in_degree (N,), out_degree (N,))`` int64 of the directed simple graph (duplicates once)."""
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0) if len(src) else np.zeros((0, 2), np.int64)
    return (np.bincount(pairs[:, 1], minlength=num_nodes).astype(np.int64),
            np.bincount(pairs[:, 0], minlength=num_nodes).astype(np.int64))


def _bfs_parents(succ: List[List[int]], source: int) -> dict:
    """Breadth-first parents from ``source``, nodes visited in networkx's order (its all-pairs shortest paths)."""
    parent = {source: -1}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in succ[u]:
            if v not in parent:
                parent[v] = u
                queue.append(v)
    return parent


def path_edge_types_from_edges(src: np.ndarray, dst: np.ndarray, edge_types: np.ndarray, num_nodes: int,
                               num_spatial_types: int) -> np.ndarray:
    """Graphormer's edge types along one shortest path per pair (the reference's ``shortest_path_types``).

    The path from ``i`` to ``j`` is networkx's (breadth-first, successors in first-seen edge order),
    truncated to its first ``S`` nodes; position ``k`` holds the type of its ``k``-th edge
    (``edge_types`` of the last stored ``u -> v`` edge), 0 past the path's end.

    Returns
    -------
    np.ndarray
        ``(N, N, S)`` uint8.
    """
    succ = _directed_adjacency_lists(src, dst, num_nodes)
    type_of = {}
    for u, v, t in zip(src.tolist(), dst.tolist(), np.asarray(edge_types).tolist()):
        type_of[(u, v)] = t
    out = np.zeros((num_nodes, num_nodes, num_spatial_types), dtype=np.uint8)
    for source in range(num_nodes):
        parent = _bfs_parents(succ, source)
        for target in parent:
            path = [target]
            while parent[path[-1]] != -1:
                path.append(parent[path[-1]])
            path = path[::-1][:num_spatial_types]
            for k in range(len(path) - 1):
                out[source, target, k] = type_of[(path[k], path[k + 1])]
    return out


def spatial_types_from_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int, num_spatial_types: int) -> np.ndarray:
    """Graphormer's spatial types: capped shortest-path lengths along the directed edges.

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` directed edges.
    num_nodes : int
    num_spatial_types : int
        ``S`` (the reference's ``posenc_GraphormerBias.num_spatial_types``).

    Returns
    -------
    np.ndarray
        ``(N, N)`` uint8, ``[i, j] = min(d(i -> j), S - 1)`` for reachable pairs
        (the reference truncates paths to ``S`` nodes) and ``S`` for unreachable ones.
    """
    if not 1 <= num_spatial_types <= 254:
        raise ValueError(f"num_spatial_types={num_spatial_types} must be in 1..254")
    succ = _directed_adjacency_lists(src, dst, num_nodes)
    out = np.full((num_nodes, num_nodes), num_spatial_types, dtype=np.uint8)
    for source in range(num_nodes):
        parent = _bfs_parents(succ, source)
        dist = {source: 0}
        for target in parent:  # visiting order: a node's parent is visited before it
            if target != source:
                dist[target] = dist[parent[target]] + 1
            out[source, target] = min(dist[target], num_spatial_types - 1)
    return out
