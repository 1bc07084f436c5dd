"""The one training loop: seeded, resumable bit for bit, interruptible.

Every epoch trains on the training split in a (seed, epoch)-determined order,
scores validation and test, steps the learning-rate schedule, appends a line
to ``metrics.jsonl`` and writes ``last.pt`` (and ``best.pt`` when validation
improved). The reported test metric is the one at the best-validation epoch.
With ``train.patience`` > 0 the run ends once that many epochs passed without
validation improvement (early stopping).

What a kind of data does inside the loop (its batches, its forward/loss step,
how its splits are scored) is its :class:`~.task.Task`: graph batches
(:mod:`.graph_task`), one graph with node masks (:mod:`.node_task`) or a
partitioned graph (:mod:`geaet_dgl.distgraph.trainer`); everything else is
here, the same for every task (docs/architecture.md).

Resuming (:func:`resume`) restores weights, optimiser, schedule, every RNG
state and the position inside the epoch, so on CPU with a fixed seed the
final weights and metrics equal those of an uninterrupted run. SIGINT or
SIGTERM finishes the current step, writes ``last.pt`` and raises
:class:`TrainingInterrupted`.

Example
-------
>>> from geaet_dgl.training import make_run_config, train
>>> run = make_run_config("synthetic", overrides={"train.epochs": 2, "model.num_layers": 1},
...                       data={"limit_train": 32, "limit_val": 16, "limit_test": 16})
>>> summary = train(run, "runs/example")  # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import statistics
import time
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import torch
from tqdm import tqdm

from .. import __version__
from ..allocator import allocator_mode
from ..openmp_wait import describe_wait_policy
from ..config import to_dict
from ..data import DatasetSplits
from ..data.nodes.node_graph import NodeGraph
from ..models.geaet import set_degree_statistics
from ..threads import apply_threads, per_process_threads, resolve_threads
from . import run_dir as files
from .checkpoint import (capture_rng_state, copied, check_belongs_to_run, check_model_config, checkpoint_state,
                         load_checkpoint, restore_rng_state, serialised, write_checkpoint_bytes)
from .curves import plot_curves
from .environment import check_environment
from .distributed import (SINGLE_PROCESS, DistContext, check_resume_world_size, convert_sync_batchnorm, rank_seed,
                          wrap_model)
from .losses import get_loss
from .metrics import MetricAccumulator, is_improvement
from ..config import CONFIG_VERSION, RunConfig
from ..data.identity import record_data
from .schedule import build_optimizer, build_scheduler
from .task import Task
from .run_process import (TrainingInterrupted, closing, config_version, load_splits_in_turn, log_data, log_to_file,
                          make_task, position_words, seed_everything, short_list, start_from_pretrained,
                          stop_on_signals)
from .tensorboard_log import open_log

log = logging.getLogger(__name__)

#: Seconds between the epoch-end checkpoint writes of a single-process run (the first epoch, the last, an early
#: stop and a stop signal always write): on small graphs an epoch takes less than writing last.pt and best.pt.
CHECKPOINT_SECONDS = 30.0

PathLike = Union[str, os.PathLike]


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; nothing after the last good checkpoint was saved."""


