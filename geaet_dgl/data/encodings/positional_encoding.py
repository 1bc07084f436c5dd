"""Positional / structural encodings precomputed per graph, as the GEAET reference does.

Follows ``GEAET/transform/posenc_stats.py`` (GraphGPS lineage):

* Laplacian PE: the *undirected*, unweighted edge set without self loops;
  ``L = D - A`` (``norm='none'``) or ``L = I - D^-1/2 A D^-1/2`` (``'sym'``,
  diagonal 1 even for isolated nodes, as PyG's ``get_laplacian``);
  ``np.linalg.eigh``; eigenpairs sorted by eigenvalue; the first ``k`` kept
  *including* the trivial one; eigenvalues clamped at 0; each eigenvector
  L2-normalised. Graphs with fewer than ``k`` nodes are padded with 0 (the
  reference pads with NaN, which its encoders then replace by 0).
  Eigenvectors keep numpy's arbitrary sign, as in the reference.
* RWSE: diagonals of ``P^t``, ``t = 1..k``, ``P = D_out^-1 A`` on the edges as
  stored (direction and multiplicity kept, like ``get_rw_landing_probs``).

Graphs of up to ``DENSE_MAX_NODES`` nodes take the reference's dense route
(``N x N`` matrices, exact); larger ones the sparse one of
:mod:`.sparse_encodings` (Lanczos eigenpairs, row-block sparse walk products),
whose memory grows with the edges, never with ``N^2``. ``method`` forces either.

The reference reads ``posenc_LapPE.eigen.laplacian_norm`` (default ``'sym'``)
even for EquivStableLapPE, so ``'sym'`` is the default here.
"""

from typing import Tuple

import dgl
import numpy as np
import torch

from ...config.validation import LAPLACIAN_NORMS  # the menu of data.laplacian_norm
from ..errors import DataError
from .sparse_encodings import sparse_laplacian_eig, sparse_random_walk_se

PE_METHODS = ("auto", "dense", "sparse")
#: Largest graph encoded with dense N x N matrices (~100 MB at this size).
DENSE_MAX_NODES = 2048


def _use_dense(method: str, num_nodes: int) -> bool:
    if method not in PE_METHODS:
        raise DataError(f"unknown PE method {method!r}; use one of {', '.join(PE_METHODS)}")
    return method == "dense" or (method == "auto" and num_nodes <= DENSE_MAX_NODES)


def _edges_numpy(g: dgl.DGLGraph) -> Tuple[np.ndarray, np.ndarray]:
    src, dst = g.edges()
    return src.cpu().numpy().astype(np.int64), dst.cpu().numpy().astype(np.int64)


def undirected_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> np.ndarray:
    """Dense 0/1 adjacency of the undirected edge set, self loops dropped.

    Parameters
    ----------
    src, dst : np.ndarray
        ``(E,)`` integer endpoints.
    num_nodes : int
        ``N``.

    Returns
    -------
    np.ndarray
        ``(N, N)`` float64, symmetric, zero diagonal.
    """
    adj = np.zeros((num_nodes, num_nodes), dtype=np.float64)
    adj[src, dst] = 1.0
    adj[dst, src] = 1.0
    np.fill_diagonal(adj, 0.0)
    return adj


def laplacian_matrix(adj: np.ndarray, norm: str = "sym") -> np.ndarray:
    """Graph Laplacian of a symmetric 0/1 adjacency.

    Parameters
    ----------
    adj : np.ndarray
        ``(N, N)`` symmetric, zero diagonal.
    norm : {'sym', 'none'}
        ``'none'``: ``D - A``; ``'sym'``: ``I - D^-1/2 A D^-1/2``.

    Returns
    -------
    np.ndarray
        ``(N, N)`` float64.
    """
    deg = adj.sum(axis=1)
    if norm == "none":
        return np.diag(deg) - adj
    if norm == "sym":
        with np.errstate(divide="ignore"):
            inv_sqrt = np.where(deg > 0, deg**-0.5, 0.0)
        return np.eye(len(deg)) - inv_sqrt[:, None] * adj * inv_sqrt[None, :]
    raise DataError(f"unknown Laplacian normalisation {norm!r}; use one of {', '.join(LAPLACIAN_NORMS)}")


