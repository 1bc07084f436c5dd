"""Named node sets end to end through `train`, one per loader family, on fixture files in DGL's raw formats."""
import copy
import json
import math

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from tests.data.fixtures_node_sets import write_node_set_fixture

TINY = ["--epochs", "1", "--threads", "1", "--no-progress", "--set", "model.hidden_dim=8",
        "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2"]


def _train(*args):
    return CliRunner().invoke(cli.main, ["train", *args, *TINY])


@pytest.mark.parametrize("name, metric", [("cora", "accuracy"), ("texas", "accuracy"), ("minesweeper", "roc_auc"),
                                          ("coauthor-cs", "accuracy"), ("wikics", "accuracy")])
@pytest.mark.slow
def test_train_each_family_and_eval_the_run(tmp_path, name, metric):
    written = write_node_set_fixture(name, tmp_path)
    run = tmp_path / "run"
    result = _train("--dataset", name, "--data-dir", str(tmp_path), "--out", str(run))
    assert result.exit_code == 0, result.output
    summary = json.loads((run / "summary.json").read_text())
    config = json.loads((run / "config.json").read_text())
    assert summary["metric_name"] == metric and config["preset"] == name  # each named set has its preset
    assert config["data"]["split_index"] == 0 and config["model"]["out_feats"] == written["num_classes"]
    assert "DGL's" in (run / "train.log").read_text()
    scored = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run / "best.pt"), "--split", "val", "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output.strip().splitlines()[-1])["metric"] == pytest.approx(summary["val_metric"])


def test_split_index_is_recorded_and_eval_scores_that_split(tmp_path):
    write_node_set_fixture("actor", tmp_path)
    run = tmp_path / "run"
    result = _train("--dataset", "actor", "--data-dir", str(tmp_path), "--split-index", "3", "--out", str(run))
    assert result.exit_code == 0, result.output
    assert json.loads((run / "config.json").read_text())["data"]["split_index"] == 3
    assert "split 3 of 10" in (run / "train.log").read_text()
    summary = json.loads((run / "summary.json").read_text())
    scored = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run / "best.pt"), "--split", "test", "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output.strip().splitlines()[-1])["metric"] == pytest.approx(summary["test_metric"])


@pytest.mark.slow
def test_splits_all_trains_every_split_and_aggregates(tmp_path):
    write_node_set_fixture("roman-empire", tmp_path, num_splits=3)
    out = tmp_path / "study"
    result = _train("--dataset", "roman-empire", "--data-dir", str(tmp_path), "--splits", "all", "--out", str(out))
    assert result.exit_code == 0, result.output
    summaries = [json.loads((out / f"split{k}" / "summary.json").read_text()) for k in range(3)]
    configs = [json.loads((out / f"split{k}" / "config.json").read_text()) for k in range(3)]
    assert [c["data"]["split_index"] for c in configs] == [0, 1, 2]
    agg = json.loads((out / "aggregate.json").read_text())
    assert agg["splits"] == [0, 1, 2] and agg["over"] == ["split"] and agg["n"] == 3
    values = [s["test_metric"] for s in summaries]
    mean = sum(values) / 3
    assert agg["test_metric"]["mean"] == pytest.approx(mean)
    assert agg["test_metric"]["std"] == pytest.approx(math.sqrt(sum((v - mean) ** 2 for v in values) / 2))
    assert "over splits" in result.output and "| split |" in (out / "aggregate.md").read_text()
    again = _train("--dataset", "roman-empire", "--data-dir", str(tmp_path), "--splits", "all", "--out", str(out))
    assert again.exit_code == 0 and "finished run" in again.output  # finished splits are skipped


