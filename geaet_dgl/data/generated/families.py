"""Random graphs of a few shape families, the raw material of the benchmark's synthetic datasets.

Each function returns a :class:`~geaet_dgl.data.GraphDataset` holding what the dataset's loader
gives (``ndata['feat']``, ``edata['feat']``, labels; masks for one-graph node sets) and no
encodings: the benchmark (:mod:`geaet_lab.benchmarking.inputs`) attaches those the model reads.
Which family and which sizes each dataset gets is :data:`geaet_lab.benchmarking.shapes.DATASET_SHAPES`.

Families
--------
* :func:`molecules`: a backbone chain with side branches and ring closures, both bond directions,
  integer atom / bond columns inside given vocabularies; targets per graph (regression, binary,
  multi-label with missing labels) or contact pairs (link level).
* :func:`region_superpixels`: superpixels at random positions, each linked to its nearest, float
  node and edge features, one class per node (LRGB's VOC / COCO).
* :func:`random_float_edge_graphs`: dense random graphs with no node features (one zero column) and
  float edge features (ogbg-ppa; ``node_feats`` > 0 gives float node features instead: own files).
* :func:`ast_graphs`: random abstract syntax trees in DFS preorder, clipped and augmented by the
  loader's own :func:`~geaet_dgl.data.ogbg.code2.clip_and_augment` (ogbg-code2).
* :func:`call_graphs`: directed function-call graphs, isolated nodes dropped and LocalDegreeProfile
  features computed by the loader's own functions (MalNet-Tiny).
* :func:`one_node_graph`: one graph with train / val / test masks, a planted partition of the
  classes with a chosen homophily, bag-of-words or dense float features (the node sets, OGB's
  node sets, one-graph files).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import dgl
import numpy as np
import torch

from ..dataset import GraphDataset


def node_range(nodes: Tuple[int, int], max_nodes: Optional[int], smallest: int) -> Tuple[int, int]:
    """``nodes`` = (lo, hi) graph sizes, ``hi`` capped at ``max_nodes`` but not below ``smallest``: (lo, hi)."""
    lo, hi = nodes
    if max_nodes is not None:
        hi = max(smallest, min(hi, max_nodes))
        lo = min(lo, hi)
    return lo, hi


def _both_ways(pairs: np.ndarray, num_nodes: int) -> dgl.DGLGraph:
    """(2, B) undirected pairs -> a graph with both directions of each (B first, then their reverses)."""
    src = torch.from_numpy(np.concatenate([pairs[0], pairs[1]]))
    dst = torch.from_numpy(np.concatenate([pairs[1], pairs[0]]))
    return dgl.graph((src, dst), num_nodes=num_nodes)


def random_molecule(rng: np.random.Generator, min_atoms: int = 100, max_atoms: int = 200,
                    rings_per_atom: float = 1 / 30) -> np.ndarray:
    """(2, B) bonds of a random molecule: a chain, side branches, ``n * rings_per_atom`` ring closures."""
    n = int(rng.integers(min_atoms, max_atoms + 1))
    backbone = max(2, n * 2 // 3)
    bonds = [(i, i + 1) for i in range(backbone - 1)]
    bonds += [(int(rng.integers(0, i)), i) for i in range(backbone, n)]  # side chains hang off earlier atoms
    if n > 6:
        for _ in range(int(n * rings_per_atom)):  # ring closures
            i = int(rng.integers(0, n - 6))
            bonds.append((i, i + 5))
    return np.unique(np.array(bonds, dtype=np.int64).T, axis=1)


def molecules(rng: np.random.Generator, num_graphs: int, atoms: Tuple[int, int], rings_per_atom: float,
              atom_vocab: Sequence[int], bond_vocab: Sequence[int], target: str, tasks: int = 1,
              max_nodes: Optional[int] = None) -> GraphDataset:
    """Random molecules with (N, len(atom_vocab)) / (E, len(bond_vocab)) int64 features.

    ``target``: ``'regression'`` ((G,) float32 when ``tasks`` is 1 and ``'regression-column'`` (G, 1),
    else (G, tasks)), ``'binary'`` ((G,) int64 in {0, 1}), ``'multilabel'`` ((G, tasks) float32 in
    {0, 1}), ``'multilabel-missing'`` (the same, about half NaN: OGB's molpcba) or ``'contacts'``
    (link level: (P, 2) int64 pairs of atoms at least 3 bonds apart, both directions, sorted).
    """
    lo, hi = atoms
    if max_nodes is not None:
        hi = max(2, min(hi, max_nodes))
        lo = min(lo, hi)
    graphs, pairs = [], []
    for _ in range(num_graphs):
        bonds = random_molecule(rng, lo, hi, rings_per_atom)
        n = int(bonds.max()) + 1
        g = _both_ways(bonds, n)
        bond_feat = np.stack([rng.integers(0, size, bonds.shape[1]) for size in bond_vocab], axis=1)
        g.ndata["feat"] = torch.from_numpy(np.stack([rng.integers(0, size, n) for size in atom_vocab], axis=1))
        g.edata["feat"] = torch.from_numpy(np.concatenate([bond_feat, bond_feat]))
        graphs.append(g)
        if target == "contacts":
            pairs.append(_contacts(rng, g))
    if target == "contacts":
        counts = torch.tensor([len(p) for p in pairs], dtype=torch.int64)
        return GraphDataset(graphs, torch.cat(pairs), level="link", counts=counts)
    if target == "regression":
        shape = (num_graphs,) if tasks == 1 else (num_graphs, tasks)
        labels = torch.from_numpy(rng.normal(size=shape).astype(np.float32))
    elif target == "regression-column":
        labels = torch.from_numpy(rng.normal(size=(num_graphs, tasks)).astype(np.float32))
    elif target == "binary":
        labels = torch.from_numpy(rng.integers(0, 2, num_graphs))
    elif target.startswith("multilabel"):
        values = (rng.random((num_graphs, tasks)) < 0.2).astype(np.float32)
        if target == "multilabel-missing":
            values[rng.random(values.shape) < 0.5] = np.nan
        labels = torch.from_numpy(values)
    else:
        raise ValueError(f"target={target!r} is not a molecule target")
    return GraphDataset(graphs, labels)


def _contacts(rng: np.random.Generator, graph: dgl.DGLGraph) -> torch.Tensor:
    """About one contact per 6 atoms between atoms 3 or more hops apart: (P, 2) int64, both directions, sorted."""
    n = graph.num_nodes()
    src, dst = graph.edges()
    adj = torch.zeros(n, n, dtype=torch.bool)
    adj[src, dst] = True
    near = adj | torch.eye(n, dtype=torch.bool)
    near = near | ((near.float() @ near.float()) > 0)  # within 2 bonds
    far = torch.nonzero(~near)
    if len(far) == 0:  # a tiny molecule: any two distinct atoms
        far = torch.nonzero(~torch.eye(n, dtype=torch.bool))
    chosen = far[torch.from_numpy(rng.choice(len(far), size=max(1, n // 6), replace=True))]
    both = torch.cat([chosen, chosen.flip(1)])
    return torch.unique(both, dim=0)


def region_superpixels(rng: np.random.Generator, num_graphs: int, num_classes: int, neighbours: int = 5,
                       nodes: Tuple[int, int] = (350, 500), max_nodes: Optional[int] = None) -> GraphDataset:
    """Region-boundary-like superpixel graphs: each node linked to its ``neighbours`` nearest, both ways;
    (N, 14) / (E, 2) standardised float features, per-node int64 labels."""
    lo, hi = node_range(nodes, max_nodes, smallest=neighbours + 2)
    graphs, labels = [], []
    for _ in range(num_graphs):
        n = int(rng.integers(lo, hi + 1))
        pos = rng.random((n, 2))
        dist = ((pos[:, None, :] - pos[None, :, :]) ** 2).sum(-1)
        np.fill_diagonal(dist, np.inf)
        near = np.argsort(dist, axis=1)[:, :neighbours]
        pairs = np.unique(np.sort(np.stack([np.repeat(np.arange(n), neighbours), near.reshape(-1)], 1), 1), axis=0)
        g = _both_ways(pairs.T, n)
        g.ndata["feat"] = torch.from_numpy(rng.normal(size=(n, 14)).astype(np.float32))
        g.edata["feat"] = torch.from_numpy(rng.normal(size=(g.num_edges(), 2)).astype(np.float32))
        graphs.append(g)
        labels.append(torch.from_numpy(rng.integers(0, num_classes, n)))
    return GraphDataset(graphs, torch.cat(labels), level="node")


def random_float_edge_graphs(rng: np.random.Generator, num_graphs: int, nodes: Tuple[int, int], degree: float,
                             edge_feats: int, num_classes: int, node_feats: int = 0,
                             max_nodes: Optional[int] = None) -> GraphDataset:
    """Random graphs of about ``degree`` directed edges per node (both directions of each pair, no loops).

    ``ndata['feat']`` is one zero column (N, 1) when ``node_feats`` is 0 (ogbg-ppa: no node features),
    else (N, node_feats) standard normal; ``edata['feat']`` (E, edge_feats) float32 in [0, 1) (ppa's
    association scores); (G,) int64 labels in ``0 .. num_classes - 1``.
    """
    lo, hi = node_range(nodes, max_nodes, smallest=3)
    graphs = []
    for _ in range(num_graphs):
        n = int(rng.integers(lo, hi + 1))
        m = max(1, int(round(n * degree / 2)))
        src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = src != dst
        pairs = np.unique(np.sort(np.stack([src[keep], dst[keep]]), axis=0), axis=1)
        g = _both_ways(pairs, n)
        if node_feats:
            g.ndata["feat"] = torch.from_numpy(rng.normal(size=(n, node_feats)).astype(np.float32))
        else:
            g.ndata["feat"] = torch.zeros(n, 1)
        half = rng.random((pairs.shape[1], edge_feats)).astype(np.float32)
        g.edata["feat"] = torch.from_numpy(np.concatenate([half, half]))
        graphs.append(g)
    return GraphDataset(graphs, torch.from_numpy(rng.integers(0, num_classes, num_graphs)))


def ast_graphs(rng: np.random.Generator, num_graphs: int, nodes: Tuple[int, int], node_vocab: Sequence[int],
               vocab: int, seq_len: int, name_len: int = 5, max_depth: int = 20,
               max_nodes: Optional[int] = None) -> GraphDataset:
    """Random ASTs as the ogbg-code2 loader gives them: (N, 3) int64 (type, attribute, depth <= ``max_depth``,
    the depth GraphGPS's AST encoder caps at), (E, 2) int64
    edge features from :func:`~geaet_dgl.data.ogbg.code2.clip_and_augment`, and (G, seq_len + name_len)
    float32 label rows (``seq_len`` training ids in ``0 .. vocab - 1``, then the name's ids, NaN-padded)."""
    from ..ogbg.code2 import clip_and_augment

    lo, hi = node_range(nodes, max_nodes, smallest=2)
    graphs = []
    for _ in range(num_graphs):
        n = int(rng.integers(lo, hi + 1))
        # each node's parent is one of the last few nodes before it (a tree in DFS preorder), moved up to an
        # ancestor where the depth would pass max_depth: depths 0..max_depth, all inside the encoder's vocabulary
        parent = np.zeros(n - 1, dtype=np.int64)
        depth = np.zeros(n, dtype=np.int64)
        for i in range(1, n):
            p = int(rng.integers(max(0, i - 4), i))
            while depth[p] >= max_depth:
                p = int(parent[p - 1])
            parent[i - 1], depth[i] = p, depth[p] + 1
        tree = dgl.graph((torch.from_numpy(parent), torch.arange(1, n)), num_nodes=n)
        tree.ndata["feat"] = torch.from_numpy(np.stack([rng.integers(0, node_vocab[0], n),
                                                        rng.integers(0, node_vocab[1], n)], axis=1))
        tree.ndata["is_attributed"] = torch.from_numpy((rng.random(n) < 0.4).astype(np.int64)).reshape(-1, 1)
        tree.ndata["depth"] = torch.from_numpy(depth).reshape(-1, 1)
        graphs.append(clip_and_augment(tree))
    labels = torch.full((num_graphs, seq_len + name_len), float("nan"))
    labels[:, :seq_len] = torch.from_numpy(rng.integers(0, vocab, (num_graphs, seq_len)).astype(np.float32))
    for row in labels:
        length = int(rng.integers(1, name_len + 1))
        row[seq_len:seq_len + length] = torch.from_numpy(rng.integers(0, vocab, length).astype(np.float32))
    return GraphDataset(graphs, labels)


def call_graphs(rng: np.random.Generator, num_graphs: int, nodes: Tuple[int, int], calls_per_function: float,
                num_classes: int, max_nodes: Optional[int] = None) -> GraphDataset:
    """Directed call graphs prepared as the MalNet-Tiny loader prepares its edge lists: isolated nodes dropped,
    a self-loop on some nodes, (N, 5) float32 LocalDegreeProfile, (E, 1) zero edge features, (G,) int64 labels."""
    from ..malnet.tiny import drop_isolated_nodes, local_degree_profile

    lo, hi = node_range(nodes, max_nodes, smallest=3)
    graphs = []
    for _ in range(num_graphs):
        n = int(rng.integers(lo, hi + 1))
        callee = np.arange(1, n)
        caller = (rng.random(n - 1) * callee).astype(np.int64)  # every function is called from an earlier one
        extra = int(n * max(0.0, calls_per_function - 1.0))
        loops = rng.integers(0, n, max(1, n // 50))
        src = np.concatenate([caller, rng.integers(0, n, extra), loops])
        dst = np.concatenate([callee, rng.integers(0, n, extra), loops])
        src, dst, kept = drop_isolated_nodes(src, dst)
        g = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=kept)
        g.ndata["feat"] = local_degree_profile(g.edges()[0], g.edges()[1], kept)
        g.edata["feat"] = torch.zeros(g.num_edges(), 1)
        graphs.append(g)
    return GraphDataset(graphs, torch.from_numpy(rng.integers(0, num_classes, num_graphs)))


#: Ones drawn per row of :func:`one_node_graph`'s bag-of-words features (repeats fall together).
WORDS_PER_ROW = 20


def one_node_graph(rng: np.random.Generator, num_nodes: int, num_edges: int, feats: int, classes: int,
                   split: Tuple[float, float, float], homophily: float = 0.8, features: str = "dense",
                   row_norm: bool = False) -> GraphDataset:
    """One graph with (N,) bool ``train_mask`` / ``val_mask`` / ``test_mask``, as the node-set loaders give it.

    Nodes are split into ``classes`` blocks (their labels, (N,) int64); about ``num_edges`` directed edges
    (pairs drawn, both directions kept, loops and repeats dropped), a fraction ``homophily`` of them inside a
    block. ``features``: ``'dense'`` standard normal (N, feats) float32, or ``'words'``: :data:`WORDS_PER_ROW`
    ones per row at random columns (bag-of-words), rows divided by their sums with ``row_norm`` (``data.feature_norm=row``).
    ``split``: the fractions of nodes in the three masks (disjoint; the rest unlabelled).
    ``edata['feat']`` (E, 1) zeros: the node sets have no edge features.
    """
    label = rng.integers(0, classes, num_nodes)
    order = np.argsort(label, kind="stable")
    starts = np.searchsorted(label[order], np.arange(classes + 1))
    m = max(1, num_edges // 2)
    src = rng.integers(0, num_nodes, m)
    inside = rng.random(m) < homophily
    dst = rng.integers(0, num_nodes, m)
    cls = label[src[inside]]
    lo, hi = starts[cls], starts[cls + 1]
    dst[inside] = order[lo + (rng.random(int(inside.sum())) * (hi - lo)).astype(np.int64)]
    keep = src != dst
    pairs = np.unique(np.sort(np.stack([src[keep], dst[keep]]), axis=0), axis=1)
    g = _both_ways(pairs, num_nodes)
    if features == "words":
        feat = torch.zeros(num_nodes, feats)
        cols = torch.from_numpy(rng.integers(0, feats, (num_nodes, min(WORDS_PER_ROW, feats))))
        feat.scatter_(1, cols, 1.0)
        if row_norm:
            feat /= feat.sum(1, keepdim=True).clamp_min(1.0)
    else:
        feat = torch.from_numpy(rng.standard_normal((num_nodes, feats), dtype=np.float32))
    g.ndata["feat"] = feat
    g.ndata["label"] = torch.from_numpy(label)
    g.edata["feat"] = torch.zeros(g.num_edges(), 1)
    perm = torch.from_numpy(rng.permutation(num_nodes))
    start = 0
    for name, fraction in zip(("train_mask", "val_mask", "test_mask"), split):
        count = max(1, int(round(fraction * num_nodes)))
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[perm[start:start + count]] = True
        g.ndata[name] = mask
        start += count
    return GraphDataset([g], g.ndata["label"], level="node")


def tree_graphs(rng: np.random.Generator, num_graphs: int, depth: int = 3,
                max_nodes: Optional[int] = None) -> GraphDataset:
    """TreeNeighbourMatch examples of radius ``depth`` (the loader's own :class:`~geaet_dgl.data.generated.tree.
    TreeExamples`), ``num_graphs`` drawn at random: (N, 2) int64 (key, value), (G,) int64 labels."""
    from .tree import TreeExamples

    examples = TreeExamples(depth, num_permutations=max(1, num_graphs), seed=int(rng.integers(2 ** 31)))
    chosen = rng.choice(len(examples), size=num_graphs, replace=len(examples) < num_graphs)
    graphs = [examples.graph(int(i)) for i in chosen]
    return GraphDataset(graphs, examples.labels[torch.from_numpy(chosen)])
