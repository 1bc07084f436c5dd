"""A run records its --data-dir absolute: `eval` and `--resume` from another working directory read the data the
run was trained on (before, the relative path was resolved against the new directory and an empty folder made
there); studies recorded with a relative --data-dir still rerun from their own directory."""
import pytest
import json

from click.testing import CliRunner

from geaet_dgl import cli
from tests.data.fixtures_node_sets import write_node_set_fixture

TINY = ["--threads", "1", "--no-progress", "--set", "model.hidden_dim=8", "--set", "model.num_layers=1",
        "--set", "model.geanet.unit_size=2"]


def _invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


@pytest.mark.slow
def test_eval_and_resume_from_another_directory_read_the_runs_data(tmp_path, monkeypatch):
    write_node_set_fixture("cora", tmp_path / "sets")
    monkeypatch.chdir(tmp_path)
    trained = _invoke("train", "--dataset", "cora", "--data-dir", "sets", "--epochs", "2", "--out", "run", *TINY)
    assert trained.exit_code == 0, trained.output
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["data"]["data_dir"] == str(tmp_path / "sets")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    scored = _invoke("eval", "--checkpoint", tmp_path / "run" / "best.pt", "--split", "val", "--json")
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output.strip().splitlines()[-1])["metric"] == summary["val_metric"]
    resumed = _invoke("train", "--resume", tmp_path / "run")
    assert resumed.exit_code == 0, resumed.output
    assert list(elsewhere.iterdir()) == []  # no empty 'sets' folder made here


def test_a_study_recorded_with_a_relative_data_dir_reruns_from_its_directory(tmp_path, monkeypatch):
    write_node_set_fixture("texas", tmp_path / "sets")
    monkeypatch.chdir(tmp_path)
    args = ["train", "--dataset", "texas", "--data-dir", "sets", "--seeds", "0", "--epochs", "1", "--out", "study",
            *TINY]
    assert _invoke(*args).exit_code == 0
    path = tmp_path / "study" / "seed0" / "config.json"
    config = json.loads(path.read_text())
    config["data"]["data_dir"] = "sets"  # as runs recorded it before
    path.write_text(json.dumps(config))
    again = _invoke(*args)
    assert again.exit_code == 0, again.output
    assert "finished run" in again.output
