"""Launching training: one process, ``--nproc N`` local processes, or the ranks of a torchrun job.

:func:`train_job` / :func:`resume_job` are what ``geaet-dgl train`` runs. They
sit above the trainer (:func:`~.trainer.train` / :func:`~.trainer.resume`),
which in turn uses the process-group helpers of :mod:`.distributed`, so the
imports run one way: ``launcher -> trainer -> distributed``.

With ``nproc > 1`` the launcher checks the run directory, starts the ranks,
forwards SIGINT / SIGTERM to them once, stops the others when one fails and
re-raises the lowest failing rank's exception (each rank leaves it pickled in
a temporary folder). See :mod:`.distributed` for what data parallelism means
for batches, BatchNorm and checkpoints.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import tempfile
import threading
import time
from typing import Any, Callable, Dict, Optional

from ..config import OptionConflict
from . import run_dir as files
from .environment import check_environment
from .distributed import DistContext, launched_by_torchrun, process_group, start_processes
from ..config import RunConfig
from .run_lock import claim_run_dir
from .trainer import resume, train


#: What :func:`resume_job` may change about a saved run (its keywords); all else is the run's own.
RESUME_MAY_CHANGE = ("nproc", "device", "workers", "progress", "threads", "allow_changed_data")


def check_nproc(nproc: Optional[int]) -> None:
    """Under torchrun the processes are torchrun's: an explicit ``nproc`` is a conflict."""
    if nproc is not None and launched_by_torchrun():
        raise OptionConflict("under torchrun the number of processes comes from torchrun; drop --nproc")


def check_resume_changes(given: Dict[str, str]) -> None:
    """Refuse changes a resumed run cannot take.

    ``given``: the options the user gave, ``{keyword: how the user spelled it}``;
    those outside :data:`RESUME_MAY_CHANGE` are named in the error.
    """
    fixed = [spelled for name, spelled in given.items() if name not in RESUME_MAY_CHANGE]
    if fixed:
        raise OptionConflict(f"--resume continues a run with its saved configuration; drop {', '.join(fixed)}")


def train_job(run: Any, run_dir: Any, *, nproc: int = 1, overwrite: bool = False,
              progress: bool = True) -> Optional[Dict[str, Any]]:
    """Train ``run`` with data parallelism; rank 0's summary (None on the other ranks).

    Under torchrun (environment variables set) this process joins the job as
    its rank; otherwise ``nproc > 1`` spawns that many local processes (the
    run directory is checked here first, so errors read as in a 1-process
    run) and ``nproc == 1`` is a plain :func:`~.trainer.train`. The run directory is claimed
    for this job first (:mod:`.run_lock`): a second process on it is refused.
    """
    with _claim(run_dir):
        return _train_job(run, run_dir, nproc=nproc, overwrite=overwrite, progress=progress)


def _claim(run_dir: Any) -> Any:
    """:func:`~.run_lock.claim_run_dir` in the process that writes the run directory (under torchrun: rank 0)."""
    if launched_by_torchrun() and os.environ.get("RANK", "0") != "0":
        return contextlib.nullcontext()
    return claim_run_dir(run_dir)


def _train_job(run: Any, run_dir: Any, *, nproc: int, overwrite: bool, progress: bool) -> Optional[Dict[str, Any]]:
    if launched_by_torchrun():
        with process_group(run.device) as context:
            _quiet_unless_main(context)
            summary = train(run, run_dir, overwrite=overwrite, progress=progress, dist=context)
            return summary if context.is_main else None
    if nproc <= 1:
        return train(run, run_dir, overwrite=overwrite, progress=progress)
    check_environment(run.validate())
    files.prepare_new_run_dir(run_dir, overwrite)  # fails here, before any process starts
    _spawn_and_report(_train_worker, nproc, run.to_dict(), str(run_dir), progress)
    return _read_summary(run_dir)


def resume_job(run_dir: Any, *, nproc: Optional[int] = None, device: Optional[str] = None,
               workers: Optional[int] = None, progress: bool = True,
               threads: Optional[int] = None, allow_changed_data: bool = False) -> Optional[Dict[str, Any]]:
    """Continue a run (see :func:`~.trainer.resume`) with the processes that trained it.

    ``nproc`` None: as many local processes as the run's ``config.json`` says
    trained it (under torchrun: torchrun's processes).
    """
    with _claim(run_dir):
        return _resume_job(run_dir, nproc=nproc, device=device, workers=workers, progress=progress, threads=threads,
                           allow_changed_data=allow_changed_data)