class Trainer:
    """The training loop: owns the model, optimiser, schedule, position and run files of one run.

    What differs between kinds of data is the run's :class:`~.task.Task`
    (batches, the forward/loss step, how the splits are scored); everything
    else is here, the same for every task.

    Parameters
    ----------
    run : RunConfig
    run_dir : path-like
        Existing directory the run's files go to.
    data : Task, DatasetSplits or NodeGraph
        The run's task, or the data (see :func:`~geaet_dgl.data.run_splits.load_splits`) whose task
        :func:`make_task` builds.
    progress : bool
        Show a tqdm bar per epoch.
    dist : DistContext, optional
        This process's place in a data-parallel job (see ``distributed.py``);
        default one process. ``self.model`` is the plain module (evaluation,
        checkpoints), ``self.train_model`` the DistributedDataParallel wrapper.
    """

    def __init__(self, run: RunConfig, run_dir: PathLike, data: Union[Task, DatasetSplits, NodeGraph],
                 progress: bool = True, dist: Optional[DistContext] = None):
        self.run = run
        self.run_dir = Path(run_dir)
        self.show_progress = progress
        self.dist = dist if dist is not None else SINGLE_PROCESS
        self.device = self.dist.device(run.device)
        self.task = data if isinstance(data, Task) else make_task(run, data, self.device, self.dist)
        seed_everything(run.train.seed)
        self.model = self.task.build_model(run.model).to(self.device)
        set_degree_statistics(self.model, self.task.degree_graphs())  # PNA's, from the training graphs
        start_from_pretrained(self.model, run)
        self.train_model = self.model
        if self.dist.enabled:
            if run.sync_bn:
                self.model = convert_sync_batchnorm(self.model, self.device)
            self.train_model = wrap_model(self.model, self.dist, self.device)
            if self.task.reseed_ranks:
                torch.manual_seed(rank_seed(run.train.seed, self.dist.rank))  # own dropout masks per rank
        self.optimizer = build_optimizer([p for p in self.model.parameters() if p.requires_grad], run.train.lr,
                                         run.train.weight_decay,
                                         run.train.clip_grad_norm, run.train.optimizer)
        self.scheduler = build_scheduler(self.optimizer, run.train.warmup_epochs, run.train.epochs,
                                         run.train.schedule)
        self.loss_fn = get_loss(run.train.loss)
        self.epoch = 0  # epochs finished = index of the epoch in progress
        self.step = 0  # batches of that epoch already trained
        self.global_step = 0
        self.best: Optional[Dict[str, Any]] = None
        self.history: list = []
        self.progress_state: Optional[Dict[str, Any]] = None  # the unfinished epoch's train accumulator
        self.stop_signal: Optional[int] = None
        self.stop_agreed = False  # multi-process: every rank saw the stop signal's agreement
        self.saved_at: Optional[Tuple[int, int]] = None  # (epoch, step) of the newest checkpoint
        # Single-process runs write their epoch-end checkpoints at most every CHECKPOINT_SECONDS: in between,
        # copies of the newest epoch's state (and the best epoch's) wait here (``_snapshot``; ``_flush`` writes them).
        self.pending: Dict[str, Dict[str, Any]] = {}
        self.flushed_at = time.monotonic()
        self.tensorboard = None  # TensorBoardLog while fit() runs with run.tensorboard (rank 0)

    def restore(self, state: Dict[str, Any]) -> None:
        """Continue from a checkpoint written by this run (see ``checkpoint.py``)."""
        check_model_config(state, to_dict(self.run.model))
        check_resume_world_size(state, self.dist)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.epoch, self.step, self.global_step = state["epoch"], state["step"], state["global_step"]
        self.best, self.history, self.progress_state = state["best"], list(state["history"]), state["progress"]
        ranks = state.get("ranks") if isinstance(state.get("ranks"), dict) else {}
        if not self.dist.enabled:
            restore_rng_state(state["rng"])
        elif "rng" in ranks:  # every rank's own state (partitioned runs before one loop saved none: kept as is)
            restore_rng_state(ranks["rng"][self.dist.rank])
            self.progress_state = ranks["progress"][self.dist.rank]
        self.saved_at = (self.epoch, self.step)

    def fit(self) -> Dict[str, Any]:
        """Train up to ``train.epochs`` (fewer if early stopping ends it); write summary and curves; -> the summary."""
        log.info("model: %s parameters (preset %s); torch %s threads, allocator %s, OpenMP waiting %s",
                 f"{self.model.num_parameters:,}", self.run.preset, torch.get_num_threads(), allocator_mode(),
                 describe_wait_policy())
        self.tensorboard = open_log(self.run.tensorboard and self.dist.is_main, self.run_dir, self.run.train.metric,
                                    self.history, self.model.num_parameters)
        with stop_on_signals(self), closing(self.tensorboard):
            if self.epoch >= self.run.train.epochs:
                log.info("the run already finished its %d epochs", self.run.train.epochs)
            elif self.stopped_early():
                log.info("the run already stopped early after epoch %d", self.epoch)
            while self.epoch < self.run.train.epochs and not self.stopped_early():
                self._run_epoch()
                if self.stopped_early():
                    log.info("early stop after epoch %d: no validation improvement in %d epochs (train.patience)",
                             self.epoch, self.run.train.patience)
            summary = self.summary()
            if self.dist.is_main:
                files.write_json(self.run_dir / files.SUMMARY, summary)
                plot_curves(self.history, self.run.train.metric, self.run_dir / files.CURVES)
            log.info("best epoch %d: val %s %.6f, test %.6f; results in %s", summary["best_epoch"],
                     summary["metric_name"], summary["val_metric"], summary["test_metric"], self.run_dir)
        return summary

    def stopped_early(self) -> bool:
        """Whether ``train.patience`` finished epochs passed without validation improvement (0: never).

        A pure function of the saved position and best epoch, so a resumed run that stopped early
        trains no further.
        """
        patience = self.run.train.patience
        return bool(patience) and self.best is not None and self.step == 0 \
            and self.epoch - self.best["epoch"] >= patience

    def _run_epoch(self) -> None:
        """Train the rest of the current epoch, score val/test, step the schedule, save."""
        cfg = self.run.train
        epoch, started, lr = self.epoch, time.perf_counter(), self.optimizer.param_groups[0]["lr"]
        train, graphs, train_seconds = self.train_rest_of_epoch()
        self.dist.broadcast_buffers(self.model)  # rank 0's BatchNorm statistics (they differ without sync_bn)
        val, test = self.task.score_splits(self.model, self.loss_fn, epoch)
        self.scheduler.step()
        # Metrics logged beside the main one (Hits@k of link prediction): "val_hits@1", ...
        extra = {f"{name}_{key}": value for name, result in (("train", train), ("val", val), ("test", test))
                 for key, value in result.items() if key not in ("loss", "metric")}
        seconds = time.perf_counter() - started
        if self.dist.enabled:  # the slowest rank's
            seconds = self.dist.max_floats([seconds], self.device)[0]
        self.history.append({
            "epoch": epoch + 1, "lr": lr,
            "train_loss": train["loss"], "train_metric": train["metric"],
            "val_loss": val["loss"], "val_metric": val["metric"],
            "test_loss": test["loss"], "test_metric": test["metric"],
            "seconds": seconds,
            "graphs_per_s": graphs / train_seconds if train_seconds > 0 else None,
            **extra,
        })
        finished = epoch + 1  # graphgym's is_eval_epoch: the first, every eval_every-th and the last epoch
        eligible = finished == 1 or finished % cfg.eval_every == 0 or finished == cfg.epochs
        improved = eligible and is_improvement(cfg.metric, val["metric"],
                                               self.best["val_metric"] if self.best else None)
        if improved:
            self.best = {"epoch": epoch + 1, "train_metric": train["metric"], "val_metric": val["metric"],
                         "test_metric": test["metric"], "val_loss": val["loss"], "test_loss": test["loss"]}
            if extra:
                self.best["extra"] = extra
        self.epoch, self.step, self.progress_state = epoch + 1, 0, None
        if self.dist.enabled:  # every rank takes part in a checkpoint: the same epochs on all of them
            self._save(files.LAST)
            if improved:
                self._save(files.BEST)
            if self.dist.is_main:
                files.write_metrics(self.run_dir, self.history)
        else:
            snapshot = self._snapshot()
            self.pending[files.LAST] = snapshot
            if improved:
                self.pending[files.BEST] = snapshot  # best.pt is this epoch's last.pt
            if self._checkpoint_due():
                self._flush()
        if self.tensorboard is not None:
            self.tensorboard.log_epoch(self.history[-1])
        log.info("epoch %d/%d: lr %.3g | train loss %.4f %s %.4f | val loss %.4f %s %.4f | test %s %.4f | "
                 "%.1fs%s", epoch + 1, cfg.epochs, lr, train["loss"], cfg.metric, train["metric"], val["loss"],
                 cfg.metric, val["metric"], cfg.metric, test["metric"], self.history[-1]["seconds"],
                 " (best)" if improved else "")
        if extra:
            log.info("epoch %d/%d: %s", epoch + 1, cfg.epochs, " | ".join(
                f"{split} " + " ".join(f"{key} {value:.4f}" for key, value in result.items()
                                       if key not in ("loss", "metric"))
                for split, result in (("val", val), ("test", test))))
        if self._stop_requested(agree=True):
            self._interrupted()

    def train_rest_of_epoch(self) -> Tuple[Dict[str, float], int, float]:
        """Train from ``self.step`` to the end of the epoch -> (train loss/metric, graphs, seconds).

        The training pass alone: no evaluation, schedule step or end-of-epoch checkpoint (those are
        :meth:`_run_epoch`'s; the epoch benchmark times this pass). Writes ``last.pt`` every
        ``checkpoint_every`` steps, and after the current step when a stop signal arrived (then raises).
        """
        cfg = self.run.train
        accumulator = MetricAccumulator(cfg.metric)
        if self.progress_state is not None:
            accumulator.load_state_dict(self.progress_state)
        batches = self.task.train_batches(self.epoch, self.step)
        every = self.run.checkpoint_every
        graphs, seconds = 0, 0.0
        self.train_model.train()
        with tqdm(total=batches.total, initial=self.step, desc=f"epoch {self.epoch + 1}/{cfg.epochs}",
                  unit="batch", leave=False, disable=not (self.show_progress and self.dist.is_main),
                  dynamic_ncols=True) as bar:
            tick = time.perf_counter()
            for batch in batches:
                step = self.task.training_step(self.train_model, batch, self.loss_fn)
                if step is None:  # e.g. a cut of one graph without training nodes: the step passes
                    self.step += 1
                    self.global_step += 1
                    bar.update(1)
                    tick = time.perf_counter()
                    continue
                if not self._agree_finite(step.loss):
                    if not self.dist.enabled:
                        self._flush()  # the epochs before this one are good: keep them
                    raise NonFiniteLossError(
                        f"loss became {step.loss.item()} at epoch {self.epoch + 1}, batch {self.step + 1}/"
                        f"{batches.total} (training graphs {short_list(batches.batch_indices(self.step))}); "
                        f"stopped without saving: {self._last_saved_note()}; lower train.lr or check the data"
                    )
                # graphgym's batch_accumulation: gradients of `accumulate` batches summed, then one step
                if self.step % cfg.accumulate == 0:
                    self.optimizer.zero_grad()
                step.loss.backward()
                if (self.step + 1) % cfg.accumulate == 0 or self.step + 1 == batches.total:
                    self.optimizer.step()  # clips the gradient norm at train.clip_grad_norm first
                if step.output is not None:
                    logged = step.logged_loss if step.logged_loss is not None else step.loss.item()
                    accumulator.update(step.output, step.target, logged, step.count)
                self.step += 1
                self.global_step += 1
                graphs += step.count
                seconds += time.perf_counter() - tick
                bar.update(1)
                if accumulator.count:
                    bar.set_postfix({"loss": f"{accumulator.loss_sum / accumulator.count:.4f}",
                                     "graphs/s": f"{graphs / max(seconds, 1e-9):.0f}"})
                stop = self._stop_requested()
                if stop or (every and self.step % every == 0 and self.step < batches.total):
                    self.progress_state = accumulator.state_dict()
                    self._save(files.LAST)
                    if stop:
                        self._interrupted()
                tick = time.perf_counter()  # checkpoint writing is not training time
        if self.dist.enabled:  # the epoch's training metric over every rank's graphs
            accumulator = self.dist.merge_accumulators(accumulator)
            graphs = int(self.dist.sum_floats([graphs], self.device)[0])
        return accumulator.compute(), graphs, seconds

    def _agree_finite(self, loss: torch.Tensor) -> bool:
        """Whether the loss is finite on every rank; ranks also agree on a pending stop signal."""
        if not self.dist.enabled:
            return bool(torch.isfinite(loss))
        bad, signum = self.dist.max_floats([0.0 if torch.isfinite(loss) else 1.0, float(self.stop_signal or 0)],
                                           self.device)
        if signum and self.stop_signal is None:
            self.stop_signal = int(signum)
        self.stop_agreed = bool(signum)
        return not bad

    def _stop_requested(self, agree: bool = False) -> bool:
        """Whether to stop now; in a multi-process run only what all ranks agreed on (``agree``: ask now)."""
        if not self.dist.enabled:
            return self.stop_signal is not None
        if agree:
            signum = self.dist.max_floats([float(self.stop_signal or 0)], self.device)[0]
            if signum and self.stop_signal is None:
                self.stop_signal = int(signum)
            self.stop_agreed = bool(signum)
        return self.stop_agreed

    def _last_saved_note(self) -> str:
        if self.saved_at is None:
            return "no checkpoint was written yet"
        return f"{self.run_dir / files.LAST} keeps the last good state ({position_words(*self.saved_at)})"

    def _save(self, name: str) -> None:
        self.saved_at = (self.epoch, self.step)
        ranks = None
        if self.dist.enabled:  # every rank's RNG and unfinished-epoch state; rank 0 writes
            gathered = self.dist.all_gather_object({"rng": capture_rng_state(), "progress": self.progress_state})
            ranks = {"world_size": self.dist.world_size, "rng": [g["rng"] for g in gathered],
                     "progress": [g["progress"] for g in gathered]}
            if not self.dist.is_main:
                return
        if name == files.LAST:  # a mid-epoch last.pt: the best epoch waiting to be written goes first
            self.pending.pop(files.LAST, None)
            self._flush()
        write_checkpoint_bytes(self.run_dir / name, serialised(checkpoint_state(self.run.to_dict(), dict(
            model=self.model, optimizer=self.optimizer, scheduler=self.scheduler, epoch=self.epoch, step=self.step,
            global_step=self.global_step, best=self.best, history=self.history, progress=self.progress_state,
            ranks=ranks))))

    def _snapshot(self) -> Dict[str, Any]:
        """A copy of the training state now (later steps do not change it), the history as its length: copying
        tensors costs far less than pickling the whole state every epoch."""
        return {"model": copied(self.model.state_dict()), "optimizer": copied(self.optimizer.state_dict()),
                "scheduler": copied(self.scheduler.state_dict()), "rng": capture_rng_state(),
                "epoch": self.epoch, "step": self.step, "global_step": self.global_step,
                "best": copy.deepcopy(self.best), "history": len(self.history),
                "progress": copy.deepcopy(self.progress_state)}

    def _checkpoint_due(self) -> bool:
        """Whether this epoch end writes the checkpoints: the first one, then every :data:`CHECKPOINT_SECONDS`,
        the last epoch, an early stop and a requested stop (a SIGKILL loses at most that much training; a resumed
        run repeats it bit for bit)."""
        return self.saved_at is None or time.monotonic() - self.flushed_at >= CHECKPOINT_SECONDS or \
            self.epoch >= self.run.train.epochs or self.stopped_early() or self.stop_signal is not None

    def _flush(self) -> None:
        """Write the waiting best.pt, then last.pt (each atomically), and metrics.jsonl."""
        for name in (files.BEST, files.LAST):
            if name in self.pending:
                snap = dict(self.pending.pop(name))
                snap["history"] = self.history[:snap["history"]]
                write_checkpoint_bytes(self.run_dir / name, serialised(checkpoint_state(self.run.to_dict(), snap)))
                if name == files.LAST:
                    self.saved_at = (snap["epoch"], snap["step"])
        if self.history:
            files.write_metrics(self.run_dir, self.history)
        self.flushed_at = time.monotonic()

    def _interrupted(self) -> None:
        name = signal.Signals(self.stop_signal).name
        raise TrainingInterrupted(
            f"stopped by {name} {position_words(self.epoch, self.step)}; state saved to "
            f"{self.run_dir / files.LAST}; continue with `geaet-dgl train --resume {self.run_dir}`",
            self.stop_signal,
        )

    def summary(self) -> Dict[str, Any]:
        """The run's result: best epoch and its metrics, size and speed."""
        if self.best is None:
            raise RuntimeError("no epoch has finished yet")
        speeds = [row["graphs_per_s"] for row in self.history if row.get("graphs_per_s") is not None]
        return {
            "dataset": self.run.data.dataset, "preset": self.run.preset, "params": self.model.num_parameters,
            "epochs": len(self.history), "best_epoch": self.best["epoch"], "metric_name": self.run.train.metric,
            "train_metric": self.best.get("train_metric"), "val_metric": self.best["val_metric"],
            "test_metric": self.best["test_metric"],
            "final_val_metric": self.history[-1]["val_metric"], "final_test_metric": self.history[-1]["test_metric"],
            "seconds_per_epoch": statistics.fmean(row["seconds"] for row in self.history),
            "graphs_per_s": statistics.fmean(speeds) if speeds else None,
            "stopped_early": self.stopped_early(), "world_size": self.dist.world_size,
            "num_graphs": self.task.sizes(), "seed": self.run.train.seed, "device": self.run.device,
            "package_version": __version__, "torch_threads": torch.get_num_threads(),
            "allocator": allocator_mode(), "openmp_wait": describe_wait_policy(), **self.best.get("extra", {}),
        }


