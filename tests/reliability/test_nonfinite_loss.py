"""A NaN or infinite loss through `geaet-dgl train`: stop at once (exit 1), say which epoch, step and batch,
keep the last good checkpoint untouched, leave no partial file. (tests/training/test_trainer.py checks the
same in-process with a mid-epoch checkpoint.)"""
import json

import pytest
import torch

from geaet_dgl.training import load_checkpoint
from geaet_dgl.training import trainer as trainer_module
from tests.training.tiny import cli_args

from .helpers import one_line_error, partial_files, run_cli


def _loss_turning(value: float, at_training_step: int, monkeypatch):
    """Make the training loss ``value`` at the given (1-based, whole-run) training step."""
    real_get_loss = trainer_module.get_loss

    def get_loss(name):
        real, calls = real_get_loss(name), []

        def loss(output, target):
            result = real(output, target)
            if torch.is_grad_enabled():  # training steps only (evaluation runs under no_grad)
                calls.append(1)
                if len(calls) == at_training_step:
                    return result * 0 + value
            return result

        return loss

    monkeypatch.setattr(trainer_module, "get_loss", get_loss)


@pytest.mark.parametrize("value, word", [(float("nan"), "nan"), (float("inf"), "inf")])
def test_non_finite_loss_in_epoch_2_keeps_epoch_1(value, word, tmp_path, monkeypatch):
    _loss_turning(value, at_training_step=5 + 3, monkeypatch=monkeypatch)  # 5 batches per epoch
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(3, out)), exit_code=1)
    assert line.startswith(f"error: loss became {word} at epoch 2, batch 3/5 (training graphs [")
    assert f"stopped without saving: {out / 'last.pt'} keeps the last good state (after epoch 1)" in line
    assert line.endswith("lower train.lr or check the data")
    state = load_checkpoint(out / "last.pt")
    assert (state["epoch"], state["step"], state["global_step"]) == (1, 0, 5)
    assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1
    assert not (out / "summary.json").exists()
    assert not partial_files(tmp_path)


def test_non_finite_loss_at_the_first_step_says_nothing_was_saved(tmp_path, monkeypatch):
    _loss_turning(float("nan"), at_training_step=1, monkeypatch=monkeypatch)
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(1, out)), exit_code=1)
    assert line.startswith("error: loss became nan at epoch 1, batch 1/5")
    assert "stopped without saving: no checkpoint was written yet" in line
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "config.yaml", "train.log"]
    assert json.loads((out / "config.json").read_text())["train"]["epochs"] == 1


@pytest.mark.slow
def test_resume_after_a_non_finite_stop_continues_from_the_good_checkpoint(tmp_path, monkeypatch):
    _loss_turning(float("nan"), at_training_step=5 + 2, monkeypatch=monkeypatch)
    out = tmp_path / "run"
    one_line_error(run_cli(cli_args(2, out)), exit_code=1)
    monkeypatch.undo()  # e.g. the user fixed the cause
    result = run_cli(["train", "--resume", out, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert load_checkpoint(out / "last.pt")["global_step"] == 10


@pytest.mark.slow
def test_disk_full_while_saving_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    """Not a loss problem but the same promise: a failed save stops the run with one line, last.pt intact."""
    import errno

    from geaet_dgl.training import checkpoint as checkpoint_module

    import contextlib

    real_write, calls = checkpoint_module.atomic_write, []

    @contextlib.contextmanager
    def write_until_disk_full(path, mode="wb"):
        calls.append(1)
        with real_write(path, mode) as handle:
            if len(calls) == 3:  # epoch 1 wrote best.pt and last.pt; epoch 2's last.pt hits a full disk
                handle.write(b"\0" * 100)
                raise OSError(errno.ENOSPC, "No space left on device")
            yield handle

    monkeypatch.setattr(checkpoint_module, "atomic_write", write_until_disk_full)
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(2, out)))
    monkeypatch.undo()
    assert line == (f"error: could not write checkpoint {out / 'last.pt'} (No space left on device); the previous "
                    f"last.pt (if any) is intact; free space or fix permissions in {out}, then continue with "
                    f"`geaet-dgl train --resume {out}`")
    assert load_checkpoint(out / "last.pt")["epoch"] == 1
    assert not partial_files(tmp_path)
    result = run_cli(["train", "--resume", out, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert load_checkpoint(out / "last.pt")["epoch"] == 2
