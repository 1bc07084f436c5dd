"""Named node sets through DGL's own loader classes, on fixture files in each loader's raw format."""
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.nodes.node_graph import NodeGraph
from geaet_dgl.data.nodes.node_sets import (NODE_SETS, describe_files, expected_files, load_node_set, node_set_present,
                                      node_set_splits, raw_folder)
from geaet_dgl.data.nodes.node_splits import seeded_split
from tests.data.fixtures_node_sets import write_node_set_fixture


def _edge_set(graph):
    src, dst = graph.edges()
    return set(zip(src.tolist(), dst.tolist()))


def _both_ways(pairs):
    return set(pairs) | {(b, a) for a, b in pairs}


def _nodes(mask):
    return mask.nonzero().squeeze(1).tolist()


@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_planetoid_is_the_public_split_of_the_written_files(tmp_path, name):
    written = write_node_set_fixture(name, tmp_path)
    data = load_node_set(name, LoadOptions(data_dir=tmp_path, progress=False))
    assert isinstance(data, NodeGraph) and data.num_classes == written["num_classes"]
    graph = data.graph
    raw = written["feat"]
    sums = raw.sum(axis=1, keepdims=True)
    normalised = np.divide(raw, sums, out=np.zeros_like(raw), where=sums > 0)  # DGL row-normalises
    np.testing.assert_allclose(graph.ndata["feat"].numpy(), normalised, rtol=1e-6)
    labelled = data.mask("train") | data.mask("val") | data.mask("test")  # the others read as class 0
    assert torch.equal(graph.ndata["label"][labelled], torch.from_numpy(written["label"])[labelled])
    for split in ("train", "val", "test"):
        assert data.nodes(split).tolist() == written[split].tolist()
    assert _edge_set(graph) == _both_ways(written["edges"])
    if name == "citeseer":  # the node missing from the test index: zero features, in no split
        gap = written["gap"]
        assert graph.ndata["feat"][gap].abs().sum() == 0
        assert not any(bool(data.mask(s)[gap]) for s in ("train", "val", "test"))
    assert (raw_folder(name, tmp_path) / f"{NODE_SETS[name].dgl_name}_dgl_graph.bin").is_file()  # DGL's cache


@pytest.mark.parametrize("name", ["texas", "actor"])
def test_geom_gcn_split_k_is_mask_column_k(tmp_path, name):
    written = write_node_set_fixture(name, tmp_path)
    assert node_set_splits(name, tmp_path) == 10
    for k in (0, 7):
        data = load_node_set(name, LoadOptions(data_dir=tmp_path, split_index=k, progress=False))
        for i, split in enumerate(("train", "val", "test")):
            assert data.mask(split).tolist() == written["masks"][k, i].tolist()
        assert f"split {k} of 10" in data.source
    graph = data.graph
    np.testing.assert_array_equal(graph.ndata["feat"].numpy(), written["feat"])
    assert graph.ndata["label"].tolist() == written["label"].tolist()
    assert _edge_set(graph) == _both_ways(written["edges"])  # the files list each edge one way
    with pytest.raises(DataError, match=r"has 10 public splits \(0..9\); --split-index 10 is out of range"):
        load_node_set(name, LoadOptions(data_dir=tmp_path, split_index=10, progress=False))


@pytest.mark.parametrize("name", ["roman-empire", "minesweeper"])
def test_heterophilous_values_and_splits(tmp_path, name):
    written = write_node_set_fixture(name, tmp_path, num_splits=3)
    assert node_set_splits(name, tmp_path) == 3
    data = load_node_set(name, LoadOptions(data_dir=tmp_path, split_index=2, progress=False))
    np.testing.assert_array_equal(data.graph.ndata["feat"].numpy(), written["feat"])
    assert data.graph.ndata["label"].tolist() == written["label"].tolist()
    for i, split in enumerate(("train", "val", "test")):
        assert data.mask(split).tolist() == written["masks"][2, i].tolist()
    assert _edge_set(data.graph) == _both_ways(written["edges"])
    assert data.num_classes == written["num_classes"]
    assert NODE_SETS[name].metric == ("roc_auc" if name == "minesweeper" else "accuracy")


def _written_ids(graph):
    """DGL reorders these graphs: feature column 0 holds the written id + 1."""
    return (graph.ndata["feat"][:, 0] - 1).round().long()


