"""One training per seed (or per public split), each in its own run directory, and their aggregate.

``out/seed<k>`` holds seed k's ordinary run directory (``out/split<k>`` split
k's, ``out/split<k>-seed<s>`` for splits and seeds together). Rerunning the same call
skips seeds whose run finished (``summary.json`` covers all epochs), resumes
seeds that were interrupted (``last.pt`` exists) and starts the rest, so an
interrupted study continues where it stopped. A seed directory made with a
different configuration is refused rather than mixed into the aggregate.
A run that diverges (NaN or infinite loss) is recorded as failed and the
study goes on (:mod:`.failures`); the aggregate lists it outside the mean.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .. import training
from ..atomic import atomic_write
from ..config import ConfigError, OptionConflict, RunConfig, normalised_run_dict
from ..config.run import DATA_FOLDERS
from ..data.identity import RECORDED_AFTER_LOADING, identity_changes
from . import run_dir as files
from .run_lock import claim_run_dir
from .aggregate import LABEL_KEYS, aggregate_markdown, aggregate_study
from .failures import RecordedFailure, label_words, read_failure, record_failure

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


def label_dir(out: PathLike, label: Dict[str, int]) -> Path:
    """``out/seed<s>``, ``out/split<k>`` or ``out/split<k>-seed<s>``: one run of a study."""
    return Path(out) / "-".join(f"{key}{label[key]}" for key in LABEL_KEYS if key in label)


def check_splits_options(splits: Sequence[str], *, nproc: Optional[int], split_index_given: bool,
                         resume: bool, partitions: bool) -> None:
    """One run per public split goes one after another in this process, each with its own split."""
    if not splits:
        return
    if nproc not in (None, 1):
        raise OptionConflict("--splits runs one split after another in this process; drop --nproc")
    if resume or partitions:
        raise OptionConflict("--splits trains (and resumes) one run per split of a named node set; drop "
                             "--resume/--partitions")
    if split_index_given:
        raise OptionConflict("--splits picks the splits to train on; drop --split-index")


def split_indices(values: Sequence[str], count: int, dataset: str) -> List[int]:
    """``--splits all`` -> ``0..count-1``; ``--splits 0 3`` -> ``[0, 3]`` (checked against ``count``)."""
    from ..data.nodes.node_splits import check_split_index

    if [v.lower() for v in values] == ["all"]:
        return list(range(count))
    try:
        chosen = [int(v) for v in values]
    except ValueError:
        raise OptionConflict(f"--splits takes 'all' or split indices (e.g. --splits 0 1 2), got "
                             f"{' '.join(values)}") from None
    if len(set(chosen)) != len(chosen):
        raise OptionConflict(f"--splits {' '.join(values)} names a split twice; list each once")
    for index in chosen:
        check_split_index(index, count, dataset, option="--splits")
    return chosen


def run_split_indices(values: Sequence[str], run: RunConfig) -> List[int]:
    """``--splits all|K...`` for ``run`` -> the public split indices of its named node set (``train`` and
    ``sweep`` alike); a run on anything else is refused in one line."""
    from ..data.nodes.node_sets import is_node_set, node_set_splits

    if not is_node_set(run.data.dataset):
        raise OptionConflict(f"--splits trains on the public splits of a named node set (cora, actor, ...), but "
                             f"the run trains on {run.data.name!r}; drop it (or use --seeds)")
    return split_indices(values, node_set_splits(run.data.dataset, run.data.data_dir), run.data.dataset)


def run_seed(run: RunConfig, run_dir: PathLike, overwrite: bool = False,
             progress: bool = True, retry_failed: bool = False) -> Dict[str, Any]:
    """Train (or skip, or resume) one run in ``run_dir``; return its summary.

    - ``failed.json`` present (the run diverged before, :mod:`.failures`): :class:`~.failures.RecordedFailure`
      raised, unless ``retry_failed``: then a new run.
    - ``summary.json`` present and covering ``train.epochs`` epochs: skipped.
    - ``last.pt`` present: resumed (``training.resume``).
    - otherwise: a new run (files of a run that wrote no checkpoint are replaced).
    ``overwrite`` always starts afresh. The folder is claimed for this process first (a second process
    on it is refused: :mod:`~geaet_dgl.training.run_lock`).
    """
    with claim_run_dir(run_dir):
        return _run_seed(run, Path(run_dir), overwrite, progress, retry_failed)


def _run_seed(run: RunConfig, run_dir: Path, overwrite: bool, progress: bool, retry_failed: bool) -> Dict[str, Any]:
    if not overwrite and run_dir.is_dir() and any(run_dir.iterdir()):
        _check_same_config(run, run_dir)
        failure = read_failure(run_dir)
        if failure is not None and not retry_failed:
            log.warning("%s: failed before (%s), skipped; --retry-failed trains it again", _what(run),
                        failure["reason"])
            raise RecordedFailure(failure["reason"])
        if failure is not None:
            log.info("%s: failed before, training it again in %s (--retry-failed)", _what(run), run_dir)
            return training.train(run, run_dir, overwrite=True, progress=progress)
        summary_path = run_dir / files.SUMMARY
        if summary_path.is_file():
            summary = json.loads(summary_path.read_text())
            if summary.get("epochs") == run.train.epochs:
                log.info("%s: finished run in %s, skipped", _what(run), run_dir)
                return summary
        if (run_dir / files.LAST).is_file():
            log.info("%s: resuming %s", _what(run), run_dir)
            return training.resume(run_dir, device=run.device, workers=run.workers, progress=progress,
                                   threads=run.threads)
        overwrite = True  # started but never checkpointed: nothing to keep
    log.info("%s: training in %s", _what(run), run_dir)
    return training.train(run, run_dir, overwrite=overwrite, progress=progress)


def _what(run: RunConfig) -> str:
    """``seed 1``, or ``split 3, seed 1`` for a public split other than the first."""
    split = getattr(run.data, "split_index", 0)
    return f"split {split}, seed {run.train.seed}" if split else f"seed {run.train.seed}"


def _check_same_config(run: RunConfig, run_dir: Path) -> None:
    path = run_dir / files.CONFIG_JSON
    if not path.is_file():
        return
    try:
        saved = normalised_run_dict(json.loads(path.read_text()))  # older layouts: new fields as defaults
    except (ValueError, ConfigError) as exc:
        raise files.RunDirError(f"{path} cannot be read ({exc}); choose another --out, or pass --overwrite to "
                                "replace the run") from exc
    wanted = normalised_run_dict(run.to_dict())
    recorded, found = (saved.get("data") or {}).get("file_identity"), wanted["data"].get("file_identity")
    if recorded and found and recorded != found:
        changes = identity_changes(recorded, found)
        raise files.RunDirError(
            f"{run.data.data_file} changed since {run_dir} was trained ({'; '.join(changes)}); the seeds of one "
            "study must see the same graphs: restore the file, or start a new study with another --out")
    for config in (saved, wanted):  # checked against the data itself when the seed's run reads it
        for key in RECORDED_AFTER_LOADING:
            (config.get("data") or {}).pop(key, None)
        for key in DATA_FOLDERS:  # runs before they were recorded absolute: relative to this directory
            value = (config.get("data") or {}).get(key)
            if isinstance(value, str) and value:
                config["data"][key] = os.path.abspath(os.path.expanduser(value))
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


def run_seeds(run: RunConfig, seeds: Sequence[int], out: PathLike, overwrite: bool = False,
              progress: bool = True, title: str = "",
              on_seed: Optional[Callable[[int, Dict[str, Any]], None]] = None,
              retry_failed: bool = False) -> Dict[str, Any]:
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
        Called as ``on_seed(seed, summary)`` after each seed that finished.
    retry_failed : bool
        Train again the seeds that diverged before (by default they stay failed rows).

    Returns
    -------
    dict
        :func:`~.aggregate.aggregate_study` of the per-seed summaries (``failed``: the seeds that
        diverged, with their reasons), plus ``run_dirs``.
    """
    seeds = _checked_seeds(seeds)
    variants = [({"seed": seed}, _with(run, seed=seed)) for seed in seeds]
    on_run = None if on_seed is None else (lambda label, summary: on_seed(label["seed"], summary))
    return run_study(variants, out, overwrite=overwrite, progress=progress,
                     title=title or f"{run.data.dataset} / preset {run.preset}", on_run=on_run,
                     retry_failed=retry_failed)


