"""Tiny runs shared by the training and CLI tests: a 1-layer width-8 GEAET on a few synthetic graphs."""
import contextlib
import os
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "cli.py"

#: --set overrides that shrink the MNIST preset to ~1.3k parameters.
TINY_MODEL = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2}
TINY_TRAIN = {"train.batch_size": 8, "train.warmup_epochs": 1}
TINY_DATA = {"limit_train": 40, "limit_val": 16, "limit_test": 16}


def cli_args(epochs: int, out, extra=()) -> list:
    """``geaet-dgl train`` arguments for a tiny synthetic run of ``epochs`` epochs into ``out``."""
    args = ["train", "--dataset", "synthetic", "--epochs", str(epochs), "--out", str(out), "--no-progress"]
    for key, value in {**TINY_MODEL, **TINY_TRAIN}.items():
        args += ["--set", f"{key}={value}"]
    for key, value in TINY_DATA.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args + list(extra)


def subprocess_command(args: list) -> list:
    return [sys.executable, str(CLI)] + [str(a) for a in args]


#: Environment for CLI subprocesses: one thread, like the in-process runs (bitwise comparable, and far
#: faster than oversubscribed OpenMP on a busy 2-core machine).
SUBPROCESS_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def one_thread():
    """One torch thread, and ``$OMP_NUM_THREADS=1`` so that runs started here default to one thread too."""
    previous, previous_env = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        torch.set_num_threads(previous)
        if previous_env is None:
            os.environ.pop("OMP_NUM_THREADS", None)
        else:
            os.environ["OMP_NUM_THREADS"] = previous_env


def strip_timing(rows: list) -> list:
    """History rows without wall-clock fields (which legitimately differ between runs)."""
    return [{k: v for k, v in row.items() if k not in ("seconds", "graphs_per_s")} for row in rows]
