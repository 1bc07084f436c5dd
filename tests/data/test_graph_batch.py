"""``batch_graphs`` (what our collate functions batch with) against ``dgl.batch`` of the same graphs."""
import dgl
import pytest
import torch

from geaet_lab.benchmarking.inputs import synthetic_graphs
from geaet_dgl.data import GraphDataset, collate_for
from geaet_dgl.data import dataset as dataset_module
from geaet_dgl.data.graph_batch import batch_graphs
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from geaet_dgl.training.batching import epoch_sampler, make_epoch_loader


def _link_dataset(num_graphs=7, seed=0):
    """Random graphs with features and (P_i, 2) positive pairs inside each graph (PCQM-Contact's shape)."""
    gen = torch.Generator().manual_seed(seed)
    graphs, pairs, counts = [], [], []
    for i in range(num_graphs):
        n = 3 + i % 4
        src, dst = torch.randint(0, n, (2 * n,), generator=gen), torch.randint(0, n, (2 * n,), generator=gen)
        g = dgl.graph((src, dst), num_nodes=n)
        g.ndata["feat"] = torch.randint(0, 5, (n, 9), generator=gen)
        g.edata["feat"] = torch.randint(0, 3, (2 * n, 3), generator=gen)
        g.ndata["lap_pe"] = torch.randn(n, 4, generator=gen)
        p = torch.randint(0, n, (1 + i % 3, 2), generator=gen)
        pairs.append(p), counts.append(len(p)), graphs.append(g)
    return GraphDataset(graphs, torch.cat(pairs), level="link", counts=torch.tensor(counts))


DATASETS = {
    "graph": lambda: synthetic_graphs("mnist", 9, seed=1),          # feat, lap_pe, lap_eigval; (G,) labels
    "node": lambda: synthetic_graphs("pattern", 5, seed=2),         # one-hot feat, rwse; per-node labels
    "link": _link_dataset,                                          # integer features; pair targets
}


def _same_batch(ours, reference):
    assert ours.batch_size == reference.batch_size
    assert torch.equal(ours.batch_num_nodes(), reference.batch_num_nodes())
    assert torch.equal(ours.batch_num_edges(), reference.batch_num_edges())
    assert (ours.num_nodes(), ours.num_edges(), ours.idtype) == (reference.num_nodes(), reference.num_edges(),
                                                                 reference.idtype)
    for mine, theirs in zip(ours.edges(form="all"), reference.edges(form="all")):
        assert torch.equal(mine, theirs)
    for ours_data, ref_data in ((ours.ndata, reference.ndata), (ours.edata, reference.edata)):
        assert list(ours_data.keys()) == list(ref_data.keys())
        for key in ref_data.keys():
            assert ours_data[key].dtype == ref_data[key].dtype and torch.equal(ours_data[key], ref_data[key]), key


@pytest.mark.parametrize("level", sorted(DATASETS))
def test_collate_equals_dgl_batch_in_every_epoch_batch(level, monkeypatch):
    """The loader's batches, same seed and epoch: structure, fields, PE, labels and batch sizes equal
    those built with ``dgl.batch`` of the same graphs (as before ``batch_graphs``)."""
    data = DATASETS[level]()
    assert data.level == level
    ours = list(make_epoch_loader(data, collate_for(data), epoch_sampler(len(data), 2, shuffle=True, seed=5, epoch=1)))
    monkeypatch.setattr(dataset_module, "batch_graphs", lambda graphs: dgl.batch(list(graphs)))
    reference = list(make_epoch_loader(data, collate_for(data),
                                       epoch_sampler(len(data), 2, shuffle=True, seed=5, epoch=1)))
    assert len(ours) == len(reference) == (len(data) + 1) // 2  # odd sizes: the last batch has one graph
    for (graph, labels), (ref_graph, ref_labels) in zip(ours, reference):
        _same_batch(graph, ref_graph)
        assert labels.dtype == ref_labels.dtype and torch.equal(labels, ref_labels)


def test_model_outputs_and_gradients_are_bitwise_the_same():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _outputs_and_gradients_equal()
    finally:
        torch.set_num_threads(previous)


def _outputs_and_gradients_equal():
    data = synthetic_graphs("mnist", 6, seed=3)
    graphs = [data[i][0] for i in range(6)]
    torch.manual_seed(0)
    model = build_model(get_preset("mnist").model)
    results = []
    for batch in (batch_graphs(graphs), dgl.batch(graphs)):
        model.zero_grad()
        torch.manual_seed(1)  # the same dropout masks
        out = model(batch)
        out.square().sum().backward()
        results.append((out.detach(), [p.grad for p in model.parameters()]))
        model.zero_grad(set_to_none=True)
    (out, grads), (ref_out, ref_grads) = results
    assert torch.equal(out, ref_out)
    assert sum(g is not None for g in grads) > 50
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(grads, ref_grads))


def test_graphs_already_batched_once_and_single_graph_batches():
    data = synthetic_graphs("mnist", 4, seed=4)
    graphs = [data[i][0] for i in range(4)]
    dgl.batch(graphs)  # leaves cached one-graph batch sizes on every graph
    _same_batch(batch_graphs(graphs), dgl.batch(graphs))
    _same_batch(batch_graphs(graphs[:1]), dgl.batch(graphs[:1]))


def test_unusual_inputs_go_to_dgl_batch():
    a, b = dgl.graph(([0, 1], [1, 2])), dgl.graph(([0], [0]))
    a.ndata["h"], b.ndata["h"] = torch.ones(3, 2), torch.zeros(1, 2)
    ab = dgl.batch([a, b])
    # a batch inside a batch: its own sizes are kept
    assert batch_graphs([ab, a]).batch_num_nodes().tolist() == [3, 1, 3]
    b.ndata["h"] = torch.zeros(1, 2, dtype=torch.float64)  # fields that differ: dgl.batch's own error
    with pytest.raises(dgl.DGLError):
        batch_graphs([a, b])
    hetero = dgl.heterograph({("u", "r", "v"): ([0], [1])})
    assert batch_graphs([hetero, hetero]).num_nodes("v") == 4
    with pytest.raises(dgl.DGLError):
        batch_graphs([])


@pytest.mark.slow
def test_a_training_run_records_the_same_metrics_as_with_dgl_batch(tmp_path, monkeypatch):
    """Same seed: the same batches in the same order, so the same losses and metrics to the last digit."""
    from geaet_dgl.training import make_run_config
    from geaet_dgl.training import train
    from tests.training.tiny import TINY_DATA, TINY_MODEL, TINY_TRAIN, one_thread, strip_timing

    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN, "train.epochs": 2}, data=TINY_DATA)
    with one_thread():
        ours = train(run, tmp_path / "ours", progress=False)
        monkeypatch.setattr(dataset_module, "batch_graphs", lambda graphs: dgl.batch(list(graphs)))
        reference = train(run, tmp_path / "dgl_batch", progress=False)
    rows = [(tmp_path / name / "metrics.jsonl").read_text().splitlines() for name in ("ours", "dgl_batch")]
    import json

    ours_rows, ref_rows = ([json.loads(line) for line in r] for r in rows)
    assert strip_timing(ours_rows) == strip_timing(ref_rows) and len(ours_rows) == 2
    assert {k: v for k, v in ours.items() if "second" not in k and "per_s" not in k} == \
        {k: v for k, v in reference.items() if "second" not in k and "per_s" not in k}
