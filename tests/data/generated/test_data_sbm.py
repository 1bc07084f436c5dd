"""PATTERN / CLUSTER: DGL's loader on fixture files (offline), and the SBM generator's defining properties."""

import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, collate_for, load_dataset
from geaet_dgl.data.generated.sbm import (CLUSTER_PARAMS, PATTERN_PARAMS, generate_cluster_graph, generate_pattern_graph,
                                load_sbm, make_patterns, sbm_files)
from tests.data.fixtures_dgl import write_sbm_fixture




@pytest.mark.parametrize("name,width", [("pattern", 3), ("cluster", 7)])
def test_dgl_loader_reads_fixture_files_offline(tmp_path, no_network, name, width):
    written = write_sbm_fixture(name, tmp_path)
    splits = load_dataset(name, tmp_path, pe_k=3, rwse_k=5, progress=False)
    assert splits.sizes() == {"train": 4, "val": 2, "test": 2}
    assert splits.train.level == "node" and splits.node_feat_dim == width and splits.edge_feat_dim == 1
    for split in ("train", "val", "test"):
        dataset = getattr(splits, split)
        for (g, y), raw in zip(dataset, written[split]):
            assert torch.equal(g.ndata["feat"].argmax(1), raw.ndata["feat"])  # one-hot of DGL's integer feature
            assert g.ndata["feat"].sum(1).eq(1).all() and g.ndata["feat"].dtype == torch.float32
            assert torch.equal(y, raw.ndata["label"].long()) and y.dtype == torch.int64
            assert g.ndata["rwse"].shape == (g.num_nodes(), 5) and g.ndata["lap_pe"].shape == (g.num_nodes(), 3)
    graph, labels = collate_for(splits.train)([splits.train[0], splits.train[1]])
    assert labels.shape == (graph.num_nodes(),)
    assert torch.equal(labels, torch.cat([splits.train[0][1], splits.train[1][1]]))


def test_missing_files_raise_data_error_without_network(tmp_path, no_network):
    with pytest.raises(DataError, match="data.generate=true"):
        load_sbm("pattern", LoadOptions(data_dir=tmp_path))
    assert not any(p.exists() for p in sbm_files("pattern", tmp_path).values())


def test_generate_writes_dgl_files_then_dgl_reads_them(tmp_path, no_network):
    splits = load_sbm("cluster", LoadOptions(data_dir=tmp_path, pe_k=2, limit_train=3, limit_val=2, limit_test=2,
                                             generate=True, progress=False))
    assert all(p.is_file() for p in sbm_files("cluster", tmp_path).values())
    assert splits.sizes() == {"train": 3, "val": 2, "test": 2} and "generated" in splits.source
    again = load_sbm("cluster", LoadOptions(data_dir=tmp_path, pe_k=2, progress=False))  # read back, nothing regenerated
    assert torch.equal(again.train.labels, splits.train.labels)
    bigger = load_sbm("cluster", LoadOptions(data_dir=tmp_path, pe_k=2, limit_train=5, limit_val=2, limit_test=2,
                                             generate=True, progress=False))  # a larger request regenerates
    assert bigger.sizes() == {"train": 5, "val": 2, "test": 2}


def _densities(adj, groups):
    same = groups[:, None] == groups[None, :]
    off_diag = ~np.eye(len(groups), dtype=bool)
    return adj[same & off_diag].mean(), adj[~same].mean()


def test_cluster_generator_defining_properties():
    rng = np.random.default_rng(0)
    inside, between = [], []
    for _ in range(60):
        g = generate_cluster_graph(rng)
        label, feat = g.ndata["label"].long().numpy(), g.ndata["feat"].numpy()
        sizes = np.bincount(label, minlength=6)
        assert sizes.size == 6 and sizes.min() >= 5 and sizes.max() <= 34  # 6 clusters, randint(5, 35)
        for c in range(6):  # exactly one labelled node per cluster, carrying c + 1
            assert np.flatnonzero(feat == c + 1).size == 1 and label[feat == c + 1][0] == c
        assert (feat == 0).sum() == g.num_nodes() - 6
        adj = np.zeros((g.num_nodes(),) * 2, dtype=bool)
        src, dst = (t.numpy() for t in g.edges())
        adj[src, dst] = True
        assert (adj == adj.T).all() and not adj.diagonal().any()
        a, b = _densities(adj, label)
        inside.append(a)
        between.append(b)
    assert abs(np.mean(inside) - CLUSTER_PARAMS.p) < 0.02 and abs(np.mean(between) - CLUSTER_PARAMS.q) < 0.02


def test_pattern_generator_defining_properties():
    rng = np.random.default_rng(1)
    patterns = make_patterns(rng)
    assert len(patterns) == 100 and all(a.shape == (20, 20) for a, _ in patterns)
    inside_pattern, pattern_to_rest, sizes = [], [], []
    for _ in range(60):
        g = generate_pattern_graph(rng, patterns)
        label, feat = g.ndata["label"].long().numpy(), g.ndata["feat"].numpy()
        assert label.sum() == 20 and set(np.unique(feat)) <= {0, 1, 2}
        n = g.num_nodes()
        sizes.append(n - 20)
        assert 25 <= n - 20 <= 5 * 34  # 5 communities of 5..34 nodes
        adj = np.zeros((n, n), dtype=bool)
        src, dst = (t.numpy() for t in g.edges())
        adj[src, dst] = True
        assert (adj == adj.T).all()
        p_nodes = label == 1
        block = adj[np.ix_(p_nodes, p_nodes)]
        inside_pattern.append(block[~np.eye(20, dtype=bool)].mean())
        pattern_to_rest.append(adj[np.ix_(p_nodes, ~p_nodes)].mean())
        # The planted subgraph is one of the 100 patterns (compared up to the node shuffle: degree
        # sequence inside the pattern and the multiset of its signal).
        degrees, signal = sorted(block.sum(1)), sorted(feat[p_nodes])
        assert any(degrees == sorted(a.sum(1)) and signal == sorted(s) for a, s in patterns)
    assert abs(np.mean(inside_pattern) - PATTERN_PARAMS.p_pattern) < 0.03
    assert abs(np.mean(pattern_to_rest) - PATTERN_PARAMS.q_pattern) < 0.02
    assert abs(np.mean(sizes) - 5 * 19.5) < 10  # mean community size (5 + 34) / 2


def test_pattern_base_sbm_densities():
    rng = np.random.default_rng(2)
    # Rebuild communities from the generator's own draw order: check p and q on the G part via many graphs.
    from geaet_dgl.data.generated.sbm import _community_sizes, _sbm_adjacency

    inside, between = [], []
    for _ in range(60):
        community = np.repeat(np.arange(5), _community_sizes(rng, PATTERN_PARAMS))
        a, b = _densities(_sbm_adjacency(rng, community, PATTERN_PARAMS.p, PATTERN_PARAMS.q), community)
        inside.append(a)
        between.append(b)
    assert abs(np.mean(inside) - 0.5) < 0.02 and abs(np.mean(between) - 0.35) < 0.02
