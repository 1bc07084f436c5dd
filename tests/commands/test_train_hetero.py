"""Heterograph files end to end: train, eval, predict, resume, TensorBoard, and the one-line errors."""
import json
import signal

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.generated.hetero import author_paper_graphs
from geaet_dgl.data.options import LoadOptions
from geaet_dgl.data.own_files.hetero_files import inspect_file, load_file
from geaet_dgl.data.errors import DataError
from geaet_dgl.training import Trainer, load_checkpoint
from geaet_dgl.scoring.predict import read_predictions
from geaet_dgl.training import make_run_config
from geaet_dgl.training.trainer import TrainingInterrupted, resume, train
from tests.training.tiny import one_thread

TINY = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "model.num_heads": 2,
        "train.batch_size": 8, "train.warmup_epochs": 0}


def _args(settings=None):
    args = []
    for key, value in {**TINY, **(settings or {})}.items():
        args += ["--set", f"{key}={value}"]
    return args


def _write(path, count=40, seed=0, graph_labels=False):
    graphs, labels = author_paper_graphs(count, seed=seed)
    if graph_labels:
        dgl.save_graphs(str(path), graphs, {"label": torch.tensor([int(y[0]) for y in labels])})
    else:
        for g, y in zip(graphs, labels):
            g.nodes["paper"].data["label"] = y
        dgl.save_graphs(str(path), graphs)
    return graphs, labels


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def node_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("hetero")
    path = root / "papers.bin"
    graphs, labels = _write(path)
    run_dir = root / "run"
    with one_thread():
        out = CliRunner().invoke(cli.main, ["train", "--dataset", str(path), "--epochs", "2", "--out", str(run_dir),
                                            "--no-progress", "--tensorboard"] + _args())
    assert out.exit_code == 0, out.output
    return run_dir, path, graphs, labels


@pytest.mark.slow
def test_node_task_trains_evaluates_and_predicts(node_run, tmp_path):
    run_dir, path, graphs, labels = node_run
    config = json.loads((run_dir / "config.json").read_text())
    hetero = config["model"]["hetero"]
    assert hetero["ntypes"] == ["author", "paper"] and hetero["target_ntype"] == "paper"
    assert hetero["etypes"] == ["author:writes:paper", "paper:cites:paper"] and config["model"]["pe"] == "none"
    assert list(run_dir.glob("events.out.tfevents.*")), "TensorBoard events"
    summary = json.loads((run_dir / "summary.json").read_text())
    out = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run_dir / "best.pt"), "--split", "test", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout.strip().splitlines()[-1])["metric"] == pytest.approx(summary["test_metric"])

    new = tmp_path / "new.bin"
    dgl.save_graphs(str(new), graphs[:5])  # the labels come along; predict ignores them
    preds = tmp_path / "preds.csv"
    out = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(new),
                                        "--out", str(preds), "--no-progress"])
    assert out.exit_code == 0, out.output
    rows = read_predictions(preds)
    assert len(rows) == sum(g.num_nodes("paper") for g in graphs[:5])  # one row per paper
    assert [int(r["graph"]) for r in rows] == [i for i, g in enumerate(graphs[:5]) for _ in range(g.num_nodes("paper"))]


