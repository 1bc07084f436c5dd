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

The child dies with its parent: on Linux the kernel kills it when the parent
ends however it ends (``PR_SET_PDEATHSIG``, SIGKILL included), and a SIGTERM
or SIGINT to the parent while it waits stops the child before the parent
ends. The files the child was writing are atomic writes, so it leaves at most
temp files, which the next write of the same file removes
(:mod:`geaet_dgl.atomic`).
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import traceback
from typing import Callable, Iterator

from .errors import DataError

log = logging.getLogger(__name__)


def fork_available() -> bool:
    """Whether this platform can fork (Linux, macOS; not Windows)."""
    return "fork" in multiprocessing.get_all_start_methods()


_PR_SET_PDEATHSIG = 1


@functools.lru_cache(maxsize=None)
def libc_handle() -> ctypes.CDLL:
    """The C library (loaded once: call it before a fork whose child must not search for libraries)."""
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def die_with_parent(parent: int, signum: int = signal.SIGKILL) -> None:
    """Ask the kernel to send ``signum`` to this process when its parent ends (Linux); leave at once if it
    already has. Also usable as a ``subprocess.Popen`` ``preexec_fn`` (the request survives ``exec``)."""
    if sys.platform.startswith("linux"):
        try:
            libc_handle().prctl(_PR_SET_PDEATHSIG, int(signum), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the parent's handler still stops us
            pass
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


def _child(step: Callable[[], object], conn, parent: int) -> None:
    die_with_parent(parent)
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


def run_apart(step: Callable[[], object], what: str, announce: bool = True,
              fix: str = "free memory or lower the --limit-* options, then run again") -> None:
    """Run ``step()`` in a forked child and wait; its exception, if any, is raised here.

    Parameters
    ----------
    step : callable
        Does the work and writes its results to disk; its return value is dropped.
    what : str
        Words for messages, e.g. ``"MNIST superpixels"``.
    announce : bool
        Log the child's start (a data build); off for quick checks.
    fix : str
        What the user can do when the child dies without reporting (the end of that error's line).

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
    process = context.Process(target=_child, args=(step, sender, os.getpid()), name=f"prepare {what}",
                              daemon=False)
    process.start()
    if announce:
        log.info("preparing %s in a separate process (pid %d); this process then loads the files", what,
                 process.pid)
    sender.close()
    try:
        with _stop_child_on_signals(process):
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
        raise DataError(f"the process preparing {what} died (exit status {process.exitcode}; out of memory?); {fix}")


@contextlib.contextmanager
def _stop_child_on_signals(process) -> Iterator[None]:
    """While the parent waits: SIGTERM / SIGINT first stop the child, then act as they would have."""
    previous = {}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def handle(signum, frame) -> None:
        if process.is_alive():
            process.terminate()
            process.join()
        restore()
        before = previous.get(signum)
        if callable(before):  # e.g. Python's SIGINT handler: KeyboardInterrupt
            before(signum, frame)
        elif before != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, handle)
    try:
        yield
    finally:
        restore()
