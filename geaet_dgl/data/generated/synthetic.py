"""Random graphs shaped like the MNIST superpixel graphs, for tests and benchmarks.

Each graph has ``N`` nodes at uniform random positions in ``[0, 1]^2`` (like
superpixel centres divided by 28), a mean "intensity" per node, directed
8-nearest-neighbour edges weighted by DGL's own MNIST formula
(``dgl.data.superpixel.compute_adjacency_matrix_images`` /
``compute_edges_list``), and the same Laplacian PE fields as the real
dataset. The label is learnable: node intensities are centred on
``label / (num_classes - 1)``.
"""

from typing import Optional

import dgl
import numpy as np
import torch
from dgl.data.superpixel import compute_adjacency_matrix_images, compute_edges_list

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.positional_encoding import laplacian_pe_from_edges, random_walk_se_from_edges
from ..errors import DataError

INTENSITY_NOISE = 0.15


def knn_superpixel_graph(intensity: np.ndarray, coord: np.ndarray) -> dgl.DGLGraph:
    """Graph of superpixel nodes exactly as DGL's ``SuperPixelDataset.process`` builds it.

    Parameters
    ----------
    intensity : np.ndarray
        ``(N, 1)`` mean pixel values in [0, 1].
    coord : np.ndarray
        ``(N, 2)`` positions already divided by the image size.

    Returns
    -------
    dgl.DGLGraph
        Edges ``i -> j`` for the 8 nodes ``j`` most similar in position
        (all others when ``N <= 9``; DGL's own code fails for ``N == 8``,
        handled here with Benchmarking-GNNs' ``sigma = 1``);
        ``ndata['feat']`` ``(N, 3)`` float32 =
        (intensity, coord); ``edata['feat']`` ``(E, 1)`` float32 weights
        ``exp(-(d_ij / sigma_i)^2)`` symmetrised.
    """
    n = coord.shape[0]
    try:
        adj = compute_adjacency_matrix_images(coord, intensity, False)
    except ValueError:
        # DGL's sigma() indexes out of bounds when N == 8 exactly; Benchmarking-GNNs
        # used sigma = 1 there (irrelevant for the fully connected small graphs).
        dist = np.linalg.norm(coord[:, None, :] - coord[None, :, :], axis=-1)
        adj = np.exp(-((dist / (1.0 + 1e-8)) ** 2))
        np.fill_diagonal(adj, 0.0)
    knns, weights = compute_edges_list(adj)
    if n == 1:
        src, dst, w = np.zeros(1, np.int64), np.zeros(1, np.int64), np.asarray(weights).reshape(-1)[:1]
    else:
        src = np.repeat(np.arange(n), knns.shape[1])
        dst = knns.reshape(-1).astype(np.int64)
        w = np.asarray(weights).reshape(-1)
        keep = dst != src
        src, dst, w = src[keep], dst[keep], w[keep]
    g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=n)
    g.ndata["feat"] = torch.from_numpy(np.concatenate([intensity.reshape(n, -1), coord.reshape(n, 2)], axis=1)).float()
    g.edata["feat"] = torch.from_numpy(w).float().unsqueeze(1)
    return g


def synthetic_mnist_like(
    num_graphs: int,
    num_nodes: int = 70,
    k: Optional[int] = 8,
    seed: int = 0,
    num_classes: int = 10,
    min_nodes: Optional[int] = None,
    laplacian_norm: str = "sym",
    rwse_k: Optional[int] = None,
) -> GraphDataset:
    """``num_graphs`` random MNIST-shaped graphs with features and PE.

    Parameters
    ----------
    num_graphs : int
    num_nodes : int
        Nodes per graph (the maximum when ``min_nodes`` is given).
    k : int, optional
        Laplacian PE size (``ndata['lap_pe']``, ``ndata['lap_eigval']``); ``None``: no PE and no RWSE
        (``load_dataset('synthetic')`` attaches them by the one path after the loader).
    seed : int
        Everything is drawn from ``np.random.default_rng(seed)``.
    num_classes : int
    min_nodes : int, optional
        If given, graph sizes are uniform in ``[min_nodes, num_nodes]``.
    laplacian_norm : {'sym', 'none'}
    rwse_k : int, optional
        Also store ``ndata['rwse']`` ``(N, rwse_k)``.

    Returns
    -------
    GraphDataset
        Graphs with ``ndata['feat']`` (N, 3), ``edata['feat']`` (E, 1),
        ``ndata['lap_pe']`` (N, k), ``ndata['lap_eigval']`` (N, k), all
        float32; labels ``(num_graphs,)`` int64.
    """
    if num_graphs < 0 or num_nodes < 1 or num_classes < 2:
        raise DataError(
            f"synthetic data needs num_graphs >= 0, num_nodes >= 1, num_classes >= 2 "
            f"(got {num_graphs}, {num_nodes}, {num_classes}); fix the arguments"
        )
    low = num_nodes if min_nodes is None else int(min_nodes)
    if not 1 <= low <= num_nodes:
        raise DataError(f"min_nodes must be in [1, num_nodes={num_nodes}], got {min_nodes}; fix min_nodes")
    rng = np.random.default_rng(seed)
    graphs, labels = [], []
    for _ in range(num_graphs):
        n = int(rng.integers(low, num_nodes + 1))
        label = int(rng.integers(num_classes))
        coord = rng.random((n, 2)).astype(np.float32)
        centre = label / (num_classes - 1)
        intensity = np.clip(rng.normal(centre, INTENSITY_NOISE, size=(n, 1)), 0.0, 1.0).astype(np.float32)
        g = knn_superpixel_graph(intensity, coord)
        src, dst = (t.numpy() for t in g.edges())
        if k is not None:
            vecs, vals = laplacian_pe_from_edges(src, dst, n, k, laplacian_norm)
            g.ndata["lap_pe"] = torch.from_numpy(vecs)
            g.ndata["lap_eigval"] = torch.from_numpy(np.broadcast_to(vals, (n, k)).copy())
        if k is not None and rwse_k is not None:
            g.ndata["rwse"] = torch.from_numpy(random_walk_se_from_edges(src, dst, n, rwse_k))
        graphs.append(g)
        labels.append(label)
    return GraphDataset(graphs, torch.tensor(labels, dtype=torch.int64))


def synthetic_splits(
    num_train: int = 256,
    num_val: int = 64,
    num_test: int = 64,
    seed: int = 0,
    pe_k: Optional[int] = 8,
    **kwargs,
) -> DatasetSplits:
    """Train/val/test :func:`synthetic_mnist_like` sets drawn from independent seeds.

    Parameters
    ----------
    num_train, num_val, num_test : int
    seed : int
        Split ``s`` uses a child of ``np.random.SeedSequence(seed)``.
    pe_k : int, optional
        Laplacian PE size; ``None``: none (see :func:`synthetic_mnist_like`).
    **kwargs
        Passed to :func:`synthetic_mnist_like` (``num_nodes``, ``min_nodes``,
        ``num_classes``, ``laplacian_norm``, ``rwse_k``).

    Returns
    -------
    DatasetSplits
    """
    children = np.random.SeedSequence(seed).spawn(3)
    seeds = [int(c.generate_state(1)[0]) for c in children]
    parts = [synthetic_mnist_like(n, k=pe_k, seed=s, **kwargs) for n, s in zip((num_train, num_val, num_test), seeds)]
    num_classes = int(kwargs.get("num_classes", 10))
    return DatasetSplits(
        *parts, num_classes=num_classes, name="synthetic", source=f"synthetic MNIST-like graphs (seed {seed})"
    )
