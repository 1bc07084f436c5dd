"""Own graphs end to end: train on a dgl.save_graphs file, predict new graphs, bad input, named checkpoints."""
import json

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data import load_dataset
from geaet_dgl.data.own_files.graph_files import split_indices
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.scoring import open_trained_run
from geaet_dgl.scoring.predict import model_outputs, prepare_graphs, read_predictions
from geaet_dgl.data.run_splits import load_splits
from tests.own_graph_files import make_graphs, tiny_args, write_task_file
from tests.training.tiny import cli_args, one_thread

TASKS = ("graph-classification", "graph-regression", "node-classification")
#: The regression run uses GEANet's batch scope: predict must still reproduce eval (same batches).
EXTRA = {"graph-regression": {"model.geanet.scope": "batch"}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """task -> (run_dir, data file, graphs as written, graph labels or None): 1 epoch each through the CLI."""
    root = tmp_path_factory.mktemp("own")
    (root / "split.json").write_text(json.dumps(SPLIT_FILE))
    splits = {"graph-classification": ["--split", "0.8", "0.1", "0.1"],  # the default, stated
              "graph-regression": ["--split", "0.6", "0.2", "0.2"],
              "node-classification": ["--split-file", str(root / "split.json")]}
    result = {}
    with one_thread():
        for task in TASKS:
            path = root / f"{task}.bin"
            graphs, labels = write_task_file(path, task, count=48)
            run_dir = root / f"run-{task}"
            out = CliRunner().invoke(cli.main, ["train", "--dataset", str(path), "--epochs", "1", "--out", str(run_dir),
                                                "--no-progress"] + splits[task] + tiny_args(EXTRA.get(task)))
            assert out.exit_code == 0, out.output
            result[task] = (run_dir, path, graphs, labels)
    return result


#: The node-classification run's split file (graphs 40..42 and 47 are in no split).
SPLIT_FILE = {"train": list(range(30)), "val": list(range(30, 40)), "test": [46, 43, 44, 45]}
TEST_INDICES = {"graph-classification": split_indices(48, "g.bin")["test"],
                "graph-regression": split_indices(48, "g.bin", fractions=(0.6, 0.2, 0.2))["test"],
                "node-classification": [43, 44, 45, 46]}


def _test_split_file(run, folder, task):
    """The run's test graphs, in order, saved as a new file -> (path, graphs, per-row targets)."""
    run_dir, path, graphs, labels = run
    test = TEST_INDICES[task]
    chosen = [graphs[i] for i in test]
    new = folder / "new.bin"
    dgl.save_graphs(str(new), chosen)  # no labels: predict does not need them
    if labels is None:
        targets = torch.cat([g.ndata["label"] for g in chosen])
    else:
        targets = labels[test]
    return new, chosen, targets


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.slow
def test_predict_on_the_test_split_reproduces_eval(runs, task, tmp_path):
    run_dir, *_ = runs[task]
    new, chosen, targets = _test_split_file(runs[task], tmp_path, task)
    assert json.loads((run_dir / "summary.json").read_text())["num_graphs"]["test"] == len(chosen)
    out = tmp_path / "preds.csv"
    result = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(new),
                                           "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "batches of 8 graphs" in result.stdout
    rows = read_predictions(out)
    expected = evaluate_checkpoint(run_dir / "best.pt", "test", progress=False)
    if task == "graph-regression":
        assert list(rows[0]) == ["index", "value"] and len(rows) == len(chosen)
        values = torch.tensor([float(r["value"]) for r in rows], dtype=torch.float64)
        mae = (values - targets.double()).abs().mean().item()
        assert mae == pytest.approx(expected["metric"], rel=1e-6)
        return
    if task == "node-classification":
        assert list(rows[0])[:3] == ["graph", "node", "predicted"] and len(rows) == len(targets)
        assert [int(r["node"]) for r in rows[:chosen[0].num_nodes()]] == list(range(chosen[0].num_nodes()))
    else:
        assert list(rows[0])[:2] == ["index", "predicted"] and len(rows) == len(chosen)
    probs = torch.tensor([[float(r["prob_0"]), float(r["prob_1"])] for r in rows])
    assert torch.allclose(probs.sum(dim=1), torch.ones(len(rows)), atol=1e-9)
    predicted = torch.tensor([int(r["predicted"]) for r in rows])
    assert torch.equal(predicted, probs.argmax(dim=1))
    assert (predicted == targets).double().mean().item() == expected["metric"]
    # Row by row, not only the accuracy (which ~5 test graphs could match by chance): each row's
    # probabilities are the softmax of what the model outputs for that graph (node) as eval scores it.
    run, model, _ = open_trained_run(run_dir / "best.pt")
    seen = load_splits(run.data, run.model, progress=False).test.graphs
    logits = torch.cat([o.reshape(-1, 2) for o in model_outputs(model, seen, run.train.batch_size)])
    assert len(logits) == len(rows)
    torch.testing.assert_close(probs, torch.softmax(logits.double(), dim=1).float(), rtol=0, atol=1e-5)


@pytest.mark.slow
def test_json_lines_hold_the_same_predictions(runs, tmp_path):
    run_dir, path, *_ = runs["graph-classification"]
    args = ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(path), "--no-progress"]
    assert CliRunner().invoke(cli.main, args + ["--out", str(tmp_path / "p.csv")]).exit_code == 0
    assert CliRunner().invoke(cli.main, args + ["--out", str(tmp_path / "p.jsonl"), "--json"]).exit_code == 0
    lines = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    rows = read_predictions(tmp_path / "p.csv")
    assert len(lines) == len(rows) == 48
    for line, row in zip(lines, rows):
        assert line["index"] == int(row["index"]) and line["predicted"] == int(row["predicted"])
        assert line["probabilities"] == [float(row["prob_0"]), float(row["prob_1"])]


