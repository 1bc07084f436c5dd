"""The training loop: learning, bit-identical resume after SIGKILL / SIGTERM, NaN stop, run directory rules."""
import json
import os
import signal
import subprocess
import time

import pytest
import torch

from geaet_dgl.training import make_run_config
from geaet_dgl.data import synthetic_splits
from geaet_dgl.training import (CheckpointError, NonFiniteLossError, RunDirError, Trainer, load_checkpoint, resume,
                                train)
from geaet_dgl.training.run_dir import prepare_new_run_dir

from .tiny import SUBPROCESS_ENV, TINY_DATA, TINY_MODEL, TINY_TRAIN, cli_args, one_thread, strip_timing, \
    subprocess_command

EPOCHS = 4  # 5 batches of 8 graphs per epoch
CHECKPOINT_EVERY = 2


def _tiny_run(**overrides):
    return make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN, "train.epochs": EPOCHS, **overrides},
                           data=TINY_DATA, checkpoint_every=CHECKPOINT_EVERY)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """A tiny run trained start to finish in this process: (run_dir, its summary)."""
    run_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    with one_thread():
        summary = train(_tiny_run(), run_dir, progress=False)
    return run_dir, summary


def _start_cli_run(run_dir):
    return subprocess.Popen(
        subprocess_command(cli_args(EPOCHS, run_dir, ["--checkpoint-every", CHECKPOINT_EVERY])),
        env={**os.environ, **SUBPROCESS_ENV}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_checkpoint(process, path, min_global_step, timeout=120.0):
    """Poll ``path`` until it holds at least ``min_global_step`` steps; return its state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, f"training ended early: {process.communicate()[1][-2000:]}"
        if path.is_file():
            try:
                state = load_checkpoint(path)
            except CheckpointError:  # replaced while we read it
                continue
            if state["global_step"] >= min_global_step:
                return state
        time.sleep(0.01)
    process.kill()
    raise AssertionError("no checkpoint appeared in time")


def _assert_same_result(dir_a, dir_b):
    a, b = load_checkpoint(dir_a / "last.pt"), load_checkpoint(dir_b / "last.pt")
    assert a["run_config"] == b["run_config"]
    assert a["model"].keys() == b["model"].keys()
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    assert strip_timing(a["history"]) == strip_timing(b["history"])
    assert a["best"] == b["best"] and a["global_step"] == b["global_step"] == EPOCHS * 5
    best_a, best_b = load_checkpoint(dir_a / "best.pt"), load_checkpoint(dir_b / "best.pt")
    assert all(torch.equal(best_a["model"][k], best_b["model"][k]) for k in best_a["model"])
    summary_a = json.loads((dir_a / "summary.json").read_text())
    summary_b = json.loads((dir_b / "summary.json").read_text())
    for key in ("best_epoch", "val_metric", "test_metric", "train_metric", "params", "epochs"):
        assert summary_a[key] == summary_b[key], key
    lines = (dir_b / "metrics.jsonl").read_text().splitlines()
    assert strip_timing([json.loads(line) for line in lines]) == strip_timing(a["history"])


@pytest.mark.slow
def test_resume_after_sigkill_is_identical(uninterrupted, tmp_path):
    reference_dir, _ = uninterrupted
    run_dir = tmp_path / "killed"
    process = _start_cli_run(run_dir)
    state = _wait_for_checkpoint(process, run_dir / "last.pt", min_global_step=6)
    process.kill()
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert state["global_step"] < EPOCHS * 5

    resume(run_dir, progress=False)
    _assert_same_result(reference_dir, run_dir)


@pytest.mark.slow
def test_sigterm_saves_mid_run_and_resume_is_identical(uninterrupted, tmp_path):
    reference_dir, _ = uninterrupted
    run_dir = tmp_path / "terminated"
    process = _start_cli_run(run_dir)
    _wait_for_checkpoint(process, run_dir / "last.pt", min_global_step=3)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM
    assert f"geaet-dgl train --resume {run_dir}" in stderr
    saved = load_checkpoint(run_dir / "last.pt")
    assert 3 <= saved["global_step"] < EPOCHS * 5

    resume(run_dir, progress=False)
    _assert_same_result(reference_dir, run_dir)


@pytest.mark.slow
def test_run_files(uninterrupted):
    run_dir, summary = uninterrupted
    for name in ("best.pt", "last.pt", "metrics.jsonl", "summary.json", "curves.png", "train.log",
                 "config.json", "config.yaml"):
        assert (run_dir / name).is_file(), name
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == EPOCHS
    for key in ("dataset", "preset", "params", "epochs", "best_epoch", "val_metric", "test_metric", "metric_name",
                "seconds_per_epoch", "graphs_per_s"):
        assert key in summary, key
    assert summary["dataset"] == "synthetic" and summary["preset"] == "mnist" and summary["epochs"] == EPOCHS
    history = load_checkpoint(run_dir / "last.pt")["history"]
    best = max(history, key=lambda row: row["val_metric"])  # first of ties, like the reference
    assert summary["best_epoch"] == best["epoch"] and summary["test_metric"] == best["test_metric"]
    assert "parameters" in (run_dir / "train.log").read_text()
    assert json.loads((run_dir / "config.json").read_text())["model"]["hidden_dim"] == 8


@pytest.mark.slow
def test_tiny_model_learns_a_toy_task(tmp_path):
    # Two classes told apart by the node intensity: the loss must fall clearly.
    run = make_run_config("synthetic", overrides={
        **TINY_MODEL, "model.hidden_dim": 16, "model.geanet.unit_size": 4, "model.out_feats": 2,
        "train.epochs": 8, "train.warmup_epochs": 0, "train.lr": 1e-2, "train.batch_size": 16})
    splits = synthetic_splits(64, 32, 32, num_classes=2, num_nodes=30)
    trainer = Trainer(run, tmp_path, splits, progress=False)
    summary = trainer.fit()
    losses = [row["train_loss"] for row in trainer.history]
    assert losses[-1] < 0.6 * losses[0], losses
    assert summary["val_metric"] >= 0.9


def test_non_finite_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    run = _tiny_run(**{"train.epochs": 1})
    splits = synthetic_splits(24, 8, 8)
    trainer = Trainer(run, tmp_path, splits, progress=False)
    real_loss, calls = trainer.loss_fn, []

    def loss_nan_at_third_step(output, target):
        calls.append(1)
        loss = real_loss(output, target)
        return loss * float("nan") if len(calls) == 3 else loss

    trainer.loss_fn = loss_nan_at_third_step
    with pytest.raises(NonFiniteLossError, match=r"epoch 1, batch 3/3 \(training graphs \[.*"
                                                 r"\(in epoch 1 after 2 batches\)"):
        trainer.fit()
    state = load_checkpoint(tmp_path / "last.pt")
    assert (state["epoch"], state["step"]) == (0, 2)  # written by checkpoint_every=2, before the NaN
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_existing_run_dir_is_refused_and_overwrite_removes_only_run_files(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "last.pt").write_text("old")
    (run_dir / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="already exists.*--resume"):
        prepare_new_run_dir(run_dir, overwrite=False)
    prepare_new_run_dir(run_dir, overwrite=True)
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]
    with pytest.raises(RunDirError, match="nothing|no last.pt"):
        resume(run_dir)


def test_restoring_another_models_checkpoint_names_the_fields(uninterrupted):
    run_dir, _ = uninterrupted
    other = _tiny_run(**{"model.hidden_dim": 12, "model.geanet.unit_size": 3})
    trainer = Trainer(other, run_dir, synthetic_splits(8, 8, 8), progress=False)
    with pytest.raises(CheckpointError, match=r"model\.geanet\.unit_size: 2 != 3; model\.hidden_dim: 8 != 12"):
        trainer.restore(load_checkpoint(run_dir / "last.pt"))
