"""One-epoch CLI run of PCQM-Contact link prediction on fixture files in LRGB's raw format."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.scoring import evaluate_checkpoint
from tests.data.fixtures_pcqm_contact import write_pcqm_contact_fixture
from tests.commands.test_train_datasets import TINY

SMALL_PE = ["--set", "model.pe_k=3", "--set", "model.pe_dim=4"]


@pytest.mark.slow
def test_pcqm_contact_one_epoch_logs_hits_and_mrr(tmp_path):
    write_pcqm_contact_fixture(tmp_path / "data")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "pcqm-contact", "--data-dir", str(tmp_path / "data"),
                                           "--out", str(run_dir)] + TINY + SMALL_PE)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metric_name"] == "mrr" and summary["preset"] == "pcqm-contact"
    assert 0 < summary["test_metric"] <= 1
    for key in ("test_hits@1", "test_hits@3", "test_hits@10", "val_mrr_filtered"):
        assert 0 <= summary[key] <= 1, key
    history = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert history[0]["val_hits@10"] >= history[0]["val_hits@3"] >= history[0]["val_hits@1"]
    again = evaluate_checkpoint(run_dir / "best.pt", split="test", progress=False)
    assert again["metric"] == pytest.approx(summary["test_metric"])
    assert again["hits@1"] == pytest.approx(summary["test_hits@1"])


def test_link_settings_go_together(tmp_path):
    write_pcqm_contact_fixture(tmp_path / "data")
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "pcqm-contact", "--data-dir", str(tmp_path / "data"),
                                           "--out", str(tmp_path / "run"), "--set", "train.metric=accuracy"]
                                + TINY + SMALL_PE)
    assert result.exit_code != 0 and "train.metric=mrr together" in result.output
