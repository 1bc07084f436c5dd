"""A study with a diverging run (NaN loss) finishes: the run is a failed row with its reason, the others train,
the table is written; a rerun skips the failed run unless --retry-failed (``--seeds``, ``--splits``, sweep)."""
import json
import math

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training.trainer import Trainer
from tests.data.fixtures_node_sets import write_node_set_fixture

from .tiny import tiny_args


def _invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _diverge_when(monkeypatch, condition):
    """Runs whose configuration meets ``condition(run)`` see a non-finite loss at their first step."""
    original = Trainer._agree_finite

    def agree_finite(self, loss):
        return False if condition(self.run) else original(self, loss)

    monkeypatch.setattr(Trainer, "_agree_finite", agree_finite)
    return original


@pytest.mark.slow
def test_sweep_with_a_diverging_point_trains_the_others_and_marks_it(tmp_path):
    out = tmp_path / "sweep"
    args = ["sweep", "--dataset", "synthetic", "--set", "train.lr=1e30,0.01", "--seeds", "0", "--epochs", "1",
            "--out", out, *tiny_args()]
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    table = json.loads((out / "sweep.json").read_text())
    diverged, fine = table["rows"]
    assert diverged["point"] == "lr=1e30" and "val_metric" not in diverged
    assert diverged["runs"] == 1 and diverged["failed"][0]["seed"] == 0
    assert diverged["failed"][0]["reason"].startswith("loss became nan at epoch 1")
    assert fine["failed"] == [] and 0 <= fine["val_metric"]["mean"] <= 1
    assert json.loads((out / "lr=1e30" / "seed0" / "failed.json").read_text())["error"] == "NonFiniteLossError"
    markdown = (out / "sweep.md").read_text()
    assert "| 1e30 |" in markdown and "| 1 of 1 |" in markdown and "- lr=1e30: seed 0 (loss became nan" in markdown
    assert "1 of 2 runs failed and are left out of the mean" in result.output

    again = _invoke(*args)
    assert again.exit_code == 0, again.output
    assert "failed before" in again.output and "training in" not in again.output  # nothing retrained
    assert json.loads((out / "sweep.json").read_text())["rows"] == table["rows"]

    retried = _invoke(*args, "--retry-failed")
    assert retried.exit_code == 0, retried.output
    assert "training it again" in retried.output and retried.output.count("training it again") == 1
    assert "finished run" in retried.output  # the point that trained is not retrained
    assert json.loads((out / "sweep.json").read_text())["rows"][0]["failed"][0]["reason"].startswith(
        "loss became nan")  # it diverges again: still a failed row


@pytest.mark.slow
def test_seed_study_with_one_diverging_seed_aggregates_the_others(tmp_path, monkeypatch):
    out = tmp_path / "study"
    args = ["train", "--dataset", "synthetic", "--seeds", "0", "1", "2", "--epochs", "1", "--out", out, *tiny_args()]
    original = _diverge_when(monkeypatch, lambda run: run.train.seed == 1)
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    agg = json.loads((out / "aggregate.json").read_text())
    assert agg["n"] == 2 and agg["runs"] == 3 and agg["seeds"] == [0, 2]
    assert [row["seed"] for row in agg["failed"]] == [1] and agg["failed"][0]["reason"].startswith("loss became")
    values = [json.loads((out / f"seed{s}" / "summary.json").read_text())["test_metric"] for s in (0, 2)]
    assert agg["test_metric"]["mean"] == pytest.approx(sum(values) / 2)
    assert agg["test_metric"]["std"] == pytest.approx(abs(values[0] - values[1]) / math.sqrt(2))
    markdown = (out / "aggregate.md").read_text()
    assert "| 1 | failed |" in markdown and "1 of 3 runs failed" in markdown and "--retry-failed" in markdown
    assert not (out / "seed1" / "summary.json").exists()

    monkeypatch.setattr(Trainer, "_agree_finite", original)  # the cause is gone, but a plain rerun keeps the row
    again = _invoke(*args)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "aggregate.json").read_text())["failed"] == agg["failed"]

    retried = _invoke(*args, "--retry-failed")
    assert retried.exit_code == 0, retried.output
    agg = json.loads((out / "aggregate.json").read_text())
    assert agg["n"] == 3 and agg["failed"] == [] and not (out / "seed1" / "failed.json").exists()


@pytest.mark.slow
def test_split_study_with_a_diverging_split(tmp_path, monkeypatch):
    write_node_set_fixture("texas", tmp_path)
    out = tmp_path / "study"
    _diverge_when(monkeypatch, lambda run: run.data.split_index == 1)
    result = _invoke("train", "--dataset", "texas", "--data-dir", tmp_path, "--splits", "0", "1", "2", "--out", out,
                     "--epochs", "1", "--threads", "1", "--no-progress", "--set", "model.hidden_dim=8",
                     "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2")
    assert result.exit_code == 0, result.output
    agg = json.loads((out / "aggregate.json").read_text())
    assert agg["splits"] == [0, 2] and [row["split"] for row in agg["failed"]] == [1]
    assert (out / "split1" / "failed.json").is_file()


def test_a_study_whose_every_run_diverges_is_one_error_line_and_a_table(tmp_path):
    out = tmp_path / "study"
    result = _invoke("train", "--dataset", "synthetic", "--seeds", "0", "--epochs", "1", "--out", out,
                     "--set", "train.lr=1e30", *tiny_args())
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: every run of the study failed (seed 0); seed 0: loss became nan")
    assert "lower train.lr" in last
    assert "No run finished" in (out / "aggregate.md").read_text()


def test_retry_failed_outside_a_study_is_refused(tmp_path):
    result = _invoke("train", "--dataset", "synthetic", "--out", tmp_path / "run", "--retry-failed", *tiny_args())
    assert result.exit_code == 2 and "--retry-failed trains again the failed runs of a study" in result.output
