"""A run of a study that diverged: recorded in its folder, a failed row of the table, skipped when rerun.

When one run of a study (``--seeds``, ``--splits``, ``sweep``) stops on a NaN or infinite loss, the study
writes ``failed.json`` (``{"reason": <the error line>, "error": <its class>}``) into that run's folder and
goes on with the other runs; the table lists the run as failed, with its reason, outside the mean. A rerun
of the same command skips it again (training it again would diverge again: the run is deterministic)
unless ``--retry-failed`` asks to train it afresh; ``--overwrite`` retrains every run anyway.
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Union

from .trainer import NonFiniteLossError
from . import run_dir as files

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

#: What tells the runs of a study apart, in this order (as :data:`.aggregate.LABEL_KEYS`, plus a sweep's point).
_WORD_KEYS = ("point", "split", "seed")


class RecordedFailure(NonFiniteLossError):
    """A study's run that failed before (its ``failed.json``), skipped rather than trained again."""


def record_failure(run_dir: PathLike, exc: BaseException) -> Dict[str, Any]:
    """Write ``run_dir/failed.json`` for the failure ``exc``; -> what was written."""
    failure = {"reason": " ".join(str(exc).split()), "error": type(exc).__name__}
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    files.write_json(Path(run_dir) / files.FAILED, failure)
    return failure


def read_failure(run_dir: PathLike) -> Optional[Dict[str, Any]]:
    """``run_dir/failed.json`` (None: the run has not failed); a damaged record reads as a failure too."""
    path = Path(run_dir) / files.FAILED
    if not path.is_file():
        return None
    try:
        failure = json.loads(path.read_text())
    except (OSError, ValueError):
        failure = None
    if not isinstance(failure, dict) or not isinstance(failure.get("reason"), str):
        return {"reason": f"{path} records a failure it no longer describes", "error": "unknown"}
    return failure


def label_words(label: Dict[str, Any]) -> str:
    """``seed 1`` / ``split 3, seed 1`` / ``point lr=5, seed 0``: a run of a study, for people."""
    return ", ".join(f"{key} {label[key]}" for key in _WORD_KEYS if key in label)


def failed_words(failed: Sequence[Dict[str, Any]]) -> str:
    """``seed 1 (loss became nan ...); seed 2 (...)``: the failed runs of a study, for one line."""
    return "; ".join(f"{label_words(row)} ({row['reason']})" for row in failed)


def report_failures(failed: Sequence[Dict[str, Any]], runs: int, table: PathLike) -> None:
    """Say that runs of a study failed (a warning, the table lists them); every run failed: raise
    :class:`~geaet_dgl.training.NonFiniteLossError` (exit 1), there is no result to report."""
    if not failed:
        return
    labels = "; ".join(label_words(row) for row in failed)
    if len(failed) >= runs:
        raise NonFiniteLossError(
            f"every run of the study failed ({labels}); {label_words(failed[0])}: {failed[0]['reason']}; {table} "
            "lists them all; change what diverges and start the study again in another --out (or with --overwrite)")
    log.warning("%d of %d runs failed and are left out of the mean (%s); %s gives the reasons; rerun the same "
                "command with --retry-failed to train them again", len(failed), runs, labels, table)
