"""Runs of an older version resume (a run directory of the previous format, as a fixture)."""
import json
import shutil
from pathlib import Path

import pytest

from geaet_dgl.training.seeds import run_seeds
from geaet_dgl.training import TrainingInterrupted, load_checkpoint, resume
from geaet_dgl.training import make_run_config
from geaet_dgl.training.trainer import Trainer
from tests.fixtures import FIXTURES

OLD_RUN = FIXTURES / "run-before-format-2"
#: The settings the fixture was trained with (see fixtures/README.md).
TINY = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "train.epochs": 3,
        "train.batch_size": 8, "train.warmup_epochs": 0}
LIMITS = {"limit_train": 16, "limit_val": 8, "limit_test": 8}
NEW_KEYS = ("tensorboard", "threads")


def _old_run(folder: Path) -> Path:
    shutil.copytree(OLD_RUN, folder)
    saved = json.loads((folder / "config.json").read_text())
    assert not any(key in saved for key in NEW_KEYS) and "variant" not in saved["model"]["geanet"]
    return folder


def _stop_after(monkeypatch, epoch: int):
    from geaet_dgl.training import trainer as trainer_module

    monkeypatch.setattr(trainer_module, "CHECKPOINT_SECONDS", 0.0)  # every epoch writes last.pt, as a stop would
    original = Trainer._run_epoch

    def run_epoch(self):
        original(self)
        if self.epoch == epoch:
            raise TrainingInterrupted("stopped for the test", 15)

    monkeypatch.setattr(Trainer, "_run_epoch", run_epoch)
    return original


@pytest.mark.slow
def test_an_old_run_resumes_twice_and_its_config_is_migrated(tmp_path, monkeypatch):
    run_dir = _old_run(tmp_path / "run")
    original = _stop_after(monkeypatch, 2)
    with pytest.raises(TrainingInterrupted):
        resume(run_dir, progress=False)  # first resume: epoch 2, then stopped again
    assert load_checkpoint(run_dir / "last.pt")["epoch"] == 2
    monkeypatch.setattr(Trainer, "_run_epoch", original)
    summary = resume(run_dir, progress=False)  # the second resume is refused as "from another run" today
    assert summary["epochs"] == 3
    assert [row["epoch"] for row in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines())] == [1, 2, 3]
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["config_version"] == 2 and saved["model"]["geanet"]["variant"] == "reference"
    assert saved["tensorboard"] is False and saved["data"]["laplacian_norm"] is None


def test_a_study_of_old_runs_continues(tmp_path):
    study = tmp_path / "study"
    _old_run(study / "seed0")
    run = make_run_config("synthetic", None, TINY, LIMITS)
    agg = run_seeds(run, [0], study, progress=False)  # refused at once today: "a different configuration"
    assert agg["n"] == 1 and json.loads((study / "seed0" / "summary.json").read_text())["epochs"] == 3
    assert "resuming" in (study / "seed0" / "train.log").read_text()
