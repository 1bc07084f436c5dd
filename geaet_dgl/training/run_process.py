"""What a training process does around the one loop (:mod:`.trainer`): the task of its data, seeding, starting
from a pretrained model, loading the data rank 0 first, the run's log file, the stop signals
(:class:`TrainingInterrupted`) and the words for a position.

``SIGINT`` / ``SIGTERM`` (:func:`stop_on_signals`) ask the trainer to finish its current step and write
``last.pt``; a second signal stops at once. :func:`log_to_file` copies the package's log records to the run's
``train.log`` while it trains.
"""
from __future__ import annotations

import contextlib
import json
import logging
import random
import signal
import threading
from pathlib import Path
from typing import Any, Iterator, Optional, Union

import numpy as np
import torch

from ..config import RunConfig, to_dict
from ..data import DatasetSplits
from ..data.nodes.node_graph import NodeGraph
from ..data.run_splits import load_splits
from .checkpoint import check_model_config, load_checkpoint
from .distributed import SINGLE_PROCESS, DistContext
from .graph_task import GraphTask
from .node_task import NodeTask
from .task import Task

log = logging.getLogger("geaet_dgl.training.trainer")  # the loop's logger: its records read as before


class TrainingInterrupted(Exception):
    """A stop signal arrived; ``last.pt`` holds the state after the last finished step."""

    def __init__(self, message: str, signum: int):
        super().__init__(message)
        self.signum = signum

    def __reduce__(self):  # picklable, to cross from a spawned rank to the launcher
        return type(self), (str(self), self.signum)


def make_task(run: RunConfig, data: Union[DatasetSplits, NodeGraph], device: torch.device,
              dist: DistContext = SINGLE_PROCESS) -> Task:
    """The task of ``data`` (see :func:`~geaet_dgl.data.run_splits.load_splits`): one graph with node masks
    (:class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`) trains as a :class:`~.node_task.NodeTask`,
    anything else as a :class:`~.graph_task.GraphTask`."""
    if isinstance(data, NodeGraph):
        return NodeTask(run, data, device, dist)
    return GraphTask(run, data, device, dist)


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def start_from_pretrained(model: torch.nn.Module, run: RunConfig) -> None:
    """``run.train.pretrained``: that checkpoint's model weights into ``model``; ``run.train.freeze_main``: every
    parameter but the prediction head's frozen."""
    if run.train.pretrained:
        state = load_checkpoint(run.train.pretrained)
        check_model_config(state, to_dict(run.model))
        model.load_state_dict(state["model"])
    if run.train.freeze_main:
        for name, param in model.named_parameters():
            param.requires_grad_(name.startswith("head."))


def config_version(path: Path) -> Optional[int]:
    """``config_version`` of a run's ``config.json`` (1 before the key existed; None if unreadable)."""
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return saved.get("config_version", 1) if isinstance(saved, dict) else None


def load_splits_in_turn(run: RunConfig, progress: bool, dist: DistContext,
                         allow_changed_data: bool = False) -> DatasetSplits:
    """Rank 0 loads (and builds or caches) the data first, then the other ranks read it."""
    if not dist.is_main:
        dist.barrier()
    splits = load_splits(run.data, run.model, progress=progress and dist.is_main,
                         allow_changed_data=allow_changed_data)
    if dist.is_main:
        dist.barrier()
    return splits


def log_data(splits: DatasetSplits) -> None:
    """One log line: the data's name, split sizes and source."""
    log.info("data: %s %s (%s)", splits.name, splits.sizes(), splits.source)


def position_words(epoch: int, step: int) -> str:
    """Words for a checkpoint position: ``epoch`` epochs finished, then ``step`` batches."""
    if step == 0:
        return f"after epoch {epoch}"
    return f"in epoch {epoch + 1} after {step} batches"


def short_list(items: list, limit: int = 8) -> str:
    """``[a, b, ...]``: the first ``limit`` items in words."""
    shown = ", ".join(map(str, items[:limit]))
    return f"[{shown}{', ...' if len(items) > limit else ''}]"


@contextlib.contextmanager
def closing(resource: Any) -> Iterator[None]:
    """Close ``resource`` (if not None) when the block ends, however it ends."""
    try:
        yield
    finally:
        if resource is not None:
            resource.close()


@contextlib.contextmanager
def stop_on_signals(trainer: Any) -> Iterator[None]:
    """SIGINT/SIGTERM ask ``trainer`` (a :class:`~.trainer.Trainer`: its ``stop_signal``) to stop after its current
    step; a second one stops at once."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def request_stop(signum, frame):
        if trainer.stop_signal is not None:
            raise KeyboardInterrupt
        trainer.stop_signal = signum
        log.warning("%s received: finishing the current step, then saving a checkpoint (again to stop now)",
                    signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def log_to_file(path: Path) -> Iterator[None]:
    """Copy the package's log records to ``path`` (appending) while training."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package_logger = logging.getLogger("geaet_dgl")
    previous_level = package_logger.level
    package_logger.addHandler(handler)
    if previous_level == logging.NOTSET or previous_level > logging.INFO:
        package_logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        package_logger.removeHandler(handler)
        package_logger.setLevel(previous_level)
        handler.close()
