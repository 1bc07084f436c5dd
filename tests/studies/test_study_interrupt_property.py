"""Property: a seed study stopped at any point (inside a run, at a step with a checkpoint, or at a run's end,
before its summary) and rerun with the same call gives the table of an uninterrupted study. On (fixture)
CiteSeer, whose preset row-normalises the features: the case whose rerun was refused."""
import shutil
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geaet_dgl.training import make_run_config
from geaet_dgl.training.seeds import run_seeds
from geaet_dgl.training import TrainingInterrupted
from geaet_dgl.training.trainer import Trainer
from tests.data.fixtures_node_sets import write_node_set_fixture
from tests.training.tiny import one_thread

SEEDS = [0, 1]
EPOCHS = 4  # one full-graph step per epoch
OVERRIDES = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2, "train.epochs": EPOCHS}
FIELDS = ("n", "seeds", "val_metric", "test_metric", "train_metric", "best_epoch")


@pytest.fixture(scope="module")
def citeseer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("citeseer")
    write_node_set_fixture("citeseer", folder)
    return str(folder)


def _run(data_dir):
    return make_run_config("citeseer", None, OVERRIDES, {"data_dir": data_dir}, threads=1)


def _table(agg):
    return {key: agg[key] for key in FIELDS}


@pytest.fixture(scope="module")
def uninterrupted(citeseer):
    with one_thread(), tempfile.TemporaryDirectory() as folder:
        return _table(run_seeds(_run(citeseer), SEEDS, Path(folder) / "whole", progress=False))


@pytest.mark.slow
@settings(max_examples=5, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.sampled_from(SEEDS), step=st.integers(min_value=1, max_value=EPOCHS))
def test_a_study_stopped_anywhere_reruns_to_the_same_table(citeseer, uninterrupted, seed, step):
    fired = []

    def stop_once(self, agree=False):  # a Ctrl-C that arrives during training step `step` of seed `seed`
        if not fired and self.run.train.seed == seed and self.global_step == step:
            fired.append(True)
            self.stop_signal = signal.SIGINT
        return self.stop_signal is not None

    original = Trainer._stop_requested
    folder = Path(tempfile.mkdtemp())
    try:
        Trainer._stop_requested = stop_once
        with one_thread(), pytest.raises(TrainingInterrupted):
            run_seeds(_run(citeseer), SEEDS, folder / "cut", progress=False)
        Trainer._stop_requested = original
        assert fired and not (folder / "cut" / f"seed{seed}" / "summary.json").exists()
        with one_thread():
            resumed = run_seeds(_run(citeseer), SEEDS, folder / "cut", progress=False)
        assert _table(resumed) == uninterrupted
    finally:
        Trainer._stop_requested = original
        shutil.rmtree(folder, ignore_errors=True)
