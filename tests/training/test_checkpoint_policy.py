"""Epoch-end checkpoints of a single-process run are written every CHECKPOINT_SECONDS, not every epoch, and a
run that dies between two writes resumes to the same result as one that never stopped."""
import pytest

from geaet_dgl.training import checkpoint as checkpoint_module
from geaet_dgl.training import load_checkpoint, resume, train
from geaet_dgl.training import trainer as trainer_module

from .test_trainer import EPOCHS, _assert_same_result, _tiny_run, uninterrupted  # noqa: F401  (the fixture)
from .tiny import one_thread


@pytest.mark.slow
def test_a_short_run_writes_its_first_and_last_epochs_only(tmp_path, monkeypatch):
    monkeypatch.setattr(trainer_module, "CHECKPOINT_SECONDS", 1e9)
    written = []
    real = trainer_module.write_checkpoint_bytes
    monkeypatch.setattr(trainer_module, "write_checkpoint_bytes",
                        lambda path, data: (written.append(path.name), real(path, data)))
    run_dir = tmp_path / "run"
    with one_thread():
        run = _tiny_run(**{"train.epochs": 6})
        run.checkpoint_every = 0  # no mid-epoch last.pt
        summary = train(run, run_dir, progress=False)
    last = load_checkpoint(run_dir / "last.pt")
    assert last["epoch"] == 6 and len(last["history"]) == 6
    best = load_checkpoint(run_dir / "best.pt")
    assert best["epoch"] == summary["best_epoch"] == best["best"]["epoch"]
    # epoch 1: best.pt (first epoch is always best) and last.pt; epoch 6: last.pt, and best.pt when it came later
    assert written[:2] == ["best.pt", "last.pt"] and written.count("last.pt") == 2 and len(written) <= 4
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 6


@pytest.mark.slow
def test_a_crash_between_writes_resumes_to_the_uninterrupted_result(uninterrupted, tmp_path,  # noqa: F811
                                                                     monkeypatch):
    reference_dir, _ = uninterrupted
    monkeypatch.setattr(trainer_module, "CHECKPOINT_SECONDS", 1e9)
    real_score = trainer_module.Trainer._run_epoch

    def die_in_epoch_3(self):
        if self.epoch == 2:
            raise KeyboardInterrupt("killed")  # as abrupt as SIGKILL for the files: nothing is flushed
        return real_score(self)

    monkeypatch.setattr(trainer_module.Trainer, "_run_epoch", die_in_epoch_3)
    run_dir = tmp_path / "run"
    with one_thread(), pytest.raises(KeyboardInterrupt):
        train(_tiny_run(), run_dir, progress=False)
    saved = load_checkpoint(run_dir / "last.pt")
    assert saved["epoch"] == 1  # epoch 2 finished but waited in memory
    assert load_checkpoint(run_dir / "best.pt")["epoch"] <= saved["epoch"]
    monkeypatch.undo()
    with one_thread():
        resume(run_dir, progress=False)
    _assert_same_result(reference_dir, run_dir)
    assert load_checkpoint(run_dir / "last.pt")["epoch"] == EPOCHS
