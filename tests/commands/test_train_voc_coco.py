"""One-epoch `geaet-dgl train --dataset voc|coco` runs on tiny pickles DGL processes; missing data; the table."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.lrgb.voc_coco import superpixel_files
from geaet_dgl.scoring import evaluate_checkpoint
from tests.data.lrgb.test_data_lrgb_superpixels import write_superpixel_fixture
from tests.commands.test_train_datasets import TINY


@pytest.mark.parametrize("name, classes", [("voc", 21), ("coco", 81)])
@pytest.mark.slow
def test_one_epoch_and_eval(tmp_path, name, classes):
    write_superpixel_fixture(name, tmp_path / "data")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", name, "--data-dir", str(tmp_path / "data"),
                                           "--out", str(run_dir)] + TINY)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "f1_macro" and summary["preset"] == name
    assert 0.0 <= summary["test_metric"] <= 1.0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["model"]["out_feats"] == classes and config["model"]["head"] == "node"
    assert config["train"]["loss"] == "weighted_cross_entropy"
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])
    folder = superpixel_files(name, tmp_path / "data")["train"].parent
    assert not (folder / "geaet_cache").exists()  # the presets read no PE, so none was computed


def test_missing_data_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "voc", "--data-dir", str(tmp_path),
                                           "--out", str(tmp_path / "run")] + TINY)
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if "voc_superpixels_edge_wt_region_boundary.zip" in line]
    assert len(lines) == 1 and "train.pickle" in lines[0]


def test_datasets_table_lists_voc_and_coco(tmp_path):
    write_superpixel_fixture("voc", tmp_path, sizes=(1, 1, 1))
    result = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["voc"]["present"] is True and rows["coco"]["present"] is False
    assert rows["voc"]["metric"] == rows["coco"]["metric"] == "f1_macro"
    assert rows["voc"]["size"] == "8,498/1,428/1,429" and rows["coco"]["size"] == "113,286/5,000/5,000"
