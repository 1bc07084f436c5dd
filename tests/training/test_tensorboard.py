"""train --tensorboard: event files beside metrics.jsonl, one point per epoch, continued by a resumed run."""
import builtins
import json
import signal

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training import TrainingInterrupted, resume, train
from geaet_dgl.training import make_run_config
from geaet_dgl.training import trainer as trainer_module
from geaet_dgl.training.tensorboard_log import epoch_scalars
from tests.training.tiny import TINY_DATA, TINY_MODEL, TINY_TRAIN, cli_args, one_thread

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _scalars(run_dir):
    acc = event_accumulator.EventAccumulator(str(run_dir), size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.mark.slow
def test_interrupted_and_resumed_run_continues_the_same_curves(tmp_path, monkeypatch):
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN, "train.epochs": 3}, data=TINY_DATA)
    run.tensorboard = True
    original = trainer_module.Trainer._run_epoch

    def stop_in_epoch_two(self):
        if self.epoch == 1 and self.step == 0:
            self.stop_signal = signal.SIGTERM  # as if SIGTERM came: stop after the next step, save last.pt
        original(self)

    with one_thread():
        monkeypatch.setattr(trainer_module.Trainer, "_run_epoch", stop_in_epoch_two)
        with pytest.raises(TrainingInterrupted):
            train(run, tmp_path, progress=False)
        assert [step for step, _ in _scalars(tmp_path)["loss/val"]] == [1]
        monkeypatch.setattr(trainer_module.Trainer, "_run_epoch", original)
        summary = resume(tmp_path, progress=False)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    curves = _scalars(tmp_path)
    assert curves["model/parameters"] == [(0, float(summary["params"]))]
    expected = {}
    for row in rows:
        for tag, value in epoch_scalars(row, "accuracy").items():
            expected.setdefault(tag, []).append((row["epoch"], value))
    for tag in ("loss/train", "loss/val", "loss/test", "accuracy/val", "accuracy/test", "lr"):
        assert [step for step, _ in curves[tag]] == [1, 2, 3], tag  # each epoch once, in order
        assert curves[tag] == [(step, pytest.approx(value, rel=1e-6)) for step, value in expected[tag]], tag


def test_missing_tensorboard_is_a_one_line_error_naming_the_install(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_tensorboard(name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name.startswith("torch.utils.tensorboard") or name.startswith("tensorboard")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, globals, locals, fromlist, level)

    monkeypatch.setattr(builtins, "__import__", no_tensorboard)
    result = CliRunner().invoke(cli.main, cli_args(1, tmp_path / "run", ["--tensorboard"]))
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install tensorboard" in lines[0]
    assert not (tmp_path / "run").exists()
