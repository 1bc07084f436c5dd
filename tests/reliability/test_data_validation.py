"""Bad data refused at load time (data/validation.py): one line naming the split, the graph, the node or
edge and the fix."""
import dgl
import pytest
import torch

from geaet_dgl.data import DataError, GraphDataset, synthetic_splits
from geaet_dgl.data.validation import check_labels, validate_dataset, validate_splits


def _dataset(n=5, seed=0):
    return synthetic_splits(n, 2, 2, seed=seed, num_nodes=9, min_nodes=3).train


def test_nan_node_feature_names_split_graph_node_and_fix():
    data = _dataset()
    data.graphs[3].ndata["feat"][2, 1] = float("nan")
    with pytest.raises(DataError) as info:
        validate_dataset(data, "train", "toy")
    message = str(info.value)
    assert message.startswith("the train split of 'toy': graph 3 has a non-finite value (nan) in "
                              "ndata['feat'] (node 2); fix or drop that graph")
    assert "\n" not in message


def test_inf_edge_feature_and_inf_positional_encoding():
    data = _dataset()
    data.graphs[4].edata["feat"][0, 0] = float("inf")
    with pytest.raises(DataError, match=r"the val split of 'toy': graph 4 has a non-finite value \(inf\) in "
                                        r"edata\['feat'\] \(edge 0\)"):
        validate_dataset(data, "val", "toy")
    data = _dataset()
    data.graphs[1].ndata["lap_pe"][-1, 0] = -float("inf")
    last = data.graphs[1].num_nodes() - 1
    with pytest.raises(DataError, match=rf"graph 1 has a non-finite value \(-inf\) in ndata\['lap_pe'\] "
                                        rf"\(node {last}\)"):
        validate_dataset(data, "test", "toy")


def test_empty_graph_is_refused_at_load_time():
    data = _dataset()
    empty = dgl.graph(([], []), num_nodes=0)
    for key, value in data.graphs[0].ndata.items():
        empty.ndata[key] = value[:0]
    empty.edata["feat"] = torch.zeros(0, 1)
    data = GraphDataset(data.graphs[:2] + [empty] + data.graphs[2:], torch.arange(6) % 10)
    with pytest.raises(DataError, match=r"the train split of 'toy': graph 2 has no nodes; fix or drop that graph"):
        validate_dataset(data, "train", "toy")


def test_labels_out_of_range():
    with pytest.raises(DataError, match=r"the test split of 'toy': graph 2 has label 12, outside 0\.\.9 for "
                                        r"model\.out_feats=10; fix the labels, or set model\.out_feats"):
        check_labels(torch.tensor([0, 9, 12, 3]), "test", "toy", 10, what="model.out_feats=10")
    with pytest.raises(DataError, match=r"graph 1 has label -1, outside 0\.\.1"):
        check_labels(torch.tensor([0, -1]), "train", "toy", 2)
    check_labels(torch.tensor([0.5, float("nan")]), "train", "toy", 2)  # regression targets: no range
    with pytest.raises(DataError, match="graph 1 has an infinite target"):
        check_labels(torch.tensor([[0.5], [float("inf")]]), "train", "toy")


def test_node_labels_out_of_range_name_graph_and_node():
    graphs = [dgl.graph(([0], [1]), num_nodes=3), dgl.graph(([0], [1]), num_nodes=2)]
    data = GraphDataset(graphs, torch.tensor([0, 1, 0, 1, 5]), level="node")
    with pytest.raises(DataError, match=r"graph 1 \(node 1\) has label 5, outside 0\.\.1"):
        validate_dataset(data, "train", "toy", num_classes=2)


def test_clean_splits_pass():
    splits = synthetic_splits(6, 3, 3, rwse_k=4)
    assert validate_splits(splits) is splits