@pytest.mark.slow
def test_splits_with_seeds_is_one_run_per_split_and_seed(tmp_path):
    write_node_set_fixture("tolokers", tmp_path, num_splits=3)
    out = tmp_path / "study"
    result = _train("--dataset", "tolokers", "--data-dir", str(tmp_path), "--splits", "0", "2", "--seeds", "0", "1",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    agg = json.loads((out / "aggregate.json").read_text())
    assert [(row["split"], row["seed"]) for row in agg["per_split_seed"]] == [(0, 0), (0, 1), (2, 0), (2, 1)]
    assert (out / "split2-seed1" / "summary.json").is_file()


@pytest.mark.parametrize("args, message", [
    (["--dataset", "texas", "--split-index", "10"], "texas has 10 public splits (0..9); --split-index 10 is out"),
    (["--dataset", "texas", "--splits", "0", "11"], "split 11 of --splits is out of range: list splits of 0..9"),
    (["--dataset", "texas", "--splits", "all", "--split-index", "2"], "drop --split-index"),
    (["--dataset", "synthetic", "--split-index", "1"], "--split-index picks a public split of a named node set"),
    (["--dataset", "cora", "--split-index", "1"], "cora has one split"),
    (["--dataset", "synthetic", "--splits", "all"], "--splits trains on the public splits of a named node set"),
])
def test_bad_split_options_are_one_line(tmp_path, args, message):
    write_node_set_fixture("texas", tmp_path)
    write_node_set_fixture("cora", tmp_path)
    result = _train(*args, "--data-dir", str(tmp_path), "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    assert "Traceback" not in result.output and not (tmp_path / "run").exists()


def test_seeded_split_sets_take_their_split_seed(tmp_path):
    write_node_set_fixture("amazon-computers", tmp_path)
    run = tmp_path / "run"
    result = _train("--dataset", "amazon-computers", "--data-dir", str(tmp_path), "--set", "data.split_seed=5",
                    "--out", str(run))
    assert result.exit_code == 0, result.output
    assert "seeded 60/20/20 split (torch.randperm, data.split_seed=5)" in (run / "train.log").read_text()
    refused = _train("--dataset", "cora", "--data-dir", str(tmp_path), "--set", "data.split_seed=5")
    assert refused.exit_code == 2 and "data.split_seed apply only to a graph file" in refused.output


def test_a_preset_named_after_the_set_is_its_default(tmp_path, monkeypatch):
    from geaet_dgl.config import presets
    from geaet_dgl.training import make_run_config

    write_node_set_fixture("cora", tmp_path)
    assert make_run_config("cora", data={"data_dir": str(tmp_path)}).preset == "cora"
    own = copy.deepcopy(presets._PRESETS["geaet-node"])
    own.name, own.dataset, own.model.hidden_dim = "cora", "cora", 24
    monkeypatch.setitem(presets._PRESETS, "cora", own)
    run = make_run_config("cora", data={"data_dir": str(tmp_path)})
    assert run.preset == "cora" and run.model.hidden_dim == 24 and run.model.node_in_feats == 6


def test_datasets_lists_the_node_sets_with_metric_and_split_kind(tmp_path):
    write_node_set_fixture("actor", tmp_path)
    result = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["actor"]["present"] is True and rows["cora"]["present"] is False
    assert rows["actor"]["splits"].startswith("10 geom-gcn splits") and rows["questions"]["metric"] == "roc_auc"
    assert rows["coauthor-cs"]["splits"] == "seeded 60/20/20 (data.split_seed)"
    assert rows["wikics"]["splits"].startswith("20 train/val splits")
    text = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path)])
    assert "roman-empire" in text.stdout and "public split" in text.stdout


@pytest.mark.slow
def test_sweep_takes_the_split_index(tmp_path):
    write_node_set_fixture("texas", tmp_path)
    out = tmp_path / "sweep"
    result = CliRunner().invoke(cli.main, ["sweep", "--dataset", "texas", "--data-dir", str(tmp_path), "--split-index",
                                           "2", "--epochs", "1", "--set", "model.hidden_dim=8,16", "--set",
                                           "model.num_layers=1", "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    configs = [json.loads(p.read_text()) for p in out.glob("*/seed0/config.json")]
    assert len(configs) == 2 and {c["data"]["split_index"] for c in configs} == {2}


def test_feature_propagation_is_recorded_and_eval_applies_it_again(tmp_path):
    """data.feature_propagation=2 on a named set: the run records the transform (after the preset's row
    normalisation), and eval, which reads the set afresh, scores exactly the trained run's validation metric."""
    write_node_set_fixture("cora", tmp_path)
    run = tmp_path / "run"
    result = _train("--dataset", "cora", "--data-dir", str(tmp_path), "--out", str(run),
                    "--set", "data.feature_propagation=2")
    assert result.exit_code == 0, result.output
    config = json.loads((run / "config.json").read_text())
    assert config["data"]["input_transform"] == {"row_normalize": {}, "propagate": {"hops": 2}}
    summary = json.loads((run / "summary.json").read_text())
    scored = CliRunner().invoke(cli.main, ["eval", "--checkpoint", str(run / "best.pt"), "--split", "val", "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.output.strip().splitlines()[-1])["metric"] == pytest.approx(summary["val_metric"])
    bad = _train("--dataset", "cora", "--data-dir", str(tmp_path), "--out", str(tmp_path / "bad"),
                 "--set", "data.feature_propagation=-1")
    assert bad.exit_code != 0 and "data.feature_propagation=-1 must be an integer in 0..16" in bad.output
    assert not (tmp_path / "bad").exists()


@pytest.mark.slow
def test_sweep_over_splits_trains_each_point_on_every_split(tmp_path):
    write_node_set_fixture("tolokers", tmp_path, num_splits=3)
    out = tmp_path / "sweep"
    result = CliRunner().invoke(cli.main, ["sweep", "--dataset", "tolokers", "--data-dir", str(tmp_path), "--splits",
                                           "all", "--set", "model.hidden_dim=8", "--set", "model.input_dropout=0.1,0.2", "--epochs", "1", "--no-progress",
                                           "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2",
                                           "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = json.loads((out / "sweep.json").read_text())
    assert table["splits"] == [0, 1, 2] and len(table["rows"]) == 2
    for row in table["rows"]:
        point = out / row["point"]
        tests = [json.loads((point / f"split{k}" / "summary.json").read_text())["test_metric"] for k in range(3)]
        configs = [json.loads((point / f"split{k}" / "config.json").read_text()) for k in range(3)]
        assert [c["data"]["split_index"] for c in configs] == [0, 1, 2]
        assert row["test_metric"]["mean"] == pytest.approx(sum(tests) / 3)
    assert "public splits [0, 1, 2]" in (out / "sweep.md").read_text()
    refused = CliRunner().invoke(cli.main, ["sweep", "--dataset", "tolokers", "--data-dir", str(tmp_path), "--splits",
                                            "all", "--split-index", "1", "--out", str(tmp_path / "no")])
    assert refused.exit_code == 2 and "drop --split-index" in refused.output
