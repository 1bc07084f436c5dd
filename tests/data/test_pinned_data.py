"""A run is pinned to its data (file identity and split indices recorded; a changed file refused)."""
import json

import dgl
import pytest
import torch

from geaet_dgl.data import DataError
from geaet_dgl.data.own_files.graph_files import split_indices
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training import make_run_config
from geaet_dgl.training import resume, train
from geaet_dgl.training.trainer import Trainer
from tests.data.fixtures_dgl import write_zinc_fixture
from tests.own_graph_files import TINY_GEAET, graph_targets, make_graphs, write_task_file

ONE_EPOCH = {**TINY_GEAET, "train.epochs": 1}


def _train_on_file(tmp_path, count=40, epochs=1):
    path = tmp_path / "graphs.bin"
    graphs, labels = write_task_file(path, "graph-classification", count=count)
    run = make_run_config(str(path), overrides={**ONE_EPOCH, "train.epochs": epochs})
    summary = train(run, tmp_path / "run", progress=False)
    return path, graphs, labels, summary


def _append_graphs(path, graphs, labels, extra=12):
    """The user appends graphs: the first ones are unchanged, the file has more."""
    more = make_graphs(extra, seed=7)
    for g in more:
        g.ndata.pop("label")
    new_labels = torch.cat([labels, (graph_targets(more) > 0).long()])
    dgl.save_graphs(str(path), list(graphs) + more, {"label": new_labels})


@pytest.mark.slow
def test_the_run_records_the_file_and_its_split(tmp_path):
    path, graphs, _, _ = _train_on_file(tmp_path)
    data = json.loads((tmp_path / "run" / "config.json").read_text())["data"]
    assert data["file_identity"]["graphs"] == 40 and data["file_identity"]["size"] == path.stat().st_size
    assert len(data["file_identity"]["sha256"]) == 64
    assert data["split_indices"] == split_indices(40, path)


@pytest.mark.slow
def test_eval_refuses_a_file_that_changed_and_scores_the_run_split_when_allowed(tmp_path):
    path, graphs, labels, summary = _train_on_file(tmp_path)
    _append_graphs(path, graphs, labels)
    assert split_indices(52, path)["test"] != split_indices(40, path)["test"]  # a rebuilt split would differ
    with pytest.raises(DataError, match=r"changed since the run.*40 -> 52 graphs.*--allow-changed-data"):
        evaluate_checkpoint(tmp_path / "run" / "best.pt", progress=False)
    allowed = evaluate_checkpoint(tmp_path / "run" / "best.pt", progress=False, allow_changed_data=True)
    assert allowed["metric"] == pytest.approx(summary["test_metric"], abs=1e-9)  # the run's own test graphs


@pytest.mark.slow
def test_resume_refuses_a_file_that_changed(tmp_path, monkeypatch):
    from geaet_dgl.training import TrainingInterrupted

    original = Trainer._run_epoch

    def stop_after_one(self):
        original(self)
        if self.epoch == 1:
            raise TrainingInterrupted("stopped for the test", 15)

    monkeypatch.setattr(Trainer, "_run_epoch", stop_after_one)
    with pytest.raises(TrainingInterrupted):
        _train_on_file(tmp_path, epochs=2)
    monkeypatch.setattr(Trainer, "_run_epoch", original)
    path = tmp_path / "graphs.bin"
    graphs, labels = dgl.load_graphs(str(path))
    _append_graphs(path, graphs, labels["label"])
    with pytest.raises(DataError, match="changed since the run"):
        resume(tmp_path / "run", progress=False)
    summary = resume(tmp_path / "run", progress=False, allow_changed_data=True)
    assert summary["epochs"] == 2 and summary["num_graphs"] == {"train": 32, "val": 4, "test": 4}


@pytest.mark.slow
def test_a_named_dataset_whose_files_changed_is_refused(tmp_path):
    write_zinc_fixture(tmp_path / "data")
    run = make_run_config("zinc", overrides={"model.hidden_dim": 8, "model.num_layers": 1, "model.pe_k": 4,
                                             "model.pe_dim": 4, "model.geanet.unit_size": 2, "train.epochs": 1,
                                             "train.batch_size": 4},
                          data={"data_dir": str(tmp_path / "data")})
    train(run, tmp_path / "run", progress=False)
    assert evaluate_checkpoint(tmp_path / "run" / "best.pt", progress=False)["metric"] >= 0  # unchanged: fine
    write_zinc_fixture(tmp_path / "data", seed=1)  # the processed files rebuilt with other graphs
    with pytest.raises(DataError, match="changed since the run"):
        evaluate_checkpoint(tmp_path / "run" / "best.pt", progress=False)


@pytest.mark.slow
def test_a_study_on_a_file_that_changed_is_refused(tmp_path):
    from geaet_dgl.training.seeds import run_seeds
    from geaet_dgl.training import RunDirError

    path = tmp_path / "graphs.bin"
    graphs, labels = write_task_file(path, "graph-classification", count=40)
    run_seeds(make_run_config(str(path), overrides=ONE_EPOCH), [0], tmp_path / "study", progress=False)
    run_seeds(make_run_config(str(path), overrides=ONE_EPOCH), [0, 1], tmp_path / "study", progress=False)
    _append_graphs(path, graphs, labels)
    with pytest.raises(RunDirError, match=r"graphs.bin changed since .*seed0 was trained \(40 -> 52 graphs"):
        run_seeds(make_run_config(str(path), overrides=ONE_EPOCH), [0, 1, 2], tmp_path / "study", progress=False)


@pytest.mark.slow
def test_eval_on_the_command_line_says_what_changed_in_one_line(tmp_path):
    from click.testing import CliRunner

    from geaet_dgl import cli

    path, graphs, labels, summary = _train_on_file(tmp_path)
    _append_graphs(path, graphs, labels)
    best = str(tmp_path / "run" / "best.pt")
    refused = CliRunner().invoke(cli.main, ["eval", "--checkpoint", best, "--json"])
    assert refused.exit_code != 0
    assert refused.output.count("\n") == 1 and "40 -> 52 graphs" in refused.output and "Traceback" not in refused.output
    allowed = CliRunner().invoke(cli.main, ["eval", "--checkpoint", best, "--json", "--allow-changed-data"])
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout.splitlines()[-1])["metric"] == pytest.approx(summary["test_metric"])
    new_run = CliRunner().invoke(cli.main, ["train", "--dataset", str(path), "--allow-changed-data"])
    assert new_run.exit_code == 2 and "only concerns --resume" in new_run.output