@pytest.mark.slow
def test_predict_refuses_graphs_of_another_schema(node_run, tmp_path):
    run_dir, *_ = node_run
    other = dgl.heterograph({("author", "writes", "paper"): ([0], [0]), ("paper", "at", "venue"): ([0], [0])})
    other.nodes["author"].data["feat"] = torch.randn(1, 4)
    other.nodes["paper"].data["feat"] = torch.randn(1, 4)
    path = tmp_path / "other.bin"
    dgl.save_graphs(str(path), [other])
    out = CliRunner().invoke(cli.main, ["predict", "--checkpoint", str(run_dir / "best.pt"), "--graphs", str(path),
                                        "--out", str(tmp_path / "p.csv"), "--no-progress"])
    assert out.exit_code != 0 and "lacks paper:cites:paper" in out.output and "Traceback" not in out.output
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.slow
def test_resume_after_an_interruption_equals_the_uninterrupted_run(tmp_path, monkeypatch):
    path = tmp_path / "papers.bin"
    _write(path, count=30, graph_labels=True)
    run = make_run_config(str(path), overrides={**TINY, "train.epochs": 2})
    assert run.model.head == "graph" and run.model.hetero.ntypes == ["author", "paper"]
    train(run, tmp_path / "whole", progress=False)

    original = Trainer._stop_requested

    def ctrl_c_after_step_4(self, agree=False):
        if self.global_step == 4:
            self.stop_signal = signal.SIGINT
        return original(self, agree)

    monkeypatch.setattr(Trainer, "_stop_requested", ctrl_c_after_step_4)
    with pytest.raises(TrainingInterrupted):
        train(run, tmp_path / "cut", progress=False)
    monkeypatch.setattr(Trainer, "_stop_requested", original)
    assert load_checkpoint(tmp_path / "cut" / "last.pt")["global_step"] == 4
    resume(tmp_path / "cut", progress=False)
    a, b = load_checkpoint(tmp_path / "whole" / "last.pt"), load_checkpoint(tmp_path / "cut" / "last.pt")
    assert a["global_step"] == b["global_step"] == 6
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key


@pytest.mark.slow
def test_file_errors_are_one_line(tmp_path):
    graphs, labels = author_paper_graphs(6)
    for g, y in zip(graphs, labels):
        g.nodes["paper"].data["label"] = y
        g.nodes["author"].data["label"] = torch.zeros(g.num_nodes("author"), dtype=torch.long)
    path = tmp_path / "two.bin"
    dgl.save_graphs(str(path), graphs)
    with pytest.raises(DataError, match="data.target_ntype=author"):
        inspect_file(path)
    assert inspect_file(path, target_ntype="paper").schema.target_ntype == "paper"
    with pytest.raises(DataError, match="'venue' is not a node type"):
        inspect_file(path, target_ntype="venue")

    mixed = author_paper_graphs(3)[0] + [dgl.heterograph({("author", "writes", "paper"): ([0], [0]),
                                                           ("paper", "cites", "paper"): ([0], [0])})]
    dgl.save_graphs(str(tmp_path / "mixed.bin"), mixed, {"label": torch.zeros(4, dtype=torch.long)})
    with pytest.raises(DataError, match="graph 3 has no nodes\\['author'\\].data\\['feat'\\]"):
        inspect_file(tmp_path / "mixed.bin")

    wide = author_paper_graphs(3)[0]
    wide[1].nodes["paper"].data["feat"] = torch.randn(wide[1].num_nodes("paper"), 7)
    dgl.save_graphs(str(tmp_path / "wide.bin"), wide, {"label": torch.zeros(3, dtype=torch.long)})
    with pytest.raises(DataError, match="graph 1 has 7 features"):
        inspect_file(tmp_path / "wide.bin")

    schema = author_paper_graphs(2)[0] + [dgl.heterograph({("author", "writes", "paper"): ([0], [0]),
                                                           ("paper", "at", "venue"): ([0], [0])})]
    dgl.save_graphs(str(tmp_path / "schema.bin"), schema, {"label": torch.zeros(3, dtype=torch.long)})
    with pytest.raises(DataError, match="graph 2's types differ"):
        load_file(LoadOptions(data_file=tmp_path / "schema.bin"))

    out = CliRunner().invoke(cli.main, ["train", "--dataset", str(tmp_path / "schema.bin"), "--epochs", "1", "--out",
                                        str(tmp_path / "r"), "--no-progress"])
    assert out.exit_code != 0 and out.output.strip().startswith("error:") and "Traceback" not in out.output
    assert not (tmp_path / "r").exists()
