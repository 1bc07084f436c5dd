"""Issue 23 item 4: `--threads` never blocks a rerun of a study, and an interrupted seed resumes with it."""
import dataclasses
import json

import pytest

from geaet_dgl.studies import run_seeds
from geaet_dgl.training import TrainingInterrupted, make_run_config
from geaet_dgl.training.trainer import Trainer

TINY = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "train.epochs": 2,
        "train.batch_size": 8, "train.warmup_epochs": 0}
LIMITS = {"limit_train": 16, "limit_val": 8, "limit_test": 8}


def test_a_rerun_with_other_threads_continues_the_study_on_those_threads(tmp_path, monkeypatch):
    run = make_run_config("synthetic", None, TINY, LIMITS, threads=2)
    original = Trainer._run_epoch

    def stop_seed1_after_epoch1(self):
        original(self)
        if self.run.train.seed == 1 and self.epoch == 1:
            raise TrainingInterrupted("stopped for the test", 15)

    monkeypatch.setattr(Trainer, "_run_epoch", stop_seed1_after_epoch1)
    with pytest.raises(TrainingInterrupted):
        run_seeds(run, [0, 1], tmp_path, progress=False)
    monkeypatch.setattr(Trainer, "_run_epoch", original)
    fewer = dataclasses.replace(run, threads=1)  # e.g. another machine, or a busier one
    agg = run_seeds(fewer, [0, 1], tmp_path, progress=False)
    assert [row["seed"] for row in agg["per_seed"]] == [0, 1]
    resumed = json.loads((tmp_path / "seed1" / "summary.json").read_text())
    assert resumed["epochs"] == 2 and resumed["torch_threads"] == 1  # the rerun's --threads, not all cores
