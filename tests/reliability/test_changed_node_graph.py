"""`--allow-changed-data` on one graph with node masks whose edges changed (its masks and labels the run's): it
goes on and says the graph changed, rather than blaming the masks or their labels; changed masks still refuse."""
import pytest
import dgl
import torch

from geaet_dgl.data.generated.node_graphs import planted_partition

from .helpers import one_line_error, run_cli

TINY = ["--set", "model.hidden_dim=8", "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2",
        "--set", "model.pe=none", "--no-progress", "--threads", "1"]


def _trained(tmp_path):
    path = tmp_path / "g.bin"
    graph = planted_partition(120, 3, p_in=0.08, p_out=0.01, signal=0.7, seed=0)
    dgl.save_graphs(str(path), [graph])
    result = run_cli(["train", "--dataset", path, "--epochs", "1", "--out", tmp_path / "run", *TINY])
    assert result.exit_code == 0, result.output
    return path, graph


@pytest.mark.slow
def test_changed_edges_under_the_same_masks_go_on_and_say_what_changed(tmp_path):
    path, graph = _trained(tmp_path)
    before = (graph.num_nodes(), graph.num_edges())
    dgl.save_graphs(str(path), [dgl.add_edges(graph, torch.tensor([0, 1, 2]), torch.tensor([5, 6, 7]))])
    refused = one_line_error(run_cli(["eval", "--checkpoint", tmp_path / "run" / "best.pt"]), exit_code=2)
    assert "changed since the run was trained" in refused and "--allow-changed-data" in refused
    result = run_cli(["eval", "--checkpoint", tmp_path / "run" / "best.pt", "--allow-changed-data"])
    assert result.exit_code == 0, result.output
    assert f"the graph: {before[0]} -> {before[0]} nodes, {before[1]} -> {before[1] + 3} edges" in result.output
    assert "node masks or their labels" not in result.output.replace("going on only if its node masks and their "
                                                                     "labels", "")


@pytest.mark.slow
def test_changed_masks_are_still_refused_and_named(tmp_path):
    path, graph = _trained(tmp_path)
    val = graph.ndata["val_mask"].nonzero().flatten()[:5]
    graph.ndata["val_mask"][val] = False
    graph.ndata["train_mask"][val] = True
    dgl.save_graphs(str(path), [dgl.add_edges(graph, torch.tensor([0]), torch.tensor([5]))])
    line = one_line_error(run_cli(["eval", "--checkpoint", tmp_path / "run" / "best.pt", "--allow-changed-data"]))
    assert "the node masks or their labels in" in line and "cannot be restored" in line


@pytest.mark.slow
def test_eval_on_features_of_another_width_advises_what_eval_can_do(tmp_path):
    """It advised --set, which eval does not have."""
    path, graph = _trained(tmp_path)
    graph.ndata["feat"] = torch.cat([graph.ndata["feat"], graph.ndata["feat"][:, :2]], dim=1)
    dgl.save_graphs(str(path), [graph])
    line = one_line_error(run_cli(["eval", "--checkpoint", tmp_path / "run" / "best.pt", "--allow-changed-data"]))
    assert "model.node_in_feats=" in line and "--set" not in line
    assert line.endswith("a trained model reads data of the shape it was trained on: score it on that data (the "
                         "run's own --data-file / --data-dir), or train a new run on this data")
