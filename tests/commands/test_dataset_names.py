"""A mistyped dataset name is reported as a dataset (with the close name), not as an "unknown preset"; `sweep`
takes a graph file without --preset as `train` does."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from tests.own_graph_files import tiny_args, write_task_file


def _invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _error_line(result):
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1].startswith("error: ") and "Traceback" not in result.output
    return lines[-1]


@pytest.mark.parametrize("command, name, close", [("train", "citseer", "citeseer"), ("train", "mnistt", "mnist"),
                                                  ("sweep", "peptides-fun", "peptides-func"),
                                                  ("train", "qqqq", None)])
def test_an_unknown_dataset_name_says_so_and_names_the_close_one(tmp_path, command, name, close):
    extra = ["--set", "train.lr=0.1,0.2"] if command == "sweep" else []
    line = _error_line(_invoke(command, "--dataset", name, "--out", tmp_path / "out", *extra))
    assert line.startswith(f"error: unknown dataset {name!r}; ")
    assert "preset" not in line
    assert (f"did you mean {close!r}?" in line) if close else "did you mean" not in line
    assert "`geaet-dgl datasets` lists the names" in line
    assert not (tmp_path / "out").exists()


def test_an_unknown_dataset_with_a_preset_is_still_an_unknown_dataset(tmp_path):
    line = _error_line(_invoke("train", "--dataset", "citseer", "--preset", "citeseer", "--out", tmp_path / "out"))
    assert line.startswith("error: unknown dataset 'citseer'; did you mean 'citeseer'?")


@pytest.mark.slow
def test_sweep_on_a_graph_file_without_preset_works_as_train_does(tmp_path, monkeypatch):
    path = tmp_path / "graphs.bin"
    write_task_file(path, "graph-classification", count=24)
    monkeypatch.chdir(tmp_path)
    result = _invoke("sweep", "--dataset", path, "--set", "train.lr=0.01,0.02", "--epochs", "1", "--no-progress",
                     *tiny_args())
    assert result.exit_code == 0, result.output
    out = tmp_path / "runs" / "sweep-graphs-default"  # named after the file, as train's default folder is
    table = json.loads((out / "sweep.json").read_text())
    assert table["preset"] == "geaet" and [row["point"] for row in table["rows"]] == ["lr=0.01", "lr=0.02"]
    config = json.loads((out / "lr=0.01" / "seed0" / "config.json").read_text())
    trained = _invoke("train", "--dataset", path, "--epochs", "1", "--no-progress", "--out", tmp_path / "one",
                      *tiny_args({"train.lr": 0.01}))
    assert trained.exit_code == 0, trained.output
    alone = json.loads((tmp_path / "one" / "config.json").read_text())
    assert config["preset"] == alone["preset"] == "geaet"
    assert config["model"] == alone["model"] and config["data"]["data_file"] == alone["data"]["data_file"]
