"""Seeds: mean ± sample std (ddof=1) of known numbers, and `train --seeds` (skip finished seeds)."""
import json
import math

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training.aggregate import aggregate_summaries, format_mean_std, mean_std

from .tiny import interrupt_seed_study, tiny_args


def test_mean_and_sample_std_equal_a_hand_computation():
    values = [0.90, 0.92, 0.95, 0.93]
    # mean 0.925; deviations -0.025, -0.005, 0.025, 0.005; squares sum 0.0013; / (n - 1) = 3
    mean, std = mean_std(values)
    assert mean == pytest.approx(0.925, abs=1e-12)
    assert std == pytest.approx(math.sqrt(0.0013 / 3), abs=1e-12)  # 0.020817, not the ddof=0 0.018028
    assert format_mean_std(mean, std) == "0.9250 ± 0.0208"


def test_one_seed_has_no_std():
    assert mean_std([0.5]) == (0.5, None)
    assert format_mean_std(0.5, None) == "0.5000 ± n/a"


def test_aggregate_of_known_summaries():
    summaries = [{"seed": s, "metric_name": "accuracy", "params": 100, "val_metric": v, "test_metric": t,
                  "train_metric": 1.0, "best_epoch": e, "seconds_per_epoch": 2.0}
                 for s, v, t, e in ((0, 0.5, 0.4, 1), (1, 0.7, 0.6, 3), (2, 0.9, 0.8, 2))]
    agg = aggregate_summaries(summaries)
    assert agg["n"] == 3 and agg["seeds"] == [0, 1, 2] and "ddof=1" in agg["std"]
    assert agg["val_metric"]["mean"] == pytest.approx(0.7)
    assert agg["val_metric"]["std"] == pytest.approx(0.2)  # sqrt((0.04 + 0 + 0.04) / 2)
    assert agg["test_metric"]["mean"] == pytest.approx(0.6) and agg["test_metric"]["std"] == pytest.approx(0.2)
    assert agg["best_epoch"]["mean"] == 2 and agg["best_epoch"]["std"] == pytest.approx(1.0)
    assert agg["seconds_per_epoch"]["std"] == 0.0


@pytest.mark.slow
def test_train_seeds_aggregates_the_per_seed_runs_and_skips_finished_ones(tmp_path):
    out = tmp_path / "study"
    args = ["train", "--dataset", "synthetic", "--epochs", "1", "--seeds", "0", "1", "--out", str(out)] + tiny_args()
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    assert "ddof=1" in result.stdout
    summaries = [json.loads((out / f"seed{k}" / "summary.json").read_text()) for k in (0, 1)]
    assert [s["seed"] for s in summaries] == [0, 1]
    agg = json.loads((out / "aggregate.json").read_text())
    for name in ("val_metric", "test_metric"):
        a, b = (s[name] for s in summaries)
        assert agg[name]["mean"] == pytest.approx((a + b) / 2)
        assert agg[name]["std"] == pytest.approx(abs(a - b) / math.sqrt(2))  # ddof=1 with two values
    assert "sample std (ddof=1" in (out / "aggregate.md").read_text()

    stamp = (out / "seed0" / "summary.json").stat().st_mtime_ns
    again = CliRunner().invoke(cli.main, args)
    assert again.exit_code == 0, again.output
    assert (out / "seed0" / "summary.json").stat().st_mtime_ns == stamp  # finished seed skipped
    assert json.loads((out / "aggregate.json").read_text())["val_metric"] == agg["val_metric"]

    other = CliRunner().invoke(cli.main, args[:-len(tiny_args())] + tiny_args("train.lr=0.01"))
    assert other.exit_code == 2 and "different configuration" in other.output  # never mixed into the table


@pytest.mark.slow
def test_run_seeds_resumes_an_interrupted_seed(tmp_path, monkeypatch):
    from geaet_dgl.training.seeds import run_seeds
    from geaet_dgl.training import make_run_config

    run = make_run_config("synthetic", None, {"model.hidden_dim": 8, "model.num_layers": 1,
                                              "model.geanet.unit_size": 2, "train.epochs": 2,
                                              "train.batch_size": 8, "train.warmup_epochs": 0},
                          {"limit_train": 16, "limit_val": 8, "limit_test": 8})
    interrupt_seed_study(monkeypatch, run, [0, 1], tmp_path)
    assert (tmp_path / "seed0" / "summary.json").is_file() and not (tmp_path / "seed1" / "summary.json").exists()
    agg = run_seeds(run, [0, 1], tmp_path, progress=False)
    assert "resuming" in (tmp_path / "seed1" / "train.log").read_text()
    assert [row["seed"] for row in agg["per_seed"]] == [0, 1]
    assert json.loads((tmp_path / "seed1" / "summary.json").read_text())["epochs"] == 2
