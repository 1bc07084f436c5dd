"""Opening a trained run: checkpoint -> run configuration -> model -> weights -> eval mode.

Every command that uses a trained model (``eval``, ``predict``, ``attention``,
``export-reference``) opens its checkpoint with :func:`open_trained_run`, so
a missing, corrupt or edited checkpoint reads the same one-line
:class:`~geaet_dgl.training.CheckpointError` everywhere.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, Mapping, NamedTuple, Optional, Union

from ..models import build_model
from ..models.geaet import GEAET
from ..training.checkpoint import load_checkpoint, load_own_weights
from ..training.environment import check_environment
from ..config import RunConfig

PathLike = Union[str, os.PathLike]


class TrainedRun(NamedTuple):
    """A trained run: its configuration, its model (eval mode, on the CPU) and the checkpoint as read."""

    run: RunConfig
    model: GEAET
    checkpoint: Dict[str, Any]


def open_trained_run(path: PathLike, data: Optional[Mapping[str, Any]] = None, **settings: Any) -> TrainedRun:
    """Open the checkpoint ``path`` (a ``best.pt`` / ``last.pt``) as its run's model with its weights.

    Parameters
    ----------
    path : path-like
    data : mapping, optional
        :class:`~geaet_dgl.config.DataOptions` fields replacing the run's
        (``data_dir``, ``limit_test``, ...).
    **settings
        :class:`~geaet_dgl.config.RunConfig` fields replacing the run's
        (``device``, ``workers``, ``threads``); with ``data``, checked again.

    Raises
    ------
    CheckpointError
        The file is missing, truncated or corrupt, or its weights do not fit its
        own model configuration (the tensors that differ are named).
    ConfigError
        A replaced value is invalid.

    Examples
    --------
    >>> run, model, _ = open_trained_run("runs/mnist-mnist-seed0/best.pt", {"limit_test": 100})  # doctest: +SKIP
    """
    state = load_checkpoint(path)
    run = check_environment(RunConfig.from_dict(state["run_config"]))
    if data or settings:
        run = check_environment(dataclasses.replace(run, data=dataclasses.replace(run.data, **dict(data or {})),
                                                    **settings).validate())
    model = build_model(run.model)
    load_own_weights(model, state, path)
    return TrainedRun(run, model.eval(), state)