def run_splits(run: RunConfig, splits: Sequence[int], out: PathLike,
               seeds: Optional[Sequence[int]] = None, overwrite: bool = False, progress: bool = True,
               title: str = "", on_run: Optional[Callable[[Dict[str, int], Dict[str, Any]], None]] = None,
               retry_failed: bool = False) -> Dict[str, Any]:
    """Train ``run`` once per public split (``data.split_index``) into ``out/split<k>`` -- with ``seeds``, once
    per split and seed into ``out/split<k>-seed<s>`` -- and write and return the aggregate over all of them.

    Each run is what ``train --split-index k [--seed s]`` would train; finished runs are skipped and
    interrupted ones resumed, diverged ones recorded as failed, as for :func:`run_seeds`.
    """
    splits = list(splits)
    if not splits or len(set(splits)) != len(splits) or any(k < 0 for k in splits):
        raise training.RunDirError(f"splits must be distinct and >= 0, at least one, got {splits}")
    variants = []
    for split in splits:
        if seeds:
            variants += [({"split": split, "seed": seed}, _with(run, split=split, seed=seed))
                         for seed in _checked_seeds(seeds)]
        else:
            variants.append(({"split": split}, _with(run, split=split)))
    return run_study(variants, out, overwrite=overwrite, progress=progress,
                     title=title or f"{run.data.dataset} / preset {run.preset}, public splits", on_run=on_run,
                     retry_failed=retry_failed)


