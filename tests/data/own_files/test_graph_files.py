"""The user's own DGL graph files: task and widths from the data, splits, PE cache, one-line errors."""
import json

import dgl
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, load_dataset, load_graph_file
from geaet_dgl.data.own_files.graph_files import inspect_graph_file, split_indices
from geaet_dgl.data.encodings.positional_encoding import random_walk_se
from tests.own_graph_files import graph_targets, make_graphs, write_task_file


@pytest.mark.parametrize("task, outputs", [("graph-classification", 2), ("graph-regression", 1),
                                           ("node-classification", 2)])
@pytest.mark.slow
def test_task_and_widths_are_inferred(tmp_path, task, outputs):
    path = tmp_path / "g.bin"
    write_task_file(path, task, count=12)
    info = inspect_graph_file(path)
    assert (info.task, info.num_outputs, info.num_graphs) == (task, outputs, 12)
    assert (info.features.node_in_feats, info.features.node_vocab_sizes) == (3, None)
    assert (info.features.edge_in_feats, info.features.edge_vocab_sizes) == (2, None)


@pytest.mark.slow
def test_integer_types_get_vocabularies_and_missing_edge_features_none(tmp_path):
    path = tmp_path / "g.bin"
    graphs, _ = write_task_file(path, "graph-classification", count=10, int_types=True, edge_feats=0)
    info = inspect_graph_file(path)
    expected = torch.cat([g.ndata["feat"] for g in graphs]).max(dim=0).values + 1
    assert info.features.node_vocab_sizes == tuple(expected.tolist())
    assert info.features.edge_in_feats == 0
    splits = load_graph_file(LoadOptions(data_file=path, progress=False))
    g = splits.train.graphs[0]
    assert g.ndata["feat"].dtype == torch.int64 and g.edata["feat"].shape == (g.num_edges(), 1)


@pytest.mark.slow
def test_splits_labels_and_pe_match_the_file(tmp_path):
    path = tmp_path / "g.bin"
    graphs, labels = write_task_file(path, "graph-regression", count=30)
    splits = load_dataset("file", data_file=str(path), rwse_k=3, progress=False, split=[0.6, 0.2, 0.2],
                          split_seed=4)
    chosen = split_indices(30, path, fractions=(0.6, 0.2, 0.2), seed=4)
    assert splits.sizes() == {"train": 18, "val": 6, "test": 6}
    assert sorted(sum(chosen.values(), [])) == list(range(30))
    for name in ("train", "val", "test"):
        dataset = getattr(splits, name)
        assert torch.equal(dataset.labels, labels[chosen[name]])
        first = graphs[chosen[name][0]]
        assert torch.equal(dataset.graphs[0].ndata["feat"], first.ndata["feat"])
        assert torch.allclose(dataset.graphs[0].ndata["rwse"], random_walk_se(first, 3), atol=1e-6)
    assert chosen != split_indices(30, path, fractions=(0.6, 0.2, 0.2), seed=5)
    assert len(list((tmp_path / "geaet_cache").glob("geaet_pe_g-*.pt"))) == 3


@pytest.mark.slow
def test_node_labels_follow_their_graphs(tmp_path):
    path = tmp_path / "g.bin"
    graphs, _ = write_task_file(path, "node-classification", count=10)
    split = {"train": [0, 2, 4, 6], "val": [1, 3], "test": [9, 5]}
    (tmp_path / "split.json").write_text(json.dumps(split))
    splits = load_graph_file(LoadOptions(data_file=path, split_file=tmp_path / "split.json", progress=False))
    assert splits.test.level == "node"
    expected = torch.cat([graphs[i].ndata["label"] for i in (5, 9)])  # each split in file order
    assert torch.equal(splits.test.labels, expected)
    assert "label" not in splits.test.graphs[0].ndata


@pytest.mark.slow
def test_npz_split_file_with_valid_key(tmp_path):
    path = tmp_path / "g.bin"
    write_task_file(path, "graph-classification", count=10)
    np.savez(tmp_path / "split.npz", train=np.arange(6), valid=np.array([6, 7]), test=np.array([8]))
    splits = load_graph_file(LoadOptions(data_file=path, split_file=tmp_path / "split.npz", progress=False))
    assert splits.sizes() == {"train": 6, "val": 2, "test": 1}


@pytest.mark.slow
def test_stated_task_turns_integer_valued_floats_into_classes(tmp_path):
    path = tmp_path / "g.bin"
    graphs = make_graphs(10)
    dgl.save_graphs(str(path), graphs, {"label": torch.tensor([0.0, 1, 2] * 3 + [0])})
    assert inspect_graph_file(path).task == "graph-regression"
    info = inspect_graph_file(path, task="graph-classification")
    assert (info.task, info.num_outputs) == ("graph-classification", 3)


