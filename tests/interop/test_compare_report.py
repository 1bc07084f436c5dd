"""Aggregation over seeds (against numpy), agreement, best epochs, the plot and the table."""
import math

import numpy as np
import pytest

from geaet_lab.interop import compare_report


def rows(seed, epochs=3, shift=0.0):
    rng = np.random.default_rng(seed)
    out = []
    for e in range(epochs):
        noise = rng.normal(0, 0.01, 6)
        out.append({"epoch": e + 1, "train_loss": 2.0 - 0.3 * e + noise[0], "train_metric": 0.3 + 0.1 * e,
                    "val_loss": 1.9 - 0.3 * e + noise[1], "val_metric": 0.4 + 0.1 * e + noise[2] + shift,
                    "test_loss": 1.8 - 0.3 * e + noise[3], "test_metric": 0.41 + 0.1 * e + noise[4] + shift,
                    "seconds": 30 + noise[5], "train_seconds": 25.0})
    return out


RUNS = {"ours": {s: rows(s) for s in (0, 1, 2)}, "reference": {s: rows(10 + s) for s in (0, 1, 2)}}
# the same three runs under other seed numbers: equal means, so every difference is 0
SAME = {"ours": RUNS["ours"], "reference": {s: RUNS["ours"][(s + 1) % 3] for s in (0, 1, 2)}}


def test_per_epoch_mean_and_sample_std_equal_numpy():
    agg = compare_report.per_epoch(RUNS["ours"])
    assert [e["epoch"] for e in agg] == [1, 2, 3]
    for i, entry in enumerate(agg):
        for field in compare_report.FIELDS:
            values = np.array([RUNS["ours"][s][i][field] for s in (0, 1, 2)])
            assert entry[field]["mean"] == pytest.approx(values.mean(), rel=1e-12)
            assert entry[field]["std"] == pytest.approx(values.std(ddof=1), rel=1e-9)


def test_epochs_every_seed_reached():
    uneven = {0: rows(0, 3), 1: rows(1, 2)}
    assert len(compare_report.per_epoch(uneven)) == 2


def test_best_epoch_is_the_first_best_validation():
    history = [{"val_metric": v} for v in (0.5, 0.7, 0.7, 0.6)]
    assert compare_report.best_epoch_index(history, "accuracy") == 1
    assert compare_report.best_epoch_index([{"val_metric": v} for v in (0.5, 0.3, 0.3)], "mae") == 1


def test_agreement_against_a_hand_computation():
    ours = {"mean": 0.90, "std": 0.01, "values": [0.89, 0.90, 0.91]}
    ref = {"mean": 0.88, "std": 0.02, "values": [0.86, 0.88, 0.90]}
    a = compare_report.agreement(ours, ref)
    assert a["delta"] == pytest.approx(0.02)
    assert a["spread"] == pytest.approx(math.sqrt(0.01 ** 2 + 0.02 ** 2))
    assert a["welch_t"] == pytest.approx(0.02 / math.sqrt(0.01 ** 2 / 3 + 0.02 ** 2 / 3))
    assert a["within_spread"] is True
    far = compare_report.agreement({**ours, "mean": 0.95}, ref)
    assert far["within_spread"] is False
    one = compare_report.agreement({"mean": 0.9, "std": None, "values": [0.9]}, ref)
    assert one["within_spread"] is None and one["delta"] == pytest.approx(0.02)


def test_compare_runs_judges_final_and_best_epochs(tmp_path):
    result = compare_report.compare_runs(SAME, "accuracy")
    final = result["ours"]["final"]["test_metric"]
    assert final["values"] == [RUNS["ours"][s][-1]["test_metric"] for s in (0, 1, 2)]
    assert set(result["agreement"]) == {"final", "best"}
    assert result["agreement"]["best"]["val_metric"]["delta"] == pytest.approx(0.0, abs=1e-12)
    assert result["all_within_spread"] is True
    shifted = {"ours": RUNS["ours"], "reference": {s: rows(s, shift=0.2) for s in (0, 1, 2)}}
    worse = compare_report.compare_runs(shifted, "accuracy")
    assert worse["agreement"]["final"]["test_metric"]["within_spread"] is False
    assert worse["all_within_spread"] is False

    png = tmp_path / "compare.png"
    compare_report.plot_comparison(result, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = compare_report.markdown_table(worse, "MNIST")
    lines = table.splitlines()
    assert lines[0] == "# MNIST"
    epoch3 = next(line for line in lines if line.startswith("| 3 |"))
    m, s = worse["reference"]["per_epoch"][2]["val_metric"]["mean"], worse["reference"]["per_epoch"][2][
        "val_metric"]["std"]
    assert f"{m:.4f} ± {s:.4f}" in epoch3
    assert sum(line.startswith("| last epoch |") for line in lines) == 3
    assert "| last epoch | test accuracy |" in table and table.count("| NO |") >= 2
