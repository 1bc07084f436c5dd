"""MalNet-Tiny from fixture files in PyG's raw layout: isolated nodes dropped as PyG does, LocalDegreeProfile as
PyG 2.5 computes it (checked against a plain per-node computation), labels and split from the files."""
import math

import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, load_dataset
from geaet_dgl.data.malnet.tiny import TYPES, drop_isolated_nodes, local_degree_profile
from tests.data.fixtures_malnet import write_malnet_fixture


def _profile_by_hand(src, dst, n):
    out = np.zeros((n, 5), dtype=np.float64)
    deg = np.bincount(src, minlength=n).astype(np.float64)
    for i in range(n):
        neighbours = deg[dst[src == i]]
        if len(neighbours):
            std = math.sqrt(max(neighbours.var(), 1e-5))  # population variance, PyG's clamp
            out[i] = [deg[i], neighbours.min(), neighbours.max(), neighbours.mean(), 0.0 if std <= math.sqrt(1e-5) else std]
    return out


def test_local_degree_profile_matches_a_per_node_computation():
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 30, 200), rng.integers(0, 30, 200)
    src[:3], dst[:3] = 5, 5  # self-loops and repeats count
    ours = local_degree_profile(torch.from_numpy(src), torch.from_numpy(dst), 32)  # nodes 30, 31: no edge
    assert ours.dtype == torch.float32 and ours.shape == (32, 5)
    assert torch.allclose(ours.double(), torch.from_numpy(_profile_by_hand(src, dst, 32)), atol=1e-5)
    assert torch.equal(ours[30:], torch.zeros(2, 5))
    same = local_degree_profile(torch.tensor([0, 0]), torch.tensor([1, 2]), 3)  # equal degrees: std exactly 0
    assert same[0].tolist() == [2.0, 0.0, 0.0, 0.0, 0.0]


def test_drop_isolated_nodes_as_pyg():
    src, dst = np.array([3, 1, 1, 5, 3, 3]), np.array([1, 3, 1, 5, 3, 3])  # 0, 2, 4: isolated; 5: self-loop only
    new_src, new_dst, n = drop_isolated_nodes(src, dst)
    # kept 1 -> 0, 3 -> 1; the two non-loop edges in order, then one self-loop per kept node, by node
    assert n == 2 and new_src.tolist() == [1, 0, 0, 1] and new_dst.tolist() == [0, 1, 0, 1]


def test_malnet_fixture_graphs_labels_and_split(tmp_path):
    written = write_malnet_fixture(tmp_path)
    splits = load_dataset("malnet-tiny", tmp_path, pe_k=2, progress=False)
    assert splits.sizes() == {"train": 10, "val": 5, "test": 5} and splits.num_classes == 5
    for part in ("train", "val", "test"):
        data = getattr(splits, part)
        for graph, label, entry in zip(data.graphs, data.labels, written["split"][part]):
            pairs, expected_label = written["graphs"][entry.split("/")[-1]]
            assert int(label) == expected_label == TYPES.index(entry.split("/")[0])
            src, dst, n = drop_isolated_nodes(pairs[:, 0], pairs[:, 1])
            assert graph.num_nodes() == n == int(pairs.max()) - 1  # node 0 and the self-loop-only node dropped
            assert torch.equal(graph.edges()[0], torch.from_numpy(src))
            assert torch.allclose(graph.ndata["feat"].double(), torch.from_numpy(_profile_by_hand(src, dst, n)),
                                  atol=1e-5)
            assert torch.equal(graph.edata["feat"], torch.zeros(graph.num_edges(), 1))
    again = load_dataset("malnet-tiny", tmp_path, pe_k=2, progress=False)  # from the cache
    assert torch.equal(again.test.graphs[0].ndata["feat"], splits.test.graphs[0].ndata["feat"])


def test_missing_or_unknown_files_are_one_line_errors(tmp_path):
    with pytest.raises(DataError, match=r"train\.txt is missing; download .*malnet-graphs-tiny\.tar\.gz"):
        load_dataset("malnet-tiny", tmp_path, progress=False)
    written = write_malnet_fixture(tmp_path)
    (written["files"]["split"] / "val.txt").write_text("benign/benign/NOPE\n")
    with pytest.raises(DataError, match="names benign/benign/NOPE, which has no edge list"):
        load_dataset("malnet-tiny", tmp_path, progress=False)
