"""Training checkpoints: everything needed to continue a run bit for bit.

A checkpoint is a ``torch.save`` file holding plain containers and tensors
only, so it loads with ``weights_only=True`` (opening one never runs code):

========================  ====================================================
``format_version``        :data:`FORMAT_VERSION` of the writer
``package_version``       ``geaet_dgl.__version__`` of the writer
``run_config``            the full resolved run configuration (``model``,
                          ``train``, ``data``, ... as nested dicts, with its
                          ``config_version``; :func:`load_checkpoint` returns
                          it in this version's layout)
``model``                 model ``state_dict``
``optimizer``             optimiser ``state_dict``
``scheduler``             learning-rate scheduler ``state_dict``
``rng``                   python, numpy, torch (and CUDA) generator states
``epoch``, ``step``       position: ``step`` batches of (0-based) ``epoch``
                          are done (``step == 0``: the epoch has not started)
``global_step``           optimiser steps taken in the whole run
``best``                  best validation so far (epoch, val and test
                          metric) or None
``history``               one dict of metrics per finished epoch
``progress``              the unfinished epoch's training accumulator state
                          (see ``MetricAccumulator.state_dict``) or None
``ranks`` (optional)      multi-process runs: ``world_size`` and every
                          rank's ``rng`` and ``progress`` (``rng`` and
                          ``progress`` above are rank 0's)
========================  ====================================================

Files are written atomically (temp file in the same folder, flush, fsync,
``os.replace``), so a run killed while saving leaves the previous checkpoint.
"""
from __future__ import annotations

import copy
import io
import json
import os
import random
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
import torch

from .. import __version__
from ..atomic import atomic_write
from ..config import ConfigError
from ..config import normalised_run_dict
from ..errors import GeaetError

FORMAT_VERSION = 1

REQUIRED_KEYS = ("format_version", "package_version", "run_config", "model", "optimizer", "scheduler",
                 "rng", "epoch", "step", "global_step", "best", "history", "progress")


class CheckpointError(GeaetError, ValueError):
    """A checkpoint cannot be read, is from a newer version, or does not fit."""


def capture_rng_state() -> Dict[str, Any]:
    """The python, numpy, torch CPU and CUDA generator states, as plain containers."""
    _, keys, pos, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": {"keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached_gaussian": float(cached)},
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore_rng_state(state: Dict[str, Any]) -> None:
    """Inverse of :func:`capture_rng_state` (CUDA states only if devices are present)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np_state = state["numpy"]
    np.random.set_state(("MT19937", np_state["keys"].numpy().astype(np.uint32), np_state["pos"],
                         np_state["has_gauss"], np_state["cached_gaussian"]))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


#: The parts of a training state :func:`checkpoint_state` needs, and those it may be given too.
TRAINING_STATE_KEYS = ("model", "optimizer", "scheduler", "epoch", "step", "global_step", "best", "history",
                       "progress")
OPTIONAL_STATE_KEYS = ("ranks", "rng")


def checkpoint_state(run_config: Dict[str, Any], training: Mapping[str, Any]) -> Dict[str, Any]:
    """The full training state as a checkpoint holds it: the run's configuration and ``training``, a mapping of
    :data:`TRAINING_STATE_KEYS` (and optionally :data:`OPTIONAL_STATE_KEYS`).

    ``model``, ``optimizer`` and ``scheduler`` are the live objects or their ``state_dict()``\ s (a copy taken
    earlier); ``epoch``, ``step``, ``global_step`` ints; ``best`` a dict or None; ``history`` the list of epoch
    rows; ``progress`` the unfinished epoch's state or None; ``rng`` the :func:`capture_rng_state` taken with
    them (default: now). ``ranks`` (multi-process runs only): ``{"world_size", "rng": [per rank], "progress":
    [per rank]}``, stored under key ``ranks``."""
    missing = [key for key in TRAINING_STATE_KEYS if key not in training]
    unknown = sorted(set(training) - set(TRAINING_STATE_KEYS) - set(OPTIONAL_STATE_KEYS))
    if missing or unknown:
        raise TypeError(f"checkpoint_state: missing {missing}, unknown {unknown} training state keys")
    model, optimizer, scheduler = training["model"], training["optimizer"], training["scheduler"]
    rng, ranks = training.get("rng"), training.get("ranks")

    def state_of(obj: Any) -> Any:
        return obj if isinstance(obj, dict) else obj.state_dict()

    state = {
        "format_version": FORMAT_VERSION,
        "package_version": __version__,
        "run_config": run_config,
        "model": state_of(model),
        "optimizer": state_of(optimizer),
        "scheduler": state_of(scheduler),
        "rng": capture_rng_state() if rng is None else rng,
        "epoch": training["epoch"],
        "step": training["step"],
        "global_step": training["global_step"],
        "best": training["best"],
        "history": training["history"],
        "progress": training["progress"],
    }
    if ranks is not None:
        state["ranks"] = ranks
    return state


def copied(state: Any) -> Any:
    """A copy of ``state`` (nested dicts, lists and tuples of tensors and plain values, as ``state_dict()``\ s
    are) that later training steps do not change: tensors cloned, containers rebuilt, anything else deep-copied.
    Several times faster than ``copy.deepcopy`` on a model's and an optimiser's state."""
    if isinstance(state, torch.Tensor):
        return state.detach().clone()
    if isinstance(state, dict):
        return type(state)((key, copied(value)) for key, value in state.items())
    if isinstance(state, (list, tuple)) and type(state) in (list, tuple):
        return type(state)(copied(value) for value in state)
    if isinstance(state, (int, float, str, bool, type(None))):
        return state
    return copy.deepcopy(state)


def serialised(state: Dict[str, Any]) -> bytes:
    """``state`` (:func:`checkpoint_state`) as the bytes of a checkpoint file."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def write_checkpoint_bytes(path: "os.PathLike | str", data: bytes) -> None:
    """Write serialised state (:func:`serialised`) to ``path`` atomically; a :class:`CheckpointError`
    naming the fix when the disk refuses."""
    try:
        with atomic_write(path) as handle:
            handle.write(data)
    except OSError as exc:  # disk full, quota, permissions: the previous file is still whole (atomic write)
        folder = os.path.dirname(os.path.abspath(path))
        raise CheckpointError(
            f"could not write checkpoint {path} ({exc.strerror or exc}); the previous "
            f"{os.path.basename(path)} (if any) is intact; free space or fix permissions in {folder}, then "
            f"continue with `geaet-dgl train --resume {folder}`"
        ) from exc


