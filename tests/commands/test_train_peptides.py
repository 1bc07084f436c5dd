"""One-epoch `geaet-dgl train` runs on tiny Peptides-Func / Peptides-Struct files; `datasets` lists them."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.scoring import evaluate_checkpoint
from tests.data.fixtures_peptides import accept_as_published, write_peptides_fixture
from tests.commands.test_train_datasets import TINY

#: The presets' 8 GEANet heads and 16-wide LapPE encoder do not fit TINY's width 16.
PEPTIDES_TINY = ["--set", "model.geanet.num_heads=4", "--set", "model.pe_dim=4"]


@pytest.mark.parametrize("name, metric", [("peptides-func", "average_precision"), ("peptides-struct", "mae")])
@pytest.mark.slow
def test_peptides_fixture_one_epoch_and_eval(tmp_path, monkeypatch, name, metric):
    data_dir, run_dir = tmp_path / "data", tmp_path / "run"
    write_peptides_fixture(name, data_dir)
    accept_as_published(monkeypatch, name, data_dir)
    result = CliRunner().invoke(cli.main, ["train", "--dataset", name, "--data-dir", str(data_dir),
                                           "--out", str(run_dir)] + TINY + PEPTIDES_TINY)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == metric and summary["preset"] == name
    assert 0 <= summary["test_metric"] <= 1 if metric == "average_precision" else summary["test_metric"] >= 0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["out_feats"] == (10 if name == "peptides-func" else 11)
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])


def test_unpublished_files_are_a_one_line_cli_error(tmp_path):
    write_peptides_fixture("peptides-func", tmp_path)
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "peptides-func", "--data-dir", str(tmp_path),
                                           "--out", str(tmp_path / "run")] + TINY + PEPTIDES_TINY)
    assert result.exit_code != 0 and "MD5" in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if "MD5" in line]) == 1


def test_datasets_table_lists_peptides(tmp_path):
    write_peptides_fixture("peptides-struct", tmp_path)
    result = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["peptides-struct"]["present"] is True and rows["peptides-func"]["present"] is False
    assert rows["peptides-func"]["metric"] == "average_precision" and rows["peptides-struct"]["metric"] == "mae"
