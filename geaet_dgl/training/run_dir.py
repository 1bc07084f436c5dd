"""The run directory: its files, and the rule that a run is never overwritten by accident.

A run directory holds

- ``config.json`` / ``config.yaml``: the full resolved run configuration,
- ``metrics.jsonl``: one JSON object per finished epoch,
- ``best.pt`` / ``last.pt``: best-validation and latest checkpoints,
- ``summary.json``: the result (best epoch, its val/test metric, speed),
- ``curves.png``: learning curves, and ``train.log``;
- ``failed.json``: a study's run that diverged (:mod:`geaet_dgl.training.failures`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

import yaml

from ..atomic import atomic_write
from ..errors import GeaetError

PathLike = Union[str, os.PathLike]

CONFIG_JSON = "config.json"
CONFIG_YAML = "config.yaml"
METRICS = "metrics.jsonl"
BEST = "best.pt"
LAST = "last.pt"
SUMMARY = "summary.json"
CURVES = "curves.png"
LOG = "train.log"
FAILED = "failed.json"
RUN_FILES = (CONFIG_JSON, CONFIG_YAML, METRICS, BEST, LAST, SUMMARY, CURVES, LOG, FAILED)
#: TensorBoard's event files (``--tensorboard``), also run files: an overwritten run must not mix old curves in.
TENSORBOARD_EVENTS = "events.out.tfevents.*"


class RunDirError(GeaetError, ValueError):
    """The run directory cannot be used as asked (exists, or has nothing to resume)."""


def default_run_dir(dataset: str, preset: str, seed: int, root: PathLike = "runs") -> Path:
    """``runs/<dataset>-<preset>-seed<seed>``: where a run goes unless told (``train --out``)."""
    return Path(root) / f"{dataset}-{preset}-seed{seed}"


def default_seeds_dir(dataset: str, preset: str, root: PathLike = "runs") -> Path:
    """``runs/<dataset>-<preset>-seeds``: where one run per seed goes unless told (``train --seeds``)."""
    return Path(root) / f"{dataset}-{preset}-seeds"


def default_splits_dir(dataset: str, preset: str, root: PathLike = "runs") -> Path:
    """``runs/<dataset>-<preset>-splits``: where one run per public split goes unless told (``train --splits``)."""
    return Path(root) / f"{dataset}-{preset}-splits"


def default_sweep_dir(dataset: str, preset: Optional[str], root: PathLike = "runs") -> Path:
    """``runs/sweep-<dataset>-<preset or 'default'>``: where a sweep goes unless told (``sweep --out``)."""
    return Path(root) / f"sweep-{dataset}-{preset or 'default'}"


def prepare_new_run_dir(path: PathLike, overwrite: bool) -> Path:
    """Create ``path`` for a fresh run.

    An existing non-empty directory is refused unless ``overwrite``; then only
    the files a run writes (:data:`RUN_FILES` and TensorBoard's event files)
    are deleted, anything else in the directory is left alone.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunDirError(f"run directory {path} exists and is not a directory; choose another --out")
    if path.is_dir() and any(path.iterdir()):
        if not overwrite:
            raise RunDirError(
                f"run directory {path} already exists; continue it with `geaet-dgl train --resume {path}`, "
                "replace it with --overwrite, or choose another --out"
            )
        for name in RUN_FILES:
            (path / name).unlink(missing_ok=True)
        for events in path.glob(TENSORBOARD_EVENTS):
            events.unlink(missing_ok=True)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_json(path: PathLike, obj: Any) -> None:
    """Pretty JSON, written atomically."""
    with atomic_write(path, "w") as handle:
        json.dump(obj, handle, indent=2, sort_keys=False)
        handle.write("\n")


def write_config(run_dir: PathLike, config: Dict[str, Any]) -> None:
    """The resolved configuration as ``config.json`` and ``config.yaml``."""
    run_dir = Path(run_dir)
    write_json(run_dir / CONFIG_JSON, config)
    with atomic_write(run_dir / CONFIG_YAML, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)


def write_metrics(run_dir: PathLike, rows: Iterable[Dict[str, Any]]) -> None:
    """Rewrite ``metrics.jsonl`` with ``rows`` (one JSON object per line)."""
    with atomic_write(Path(run_dir) / METRICS, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def no_checkpoint_to_resume(run_dir: PathLike) -> RunDirError:
    """The error for ``--resume`` of a run directory without ``last.pt`` (the run stopped before its first one)."""
    return RunDirError(f"{run_dir} has no {LAST} to resume from: the run stopped (crashed, killed or failed) before "
                       f"its first checkpoint was written; start it again in the same folder with the command that "
                       f"started it plus --overwrite (without --resume), or choose another --out")
