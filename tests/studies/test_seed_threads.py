"""`--threads` never blocks a rerun of a study, and an interrupted seed resumes with it."""
import dataclasses
import json

import pytest

from geaet_dgl.training.seeds import run_seeds
from geaet_dgl.training import make_run_config

from tests.studies.tiny import interrupt_seed_study

TINY = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "train.epochs": 2,
        "train.batch_size": 8, "train.warmup_epochs": 0}
LIMITS = {"limit_train": 16, "limit_val": 8, "limit_test": 8}


@pytest.mark.slow
def test_a_rerun_with_other_threads_continues_the_study_on_those_threads(tmp_path, monkeypatch):
    run = make_run_config("synthetic", None, TINY, LIMITS, threads=2)
    interrupt_seed_study(monkeypatch, run, [0, 1], tmp_path)
    fewer = dataclasses.replace(run, threads=1)  # e.g. another machine, or a busier one
    agg = run_seeds(fewer, [0, 1], tmp_path, progress=False)
    assert [row["seed"] for row in agg["per_seed"]] == [0, 1]
    resumed = json.loads((tmp_path / "seed1" / "summary.json").read_text())
    assert resumed["epochs"] == 2 and resumed["torch_threads"] == 1  # the rerun's --threads, not all cores
