"""Early stopping (``train.patience``): the loop stops at the right epoch, keeps the best, and a resumed
early-stopped run trains no further."""
import json

import pytest

from geaet_dgl.config import ConfigError
from geaet_dgl.training import load_checkpoint, resume, train
from geaet_dgl.training import make_run_config
from geaet_dgl.training.metrics import is_improvement

from .tiny import TINY_DATA, TINY_MODEL, TINY_TRAIN, one_thread, strip_timing

EPOCHS = 8
PATIENCE = 2


def _run(patience: int):
    # lr large enough that validation accuracy on 16 graphs soon stops improving
    return make_run_config("synthetic", data=TINY_DATA, overrides={
        **TINY_MODEL, **TINY_TRAIN, "train.epochs": EPOCHS, "train.patience": patience, "train.lr": 3e-2})


def _metrics(run_dir):
    with open(run_dir / "metrics.jsonl") as handle:
        return [json.loads(line) for line in handle]


def _expected_stop(history, metric, patience):
    """The epoch the rule stops after, computed from a full run's validation curve: the first epoch that is
    ``patience`` epochs past the best so far."""
    best = None
    for row in history:
        if is_improvement(metric, row["val_metric"], None if best is None else best["val_metric"]):
            best = row
        if row["epoch"] - best["epoch"] >= patience:
            return row["epoch"], best["epoch"]
    return None, best["epoch"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("patience")
    with one_thread():
        train(_run(0), root / "full", progress=False)
        summary = train(_run(PATIENCE), root / "early", progress=False)
    return root, summary


@pytest.mark.slow
def test_the_run_stops_after_patience_epochs_without_improvement(runs):
    root, summary = runs
    full = _metrics(root / "full")
    assert len(full) == EPOCHS  # patience 0: every epoch, as before
    stop, best = _expected_stop(full, "accuracy", PATIENCE)
    assert stop is not None and stop < EPOCHS, "the tiny run should plateau; the test needs a stopping run"
    early = _metrics(root / "early")
    assert [row["epoch"] for row in early] == list(range(1, stop + 1))
    # the same training up to the stop: patience changes when the run ends, nothing else
    assert strip_timing(early) == strip_timing(full[:stop])
    assert summary["stopped_early"] is True and summary["epochs"] == stop and summary["best_epoch"] == best
    assert load_checkpoint(root / "early" / "best.pt")["epoch"] == best
    assert load_checkpoint(root / "early" / "last.pt")["epoch"] == stop


def test_a_resumed_early_stopped_run_trains_no_further(runs):
    root, _ = runs
    before = _metrics(root / "early")
    with one_thread():
        summary = resume(root / "early", progress=False)
    assert _metrics(root / "early") == before
    assert summary["epochs"] == len(before) and summary["stopped_early"] is True


def test_patience_must_not_be_negative():
    with pytest.raises(ConfigError, match="train.patience must be >= 0"):
        _run(-1).validate()
