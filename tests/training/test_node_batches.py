"""Batches cut from one graph: DGL's METIS clusters and random node sets, seeded, resumable, carrying the masks."""
import dgl
import pytest
import torch

from geaet_dgl.data import DataError
from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_dgl.data.nodes.node_graph import NodeGraph
from geaet_dgl.training.node_batches import (MAX_PART_GROWTH, NODES_PER_PART, TRAIN_NODES_PER_BATCH, default_num_parts,
                                          make_node_sampler, masked_rows)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    graph = planted_partition(240, 3, 0.06, 0.006, seed=3)
    return NodeGraph(graph, "node-classification", 3, "sbm", cache_dir=tmp_path_factory.mktemp("cache"), stamp="1")


def _epoch(sampler, batch_size, epoch, seed=0, start=0):
    return [b.ndata[dgl.NID] for b in sampler.epoch_batches(batch_size, seed, epoch, start)]


@pytest.mark.parametrize("kind", ["cluster", "random"])
def test_each_epoch_covers_every_node_once_in_a_seeded_order(data, kind):
    sampler = make_node_sampler(data, kind, num_parts=6)
    epoch0 = _epoch(sampler, 2, 0)
    assert len(epoch0) == 3 == sampler.steps_per_epoch(2)
    assert torch.equal(torch.cat(epoch0).sort().values, torch.arange(240))  # a partition of the nodes
    assert max(len(ids) for ids in epoch0) <= sampler.max_batch_nodes(2)
    again = _epoch(make_node_sampler(data, kind, num_parts=6), 2, 0)
    assert all(torch.equal(a, b) for a, b in zip(epoch0, again))  # same seed and epoch: same batches
    assert not all(torch.equal(a, b) for a, b in zip(epoch0, _epoch(sampler, 2, 1)))  # next epoch: other order
    tail = _epoch(sampler, 2, 0, start=1)  # resuming inside the epoch
    assert len(tail) == 2 and all(torch.equal(a, b) for a, b in zip(epoch0[1:], tail))


def test_batches_are_induced_subgraphs_with_their_nodes_data(data):
    batch = next(iter(make_node_sampler(data, "cluster", num_parts=4).epoch_batches(1, 0, 0)))
    ids = batch.ndata[dgl.NID]
    for key in ("feat", "label", "train_mask", "val_mask", "test_mask"):
        assert torch.equal(batch.ndata[key], data.graph.ndata[key][ids])
    src, dst = batch.edges()
    inside = torch.zeros(240, dtype=torch.bool)
    inside[ids] = True
    gs, gd = data.graph.edges()
    assert batch.num_edges() == int((inside[gs] & inside[gd]).sum())  # every edge between its nodes
    assert bool(data.graph.has_edges_between(ids[src], ids[dst]).all())
    output = torch.randn(batch.num_nodes(), 3)
    rows, labels = masked_rows(batch, output)
    assert torch.equal(rows, output[batch.ndata["train_mask"]])
    assert torch.equal(labels, data.graph.ndata["label"][ids][batch.ndata["train_mask"]])


def test_metis_partition_is_cached_and_full_is_one_step(data):
    make_node_sampler(data, "cluster", num_parts=5)
    assert len(list(data.cache_dir.glob("sbm-metis-5-*.pkl"))) == 1
    full = make_node_sampler(data, "full")
    batches = full.epoch_batches(8, 0, 0)
    assert batches.total == 1 and [g is data.graph for g in batches] == [True]
    assert list(full.epoch_batches(8, 0, 0, start_step=1)) == []
    with pytest.raises(DataError, match="data.num_parts=500 is more than the graph's 240 nodes"):
        make_node_sampler(data, "random", num_parts=500)
    with pytest.raises(ValueError, match="sampler='metis' is not one of full, cluster, random"):
        make_node_sampler(data, "metis")


def _sparse_labels(num_nodes, train_nodes, seed=0):
    graph = planted_partition(num_nodes, 3, 10 / num_nodes, 1 / num_nodes, signal=0.3, seed=seed)
    order = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))
    for name, chosen in (("train_mask", order[:train_nodes]), ("val_mask", order[train_nodes:2 * train_nodes]),
                         ("test_mask", order[2 * train_nodes:])):
        graph.ndata[name] = torch.zeros(num_nodes, dtype=torch.bool)
        graph.ndata[name][chosen] = True
    return graph


