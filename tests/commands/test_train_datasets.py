"""One-epoch `geaet-dgl train` runs on tiny versions of PATTERN, CLUSTER, ZINC and TreeNeighbourMatch."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.scoring import evaluate_checkpoint
from tests.data.fixtures_dgl import write_sbm_fixture, write_zinc_fixture

TINY = ["--set", "model.hidden_dim=16", "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=4",
        "--set", "train.warmup_epochs=1", "--batch-size", "4", "--epochs", "1", "--no-progress"]


def _train(args):
    result = CliRunner().invoke(cli.main, ["train"] + args + TINY)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    return result


@pytest.mark.slow
def test_pattern_generated_one_epoch_and_eval(tmp_path):
    run_dir = tmp_path / "run"
    _train(["--dataset", "pattern", "--data-dir", str(tmp_path / "data"), "--set", "data.generate=true",
            "--limit-train", "6", "--limit-val", "3", "--limit-test", "3", "--out", str(run_dir)])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "balanced_accuracy" and summary["preset"] == "pattern"
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])


@pytest.mark.slow
def test_cluster_fixture_one_epoch(tmp_path):
    write_sbm_fixture("cluster", tmp_path / "data")
    _train(["--dataset", "cluster", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "run")])


def test_zinc_fixture_one_epoch(tmp_path):
    write_zinc_fixture(tmp_path / "data")
    _train(["--dataset", "zinc", "--data-dir", str(tmp_path / "data"), "--out", str(tmp_path / "run"),
            "--set", "model.pe_k=4", "--set", "model.pe_dim=4"])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metric_name"] == "mae" and summary["test_metric"] >= 0


@pytest.mark.parametrize("extra", [[], ["--set", "model.mpnn=gcn", "--set", "model.attention=none",
                                        "--set", "model.external=false"]])
def test_tree_depth_two_one_epoch(tmp_path, extra):
    _train(["--dataset", "tree", "--set", "data.depth=2", "--out", str(tmp_path / "run")] + extra)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["data"]["depth"] == 2 and config["model"]["out_feats"] == 4 and config["model"]["head"] == "root"


def test_missing_data_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "cluster", "--data-dir", str(tmp_path),
                                           "--out", str(tmp_path / "run")] + TINY)
    assert result.exit_code != 0 and "data.generate=true" in result.output