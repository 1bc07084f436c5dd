"""One graph with node masks: reading, the one-line errors for bad masks and labels, and the generators."""
import dgl
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions
from geaet_dgl.data.generated.node_graphs import knn_graph, planted_partition, two_circles, with_masks
from geaet_dgl.data.nodes.node_graph import is_node_graph_file, load_node_graph
from geaet_dgl.data.registry import load_dataset


def _graph(n=12, label=None):
    g = dgl.graph((torch.arange(n), (torch.arange(n) + 1) % n), num_nodes=n)
    g.ndata["feat"] = torch.randn(n, 3)
    g.ndata["label"] = torch.arange(n) % 3 if label is None else label
    for i, name in enumerate(("train_mask", "val_mask", "test_mask")):
        g.ndata[name] = torch.arange(n) % 3 == i
    return g


def _save(tmp_path, graphs, name="g.bin"):
    path = tmp_path / name
    dgl.save_graphs(str(path), graphs)
    return path


@pytest.mark.slow
def test_reads_masks_labels_and_task(tmp_path):
    g = _graph()
    g.ndata["label"][g.ndata["train_mask"].nonzero()[0]] = 4  # largest class 4 -> 5 classes
    path = _save(tmp_path, [g])
    assert is_node_graph_file(path)
    data = load_dataset("file", None, data_file=str(path), pe_k=0)
    assert data.task == "node-classification" and data.num_classes == 5
    assert data.sizes() == {"train": 4, "val": 4, "test": 4}
    assert data.graph.ndata["train_mask"].dtype == torch.bool  # saved as uint8 by DGL, read back as bool
    assert torch.equal(data.nodes("val"), torch.arange(1, 12, 3))
    assert torch.equal(data.labels("test"), g.ndata["label"][2::3])


@pytest.mark.slow
def test_float_labels_are_regression_and_unlabelled_nodes_are_free(tmp_path):
    g = _graph(label=torch.randn(12, 2))
    g.ndata["label"][0] = float("nan")  # node 0 is in train_mask: refused
    with pytest.raises(DataError, match="node 0 .*NaN/inf target"):
        load_node_graph(LoadOptions(data_file=_save(tmp_path, [g])))
    g.ndata["train_mask"][0] = False  # unlabelled context node: its label is never read
    data = load_node_graph(LoadOptions(data_file=_save(tmp_path, [g], "ok.bin")))
    assert data.task == "node-regression" and data.num_classes == 2
    classes = _graph(label=torch.where(torch.arange(12) == 0, -1, torch.arange(12) % 3))
    classes.ndata["train_mask"][0] = False
    assert load_node_graph(LoadOptions(data_file=_save(tmp_path, [classes], "c.bin"))).num_classes == 3


@pytest.mark.slow
def test_limits_keep_the_first_nodes_of_each_mask(tmp_path):
    data = load_node_graph(LoadOptions(data_file=_save(tmp_path, [_graph()]), limit_train=2, limit_test=1))
    assert data.sizes() == {"train": 2, "val": 4, "test": 1}
    assert torch.equal(data.nodes("train"), torch.tensor([0, 3]))


@pytest.mark.parametrize("change, message", [
    (lambda g: g.ndata.update({"val_mask": g.ndata["train_mask"] | g.ndata["val_mask"]}),
     r"node 0 is in both train_mask and val_mask; .* make the masks disjoint"),
    (lambda g: g.ndata.update({"test_mask": torch.zeros(12, dtype=torch.bool)}),
     r"ndata\['test_mask'\] selects no node; put at least one node in every split"),
    (lambda g: g.ndata.update({"val_mask": g.ndata["val_mask"].long()}),
     r"ndata\['val_mask'\] has type torch.int64; store it as torch.bool"),
    (lambda g: g.ndata.update({"train_mask": torch.stack([g.ndata["train_mask"]] * 2, 1)}),
     r"ndata\['train_mask'\] has shape \(12, 2\) but the graph has 12 nodes; store one flag per node"),
    (lambda g: g.ndata.pop("test_mask"), r"has train_mask, val_mask but no test_mask; store three disjoint"),
    (lambda g: g.ndata.pop("label"), r"has masks but no ndata\['label'\]"),
    (lambda g: g.ndata["label"].__setitem__(0, -2), r"node 0 \(in a mask\) has class -2; classes are 0..C-1"),
])
@pytest.mark.slow
def test_bad_masks_and_labels_are_one_line_errors(tmp_path, change, message):
    g = _graph()
    change(g)
    with pytest.raises(DataError, match=message) as info:
        load_node_graph(LoadOptions(data_file=_save(tmp_path, [g])))
    assert "\n" not in str(info.value)


def test_masks_on_a_file_of_several_graphs_and_a_split_are_refused(tmp_path):
    path = _save(tmp_path, [_graph(), _graph()])
    with pytest.raises(DataError, match="graph 0 has node masks but the file holds 2 graphs; .*dgl.batch"):
        load_node_graph(LoadOptions(data_file=path))
    with pytest.raises(DataError, match="carries its own node masks, which are the split; drop --split"):
        load_node_graph(LoadOptions(data_file=_save(tmp_path, [_graph()], "one.bin"), split=[0.8, 0.1, 0.1]))


def test_planted_partition_has_the_block_structure_asked_for():
    g = planted_partition(600, 3, p_in=0.05, p_out=0.005, seed=1)
    src, dst = g.edges()
    assert not bool((src == dst).any()) and g.has_edges_between(dst, src).all()  # simple and symmetric
    same = (g.ndata["label"][src] == g.ndata["label"][dst]).double().mean().item()
    # expected share of within-block edges: 3 * (200^2/2) * 0.05 / (that + 3 * 200^2 * 0.005) = 0.833
    assert 0.78 < same < 0.88
    masks = torch.stack([g.ndata[m] for m in ("train_mask", "val_mask", "test_mask")])
    assert torch.equal(masks.sum(0), torch.ones(600, dtype=torch.int64)) and masks.sum(1).tolist() == [300, 150, 150]


def test_knn_graph_matches_a_brute_force_neighbour_search():
    points, label = two_circles(40, seed=2)
    g = knn_graph(points, 3, chunk=7)
    expected = set()
    for i in range(40):
        dist = [(float(((points[i] - points[j]) ** 2).sum()), j) for j in range(40) if j != i]
        for _, j in sorted(dist)[:3]:
            expected |= {(i, j), (j, i)}
    src, dst = g.edges()
    assert set(zip(src.tolist(), dst.tolist())) == expected
    assert with_masks(g, points, label).ndata["feat"].shape == (40, 2)


def test_a_file_saved_with_int32_ids_loads_as_int64_and_is_cut_by_metis(tmp_path):
    """int32 ids halve a large graph file; DGL's METIS and the id tensors of the batches need int64."""
    from geaet_dgl.training.node_batches import make_node_sampler

    g = planted_partition(300, 3, p_in=0.1, p_out=0.01, seed=0)
    path = _save(tmp_path, [g.int()], "g32.bin")
    data = load_node_graph(LoadOptions(data_file=path))
    assert data.graph.idtype == torch.int64
    for ours, theirs in zip(data.graph.edges(), g.edges()):
        assert torch.equal(ours, theirs)
    assert torch.equal(data.graph.ndata["feat"], g.ndata["feat"])
    sampler = make_node_sampler(data, "cluster", num_parts=4, cache_dir=tmp_path)
    batches = sampler.epoch_batches(batch_size=2, seed=0, epoch=0)
    nodes = sorted(int(i) for batch in batches for i in batch.ndata[dgl.NID])
    assert nodes == list(range(300))
