"""TreeNeighbourMatch (Alon & Yahav, ICLR 2021, "On the bottleneck of GNNs"), generated offline.

Definition (their ``TreeDataset``), for a problem radius (depth) ``r``:

* a complete binary tree of depth ``r``: ``2^(r+1) - 1`` nodes numbered in
  depth-first pre-order (root 0; a node covering ids ``[a, b]`` has children
  ``a + 1`` and ``a + 1 + (b - a) // 2``), ``L = 2^r`` leaves;
* edges point from each child to its parent (towards the root), plus a
  self-loop on every node;
* node features are two integers ``(key, value)``: leaf ``i`` (in increasing
  id order) has key ``i + 1`` and value ``perm[i]``, a permutation of
  ``1..L``; the root has ``(k, 0)`` for the queried key ``k``; inner nodes
  ``(0, 0)``;
* the root must predict the value of the leaf whose key is ``k``. The class
  is that value minus one, so there are ``L`` classes ``0..L-1``.

The examples are every key ``1..L`` combined with a set of value
permutations: all ``L!`` of them when ``L! <= num_permutations``, else
``num_permutations`` distinct random ones. With the default 4000 this gives
the sizes of the GEAET paper's Table 4 (r = 2: 96 = 4!·4; r = 3: 32,000 =
4000·8; r = 4: 64,000; ... r = 7: 512,000). The examples are split
stratified by class, ``train_fraction = 0.8`` train and the rest test, as
Alon & Yahav do; they have no validation set, so ``val`` is the test set.
"""
from __future__ import annotations

import itertools
import math
from typing import Dict, List, Optional, Tuple

import dgl
import numpy as np
import torch

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingPlan
from ..encodings.positional_encoding import laplacian_pe_from_edges, random_walk_se_from_edges
from ..errors import DataError
from ..options import LoadOptions

MIN_DEPTH, MAX_DEPTH = 2, 7  # the paper's r = 2..7; the tree preset's vocabularies fit up to 7
DEFAULT_PERMUTATIONS = 4000
TRAIN_FRACTION = 0.8


def blank_tree(depth: int) -> Tuple[int, np.ndarray, List[int]]:
    """``(num_nodes, (2, E) child->parent edges, leaf ids)`` of the depth-``depth`` tree (no self-loops)."""
    if not MIN_DEPTH <= depth <= MAX_DEPTH:
        raise DataError(f"TreeNeighbourMatch depth must be in {MIN_DEPTH}..{MAX_DEPTH}, got {depth}; "
                        "set data.depth")
    last = 2 ** (depth + 1) - 2
    edges, leaves, stack = [], [], [(0, last)]
    while stack:
        node, high = stack.pop()
        if node == high:
            leaves.append(node)
            continue
        left, right = node + 1, node + 1 + (high - node) // 2
        edges += [(left, node), (right, node)]
        stack += [(right, high), (left, right - 1)]
    return last + 1, np.asarray(edges, dtype=np.int64).T, sorted(leaves)


