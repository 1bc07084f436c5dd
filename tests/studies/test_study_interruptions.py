"""An interrupted study says how to continue the study (not one run of it), and continues to the table an
uninterrupted one writes, even after SIGKILL in its second run."""
import json
import os
import signal
import subprocess
import time

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.distgraph.processes import JobStopped
from geaet_dgl.training.trainer import Trainer
from tests.data.fixtures_node_sets import write_node_set_fixture
from tests.training.tiny import SUBPROCESS_ENV, one_thread, subprocess_command

from .tiny import tiny_args

NODE_TINY = ["--threads", "1", "--no-progress", "--set", "model.hidden_dim=8", "--set", "model.num_layers=1",
             "--set", "model.geanet.unit_size=2"]


def _invoke(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


@pytest.mark.slow
def test_ctrl_c_in_a_sweep_advises_rerunning_the_sweep(tmp_path, monkeypatch):
    original = Trainer._run_epoch

    def ctrl_c_in_the_second_point(self):
        original(self)
        if self.run.train.lr == 0.02:
            self.stop_signal = signal.SIGINT  # what the handler of a real Ctrl-C sets
            self._interrupted()

    monkeypatch.setattr(Trainer, "_run_epoch", ctrl_c_in_the_second_point)
    args = ["sweep", "--dataset", "synthetic", "--set", "train.lr=0.01,0.02", "--epochs", "2", "--out",
            tmp_path / "sweep", *tiny_args()]
    stopped = _invoke(*args)
    assert stopped.exit_code == 128 + signal.SIGINT
    last = stopped.output.strip().splitlines()[-1]
    assert last.startswith("stopped by SIGINT after epoch 1; state saved to ")
    assert last.endswith("continue the study by running the same command again (finished runs are skipped, this "
                         "one resumes from its last.pt)")
    assert "train --resume" not in stopped.output
    monkeypatch.setattr(Trainer, "_run_epoch", original)
    again = _invoke(*args)
    assert again.exit_code == 0, again.output
    assert "finished run" in again.output and "resuming" in again.output


def test_a_partitioned_job_stopped_says_whether_there_is_anything_to_resume():
    early = str(JobStopped(signal.SIGINT, "runs/x", checkpointed=False))
    assert "before the run wrote its first checkpoint: nothing to resume" in early and "--overwrite" in early
    assert "RUN_DIR" not in early and "keeps its last checkpoint" not in early
    later = str(JobStopped(signal.SIGTERM, "runs/x", checkpointed=True))
    assert later.endswith("runs/x keeps its last checkpoint (continue with `geaet-dgl train --resume runs/x`)")


def _table(out):
    agg = json.loads((out / "aggregate.json").read_text())
    return {key: agg[key] for key in ("n", "seeds", "val_metric", "test_metric", "train_metric", "best_epoch")}


@pytest.mark.slow
def test_a_seed_study_killed_in_its_second_run_ends_with_the_uninterrupted_table(tmp_path):
    """`--seeds 0 1 2` on (fixture) CiteSeer, SIGKILL in seed 1, the same command again: the same table."""
    write_node_set_fixture("citeseer", tmp_path / "sets")
    args = ["train", "--dataset", "citeseer", "--data-dir", tmp_path / "sets", "--seeds", "0", "1", "2",
            "--epochs", "30", *NODE_TINY]
    with one_thread():
        whole = _invoke(*args, "--out", tmp_path / "whole")
    assert whole.exit_code == 0, whole.output
    cut = tmp_path / "cut"
    killed = subprocess.Popen(subprocess_command(args + ["--out", cut]), env={**os.environ, **SUBPROCESS_ENV},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (cut / "seed1" / "last.pt").is_file():  # seed 1 has a checkpoint: kill it mid-run
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
    assert not (cut / "seed1" / "summary.json").exists() and not (cut / "aggregate.json").exists()
    with one_thread():
        rerun = _invoke(*args, "--out", cut)
    assert rerun.exit_code == 0, rerun.output
    assert "seed 0: finished run" in rerun.output and "seed 1: resuming" in rerun.output
    assert _table(cut) == _table(tmp_path / "whole")
