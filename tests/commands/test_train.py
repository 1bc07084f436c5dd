"""`geaet-dgl train`: run files, a refused run directory, --resume, one-line configuration and data errors."""
from click.testing import CliRunner

from geaet_dgl import cli
from tests.training.tiny import cli_args


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
    assert not out.exists()  # the folder this call made is gone: nothing is left behind
    out.mkdir()  # a folder the user made stays, empty: the next attempt is not refused
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "mnist", "--data-dir", str(tmp_path / "data"),
                                           "--mnist-images", str(tmp_path / "no-such-folder"), "--out", str(out)])
    assert result.exit_code == 2 and out.is_dir() and list(out.iterdir()) == []