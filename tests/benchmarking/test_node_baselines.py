"""The GCN and MLP baselines of benchmarks/node_vs_baselines.py: the graph helps the GCN where the features alone are weak."""
import pytest
import torch

from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_lab.benchmarking.node_baselines import TwoLayer, format_table, train_baseline


@pytest.mark.slow
def test_gcn_uses_the_graph_and_the_mlp_does_not():
    torch.set_num_threads(1)
    graph = planted_partition(300, 3, p_in=0.08, p_out=0.004, signal=0.3, seed=0)
    gcn = train_baseline(graph, "gcn", seed=0, hidden=16, epochs=60)
    mlp = train_baseline(graph, "mlp", seed=0, hidden=16, epochs=60)
    assert gcn["test"] > mlp["test"] + 0.15, (gcn, mlp)
    assert 1 <= gcn["epoch"] <= 60 and 0.0 <= mlp["val"] <= 1.0


@pytest.mark.slow
def test_row_normalised_baselines_read_what_the_geaet_run_reads():
    """`row_normalize=True` divides by each row's absolute sum (data/input_transform.py), also for signed features:
    the same as training on features normalised beforehand by the run's transform, and not a plain sum's."""
    torch.set_num_threads(1)
    graph = planted_partition(80, 2, p_in=0.1, p_out=0.01, signal=0.3, seed=2)
    features = graph.ndata["feat"].float()
    assert (features < 0).any() and (features > 0).any()
    normalised, plain = graph.clone(), graph.clone()
    normalised.ndata["feat"] = features / features.abs().sum(1, keepdim=True)
    plain.ndata["feat"] = features / features.sum(1, keepdim=True)
    asked = train_baseline(graph, "mlp", seed=0, hidden=8, epochs=15, row_normalize=True)
    assert asked == train_baseline(normalised, "mlp", seed=0, hidden=8, epochs=15)
    assert asked != train_baseline(plain, "mlp", seed=0, hidden=8, epochs=15)


def _plain_loop(graph, kind, seed, hidden, epochs, lr=0.01, weight_decay=5e-4):
    """Kipf and Welling's recipe written out: torch's Adam with L2 decay, one full-batch step per epoch, the test
    accuracy at the first epoch of best validation accuracy."""
    import dgl
    import torch.nn.functional as F

    feat, label = graph.ndata["feat"].float(), graph.ndata["label"].long()
    train, val, test = (graph.ndata[f"{name}_mask"].bool() for name in ("train", "val", "test"))
    if kind == "gcn":
        graph = dgl.add_self_loop(dgl.remove_self_loop(graph))
    torch.manual_seed(seed)
    model = TwoLayer(kind, feat.shape[1], hidden, int(label.max()) + 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best = {"val": -1.0}
    for epoch in range(1, epochs + 1):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(graph, feat)[train], label[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            predicted = model(graph, feat).argmax(-1)
        accuracy = [int((predicted[m] == label[m]).sum()) / int(m.sum()) for m in (val, test)]
        if accuracy[0] > best["val"]:
            best = {"val": accuracy[0], "test": accuracy[1], "epoch": epoch}
    return best


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gcn", "mlp"])
def test_the_baselines_train_through_the_training_loop_as_the_plain_recipe_does(kind):
    """train_baseline runs the library's Trainer with a task of its own: the same numbers, epoch for epoch, as the
    recipe's plain loop (torch.optim.Adam, dropout's random masks in the same order)."""
    torch.set_num_threads(1)
    graph = planted_partition(120, 3, p_in=0.08, p_out=0.01, signal=0.3, seed=3)
    ours = train_baseline(graph, kind, seed=1, hidden=8, epochs=25, lr=0.05, weight_decay=0.05)
    plain = _plain_loop(graph, kind, seed=1, hidden=8, epochs=25, lr=0.05, weight_decay=0.05)
    assert ours["epoch"] == plain["epoch"] and ours["val"] == pytest.approx(plain["val"], abs=1e-12)
    assert ours["test"] == pytest.approx(plain["test"], abs=1e-12)


def test_two_layer_shapes_and_table():
    graph = planted_partition(50, 2, p_in=0.2, p_out=0.01, seed=1)
    for kind in ("gcn", "mlp"):
        out = TwoLayer(kind, graph.ndata["feat"].shape[1], 8, 2)(graph, graph.ndata["feat"])
        assert out.shape == (50, 2)
    row = {"test": {"mean": 0.5, "std": 0.1, "n": 3}, "val": {"mean": 0.6, "std": 0.0, "n": 3}, "seconds": 2.0}
    assert "| 2-layer MLP | 50.00 ± 10.00 | 60.00 ± 0.00 | 3 | 2 |" in format_table({"mlp": row})


@pytest.mark.slow
def test_a_named_node_set_is_compared_on_its_public_splits(tmp_path):
    """``NodeBaselinesJob(dataset=...)``: each requested split of the set, read by DGL's own loader from its raw
    files, becomes one file whose masks are the fixture's columns; the baselines train once per file x seed."""
    import dgl
    import numpy as np

    from geaet_lab.benchmarking import NodeBaselinesJob, run_benchmark
    from tests.data.fixtures_node_sets import write_node_set_fixture

    torch.set_num_threads(1)
    truth = write_node_set_fixture("texas", tmp_path / "raw", num_nodes=40)
    job = NodeBaselinesJob(files=(), out=str(tmp_path / "out"), dataset="texas", data_dir=str(tmp_path / "raw"),
                           splits=(0, 3), seeds=(0,), hidden=8, skip_geaet=True)
    table = run_benchmark(job)["table"]
    assert {row["file"] for row in table["gcn"]["runs"]} == {
        str(tmp_path / "out" / "graphs" / f"texas_split{k}.bin") for k in (0, 3)}
    assert table["gcn"]["test"]["n"] == table["mlp"]["test"]["n"] == 2
    for k in (0, 3):
        graph = dgl.load_graphs(str(tmp_path / "out" / "graphs" / f"texas_split{k}.bin"))[0][0]
        for column, split in enumerate(("train", "val", "test")):
            assert np.array_equal(graph.ndata[f"{split}_mask"].numpy(), truth["masks"][k, column])
        assert np.array_equal(graph.ndata["label"].numpy(), truth["label"])
        assert graph.num_nodes() == 40 and graph.ndata["feat"].shape == (40, truth["feat"].shape[1])
    assert (tmp_path / "out" / "node_baselines.md").read_text().count("texas_split") == 2
