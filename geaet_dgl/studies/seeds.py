"""One training per seed, each in its own run directory, and their aggregate.

``out/seed<k>`` holds seed k's ordinary run directory. Rerunning the same call
skips seeds whose run finished (``summary.json`` covers all epochs), resumes
seeds that were interrupted (``last.pt`` exists) and starts the rest, so an
interrupted study continues where it stopped. A seed directory made with a
different configuration is refused rather than mixed into the aggregate.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .. import training
from ..config import OptionConflict
from ..data.identity import identity_changes
from ..training import run_dir as files
from .aggregate import aggregate_markdown, aggregate_summaries

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

AGGREGATE_MD = "aggregate.md"
AGGREGATE_JSON = "aggregate.json"

#: RunConfig fields that may differ between the saved run and a rerun (where and how fast it runs, not what).
_EXECUTION_FIELDS = ("device", "workers", "checkpoint_every", "threads")


def check_seeds_options(seeds: Sequence[int], *, nproc: Optional[int], seed: Optional[int], resume: bool) -> None:
    """One run per seed goes one after another in this process, each with its own seed and resume."""
    if seeds and nproc not in (None, 1):
        raise OptionConflict("--seeds runs one seed after another in this process; drop --nproc")
    if seeds and (resume or seed is not None):
        raise OptionConflict("--seeds runs (and resumes) one run per seed; drop --seed/--resume")


def seed_dir(out: PathLike, seed: int) -> Path:
    return Path(out) / f"seed{seed}"


def run_seed(run: "training.RunConfig", run_dir: PathLike, overwrite: bool = False,
             progress: bool = True) -> Dict[str, Any]:
    """Train (or skip, or resume) one run in ``run_dir``; return its summary.

    - ``summary.json`` present and covering ``train.epochs`` epochs: skipped.
    - ``last.pt`` present: resumed (``training.resume``).
    - otherwise: a new run (files of a run that wrote no checkpoint are replaced).
    ``overwrite`` always starts afresh.
    """
    run_dir = Path(run_dir)
    if not overwrite and run_dir.is_dir() and any(run_dir.iterdir()):
        _check_same_config(run, run_dir)
        summary_path = run_dir / files.SUMMARY
        if summary_path.is_file():
            summary = json.loads(summary_path.read_text())
            if summary.get("epochs") == run.train.epochs:
                log.info("seed %s: finished run in %s, skipped", run.train.seed, run_dir)
                return summary
        if (run_dir / files.LAST).is_file():
            log.info("seed %s: resuming %s", run.train.seed, run_dir)
            return training.resume(run_dir, device=run.device, workers=run.workers, progress=progress,
                                   threads=run.threads)
        overwrite = True  # started but never checkpointed: nothing to keep
    log.info("seed %s: training in %s", run.train.seed, run_dir)
    return training.train(run, run_dir, overwrite=overwrite, progress=progress)


def _check_same_config(run: "training.RunConfig", run_dir: Path) -> None:
    path = run_dir / files.CONFIG_JSON
    if not path.is_file():
        return
    try:
        saved = training.normalised_run_dict(json.loads(path.read_text()))  # older layouts: new fields as defaults
    except (ValueError, training.ConfigError) as exc:
        raise files.RunDirError(f"{path} cannot be read ({exc}); choose another --out, or pass --overwrite to "
                                "replace the run") from exc
    wanted = training.normalised_run_dict(run.to_dict())
    recorded, found = (saved.get("data") or {}).get("file_identity"), wanted["data"].get("file_identity")
    if recorded and found and recorded != found:
        changes = identity_changes(recorded, found)
        raise files.RunDirError(
            f"{run.data.data_file} changed since {run_dir} was trained ({'; '.join(changes)}); the seeds of one "
            "study must see the same graphs: restore the file, or start a new study with another --out")
    for config in (saved, wanted):  # checked against the data itself when the seed's run reads it
        (config.get("data") or {}).pop("fingerprint", None)
    differ = sorted(key for key in wanted if key not in _EXECUTION_FIELDS and saved.get(key) != wanted[key])
    if differ:
        detail = []
        for key in differ:
            if isinstance(wanted[key], dict) and isinstance(saved.get(key), dict):
                detail += [f"{key}.{k}" for k in sorted(set(wanted[key]) | set(saved[key]))
                           if wanted[key].get(k) != saved[key].get(k)]
            else:
                detail.append(key)
        raise files.RunDirError(
            f"{run_dir} holds a run with a different configuration ({', '.join(detail)}); "
            "choose another --out, or pass --overwrite to replace it"
        )


def run_seeds(run: "training.RunConfig", seeds: Sequence[int], out: PathLike, overwrite: bool = False,
              progress: bool = True, title: str = "",
              on_seed: Optional[Callable[[int, Dict[str, Any]], None]] = None) -> Dict[str, Any]:
    """Train ``run`` once per seed into ``out/seed<k>``; write and return the aggregate.

    Parameters
    ----------
    run : RunConfig
        The configuration; ``train.seed`` is replaced by each seed.
    seeds : sequence of int
        Distinct seeds (at least one).
    out : path-like
        Study directory: ``seed<k>/`` run directories, ``aggregate.md``, ``aggregate.json``.
    overwrite : bool
        Retrain every seed from scratch.
    on_seed : callable, optional
        Called as ``on_seed(seed, summary)`` after each seed.

    Returns
    -------
    dict
        :func:`aggregate_summaries` of the per-seed summaries, plus ``run_dirs``.
    """
    seeds = list(seeds)
    if not seeds:
        raise training.RunDirError("give at least one seed")
    if len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise training.RunDirError(f"seeds must be distinct and >= 0, got {seeds}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summaries: List[Dict[str, Any]] = []
    for seed in seeds:
        seeded = dataclasses.replace(run, train=dataclasses.replace(run.train, seed=seed))
        summary = run_seed(seeded, seed_dir(out, seed), overwrite=overwrite, progress=progress)
        summaries.append(summary)
        if on_seed is not None:
            on_seed(seed, summary)
    agg = aggregate_summaries(summaries)
    agg["run_dirs"] = [str(seed_dir(out, s)) for s in seeds]
    files.write_json(out / AGGREGATE_JSON, agg)
    (out / AGGREGATE_MD).write_text(aggregate_markdown(agg, title or f"{run.data.dataset} / preset {run.preset}"))
    return agg
