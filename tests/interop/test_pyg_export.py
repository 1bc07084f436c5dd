"""The GNNBenchmarkDataset writer: files as PyG reads them, equal to our DGL graphs; reuse and replacement."""
import json

import pytest
import torch

from geaet_dgl.data import DataError, synthetic_splits
from geaet_lab.interop import pyg_export


@pytest.fixture(scope="module")
def splits():
    return synthetic_splits(num_train=6, num_val=3, num_test=4, seed=3, pe_k=4, num_nodes=12, min_nodes=5)


def test_raw_file_holds_our_graphs_in_order(splits, tmp_path):
    path = pyg_export.write_gnn_benchmark(splits, tmp_path, "MNIST")
    assert path == tmp_path / "GNNBenchmarkDataset" / "MNIST" / "raw" / "MNIST_v2.pt"
    loaded = torch.load(path)
    assert [len(part) for part in loaded] == [6, 3, 4]
    for part, name in zip(loaded, ("train", "val", "test")):
        dataset = getattr(splits, name)
        for record, (graph, label) in zip(part, dataset):
            assert set(record) == {"x", "edge_index", "edge_attr", "y", "pos"}
            # the reference's concat_x_and_pos gives our node features back
            assert torch.equal(torch.cat([record["x"], record["pos"]], 1), graph.ndata["feat"])
            assert record["x"].shape == (graph.num_nodes(), 1) and record["pos"].shape == (graph.num_nodes(), 2)
            src, dst = graph.edges()
            assert torch.equal(record["edge_index"], torch.stack([src, dst]))
            assert record["edge_index"].dtype == torch.int64
            assert torch.equal(record["edge_attr"], graph.edata["feat"].reshape(-1))
            assert record["y"].tolist() == [int(label)] and record["y"].dtype == torch.int64
    source = json.loads((path.parent / pyg_export.SOURCE_FILE).read_text())
    assert source["sizes"] == {"train": 6, "val": 3, "test": 4}


def test_same_graphs_reuse_the_file_other_graphs_replace_it(splits, tmp_path):
    path = pyg_export.write_gnn_benchmark(splits, tmp_path, "MNIST")
    processed = path.parent.parent / "processed"
    processed.mkdir()
    (processed / "train_data.pt").write_bytes(b"PyG's processed file")
    before = path.stat().st_mtime_ns
    pyg_export.write_gnn_benchmark(splits, tmp_path, "MNIST")
    assert path.stat().st_mtime_ns == before and processed.is_dir()  # PyG's processing is kept
    fewer = synthetic_splits(num_train=5, num_val=3, num_test=4, seed=3, pe_k=4, num_nodes=12, min_nodes=5)
    pyg_export.write_gnn_benchmark(fewer, tmp_path, "MNIST")
    assert not processed.exists()  # stale processed files would hide the new graphs from PyG
    assert [len(part) for part in torch.load(path)] == [5, 3, 4]


def test_digest_sees_a_single_changed_value(splits):
    records = [pyg_export.split_records(splits.train)]
    changed = [[{k: v.clone() for k, v in r.items()} for r in records[0]]]
    changed[0][2]["edge_attr"][0] += 1e-6
    assert pyg_export.records_digest(records) != pyg_export.records_digest(changed)


def test_refuses_graphs_it_cannot_write(splits, tmp_path):
    graph, label = splits.train[0]
    bad = graph.clone()
    bad.ndata["feat"] = bad.ndata["feat"][:, :2]
    with pytest.raises(DataError, match="value\\(s\\) then a 2-d position"):
        pyg_export.graph_record(bad, label)
    with pytest.raises(DataError, match="not one of MNIST, CIFAR10"):
        pyg_export.write_gnn_benchmark(splits, tmp_path, "ZINC")
