"""Run a data preparation step in a child process, so that this process's heap stays as a later run's.

Why: building a dataset (DGL's superpixel processing, the Laplacian PE of
every graph) allocates and frees millions of small temporaries between the
graphs it keeps. glibc's heap is then riddled with free chunks that cannot
merge, and every later ``malloc`` of the training loop searches them:
``perf`` showed ``_int_malloc`` at 15% of a training step after an
in-process build of 17k MNIST graphs, against 3% when the same graphs were
loaded from the processed files (CPU time per step 246 ms vs 205 ms; the
issue measured half speed after a full 70k-graph build). Building in a child
process and then loading the files here, exactly as a second run does, leaves
this process nothing of the build.

The child is forked (it inherits the loaded modules and any test patches,
and starts in no time); it computes with one torch / DGL thread, the
safe setting after a fork (GNU OpenMP's pool does not survive ``fork``), while
its own process pools (the superpixel build) keep the run's size. Where
``fork`` does not exist the step runs in this process, as before.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import traceback
from typing import Callable

from .errors import DataError

log = logging.getLogger(__name__)


def fork_available() -> bool:
    """Whether this platform can fork (Linux, macOS; not Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


def _child(step: Callable[[], object], conn) -> None:
    import torch

    torch.set_num_threads(1)
    try:
        from dgl.utils import set_num_threads

        set_num_threads(1)
    except ImportError:  # pragma: no cover - dgl is a dependency
        pass
    try:
        step()
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
        try:
            payload = pickle.dumps(exc)
        except Exception:  # an exception that does not pickle: its text
            payload = pickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
        conn.send_bytes(payload)
        conn.close()
        os._exit(1)
    conn.send_bytes(b"")
    conn.close()
    os._exit(0)


def run_apart(step: Callable[[], object], what: str) -> None:
    """Run ``step()`` in a forked child and wait; its exception, if any, is raised here.

    Parameters
    ----------
    step : callable
        Does the work and writes its results to disk; its return value is dropped.
    what : str
        Words for messages, e.g. ``"MNIST superpixels"``.

    Raises
    ------
    Exception
        Whatever ``step`` raised in the child (e.g. :class:`DataError`).
    DataError
        The child died without reporting (killed, out of memory).
    """
    if not fork_available():
        step()
        return
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(step, sender), name=f"prepare {what}", daemon=False)
    process.start()
    log.info("preparing %s in a separate process (pid %d); this process then loads the files", what, process.pid)
    sender.close()
    try:
        try:
            payload = receiver.recv_bytes()
        except EOFError:
            payload = None
        process.join()
    finally:
        if process.is_alive():  # interrupted while waiting: stop the child too
            process.terminate()
            process.join()
        receiver.close()
    if payload:
        raise pickle.loads(payload)
    if payload is None or process.exitcode != 0:
        raise DataError(f"the process preparing {what} died (exit status {process.exitcode}; out of memory?); "
                        "free memory or lower the --limit-* options, then run again")
