"""Studies on row-normalised node sets (``data.feature_norm=row``) rerun and resume like any other study.

A run records the input transform its loader applied (``data.input_transform``) after reading the data; the
rerun of the same command builds its configuration before reading anything, so the recorded field must not
read as a change of configuration (the transform is still checked against the data when a run resumes).
"""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training import make_run_config
from geaet_dgl.training.seeds import run_seeds
from tests.data.fixtures_node_sets import write_node_set_fixture
from tests.training.tiny import one_thread

from .tiny import interrupt_seed_study

TINY = ["--epochs", "2", "--threads", "1", "--no-progress", "--set", "model.hidden_dim=8",
        "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2"]
TINY_OVERRIDES = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "train.epochs": 2}


def _train(*args):
    return CliRunner().invoke(cli.main, ["train", *args, *TINY])


@pytest.fixture(scope="module")
def citeseer_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("citeseer")
    write_node_set_fixture("citeseer", folder)
    return folder


def test_rerun_of_a_finished_seed_study_skips_its_runs(citeseer_dir, tmp_path):
    out = tmp_path / "study"
    first = _train("--dataset", "citeseer", "--data-dir", str(citeseer_dir), "--seeds", "0", "--out", str(out))
    assert first.exit_code == 0, first.output
    config = json.loads((out / "seed0" / "config.json").read_text())
    assert config["data"]["feature_norm"] == "row" and config["data"]["input_transform"]  # the case at stake
    table = json.loads((out / "aggregate.json").read_text())
    again = _train("--dataset", "citeseer", "--data-dir", str(citeseer_dir), "--seeds", "0", "--out", str(out))
    assert again.exit_code == 0, again.output
    assert "finished run" in again.output
    assert json.loads((out / "aggregate.json").read_text()) == table


@pytest.mark.slow
def test_interrupted_seed_study_resumes_to_the_uninterrupted_table(citeseer_dir, tmp_path, monkeypatch):
    run = make_run_config("citeseer", None, TINY_OVERRIDES, {"data_dir": str(citeseer_dir)}, threads=1)
    with one_thread():
        whole = run_seeds(run, [0, 1], tmp_path / "whole", progress=False)
        interrupt_seed_study(monkeypatch, run, [0, 1], tmp_path / "cut")
        assert (tmp_path / "cut" / "seed1" / "last.pt").is_file()
        rerun = make_run_config("citeseer", None, TINY_OVERRIDES, {"data_dir": str(citeseer_dir)}, threads=1)
        resumed = run_seeds(rerun, [0, 1], tmp_path / "cut", progress=False)
    for key in ("val_metric", "test_metric"):
        assert resumed[key]["values"] == whole[key]["values"]


@pytest.mark.slow
def test_rerun_of_a_split_study_with_row_norm_skips_its_runs(tmp_path):
    write_node_set_fixture("texas", tmp_path)
    out = tmp_path / "study"
    args = ["--dataset", "texas", "--data-dir", str(tmp_path), "--splits", "0", "1", "--out", str(out),
            "--set", "data.feature_norm=row"]
    first = _train(*args)
    assert first.exit_code == 0, first.output
    assert json.loads((out / "split1" / "config.json").read_text())["data"]["input_transform"]
    again = _train(*args)
    assert again.exit_code == 0, again.output
    assert again.output.count("finished run") == 2


@pytest.mark.slow
def test_rerun_of_a_sweep_with_row_norm_skips_its_runs(citeseer_dir, tmp_path):
    out = tmp_path / "sweep"
    args = ["sweep", "--dataset", "citeseer", "--data-dir", str(citeseer_dir), "--set", "train.lr=0.01,0.02",
            "--out", str(out), *TINY[:2], *TINY[4:]]
    first = CliRunner().invoke(cli.main, args)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(cli.main, args)
    assert again.exit_code == 0, again.output
    assert again.output.count("finished run") == 2