def train(run: RunConfig, run_dir: PathLike, overwrite: bool = False, progress: bool = True,
          dist: Optional[DistContext] = None) -> Dict[str, Any]:
    """Start a new run in ``run_dir`` (refused if it exists, unless ``overwrite``); return its summary.

    ``dist``: this process's place in a data-parallel job (every rank calls
    ``train``; only rank 0 writes); default one process.
    """
    dist = dist if dist is not None else SINGLE_PROCESS
    check_environment(run.validate())
    run.world_size = dist.world_size
    run.threads = resolve_threads(run.threads)
    apply_threads(per_process_threads(run.threads, dist.world_size))  # before the data: PE uses BLAS threads
    created = dist.is_main and not Path(run_dir).exists()
    if dist.is_main:
        run_dir = files.prepare_new_run_dir(run_dir, overwrite)
    run_dir = Path(run_dir)
    # Data and model first: if either fails, the run directory stays empty (and is removed if this call made it).
    try:
        splits = load_splits_in_turn(run, progress, dist)
        record_data(run.data, splits)  # later reads of the data (eval, resume) are checked against it
        trainer = Trainer(run, run_dir, splits, progress, dist)
    except BaseException:
        if created and run_dir.is_dir() and not any(run_dir.iterdir()):
            run_dir.rmdir()
        raise
    if dist.is_main:
        files.write_config(run_dir, run.to_dict())
    with log_to_file(run_dir / files.LOG) if dist.is_main else contextlib.nullcontext():
        log_data(splits)
        return trainer.fit()