def _resume_job(run_dir: Any, *, nproc: Optional[int], device: Optional[str], workers: Optional[int],
                progress: bool, threads: Optional[int], allow_changed_data: bool) -> Optional[Dict[str, Any]]:
    if launched_by_torchrun():
        with process_group(device or _saved_device(run_dir)) as context:
            _quiet_unless_main(context)
            summary = resume(run_dir, device=device, workers=workers, progress=progress, dist=context,
                             threads=threads, allow_changed_data=allow_changed_data)
            return summary if context.is_main else None
    if nproc is None:
        nproc = int(_saved_config(run_dir).get("world_size", 1))
    if nproc <= 1:
        return resume(run_dir, device=device, workers=workers, progress=progress, threads=threads,
                      allow_changed_data=allow_changed_data)
    _spawn_and_report(_resume_worker, nproc, str(run_dir), device, workers, progress, threads, allow_changed_data)
    return _read_summary(run_dir)


def _saved_config(run_dir: Any) -> Dict[str, Any]:
    """The run's ``config.json`` ({} if missing or unreadable)."""
    try:
        with open(os.path.join(run_dir, files.CONFIG_JSON)) as handle:
            config = json.load(handle)
        return config if isinstance(config, dict) else {}
    except (OSError, ValueError):
        return {}


def _saved_device(run_dir: Any) -> str:
    return _saved_config(run_dir).get("device", "cpu")


def _read_summary(run_dir: Any) -> Dict[str, Any]:
    with open(os.path.join(run_dir, files.SUMMARY)) as handle:
        return json.load(handle)


def _quiet_unless_main(context: DistContext, level: Optional[int] = None) -> None:
    logger = logging.getLogger("geaet_dgl")
    if level is not None:
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
        logger.setLevel(level)
    if not context.is_main:
        logger.setLevel(max(logging.WARNING, logger.getEffectiveLevel()))


def _train_worker(run_dict: Dict[str, Any], run_dir: str, progress: bool, level: int) -> None:
    run = check_environment(RunConfig.from_dict(run_dict))
    with process_group(run.device) as context:
        _quiet_unless_main(context, level)
        train(run, run_dir, overwrite=True, progress=progress, dist=context)  # the launcher prepared run_dir


def _resume_worker(run_dir: str, device: Optional[str], workers: Optional[int], progress: bool,
                   threads: Optional[int], allow_changed_data: bool, level: int) -> None:
    with process_group(device or _saved_device(run_dir)) as context:
        _quiet_unless_main(context, level)
        resume(run_dir, device=device, workers=workers, progress=progress, dist=context, threads=threads,
               allow_changed_data=allow_changed_data)


def _reporting(errors_dir: str, fn: Callable, *args: Any) -> None:
    """Run ``fn``; if it raises, leave the exception in ``errors_dir/<rank>.pkl`` for the launcher."""
    os.setpgrp()  # signals come from the launcher only (it forwards SIGINT/SIGTERM once to each rank)
    try:
        fn(*args)
    except BaseException as exc:
        save_exception(errors_dir, os.environ["RANK"], exc)
        raise


def save_exception(folder: str, name: str, exc: BaseException) -> None:
    """``folder/name.pkl``: ``exc`` pickled (as a RuntimeError with its text if it does not pickle)."""
    try:
        payload = pickle.dumps(exc)
        pickle.loads(payload)
    except Exception:
        payload = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
    with open(os.path.join(folder, f"{name}.pkl"), "wb") as handle:
        handle.write(payload)


def _spawn_and_report(fn: Callable, nproc: int, *args: Any) -> None:
    """:func:`~.distributed.start_processes` ``fn(*args, log_level)``; forward SIGINT/SIGTERM; re-raise the lowest rank's exception."""
    level = logging.getLogger("geaet_dgl").getEffectiveLevel()
    with tempfile.TemporaryDirectory(prefix="geaet-dgl-ranks-") as errors_dir:
        context = start_processes(_reporting, nproc, errors_dir, fn, *args, level)

        def forward(signum, frame):
            for process in context.processes:
                if process.is_alive():
                    os.kill(process.pid, signum)

        main_thread = threading.current_thread() is threading.main_thread()
        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)} if main_thread \
            else {}
        try:
            _watch(context.processes)
            while not context.join():
                pass
        except Exception:
            for rank in range(nproc):
                path = os.path.join(errors_dir, f"{rank}.pkl")
                if os.path.isfile(path):
                    with open(path, "rb") as handle:
                        raise pickle.loads(handle.read()) from None
            raise
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _watch(processes: list, grace_s: float = 3.0) -> None:
    """Wait until every process ended; once one fails, kill those still running after ``grace_s``.

    (A rank left waiting in a collective for a failed peer would otherwise
    block until the process-group timeout.)
    """
    failed_at = None
    while any(p.exitcode is None for p in processes):
        if failed_at is None and any(p.exitcode not in (None, 0) for p in processes):
            failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() - failed_at > grace_s:
            for p in processes:
                if p.exitcode is None:
                    p.kill()
            for p in processes:
                p.join()
            return
        time.sleep(0.05)