def _error(tmp_path, graphs=None, labels=None, split=None, raw=None, **kwargs) -> str:
    path = tmp_path / "bad.bin"
    if raw is not None:
        path.write_bytes(raw)
    else:
        dgl.save_graphs(str(path), graphs, labels if labels is not None else {"label": torch.zeros(len(graphs),
                                                                                                   dtype=torch.long)})
    if split is not None:
        (tmp_path / "split.json").write_text(json.dumps(split))
        kwargs["split_file"] = tmp_path / "split.json"
    with pytest.raises(DataError) as info:
        load_graph_file(LoadOptions(data_file=path, progress=False, **kwargs))
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.slow
def test_bad_files_get_one_line_errors_naming_file_graph_and_fix(tmp_path):
    message = _error(tmp_path, raw=b"not a graph file at all")
    assert "bad.bin is not a DGL graph file" in message and "dgl.save_graphs" in message

    graphs = make_graphs(4)
    del graphs[2].ndata["feat"]
    message = _error(tmp_path, graphs)
    assert "bad.bin: graph 2 has no ndata['feat']" in message and "store the node features" in message

    graphs = make_graphs(4)
    graphs[3].ndata["feat"] = torch.randn(graphs[3].num_nodes(), 5)
    assert "graph 3 has 5 node features but graph 0 has 3" in _error(tmp_path, graphs)

    graphs = make_graphs(4)
    graphs[1].ndata["feat"] = graphs[1].ndata["feat"].long()
    assert "graph 1 has int ndata['feat'] but graph 0 has float" in _error(tmp_path, graphs)

    graphs = make_graphs(4)
    del graphs[1].edata["feat"]
    assert "graph 1 lacks edata['feat']" in _error(tmp_path, graphs)

    graphs = make_graphs(4)
    for g in graphs:
        g.ndata.pop("label")
    message = _error(tmp_path, graphs, labels={"y": torch.zeros(4)})
    assert "has no labels (it has 'y')" in message and "{'label': labels}" in message

    message = _error(tmp_path, make_graphs(4), labels={"label": torch.zeros(3, dtype=torch.long)})
    assert "has 4 graphs but 3 labels" in message

    graphs = make_graphs(4)
    graphs[2] = dgl.graph(([], []), num_nodes=0)
    graphs[2].ndata["feat"] = torch.zeros(0, 3)
    graphs[2].edata["feat"] = torch.zeros(0, 2)
    assert "bad.bin: graph 2 has no nodes; remove it" in _error(tmp_path, graphs)

    graphs = make_graphs(4)
    graphs[1].ndata["feat"][0, 0] = float("nan")
    assert "graph 1 has a non-finite value in ndata['feat'] (node 0)" in _error(tmp_path, graphs)


@pytest.mark.slow
def test_bad_splits_get_one_line_errors(tmp_path):
    graphs = make_graphs(6)
    message = _error(tmp_path, graphs, split={"train": [0, 1, 9], "val": [2], "test": [3]})
    assert "train[2] = 9 is out of range" in message and "6 graphs, indices 0..5" in message
    message = _error(tmp_path, graphs, split={"train": [0, 1, 2], "val": [2], "test": [3]})
    assert "graph 2 is in both train and val" in message
    assert "no test list" in _error(tmp_path, graphs, split={"train": [0], "val": [1]})
    assert "the val list is empty" in _error(tmp_path, graphs, split={"train": [0], "val": [], "test": [1]})
    assert "too few for the split" in _error(tmp_path, graphs[:3], split_seed=0)
    with pytest.raises(DataError, match="three positive numbers .* adding up to 1"):
        split_indices(10, "g.bin", fractions=(0.8, 0.2, 0.2))


@pytest.mark.slow
def test_regression_targets_are_the_written_ones(tmp_path):
    path = tmp_path / "g.bin"
    graphs = make_graphs(10)
    targets = torch.stack([graph_targets(graphs), -graph_targets(graphs)], dim=1)
    dgl.save_graphs(str(path), graphs, {"label": targets})
    info = inspect_graph_file(path)
    assert (info.task, info.num_outputs) == ("graph-regression", 2)


def test_split_fractions_given_as_text_like_set_does(tmp_path):
    assert split_indices(20, "g.bin", fractions="0.5,0.25,0.25") == split_indices(20, "g.bin",
                                                                                  fractions=(0.5, 0.25, 0.25))
    with pytest.raises(DataError, match="three positive numbers"):
        split_indices(20, "g.bin", fractions="half")