def resume(run_dir: PathLike, device: Optional[str] = None, workers: Optional[int] = None,
           progress: bool = True, dist: Optional[DistContext] = None,
           threads: Optional[int] = None, allow_changed_data: bool = False) -> Dict[str, Any]:
    """Continue the run in ``run_dir`` from its ``last.pt``; return its summary.

    ``device``, ``workers`` and ``threads`` may change (``threads`` ``None``: the
    cores this process may use, as for a new run); everything else comes from
    the checkpoint. Data that changed since the run started is refused unless
    ``allow_changed_data`` (see :func:`~geaet_dgl.data.run_splits.load_splits`).
    """
    run_dir = Path(run_dir)
    last = run_dir / files.LAST
    if not last.is_file():
        raise files.no_checkpoint_to_resume(run_dir)
    state = load_checkpoint(last)  # its run configuration in this version's layout
    check_belongs_to_run(state, run_dir / files.CONFIG_JSON, where=str(last))
    run = check_environment(RunConfig.from_dict(state["run_config"]))
    dist_main = dist is None or dist.is_main
    if dist_main and config_version(run_dir / files.CONFIG_JSON) != CONFIG_VERSION:
        files.write_config(run_dir, state["run_config"])  # an older layout, migrated (fields added since: defaults)
    if device is not None:
        run.device = device
    if workers is not None:
        run.workers = workers
    run.threads = resolve_threads(threads)
    check_environment(run.validate())
    dist = dist if dist is not None else SINGLE_PROCESS
    apply_threads(per_process_threads(run.threads, dist.world_size))
    check_resume_world_size(state, dist)
    splits = load_splits_in_turn(run, progress, dist, allow_changed_data)
    trainer = Trainer(run, run_dir, splits, progress, dist)
    trainer.restore(state)
    with log_to_file(run_dir / files.LOG) if dist.is_main else contextlib.nullcontext():
        log.info("resuming %s %s", run_dir, position_words(state["epoch"], state["step"]))
        log_data(splits)
        if dist.is_main:
            files.write_metrics(run_dir, trainer.history)  # drops lines written after the checkpoint
        return trainer.fit()
