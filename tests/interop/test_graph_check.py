"""The element-wise check of our graphs against what the reference loaded (a reference_dump file)."""
import pytest
import torch

from geaet_dgl.data import synthetic_splits
from geaet_lab.interop import graph_check, pyg_export

K = 4


@pytest.fixture(scope="module")
def splits():
    # min_nodes < K: some graphs have fewer nodes than eigenpairs (NaN padding in the reference, 0 in ours)
    return synthetic_splits(num_train=5, num_val=3, num_test=3, seed=7, pe_k=K, num_nodes=9, min_nodes=3)


def reference_dump(splits, tmp_path):
    """What reference_dump.py would write, built from the exported raw file as PyG and the reference do."""
    raw = torch.load(pyg_export.write_gnn_benchmark(splits, tmp_path, "MNIST"))
    dump = {}
    for name, records in zip(("train", "val", "test"), raw):
        graphs = getattr(splits, name).graphs
        eigvals, eigvecs = [], []
        for i, graph in enumerate(graphs):
            n = graph.num_nodes()
            vals = graph.ndata["lap_eigval"].clone()
            vecs = graph.ndata["lap_pe"].clone() * (-1.0) ** i  # eigenvectors come with either sign
            vals[:, n:] = float("nan")
            vecs[:, n:] = float("nan")
            eigvals.append(vals.unsqueeze(-1))
            eigvecs.append(vecs)
        dump[name] = {
            "x": torch.cat([torch.cat([r["x"], r["pos"]], 1) for r in records]),
            "edge_index": torch.cat([r["edge_index"] for r in records], 1),
            "edge_attr": torch.cat([r["edge_attr"] for r in records]),
            "y": torch.cat([r["y"] for r in records]),
            "num_nodes": torch.tensor([r["x"].shape[0] for r in records]),
            "num_edges": torch.tensor([r["edge_index"].shape[1] for r in records]),
            "eigvals": torch.cat(eigvals),
            "eigvecs": torch.cat(eigvecs),
        }
    return dump


def check(splits, dump, tmp_path):
    path = tmp_path / "dump.pt"
    torch.save(dump, path)
    return graph_check.check_graphs(splits, path)


def test_exported_graphs_read_back_equal(splits, tmp_path):
    assert any(g.num_nodes() < K for g in splits.train.graphs)
    report = check(splits, reference_dump(splits, tmp_path), tmp_path)
    assert report["equal"], report
    for name, size in (("train", 5), ("val", 3), ("test", 3)):
        part = report[name]
        assert part["graphs"] == [size, size] and part["labels_equal"] and part["edges_equal"]
        assert part["x_max_diff"] == 0 and part["edge_attr_max_diff"] == 0 and part["eigvals_max_diff"] == 0
        assert part["eigvec_columns_matched"] == part["eigvec_columns"] == size * K
    assert "train: 5 graphs, labels equal, edges equal" in graph_check.describe(report)


@pytest.mark.parametrize("change, flag", [
    (lambda d: d["train"]["edge_index"].__setitem__((1, 0), d["train"]["edge_index"][0, 0]), "edges_equal"),
    (lambda d: d["val"]["y"].__setitem__(0, (d["val"]["y"][0] + 1) % 10), "labels_equal"),
])
def test_a_different_edge_or_label_is_found(splits, tmp_path, change, flag):
    dump = reference_dump(splits, tmp_path)
    change(dump)
    report = check(splits, dump, tmp_path)
    assert not report["equal"]
    assert [report[s][flag] for s in ("train", "val", "test")].count(False) == 1


def test_feature_differences_are_measured(splits, tmp_path):
    dump = reference_dump(splits, tmp_path)
    dump["test"]["x"][3, 2] += 1e-3
    dump["test"]["edge_attr"][0] -= 0.25
    dump["test"]["eigvals"][0, 1] += 0.5
    report = check(splits, dump, tmp_path)
    part = report["test"]
    assert part["x_max_diff"] == pytest.approx(1e-3, rel=1e-3)
    assert part["edge_attr_max_diff"] == pytest.approx(0.25)
    assert part["eigvals_max_diff"] == pytest.approx(0.5)
    assert not report["equal"] and report["train"]["equal"]


def test_eigenvectors_match_up_to_sign_only(splits, tmp_path):
    dump = reference_dump(splits, tmp_path)
    n = splits.val.graphs[0].num_nodes()
    dump["val"]["eigvecs"][:n, 1] = dump["val"]["eigvecs"][:n, 1].roll(1)  # another vector, not a sign flip
    part = check(splits, dump, tmp_path)["val"]
    assert part["eigvec_columns"] == 3 * K and part["eigvec_columns_matched"] == 3 * K - 1


def test_other_sizes_are_reported_not_compared(splits, tmp_path):
    dump = reference_dump(splits, tmp_path)
    dump["val"] = {k: v[:1] if k in ("y", "num_nodes", "num_edges") else v for k, v in dump["val"].items()}
    report = check(splits, dump, tmp_path)
    assert report["val"] == {"graphs": [3, 1], "sizes_equal": False, "equal": False}
    assert "val: sizes differ (graphs ours/ref 3/1)" in graph_check.describe(report)