def tree_permutations(num_leaves: int, num_permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(P, L) value permutations of ``1..L``: all of them if few enough, else ``num_permutations`` distinct."""
    if math.factorial(num_leaves) <= num_permutations:
        return np.asarray(list(itertools.permutations(range(1, num_leaves + 1))), dtype=np.int64)
    seen, out = set(), []
    while len(out) < num_permutations:
        perm = rng.permutation(num_leaves) + 1
        key = perm.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(perm)
    return np.stack(out)


class TreeExamples:
    """The examples of one depth, built lazily: labels first, graphs only for the indices asked for.

    Every graph has ``ndata['feat']`` (N, 2) int64 ``(key, value)``,
    ``edata['feat']`` (E, 1) zeros (no edge attributes), and, if asked,
    ``lap_pe``/``lap_eigval`` (N, pe_k) and ``rwse`` (N, rwse_k), the same for
    every graph (the structure is fixed).

    Attributes
    ----------
    keys : (G,) int64, the queried key of each example (1..L)
    perms : (P, L) int64 value permutations; example ``i`` uses ``perms[i // L]``
    labels : (G,) int64, ``perms[i // L, keys[i] - 1] - 1``
    num_classes : int, ``L``
    """

    def __init__(self, depth: int, num_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                 pe_k: Optional[int] = None, rwse_k: Optional[int] = None):
        rng = np.random.default_rng(seed)
        self.num_nodes, edges, self.leaves = blank_tree(depth)
        loops = np.arange(self.num_nodes)
        src = np.concatenate([edges[0], loops])
        dst = np.concatenate([edges[1], loops])
        self.num_classes = len(self.leaves)
        self.perms = torch.from_numpy(tree_permutations(self.num_classes, num_permutations, rng))
        self.keys = torch.arange(1, self.num_classes + 1).repeat(self.perms.shape[0])
        perm_of = torch.arange(self.keys.numel()) // self.num_classes
        self.labels = self.perms[perm_of, self.keys - 1] - 1
        self.src, self.dst = torch.from_numpy(src), torch.from_numpy(dst)
        self.static = self.structure_encodings(pe_k, rwse_k)

    def structure_encodings(self, pe_k: Optional[int] = None, rwse_k: Optional[int] = None) -> Dict[str, torch.Tensor]:
        """The encodings of the one structure every graph shares: ``lap_pe``/``lap_eigval`` (N, pe_k) of the
        ``'sym'`` Laplacian unless ``pe_k`` is ``None``, ``rwse`` (N, rwse_k) unless ``rwse_k`` is ``None``."""
        src, dst = self.src.numpy(), self.dst.numpy()
        static = {}
        if pe_k is not None:
            vec, val = laplacian_pe_from_edges(src, dst, self.num_nodes, pe_k, "sym")
            static["lap_pe"] = torch.from_numpy(vec)
            static["lap_eigval"] = torch.from_numpy(val).reshape(1, -1).repeat(self.num_nodes, 1)
        if rwse_k is not None:
            static["rwse"] = torch.from_numpy(random_walk_se_from_edges(src, dst, self.num_nodes, rwse_k))
        return static

    def __len__(self) -> int:
        return int(self.labels.numel())

    def graph(self, index: int) -> dgl.DGLGraph:
        """Example ``index`` as a graph."""
        leaf_ids = torch.as_tensor(self.leaves)
        feat = torch.zeros(self.num_nodes, 2, dtype=torch.int64)
        feat[leaf_ids, 0] = torch.arange(1, self.num_classes + 1)
        feat[leaf_ids, 1] = self.perms[index // self.num_classes]
        feat[0, 0] = self.keys[index]
        g = dgl.graph((self.src, self.dst), num_nodes=self.num_nodes)
        g.ndata["feat"] = feat
        g.edata["feat"] = torch.zeros(g.num_edges(), 1)
        for name, tensor in self.static.items():
            g.ndata[name] = tensor
        return g


def tree_dataset(depth: int, num_permutations: int = DEFAULT_PERMUTATIONS, seed: int = 0,
                 pe_k: Optional[int] = None, rwse_k: Optional[int] = None):
    """All examples of depth ``depth``: -> (graphs, labels (G,) int64, num_classes)."""
    examples = TreeExamples(depth, num_permutations, seed, pe_k, rwse_k)
    return [examples.graph(i) for i in range(len(examples))], examples.labels, examples.num_classes


def stratified_split(labels: torch.Tensor, train_fraction: float, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: per class, a shuffled ``round(train_fraction * n_c)`` go to train."""
    rng = np.random.default_rng(seed + 1)
    train, test = [], []
    y = labels.numpy()
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        cut = int(round(train_fraction * idx.size))
        train.append(idx[:cut])
        test.append(idx[cut:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def load_tree(options: LoadOptions, num_permutations: int = DEFAULT_PERMUTATIONS,
              train_fraction: float = TRAIN_FRACTION) -> DatasetSplits:
    """TreeNeighbourMatch splits of radius ``options.depth`` (default 3; labels per graph; the model reads out
    the root), generated in memory: ``pe_k`` / ``rwse_k`` (none by default) on the fixed structure, ``seed``
    (default 0), the ``limit_*`` fields; ``data_dir`` unused."""
    depth, seed = options.depth or 3, options.or_default("seed", 0)
    limit_train, limit_val, limit_test = options.limits
    examples = TreeExamples(int(depth), num_permutations, seed)  # the encodings come after the loader
    train_idx, test_idx = stratified_split(examples.labels, train_fraction, seed)
    total = len(examples)
    train_idx = train_idx[:limit_train] if limit_train else train_idx
    val_idx = test_idx[:limit_val or limit_test or test_idx.size]  # val is (a prefix of) the test set
    test_idx = test_idx[:limit_test or test_idx.size]
    built = {}

    def part(idx):
        graphs = []
        for i in map(int, idx):
            if i not in built:
                built[i] = examples.graph(i)
            graphs.append(built[i])
        return GraphDataset(graphs, examples.labels[torch.as_tensor(idx, dtype=torch.long)])

    plan = EncodingPlan(dict.fromkeys(("train", "val", "test")),
                        structure=lambda asked: examples.structure_encodings(asked.pe_k, asked.rwse_k))
    return DatasetSplits(train=part(train_idx), val=part(val_idx), test=part(test_idx),
                         num_classes=examples.num_classes, name="tree",
                         source=f"TreeNeighbourMatch r={depth}, generated ({total} examples; "
                                "val is the test set, as in Alon & Yahav)", encoding_plan=plan)
