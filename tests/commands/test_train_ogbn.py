"""ogbn-arxiv end to end on fixture files in OGB's raw layout: train with cluster batches, eval."""
import pytest
import json

from click.testing import CliRunner

from geaet_dgl import cli
from tests.data.fixtures_ogbn import write_ogbn_fixture


@pytest.mark.slow
def test_train_and_eval_ogbn_arxiv_with_cluster_batches(tmp_path):
    write_ogbn_fixture("ogbn-arxiv", tmp_path)
    run = tmp_path / "run"
    result = CliRunner().invoke(cli.main, [
        "train", "--dataset", "ogbn-arxiv", "--data-dir", str(tmp_path), "--epochs", "1", "--threads", "1",
        "--set", "model.node_in_feats=5", "--set", "data.sampler=cluster", "--set", "data.num_parts=4",
        "--batch-size", "2", "--out", str(run)])
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    assert summary["preset"] == "ogbn-arxiv" and summary["metric_name"] == "accuracy"
    result = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run / "best.pt"), "--split", "test", "--json"])
    assert result.exit_code == 0, result.output
    scored = json.loads(result.output.strip().splitlines()[-1])
    assert scored["metric"] == summary["test_metric"]


def test_ogbn_without_files_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "ogbn-products", "--data-dir", str(tmp_path),
                                           "--epochs", "1"])
    assert result.exit_code != 0
    assert "products.zip, unzip it into" in result.output and "Traceback" not in result.output