def laplacian_pe_from_edges(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int, norm: str = "sym", method: str = "auto"
) -> Tuple[np.ndarray, np.ndarray]:
    """Laplacian eigenvector PE from an edge list; see :func:`laplacian_pe`.

    ``method``: ``'dense'`` (``np.linalg.eigh``), ``'sparse'``
    (:func:`.sparse_encodings.sparse_laplacian_eig`) or ``'auto'`` (dense up to
    ``DENSE_MAX_NODES`` nodes).

    Returns
    -------
    eigvecs : np.ndarray
        ``(N, k)`` float32; column ``j`` is the eigenvector of the ``j``-th
        smallest eigenvalue, unit L2 norm; zero columns past ``N``.
    eigvals : np.ndarray
        ``(k,)`` float32 ascending, ``>= 0``; zeros past ``N``. ``k = 0`` gives
        empty arrays without an eigen-decomposition.
    """
    if k < 0:
        raise DataError(f"Laplacian PE size k must be >= 0, got {k}; pass pe_k >= 0")
    if norm not in LAPLACIAN_NORMS:
        raise DataError(f"unknown Laplacian normalisation {norm!r}; use one of {', '.join(LAPLACIAN_NORMS)}")
    eigvecs = np.zeros((num_nodes, k), dtype=np.float32)
    if k == 0:  # no PE wanted: empty fields, no eigen-decomposition
        return eigvecs, np.zeros(0, dtype=np.float32)
    eigvals = np.zeros((k,), dtype=np.float32)
    if num_nodes == 0:
        return eigvecs, eigvals
    if _use_dense(method, num_nodes):
        lap = laplacian_matrix(undirected_adjacency(src, dst, num_nodes), norm)
        vals, vecs = np.linalg.eigh(lap)
        keep = np.argsort(vals, kind="stable")[:k]
        vals, vecs = vals[keep], vecs[:, keep]
    else:
        vals, vecs = sparse_laplacian_eig(src, dst, num_nodes, min(k, num_nodes), norm)
    vals = np.clip(vals, 0.0, None)
    vecs = vecs / np.clip(np.linalg.norm(vecs, axis=0, keepdims=True), 1e-12, None)
    eigvecs[:, : len(vals)] = vecs
    eigvals[: len(vals)] = vals
    return eigvecs, eigvals


def laplacian_pe(g: dgl.DGLGraph, k: int, norm: str = "sym") -> Tuple[torch.Tensor, torch.Tensor]:
    """Laplacian eigenvector positional encoding of one graph (reference recipe).

    Parameters
    ----------
    g : dgl.DGLGraph
        Homogeneous graph with ``N`` nodes; edge direction is ignored.
    k : int
        Number of eigenpairs kept, the trivial one included.
    norm : {'sym', 'none'}
        Laplacian normalisation (reference default ``'sym'``).

    Returns
    -------
    eigvecs : torch.Tensor
        ``(N, k)`` float32, unit-norm columns, zero-padded when ``N < k``.
    eigvals : torch.Tensor
        ``(N, k)`` float32: the ``k`` eigenvalues repeated for every node.
    """
    src, dst = _edges_numpy(g)
    vecs, vals = laplacian_pe_from_edges(src, dst, g.num_nodes(), k, norm)
    return torch.from_numpy(vecs), torch.from_numpy(np.broadcast_to(vals, (g.num_nodes(), k)).copy())


def random_walk_se_from_edges(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, k: int, method: str = "auto"
) -> np.ndarray:
    """Random-walk landing probabilities from an edge list; see :func:`random_walk_se`.

    ``method``: ``'dense'`` (matrix powers), ``'sparse'``
    (:func:`.sparse_encodings.sparse_random_walk_se`) or ``'auto'`` (dense up to
    ``DENSE_MAX_NODES`` nodes).

    Returns
    -------
    np.ndarray
        ``(N, k)`` float32; column ``t-1`` is ``diag(P^t)``.
    """
    if k < 1:
        raise DataError(f"RWSE size k must be >= 1, got {k}; pass k >= 1")
    if not _use_dense(method, num_nodes):
        return sparse_random_walk_se(src, dst, num_nodes, k)
    adj = np.zeros((num_nodes, num_nodes), dtype=np.float64)
    np.add.at(adj, (src, dst), 1.0)
    out_deg = adj.sum(axis=1)
    with np.errstate(divide="ignore"):
        inv = np.where(out_deg > 0, 1.0 / out_deg, 0.0)
    step = inv[:, None] * adj
    out = np.zeros((num_nodes, k), dtype=np.float32)
    power = step
    for t in range(k):
        out[:, t] = np.diagonal(power)
        power = power @ step
    return out


def random_walk_se(g: dgl.DGLGraph, k: int) -> torch.Tensor:
    """Random-walk structural encoding (RWSE): return probabilities after 1..k steps.

    Parameters
    ----------
    g : dgl.DGLGraph
        Homogeneous graph with ``N`` nodes; edges used as stored (a walk
        follows ``src -> dst``; duplicates count twice).
    k : int
        Number of steps.

    Returns
    -------
    torch.Tensor
        ``(N, k)`` float32, entry ``[i, t-1] = (P^t)[i, i]`` with
        ``P = D_out^-1 A``; rows of nodes without out-edges are 0.
    """
    src, dst = _edges_numpy(g)
    return torch.from_numpy(random_walk_se_from_edges(src, dst, g.num_nodes(), k))