def _outputs(run_dir, graphs, path, batch_size=None):
    run, model, _ = open_trained_run(run_dir / "best.pt")
    graphs = [g.clone() for g in graphs]
    prepare_graphs(graphs, path, run)
    return torch.stack([o.reshape(-1) for o in model_outputs(model, graphs, batch_size or run.train.batch_size)])


@pytest.mark.slow
def test_graph_scope_predicts_each_graph_independently_of_the_others(runs):
    run_dir, path, graphs, _ = runs["graph-classification"]
    batched = _outputs(run_dir, graphs, path)
    alone = _outputs(run_dir, graphs, path, batch_size=1)
    reversed_order = _outputs(run_dir, graphs[::-1], path).flip(0)
    assert torch.allclose(batched, alone, atol=1e-5) and torch.allclose(batched, reversed_order, atol=1e-5)


@pytest.mark.slow
def test_batch_scope_depends_on_batch_mates_so_predict_uses_the_run_batch_size(runs, tmp_path):
    run_dir, path, graphs, _ = runs["graph-regression"]
    batched = _outputs(run_dir, graphs, path)
    alone = _outputs(run_dir, graphs, path, batch_size=1)
    assert (batched - alone).abs().max() > 1e-4  # batch-mates matter in GEANet's batch scope
    result = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(path),
                                           "--out", str(tmp_path / "p.csv"), "--no-progress"])
    assert "GEANet batch scope" in result.stdout
    values = torch.tensor([float(r["value"]) for r in read_predictions(tmp_path / "p.csv")])
    assert torch.allclose(values, batched.reshape(-1), atol=1e-6)


@pytest.mark.slow
def test_graphs_of_another_width_are_refused_and_nothing_is_written(runs, tmp_path):
    run_dir, *_ = runs["graph-classification"]
    new = tmp_path / "wide.bin"
    dgl.save_graphs(str(new), make_graphs(3, node_feats=5))
    out = tmp_path / "preds.csv"
    result = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(new),
                                           "--out", str(out), "--no-progress"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "wide.bin: graph 0 has 5 node features but the model reads 3" in lines[0]
    assert "best.pt" in lines[0] and "(rows, 3)" in lines[0]
    assert list(tmp_path.iterdir()) == [new]  # no preds.csv, no temp file


@pytest.mark.slow
def test_train_on_a_bad_file_is_a_one_line_error_before_any_run_file(tmp_path):
    graphs = make_graphs(6)
    graphs[4].ndata["feat"] = torch.randn(graphs[4].num_nodes(), 2)
    dgl.save_graphs(str(tmp_path / "g.bin"), graphs, {"label": torch.zeros(6, dtype=torch.long)})
    result = CliRunner().invoke(cli.main, ["train", "--data-file", str(tmp_path / "g.bin"), "--out",
                                           str(tmp_path / "run")])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "g.bin: graph 4 has 2 node features but graph 0 has 3" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_run_records_what_predict_needs(runs):
    run_dir, path, *_ = runs["node-classification"]
    config = json.loads((run_dir / "config.json").read_text())
    assert config["preset"] == "geaet" and config["data"]["dataset"] == "file"
    assert config["data"]["data_file"] == str(path) and config["data"]["task"] == "node-classification"
    model = config["model"]
    assert (model["node_in_feats"], model["edge_in_feats"], model["out_feats"], model["head"]) == (3, 2, 2, "node")


@pytest.mark.slow
def test_predict_with_a_named_dataset_checkpoint(tmp_path):
    """A synthetic (MNIST-shaped, batch scope, ESLapPE) run: predict on its test graphs equals eval."""
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, cli_args(1, run_dir))
    assert result.exit_code == 0, result.output
    test = load_dataset("synthetic", limit_train=40, limit_val=16, limit_test=16, pe_k=0).test
    new = tmp_path / "new.bin"
    dgl.save_graphs(str(new), [g for g in test.graphs])
    result = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(new),
                                           "--out", str(tmp_path / "p.csv"), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = read_predictions(tmp_path / "p.csv")
    assert len(rows) == 16 and len([k for k in rows[0] if k.startswith("prob_")]) == 10
    predicted = torch.tensor([int(r["predicted"]) for r in rows])
    expected = evaluate_checkpoint(run_dir / "best.pt", "test", progress=False)["metric"]
    assert (predicted == test.labels).double().mean().item() == expected


@pytest.mark.slow
def test_eval_finds_a_moved_graph_file_with_data_file(runs, tmp_path):
    run_dir, path, *_ = runs["graph-classification"]
    moved = tmp_path / "moved.bin"
    moved.write_bytes(path.read_bytes())
    args = ["eval", "--checkpoint", str(run_dir / "best.pt"), "--json"]
    here = json.loads(CliRunner().invoke(cli.main, args).stdout)
    there = CliRunner().invoke(cli.main, args + ["--data-file", str(moved)])
    assert there.exit_code == 0, there.output
    assert json.loads(there.stdout) == here
    assert (tmp_path / "geaet_cache").is_dir()  # the moved file's encodings are cached beside it