def test_gnn_benchmark_seeded_split_is_disjoint_covering_and_reproducible(tmp_path):
    written = write_node_set_fixture("amazon-photo", tmp_path)
    data = load_node_set("amazon-photo", LoadOptions(data_dir=tmp_path, split_seed=3, progress=False))
    ids = _written_ids(data.graph)
    assert sorted(ids.tolist()) == list(range(len(written["label"])))
    np.testing.assert_array_equal(data.graph.ndata["feat"].numpy(), written["feat"][ids.numpy()])
    assert data.graph.ndata["label"].tolist() == written["label"][ids.numpy()].tolist()
    src, dst = data.graph.edges()
    assert set(zip(ids[src].tolist(), ids[dst].tolist())) == _both_ways(written["edges"])
    masks = torch.stack([data.mask(s) for s in ("train", "val", "test")])
    assert torch.equal(masks.sum(0), torch.ones(data.graph.num_nodes(), dtype=torch.long))  # disjoint, covering
    assert data.sizes() == {"train": 30, "val": 10, "test": 10}  # 60/20/20 of 50
    again = load_node_set("amazon-photo", LoadOptions(data_dir=tmp_path, split_seed=3, progress=False))
    assert all(torch.equal(again.mask(s), data.mask(s)) for s in ("train", "val", "test"))
    other = load_node_set("amazon-photo", LoadOptions(data_dir=tmp_path, split_seed=4, progress=False))
    assert not torch.equal(other.mask("train"), data.mask("train"))
    assert "data.split_seed=3" in data.source
    assert torch.equal(data.mask("train"), seeded_split(50, 3)["train"])
    with pytest.raises(DataError, match="has one split"):
        load_node_set("amazon-photo", LoadOptions(data_dir=tmp_path, split_index=1, progress=False))


def test_wikics_train_val_splits_and_its_one_test_mask(tmp_path):
    written = write_node_set_fixture("wikics", tmp_path, num_splits=20)
    assert node_set_splits("wikics", tmp_path) == 20
    tests = []
    for k in (0, 19):
        data = load_node_set("wikics", LoadOptions(data_dir=tmp_path, split_index=k, progress=False))
        ids = _written_ids(data.graph).numpy()
        np.testing.assert_allclose(data.graph.ndata["feat"].numpy(), written["feat"][ids], rtol=1e-6)
        labelled = data.mask("train") | data.mask("val") | data.mask("test")  # the others read as class 0
        assert torch.equal(data.graph.ndata["label"][labelled], torch.from_numpy(written["label"][ids])[labelled])
        for i, split in enumerate(("train", "val", "test")):
            assert data.mask(split).tolist() == written["masks"][k, i if split != "test" else 3][ids].tolist()
        stopping = torch.from_numpy(written["masks"][k, 2][ids])
        assert not (stopping & (data.mask("train") | data.mask("val") | data.mask("test"))).any()
        tests.append(set(ids[data.nodes("test").numpy()].tolist()))
    assert tests[0] == tests[1]


def test_load_dataset_reaches_the_node_sets(tmp_path):
    write_node_set_fixture("texas", tmp_path)
    data = load_dataset("texas", tmp_path, pe_k=2, split_index=4, progress=False)
    assert isinstance(data, NodeGraph) and data.pe_dim == 2 and data.split_index == 4
    assert node_set_present("texas", tmp_path) and not node_set_present("cora", tmp_path)


def _blocked(monkeypatch):
    import dgl.data.dgl_dataset
    import dgl.data.heterophilous_graphs

    def download(url, path=None, **kwargs):
        raise ConnectionError(f"no network for {url}")

    for module in (dgl.data.dgl_dataset, dgl.data.heterophilous_graphs):
        monkeypatch.setattr(module, "download", download)


@pytest.mark.parametrize("name", ["cora", "texas", "tolokers", "coauthor-cs", "wikics"])
def test_offline_one_line_names_the_files_and_their_folder(tmp_path, monkeypatch, name):
    _blocked(monkeypatch)
    folder = raw_folder(name, tmp_path)
    with pytest.raises(DataError) as info:
        load_node_set(name, LoadOptions(data_dir=tmp_path, progress=False))
    message = str(info.value)
    assert "\n" not in message and "could not download" in message and f"in {folder}/" in message
    files = expected_files(name)
    if name == "texas":
        assert "out1_graph_edges.txt, out1_node_feature_label.txt and texas_split_0.6_0.2_{0..9}.npz" in message
    else:
        assert all(f in message for f in files)
    assert not folder.exists()  # nothing half-written: the next try downloads again


def test_a_folder_missing_files_is_named_not_downloaded(tmp_path, monkeypatch):
    _blocked(monkeypatch)
    write_node_set_fixture("citeseer", tmp_path)
    folder = raw_folder("citeseer", tmp_path)
    (folder / "ind.citeseer.tx").unlink()
    (folder / "ind.citeseer.graph").unlink()
    with pytest.raises(DataError, match=r"citeseer_d6836239 lacks ind.citeseer.tx and ind.citeseer.graph; put "):
        load_node_set("citeseer", LoadOptions(data_dir=tmp_path, progress=False))
    assert not node_set_present("citeseer", tmp_path)


def test_file_lists_fold_numbered_splits():
    assert describe_files(["a.txt", "x_split_0.6_0.2_0.npz", "x_split_0.6_0.2_1.npz", "x_split_0.6_0.2_2.npz"]) \
        == "a.txt and x_split_0.6_0.2_{0..2}.npz"
    assert describe_files(["data.json"]) == "data.json"