def test_default_parts_are_larger_where_labels_are_sparse(tmp_path):
    assert default_num_parts(70000) == 70 == default_num_parts(70000, 50000, 4)  # plenty of labels: ~1,000 each
    assert default_num_parts(70000, 200, 4) == 4 * 200 // TRAIN_NODES_PER_BATCH == 12
    assert default_num_parts(100000, 10, 4) == 100000 // (MAX_PART_GROWTH * NODES_PER_PART)  # the largest parts
    assert default_num_parts(6000, 30, 4) == 1  # the whole graph each step
    data = NodeGraph(_sparse_labels(6000, 200), "node-classification", 3, "sparse", cache_dir=tmp_path, stamp="1")
    assert make_node_sampler(data, "cluster").num_parts == 6  # no batch size given: parts of ~1,000 nodes
    sampler = make_node_sampler(data, "cluster", batch_size=1)
    assert sampler.num_parts == 200 // TRAIN_NODES_PER_BATCH == 3
    counts = [int(b.ndata["train_mask"].sum()) for b in sampler.epoch_batches(1, 0, 0)]
    assert sum(counts) == 200 and min(counts) > 40  # each step about 200 / 3 labelled nodes, not 200 / 6
    assert make_node_sampler(data, "random", batch_size=2).num_parts == 6
    assert make_node_sampler(data, "cluster", num_parts=8, batch_size=1).num_parts == 8  # chosen: kept


def test_metis_runs_in_a_child_and_leaves_only_the_cache(tmp_path, monkeypatch):
    """METIS in a forked child (stoppable by SIGTERM / Ctrl-C, its memory returned): this process never calls
    it, reads the cache the child wrote, and gets the parts METIS gives in this process."""
    import os

    import geaet_dgl.training.node_batches as node_batches

    graph = planted_partition(240, 3, 0.06, 0.006, seed=3)
    data = NodeGraph(graph, "node-classification", 3, "sbm", cache_dir=tmp_path, stamp="1")
    parent, metis_pids = os.getpid(), []
    real = node_batches.dgl.dataloading.ClusterGCNSampler

    class Recording(real):
        def __init__(self, g, k, cache_path=None, **kwargs):
            if not os.path.exists(cache_path):
                metis_pids.append(os.getpid())
            super().__init__(g, k, cache_path=cache_path, **kwargs)

    monkeypatch.setattr(node_batches.dgl.dataloading, "ClusterGCNSampler", Recording)
    sampler = make_node_sampler(data, "cluster", num_parts=6)
    assert parent not in metis_pids  # METIS ran elsewhere (the child appends to its own copy of the list)
    assert [p.name for p in tmp_path.iterdir()] == [next(tmp_path.glob("sbm-metis-6-*.pkl")).name]  # no temp file
    structure = dgl.graph(graph.edges(), num_nodes=240)
    here = real(structure, 6, cache_path=str(tmp_path / "here.pkl"))
    assert torch.equal(sampler._cluster.partition_offset, here.partition_offset)
    assert torch.equal(sampler._cluster.partition_node_ids, here.partition_node_ids)


def test_a_damaged_metis_cache_is_computed_again(tmp_path, caplog):
    graph = planted_partition(240, 3, 0.06, 0.006, seed=3)
    data = NodeGraph(graph, "node-classification", 3, "sbm", cache_dir=tmp_path, stamp="1")
    first = make_node_sampler(data, "cluster", num_parts=6)
    cache = next(tmp_path.glob("sbm-metis-6-*.pkl"))
    cache.write_bytes(cache.read_bytes()[:20])  # a writer killed half-way (DGL writes in place)
    with caplog.at_level("WARNING"):
        again = make_node_sampler(data, "cluster", num_parts=6)
    assert "computing the parts again" in caplog.text
    assert torch.equal(again._cluster.partition_offset, first._cluster.partition_offset)


def test_a_metis_child_killed_says_what_to_do(tmp_path, monkeypatch):
    """The child killed (as the OOM killer would): one line naming METIS and the ways out, no cache left."""
    import os
    import signal

    import geaet_dgl.training.node_batches as node_batches

    data = NodeGraph(planted_partition(240, 3, 0.06, 0.006, seed=3), "node-classification", 3, "sbm",
                     cache_dir=tmp_path, stamp="1")
    monkeypatch.setattr(node_batches, "_write_metis_cache", lambda *args: os.kill(os.getpid(), signal.SIGKILL))
    with pytest.raises(DataError, match=r"METIS parts of sbm died \(exit status -9; out of memory\?\); METIS takes "
                                        r"about 95 bytes a stored edge .*--sampler random"):
        make_node_sampler(data, "cluster", num_parts=6)
    assert list(tmp_path.iterdir()) == []
