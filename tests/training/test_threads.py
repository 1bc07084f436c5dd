"""--threads: one number sizes torch's, DGL's and BLAS's pools, and is recorded in the run."""
import json
import os
import subprocess

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl import threads as threads_module
from geaet_dgl.config import ConfigError
from geaet_dgl.threads import (apply_threads, available_cores, current_threads, default_threads, per_process_threads,
                               resolve_threads)
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training import load_checkpoint, resume, train
from geaet_dgl.training import make_run_config

from .tiny import SUBPROCESS_ENV, TINY_DATA, TINY_MODEL, TINY_TRAIN, cli_args, subprocess_command


def _blas_threads():
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture
def restore_pools():
    """Put every pool back to one thread (the training tests' setting) afterwards."""
    yield
    apply_threads(1)


def test_apply_threads_sizes_torch_dgl_and_blas(restore_pools):
    assert apply_threads(2) == 2
    assert torch.get_num_threads() == 2 and dgl.utils.get_num_threads() == 2
    assert _blas_threads() == {2}
    assert current_threads() == 2
    assert apply_threads(1) == 1
    assert torch.get_num_threads() == 1 and dgl.utils.get_num_threads() == 1
    assert _blas_threads() == {1}
    assert current_threads() == 1


def test_default_is_omp_num_threads_else_the_allowed_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5})
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert available_cores() == 3 and default_threads() == 3 and resolve_threads(None) == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert default_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")  # not a number: ignored, as OpenMP itself would
    assert default_threads() == 3
    assert resolve_threads(4) == 4


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ValueError, match="integer >= 1"):
        resolve_threads(bad)
    run = make_run_config("synthetic", overrides=TINY_MODEL, data=TINY_DATA)
    run.threads = bad
    with pytest.raises(ConfigError, match="threads="):
        run.validate()


def test_data_parallel_ranks_share_the_threads():
    assert per_process_threads(8, 2) == 4
    assert per_process_threads(5, 2) == 2
    assert per_process_threads(1, 4) == 1  # never below one


@pytest.mark.slow
def test_run_records_and_applies_its_threads(tmp_path, restore_pools):
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN, "train.epochs": 1}, data=TINY_DATA,
                          threads=2)
    assert torch.get_num_threads() == 1  # the fixture's setting before the run
    summary = train(run, tmp_path / "run", progress=False)
    assert summary["torch_threads"] == 2 and torch.get_num_threads() == 2
    assert json.loads((tmp_path / "run" / "config.json").read_text())["threads"] == 2
    assert load_checkpoint(tmp_path / "run" / "last.pt")["run_config"]["threads"] == 2
    assert "torch 2 threads" in (tmp_path / "run" / "train.log").read_text()

    # resume may change the threads, like the device; the checkpoints then record the new number
    state = load_checkpoint(tmp_path / "run" / "last.pt")
    state["run_config"]["train"]["epochs"] = 2  # one more epoch to train, in checkpoint and config alike
    torch.save(state, tmp_path / "run" / "last.pt")
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    config["train"]["epochs"] = 2
    (tmp_path / "run" / "config.json").write_text(json.dumps(config))
    summary = resume(tmp_path / "run", progress=False, threads=1)
    assert summary["torch_threads"] == 1 and torch.get_num_threads() == 1
    assert load_checkpoint(tmp_path / "run" / "last.pt")["run_config"]["threads"] == 1

    result = evaluate_checkpoint(tmp_path / "run" / "best.pt", "val", threads=2, progress=False)
    assert result["threads"] == 2 and torch.get_num_threads() == 2


@pytest.mark.slow
def test_cli_threads_reaches_the_run_and_eval(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, **SUBPROCESS_ENV}  # OMP_NUM_THREADS=1: --threads must win over it
    proc = subprocess.run(subprocess_command(cli_args(1, out, ["--threads", "2"])), env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((out / "config.json").read_text())["threads"] == 2
    assert json.loads((out / "summary.json").read_text())["torch_threads"] == 2

    without = tmp_path / "default"
    proc = subprocess.run(subprocess_command(cli_args(1, without)), env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads((without / "config.json").read_text())["threads"] == 1  # $OMP_NUM_THREADS

    proc = subprocess.run(subprocess_command(["eval", "--checkpoint", out / "best.pt", "--split", "val", "--threads",
                                              "1", "--json"]), env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.parametrize("command", ["train", "eval", "benchmark"])
def test_cli_threads_option_is_checked(command):
    result = CliRunner().invoke(cli.main, [command, "--threads", "0"])
    assert result.exit_code == 2 and "--threads" in result.output


def test_superpixel_build_uses_the_applied_threads_as_workers(restore_pools, monkeypatch):
    from geaet_dgl.data.superpixels import slic as superpixels

    seen = {}

    class FakePool:
        def __init__(self, processes):
            seen["processes"] = processes

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def imap(self, fn, tasks):
            return map(fn, tasks)

    class FakeContext:
        Pool = FakePool

    monkeypatch.setattr(superpixels.multiprocessing, "get_context", lambda: FakeContext())
    images = (torch.rand(6, 28, 28) * 255).to(torch.uint8).numpy()
    apply_threads(2)
    records = superpixels.build_superpixels(images, chunk_size=2, progress=False)
    assert seen["processes"] == 2 and len(records) == 6
    assert threads_module.current_threads() == 2