def _checked_seeds(seeds: Sequence[int]) -> List[int]:
    seeds = list(seeds)
    if not seeds:
        raise training.RunDirError("give at least one seed")
    if len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise training.RunDirError(f"seeds must be distinct and >= 0, got {seeds}")
    return seeds


def _with(run: RunConfig, split: Optional[int] = None, seed: Optional[int] = None
          ) -> RunConfig:
    """``run`` on public split ``split`` and with ``seed`` (None: unchanged)."""
    if split is not None:
        run = dataclasses.replace(run, data=dataclasses.replace(run.data, split_index=split))
    if seed is not None:
        run = dataclasses.replace(run, train=dataclasses.replace(run.train, seed=seed))
    return run


def run_study(variants: Sequence[Tuple[Dict[str, int], RunConfig]], out: PathLike,
              overwrite: bool = False, progress: bool = True, title: str = "",
              on_run: Optional[Callable[[Dict[str, int], Dict[str, Any]], None]] = None,
              retry_failed: bool = False) -> Dict[str, Any]:
    """Train each ``(label, run)`` of ``variants`` into :func:`label_dir` ``(out, label)`` (skipped when
    finished, resumed when interrupted: :func:`run_seed`); write ``out/aggregate.md`` / ``.json`` over them.

    ``label`` says what tells the run apart (``{"seed": 1}``, ``{"split": 3}``, ``{"split": 3, "seed": 1}``);
    ``on_run(label, summary)`` is called after each run that finished. A run that diverges (NaN or infinite
    loss) is recorded in its folder (:mod:`.failures`) and listed in the aggregate's ``failed``, and the
    study goes on; ``retry_failed`` trains such runs again.
    """
    with claim_run_dir(out):
        return _run_study(variants, Path(out), overwrite, progress, title, on_run, retry_failed)


def _run_study(variants: Sequence[Tuple[Dict[str, int], RunConfig]], out: Path, overwrite: bool, progress: bool,
               title: str, on_run: Optional[Callable[[Dict[str, int], Dict[str, Any]], None]],
               retry_failed: bool) -> Dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    finished: List[Tuple[Dict[str, int], Dict[str, Any]]] = []
    failed: List[Dict[str, Any]] = []
    for label, variant in variants:
        run_dir = label_dir(out, label)
        try:
            summary = run_seed(variant, run_dir, overwrite=overwrite, progress=progress, retry_failed=retry_failed)
        except training.TrainingInterrupted as exc:  # the study, not the one run, is what continues
            said = str(exc).split("; continue with", 1)[0]
            raise training.TrainingInterrupted(
                f"{said}; continue the study by running the same command again (finished runs are skipped, this "
                "one resumes from its last.pt)", exc.signum) from None
        except training.NonFiniteLossError as exc:
            if not isinstance(exc, RecordedFailure):
                record_failure(run_dir, exc)
                log.warning("%s diverged: %s; recorded as failed, the study goes on", label_words(label), exc)
            failed.append({**label, "reason": " ".join(str(exc).split())})
            continue
        finished.append((label, summary))
        if on_run is not None:
            on_run(label, summary)
    agg = aggregate_study([summary for _, summary in finished], [label for label, _ in finished], failed,
                          [key for key in LABEL_KEYS if key in variants[0][0]])
    agg["run_dirs"] = [str(label_dir(out, label)) for label, _ in variants]
    files.write_json(out / AGGREGATE_JSON, agg)
    with atomic_write(out / AGGREGATE_MD, "w") as handle:
        handle.write(aggregate_markdown(agg, title))
    return agg
