"""One-epoch `geaet-dgl train --dataset cifar10` on a tiny CIFAR10: built from fake python batches via
--cifar-images, then trained again from the built files; eval and `datasets` see them."""
import json

import numpy as np
import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.superpixels import cifar10 as cifar10_module
from geaet_dgl.scoring import evaluate_checkpoint
from tests.data.fixtures_cifar10 import quadrant_images, write_cifar_batches
from tests.commands.test_train_datasets import TINY

NUM_VAL = 2


@pytest.fixture
def small_val(monkeypatch):
    """2 validation graphs instead of 5,000 (the CLI has no option for it)."""
    monkeypatch.setattr(cifar10_module, "CIFAR10_NUM_VAL", NUM_VAL)


@pytest.mark.slow
def test_cifar10_built_from_batches_one_epoch_eval_and_table(tmp_path, small_val):
    images = write_cifar_batches(tmp_path / "raw", quadrant_images(10), np.arange(10) % 10,
                                 quadrant_images(4, offset=2), np.array([3, 1, 4, 1]))
    data_dir, run_dir = tmp_path / "data", tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "cifar10", "--data-dir", str(data_dir),
                                           "--cifar-images", str(images), "--out", str(run_dir)] + TINY)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["preset"] == "cifar10" and summary["metric_name"] == "accuracy"
    config = json.loads((run_dir / "config.json").read_text())
    assert config["data"]["cifar_images"] == str(images) and config["data"]["dataset"] == "cifar10"
    assert config["model"]["node_in_feats"] == 5 and config["model"]["pe"] == "eslappe"

    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])

    table = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(data_dir), "--json"])
    rows = {row["name"]: row for row in json.loads(table.stdout)}
    assert rows["cifar10"]["present"] is True and rows["mnist"]["present"] is False


def test_cifar10_without_data_is_a_one_line_error(tmp_path, small_val):
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "cifar10", "--data-dir", str(tmp_path / "data"),
                                           "--out", str(tmp_path / "run")] + TINY)
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "no CIFAR10 superpixel data route works" in lines[0] and "cifar_images=" in lines[0]