def save_checkpoint(path: "os.PathLike | str", **state: Any) -> None:
    """Write the full training state to ``path`` atomically (see the module docstring); the keyword arguments
    are ``run_config`` and :func:`checkpoint_state`'s training state (``model``, ``optimizer``, ``scheduler``,
    ``epoch``, ``step``, ``global_step``, ``best``, ``history``, ``progress`` and, in multi-process runs,
    ``ranks``)."""
    if "run_config" not in state:
        raise TypeError("save_checkpoint() missing keyword argument 'run_config'")
    training = dict(state)
    write_checkpoint_bytes(path, serialised(checkpoint_state(training.pop("run_config"), training)))


def load_checkpoint(path: "os.PathLike | str", expect_model: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Read and validate a checkpoint.

    Parameters
    ----------
    path : path-like
    expect_model : dict, optional
        The model configuration (``to_dict(ModelConfig)``) the caller will
        load the weights into; every differing field is named in the error.

    Raises
    ------
    CheckpointError
        If the file is missing, truncated or corrupt, was written by a newer
        format, or its model configuration differs from ``expect_model``.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises several types for damaged zip/pickle data
        raise CheckpointError(
            f"checkpoint {path} is truncated or corrupt and cannot be read ({type(exc).__name__}: "
            f"{_first_line(exc)}); use another checkpoint (best.pt or last.pt) of the run"
        ) from exc
    if not isinstance(state, dict) or "format_version" not in state:
        raise CheckpointError(f"{path} is not a geaet-dgl checkpoint (no format_version)")
    version = state["format_version"]
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(
            f"checkpoint {path} has format version {version} (written by geaet-dgl "
            f"{state.get('package_version', '?')}); this geaet-dgl {__version__} reads format "
            f"{FORMAT_VERSION} or older: upgrade geaet-dgl"
        )
    missing = [key for key in REQUIRED_KEYS if key not in state]
    if missing:
        raise CheckpointError(f"checkpoint {path} lacks {', '.join(missing)}; it is damaged or not from geaet-dgl")
    state["run_config"] = _current_layout(state["run_config"], path)
    if expect_model is not None:
        check_model_config(state, expect_model, where=f"checkpoint {path}")
    return state


def _current_layout(run_config: Any, path: str) -> Dict[str, Any]:
    """The checkpoint's run configuration in this version's layout (fields added since read as defaults)."""
    try:
        return normalised_run_dict(run_config)
    except ConfigError as exc:
        raise CheckpointError(f"checkpoint {path} holds a run configuration this geaet-dgl cannot read ({exc})"
                              ) from exc


def check_model_config(state: Dict[str, Any], expected: Dict[str, Any], where: str = "the checkpoint") -> None:
    """Raise CheckpointError naming every model field where ``state`` differs from ``expected``."""
    diffs = config_differences(state["run_config"].get("model", {}), expected, prefix="model.")
    if diffs:
        raise CheckpointError(f"{where} holds a different model: {'; '.join(diffs)} (checkpoint vs expected)")


#: Run settings that may legitimately differ between a run's config.json and its checkpoints.
_MAY_CHANGE_ON_RESUME = ("device", "workers", "world_size", "threads")


def check_belongs_to_run(state: Dict[str, Any], config_path: "os.PathLike | str", where: str) -> None:
    """Raise CheckpointError if ``state`` was written by another run than the one ``config_path`` describes.

    ``config_path`` is the run directory's ``config.json`` (written when the
    run started); every differing field (model, training, data, preset) is
    named. A missing or unreadable ``config.json`` is not checked.
    """
    try:
        with open(config_path) as handle:
            expected = normalised_run_dict(json.load(handle))  # an older layout: fields added since as defaults
    except (OSError, ValueError, ConfigError):
        return
    saved = normalised_run_dict(state["run_config"])
    saved = {k: v for k, v in saved.items() if k not in _MAY_CHANGE_ON_RESUME}
    expected = {k: v for k, v in expected.items() if k not in _MAY_CHANGE_ON_RESUME}
    diffs = config_differences(saved, expected)
    if diffs:
        shown = "; ".join(diffs[:6]) + (f"; ... ({len(diffs)} fields)" if len(diffs) > 6 else "")
        raise CheckpointError(
            f"{where} is from another run than {config_path}: {shown} (checkpoint vs config.json); "
            "put the run's own last.pt back, or start a new run with --out"
        )


def weight_differences(model: torch.nn.Module, weights: Dict[str, torch.Tensor], limit: int = 4) -> str:
    """Words for how ``weights`` fail to fit ``model``: missing, unexpected and reshaped tensors."""
    own = model.state_dict()
    missing = [k for k in own if k not in weights]
    unexpected = [k for k in weights if k not in own]
    reshaped = [f"{k} {tuple(weights[k].shape)} vs {tuple(own[k].shape)}" for k in own
                if k in weights and tuple(weights[k].shape) != tuple(own[k].shape)]
    parts = []
    for label, items in (("shape differs", reshaped), ("missing", missing), ("unexpected", unexpected)):
        if items:
            more = f", ... ({len(items)} in all)" if len(items) > limit else ""
            parts.append(f"{label}: {', '.join(items[:limit])}{more}")
    return "; ".join(parts) or "no difference in names or shapes"


def load_own_weights(model: torch.nn.Module, state: Dict[str, Any], path: Any) -> torch.nn.Module:
    """Load checkpoint ``state``'s weights into ``model``, built from the checkpoint's own configuration.

    Raises a one-line :class:`CheckpointError` naming the tensors that do not fit (the file was edited
    or damaged). Returns ``model``.
    """
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        raise CheckpointError(
            f"checkpoint {path}: its weights do not fit its own model configuration "
            f"({weight_differences(model, state['model'])}); it was edited or damaged: use another checkpoint "
            "of the run"
        ) from exc
    return model


def config_differences(saved: Dict[str, Any], expected: Dict[str, Any], prefix: str = "") -> List[str]:
    """Dotted names of the fields that differ, as ``"model.hidden_dim: 40 != 64"`` strings."""
    diffs = []
    for key in sorted(set(saved) | set(expected)):
        name = prefix + key
        a, b = saved.get(key, "<absent>"), expected.get(key, "<absent>")
        if isinstance(a, dict) and isinstance(b, dict):
            diffs += config_differences(a, b, prefix=name + ".")
        elif a != b:
            diffs.append(f"{name}: {a!r} != {b!r}")
    return diffs


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else "no detail"
