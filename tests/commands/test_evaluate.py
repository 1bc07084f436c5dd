"""`geaet-dgl eval`: the stored metric and loss again, --no-fold, a corrupt checkpoint in one line."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training import load_checkpoint


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


def test_corrupt_checkpoint_gives_one_line_error(tmp_path):
    bad = tmp_path / "best.pt"
    bad.write_bytes(b"\x00" * 100)
    result = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(bad), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: checkpoint {bad} is truncated or corrupt")


def test_eval_no_fold_gives_the_folded_metric(trained_run):
    run_dir, _ = trained_run
    folded = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run_dir / "best.pt"), "--json"])
    plain = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run_dir / "best.pt"), "--json", "--no-fold"])
    assert folded.exit_code == 0 and plain.exit_code == 0, folded.output + plain.output
    assert json.loads(folded.stdout)["metric"] == json.loads(plain.stdout)["metric"]
