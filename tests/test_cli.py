"""The geaet-dgl command line: train -> eval round trip, presets, one-line errors, help texts."""
import json

import click
import pytest
from click.testing import CliRunner

import cli
from geaet_dgl.inference import evaluate_checkpoint
from geaet_dgl.training import load_checkpoint
from tests.training.tiny import cli_args, one_thread


@pytest.fixture(autouse=True)
def _single_thread():
    with one_thread():
        yield


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    """One epoch of a tiny synthetic run through the CLI: (run_dir, summary)."""
    run_dir = tmp_path_factory.mktemp("cli") / "run"
    with one_thread():
        result = CliRunner().invoke(cli.main, cli_args(1, run_dir))
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    return run_dir, json.loads((run_dir / "summary.json").read_text())


@pytest.mark.parametrize("split", ["val", "test"])
def test_eval_json_reproduces_the_stored_metric(trained_run, split):
    run_dir, summary = trained_run
    result = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run_dir / "best.pt"), "--split", split,
                                           "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)  # exactly one JSON object on stdout
    assert set(payload) == {"split", "metric_name", "metric"}
    assert payload["split"] == split and payload["metric_name"] == summary["metric_name"] == "accuracy"
    assert payload["metric"] == summary[f"{split}_metric"]


def test_rescored_loss_equals_the_recorded_loss(trained_run):
    run_dir, _ = trained_run
    recorded = load_checkpoint(run_dir / "best.pt")["history"][-1]
    for split in ("val", "test"):
        result = evaluate_checkpoint(run_dir / "best.pt", split, progress=False)
        assert (result["loss"], result["metric"]) == (recorded[f"{split}_loss"], recorded[f"{split}_metric"])


def test_train_writes_run_files_and_prints_parameter_count(trained_run):
    run_dir, summary = trained_run
    assert summary["epochs"] == 1 and summary["params"] > 0
    assert f"{summary['params']:,} parameters" in (run_dir / "train.log").read_text()
    assert (run_dir / "curves.png").stat().st_size > 0


def test_existing_run_dir_is_refused(trained_run):
    run_dir, _ = trained_run
    result = CliRunner().invoke(cli.main, cli_args(1, run_dir))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("error: run directory") and "--overwrite" in result.stderr


def test_resume_refuses_options_that_change_the_run(trained_run):
    run_dir, _ = trained_run
    result = CliRunner().invoke(cli.main, ["train", "--resume", str(run_dir), "--epochs", "3"])
    assert result.exit_code == 2 and "drop --epochs" in result.stderr


def test_presets_json_lists_six_presets_matching_the_paper():
    result = CliRunner().invoke(cli.main, ["presets", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    paper = [row for row in rows if row["paper_params"] is not None]
    assert [row["name"] for row in paper] == ["mnist", "cifar10", "pattern", "peptides-struct", "voc", "coco"]
    for row in rows:
        assert {"name", "dataset", "params", "paper_params"} <= set(row)
    for row in paper:
        assert row["params"] == row["paper_params"], row
    # Presets the paper gives no table column for are marked so (no paper count).
    assert {row["name"] for row in rows} - {row["name"] for row in paper} == {"cluster", "zinc", "tree",
                                                                              "peptides-func", "pcqm-contact", "geaet",
                                                                              "geaet-node"}


def test_config_typo_gives_one_line_error():
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--set", "model.hidden_dimm=3"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown setting 'model.hidden_dimm'")
    assert "Traceback" not in result.output


def test_data_error_is_one_line_and_leaves_the_run_dir_reusable(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "mnist", "--data-dir", str(tmp_path / "data"),
                                           "--mnist-images", str(tmp_path / "no-such-folder"), "--out", str(out)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and "no-such-folder" in lines[-1]
    assert not any(line.startswith("Traceback") for line in lines)
    assert list(out.iterdir()) == []  # nothing written: the next attempt is not refused


def test_corrupt_checkpoint_gives_one_line_error(tmp_path):
    bad = tmp_path / "best.pt"
    bad.write_bytes(b"\x00" * 100)
    result = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(bad), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: checkpoint {bad} is truncated or corrupt")


def test_debug_shows_the_traceback():
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--set", "model.hidden_dimm=3",
                                           "--debug"])
    assert result.exit_code == 1 and result.exception is not None
    assert type(result.exception).__name__ == "ConfigError"


@pytest.mark.parametrize("name", ["train", "eval", "presets"])
def test_every_option_is_explained_in_help(name):
    command = cli.main.commands[name]
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help text"
    result = CliRunner().invoke(cli.main, [name, "--help"])
    assert result.exit_code == 0 and "--debug" in result.stdout
