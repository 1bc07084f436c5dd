"""ZINC through DGL's loader on fixture files (offline); TreeNeighbourMatch's defining properties."""
import math

import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.generated.tree import TreeExamples, blank_tree, load_tree, stratified_split, tree_permutations
from geaet_dgl.data.molecules.zinc import zinc_files
from tests.data.fixtures_dgl import write_zinc_fixture




def test_zinc_fixture_through_dgl(tmp_path, no_network):
    written = write_zinc_fixture(tmp_path)
    splits = load_dataset("zinc", tmp_path, pe_k=2, rwse_k=4, progress=False)
    assert splits.sizes() == {"train": 6, "val": 3, "test": 3} and splits.num_classes == 1
    for split in ("train", "val", "test"):
        graphs, labels = written[split]
        dataset = getattr(splits, split)
        torch.testing.assert_close(dataset.labels, labels)
        for (g, y), raw in zip(dataset, graphs):
            assert g.ndata["feat"].shape == (g.num_nodes(), 1) and g.ndata["feat"].dtype == torch.int64
            assert torch.equal(g.ndata["feat"][:, 0], raw.ndata["feat"])
            assert torch.equal(g.edata["feat"][:, 0], raw.edata["feat"])
            assert g.ndata["rwse"].shape == (g.num_nodes(), 4)
    limited = load_dataset("zinc", tmp_path, pe_k=2, limit_train=2, progress=False)
    assert limited.sizes()["train"] == 2


def test_zinc_missing_names_the_folder(tmp_path, no_network):
    with pytest.raises(DataError, match="ZINC12k.zip"):
        load_dataset("zinc", tmp_path)
    assert str(zinc_files(tmp_path)["train"].parent) in str(pytest.raises(DataError, load_dataset, "zinc",
                                                                              tmp_path).value)


@pytest.mark.parametrize("depth", [2, 3, 4, 5, 6, 7])
def test_tree_structure(depth):
    n, edges, leaves = blank_tree(depth)
    assert n == 2 ** (depth + 1) - 1 and len(leaves) == 2 ** depth and edges.shape == (2, n - 1)
    parent = dict(zip(edges[0].tolist(), edges[1].tolist()))  # edges point child -> parent
    assert 0 not in parent and len(parent) == n - 1
    for leaf in leaves:  # every leaf is `depth` hops from the root, following the edges
        hops, node = 0, leaf
        while node != 0:
            node, hops = parent[node], hops + 1
        assert hops == depth
    children = np.bincount(edges[1], minlength=n)
    assert all(children[v] == (0 if v in leaves else 2) for v in range(n))


def test_tree_examples_define_the_task():
    ex = TreeExamples(2, seed=0)
    assert len(ex) == math.factorial(4) * 4 == 96 and ex.num_classes == 4  # all permutations x all keys
    assert len({tuple(p) for p in ex.perms.tolist()}) == 24
    _, _, leaves = blank_tree(2)
    for i in range(len(ex)):
        g = ex.graph(i)
        feat = g.ndata["feat"]
        key = int(feat[0, 0])
        assert feat[0, 1] == 0 and 1 <= key <= 4
        assert feat[leaves, 0].tolist() == [1, 2, 3, 4]  # leaf keys: index among leaves + 1
        assert sorted(feat[leaves, 1].tolist()) == [1, 2, 3, 4]  # values: a permutation
        inner = [v for v in range(1, 7) if v not in leaves]
        assert feat[inner].eq(0).all()
        # the label is the value of the leaf holding the root's key, minus one
        assert int(ex.labels[i]) == int(feat[leaves[key - 1], 1]) - 1
        src, dst = g.edges()
        assert (src == dst).sum() == 7  # one self-loop per node


def test_tree_sizes_follow_the_paper_table():
    rng = np.random.default_rng(0)
    perms = tree_permutations(8, 4000, rng)
    assert perms.shape == (4000, 8) and len({p.tobytes() for p in perms}) == 4000
    assert TreeExamples(3).labels.numel() == 32000


def test_tree_split_is_stratified_and_disjoint():
    labels = TreeExamples(3).labels
    train, test = stratified_split(labels, 0.8, 0)
    assert len(set(train) & set(test)) == 0 and len(train) + len(test) == 32000
    counts_train = np.bincount(labels[train].numpy())
    counts_test = np.bincount(labels[test].numpy())
    assert (counts_train == 3200).all() and (counts_test == 800).all()
    splits = load_tree(LoadOptions(depth=3, limit_train=5, limit_test=4))
    assert splits.sizes() == {"train": 5, "val": 4, "test": 4} and splits.num_classes == 8
    assert torch.equal(splits.val.labels, splits.test.labels)


def test_tree_depth_out_of_range():
    with pytest.raises(DataError, match="depth"):
        load_dataset("tree", None, depth=8)
