"""One-epoch `geaet-dgl train` runs on tiny OGB graph-property folders (OGB's own processing runs on them);
`datasets` lists them; a missing folder is a one-line error naming the file and where it goes."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.scoring import evaluate_checkpoint
from tests.commands.test_train_datasets import TINY
from tests.data.fixtures_ogbg import write_molecule_fixture, write_ppa_fixture

SMALL_PE = ["--set", "model.pe_k=3", "--set", "model.pe_dim=4"]
#: ppa's preset has 8 attention heads (GraphGPS's), too many for TINY's width 16.
PPA_TINY = ["--set", "model.num_heads=4"]


@pytest.mark.parametrize("name, metric, outputs", [("ogbg-molhiv", "roc_auc", 1),
                                                   ("ogbg-molpcba", "average_precision", 128),
                                                   ("ogbg-ppa", "accuracy", 37)])
@pytest.mark.slow
def test_ogbg_fixture_one_epoch_and_eval(tmp_path, name, metric, outputs):
    data_dir, run_dir = tmp_path / "data", tmp_path / "run"
    if name == "ogbg-ppa":
        write_ppa_fixture(data_dir)
        extra = PPA_TINY
    else:
        write_molecule_fixture(name, data_dir)
        extra = SMALL_PE
    result = CliRunner().invoke(cli.main, ["train", "--dataset", name, "--data-dir", str(data_dir),
                                           "--out", str(run_dir)] + TINY + extra)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == metric and summary["preset"] == name
    assert 0 <= summary["test_metric"] <= 1
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["out_feats"] == outputs
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])


def test_missing_ogbg_folder_is_one_line_naming_the_file(tmp_path):
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "ogbg-molhiv", "--data-dir", str(tmp_path),
                                           "--out", str(tmp_path / "run")] + TINY)
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if "RELEASE_v1.txt" in line]
    assert len(lines) == 1 and "hiv.zip" in lines[0] and "ogbg_molhiv/" in lines[0]


def test_datasets_table_lists_ogbg(tmp_path):
    write_ppa_fixture(tmp_path)
    result = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["ogbg-ppa"]["present"] is True and rows["ogbg-molhiv"]["present"] is False
    assert rows["ogbg-molhiv"]["metric"] == "roc_auc" and rows["ogbg-molpcba"]["metric"] == "average_precision"


@pytest.mark.parametrize("name", ["pcqm4mv2", "pcqm4mv2-subset"])
def test_pcqm4mv2_fixture_one_epoch_and_eval(tmp_path, monkeypatch, name):
    from tests.data.fixtures_pcqm4mv2 import small_variants, write_pcqm4mv2_fixture

    write_pcqm4mv2_fixture(tmp_path / "data")
    small_variants(monkeypatch)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", name, "--data-dir", str(tmp_path / "data"),
                                           "--out", str(run_dir)] + TINY + SMALL_PE)
    assert result.exit_code == 0, result.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "mae" and summary["preset"] == "pcqm4mv2" and summary["test_metric"] > 0
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])


def test_malnet_tiny_fixture_one_epoch_and_eval(tmp_path):
    from tests.data.fixtures_malnet import write_malnet_fixture

    write_malnet_fixture(tmp_path / "data")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "malnet-tiny", "--data-dir", str(tmp_path / "data"),
                                           "--out", str(run_dir)] + TINY + SMALL_PE)
    assert result.exit_code == 0, result.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "accuracy" and summary["preset"] == "malnet-tiny"
    assert 0 <= summary["test_metric"] <= 1
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])


@pytest.mark.slow
def test_code2_fixture_one_epoch_and_eval(tmp_path, monkeypatch):
    from geaet_dgl.data.ogbg import code2
    from tests.data.fixtures_ogbg import write_code2_fixture

    write_code2_fixture(tmp_path / "data")
    monkeypatch.setattr(code2, "NUM_VOCAB", 8)  # the fixture's names have 11 subtokens
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "ogbg-code2", "--data-dir", str(tmp_path / "data"),
                                           "--out", str(run_dir), "--set", "model.out_feats=10"] + TINY)
    assert result.exit_code == 0, result.output
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "f1_subtoken" and summary["preset"] == "ogbg-code2"
    assert 0 <= summary["test_metric"] <= 1
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])
