"""TensorBoard event files of a run: its per-epoch metrics, learning rate and parameter count.

``train --tensorboard`` writes into the run directory (beside
``metrics.jsonl``; view with ``tensorboard --logdir RUN_DIR``), one point per
epoch at ``global_step = epoch`` (1-based):

* ``loss/train``, ``loss/val``, ``loss/test`` and ``<metric>/train`` etc.
  (e.g. ``accuracy/val``), plus the extra metrics a task logs (``hits@1/val``);
* ``lr``, ``time/seconds_per_epoch``, ``time/graphs_per_s``;
* ``model/parameters`` at step 0.

A resumed run continues the same curves: its writer starts with
``purge_step`` = the checkpoint's last finished epoch ``k`` and writes epoch
``k`` again, so TensorBoard hides whatever the interrupted process logged
after the checkpoint and every epoch appears once.

``tensorboard`` is an optional dependency (``pip install tensorboard``);
:func:`~geaet_dgl.training.environment.require_tensorboard` says so in one line when it is missing
(:func:`~geaet_dgl.training.environment.check_environment` calls it, so a run with ``--tensorboard`` stops
before it starts).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Sequence, Union

from .environment import require_tensorboard

PathLike = Union[str, os.PathLike]


#: History fields logged under other names than ``<kind>/<split>``.
_RENAMED = {"lr": "lr", "seconds": "time/seconds_per_epoch", "graphs_per_s": "time/graphs_per_s"}
_SPLITS = ("train", "val", "test")


def epoch_scalars(row: Dict[str, Any], metric: str) -> Dict[str, float]:
    """One ``metrics.jsonl`` row -> ``{tag: value}``: ``train_loss`` -> ``loss/train``,
    ``val_metric`` -> ``<metric>/val``, ``val_hits@1`` -> ``hits@1/val``, ``lr`` -> ``lr``, ..."""
    scalars = {}
    for key, value in row.items():
        if key == "epoch" or value is None or not isinstance(value, (int, float)):
            continue
        if key in _RENAMED:
            scalars[_RENAMED[key]] = float(value)
            continue
        split, _, name = key.partition("_")
        if split in _SPLITS and name:
            scalars[f"{metric if name == 'metric' else name}/{split}"] = float(value)
    return scalars


class TensorBoardLog:
    """Writes a run's epochs as TensorBoard scalars (see the module docstring).

    Parameters
    ----------
    run_dir : path-like
    metric : str
        The run's metric name (``train.metric``).
    history : sequence of dict
        Epochs already finished (the checkpoint's ``history``); a non-empty
        history means a resumed run.
    num_parameters : int
    """

    def __init__(self, run_dir: PathLike, metric: str, history: Sequence[Dict[str, Any]], num_parameters: int):
        writer_class = require_tensorboard()
        self.metric = metric
        done = len(history)
        self.writer = writer_class(log_dir=os.fspath(run_dir), purge_step=done if done else None)
        if done:
            self.log_epoch(history[-1])
        else:
            self.writer.add_scalar("model/parameters", num_parameters, 0)
            self.writer.flush()

    def log_epoch(self, row: Dict[str, Any]) -> None:
        """Add one epoch's row (its ``epoch`` field is the step) and flush."""
        for tag, value in epoch_scalars(row, self.metric).items():
            self.writer.add_scalar(tag, value, int(row["epoch"]))
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def open_log(enabled: bool, run_dir: PathLike, metric: str, history: Sequence[Dict[str, Any]],
             num_parameters: int) -> Optional[TensorBoardLog]:
    """A :class:`TensorBoardLog` if ``enabled``, else None."""
    return TensorBoardLog(run_dir, metric, history, num_parameters) if enabled else None
