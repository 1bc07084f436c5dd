"""Start the graph servers and trainers of one machine, watch them, and stop every one of them.

No process outlives the launcher, however it ends:

- The graph servers stay in the launcher's process group (a closed terminal's
  SIGHUP and a Ctrl-C reach them too) and stop at once on SIGTERM, SIGHUP and
  SIGINT, removing the job's shared memory (:func:`.worker.run_server`).
- Each trainer starts in its own session (its own process group, so a Ctrl-C
  reaches only the launcher, which then stops the trainers itself).
- Every child has a parent-death signal (``prctl(PR_SET_PDEATHSIG)``): SIGTERM
  for a server, SIGKILL for a trainer, sent by the kernel when the launcher
  ends, ``kill -9`` included.
- :meth:`LocalJob.stop` sends SIGTERM to every server and trainer group,
  SIGKILL after a grace period, and removes the shared memory the servers of
  this job created (a killed server cannot). It runs on success, on error and
  on SIGINT / SIGTERM / SIGHUP (:func:`run_job`'s ``finally``), and further
  signals do not cut it short.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Tuple

from ..atomic import atomic_write
from ..config import ConfigError
from ..data.fresh_process import die_with_parent, libc_handle
from .engine import remove_shared_memory

log = logging.getLogger(__name__)


class DistributedJobError(ConfigError):
    """A server or trainer of a distributed job failed; the message is one line.

    ``pid`` is the failed process (the first one seen failing).
    """

    def __init__(self, message: str, pid: int = 0):
        super().__init__(message)
        self.pid = pid


class LocalJob:
    """The processes of one machine: graph servers (in this process's group) and trainers (each in its own)."""

    #: What each process runs, after ``sys.executable``.
    worker_command: Tuple[str, ...] = ("-m", "geaet_dgl.distgraph.worker")

    def __init__(self, log_dir: str, token: str):
        self.log_dir = log_dir
        self.token = token
        self.servers: List[Tuple[str, subprocess.Popen]] = []
        self.trainers: List[Tuple[str, subprocess.Popen]] = []
        #: Peak resident memory (MiB) seen of each process, from /proc/PID/status VmHWM while it ran.
        self.peak_mib: Dict[str, float] = {}
        self._relayed: Dict[str, int] = {}
        os.makedirs(log_dir, exist_ok=True)

    def start(self, name: str, env: Dict[str, str], server: bool) -> subprocess.Popen:
        """Start ``python -m geaet_dgl.distgraph.worker`` as ``name`` with ``env`` added to this environment."""
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        full = dict(os.environ, **env)
        full["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        with open(os.path.join(self.log_dir, f"{name}.log"), "w") as log:
            process = subprocess.Popen([sys.executable, *self.worker_command], env=full,
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=not server,
                                       preexec_fn=_parent_death(signal.SIGTERM if server else signal.SIGKILL))
        (self.servers if server else self.trainers).append((name, process))
        self._write_pids()
        return process

    def _write_pids(self) -> None:
        pids = {name: p.pid for name, p in self.servers + self.trainers}
        with atomic_write(os.path.join(self.log_dir, "pids.json"), "w") as handle:  # read while jobs run
            json.dump(pids, handle)

    def wait(self, poll_s: float = 0.1, server_exit_s: float = 60.0, trainer_exit_s: float = 120.0) -> None:
        """Return when every trainer ended with 0 and the servers shut down; raise at the first failure.

        Once one trainer has ended with 0, the others have ``trainer_exit_s``
        to end too (they finished the same last step); one still running then
        is reported as hung.
        """
        first_done = None
        while True:
            self._sample_memory()
            for name, _ in self.trainers:
                self.relay(name)
            failed = [(name, process, process.poll()) for name, process in self.servers + self.trainers]
            failed = [item for item in failed if item[2] not in (None, 0)]
            if failed:
                # A process killed by a signal is the cause; the others then fail on their lost connections.
                name, process, code = min(failed, key=lambda item: 0 if item[2] < 0 else 1)
                how = f"killed by {signal.Signals(-code).name}" if code < 0 else self.last_line(name)
                raise DistributedJobError(f"{name} exited with code {code} ({how}); the other processes were "
                                          f"stopped (log: {os.path.join(self.log_dir, name + '.log')})",
                                          process.pid)
            if all(p.poll() == 0 for _, p in self.trainers):
                break
            if first_done is None and any(p.poll() == 0 for _, p in self.trainers):
                first_done = time.monotonic()
            if first_done is not None and time.monotonic() - first_done > trainer_exit_s:
                name, process = next((n, p) for n, p in self.trainers if p.poll() is None)
                raise DistributedJobError(f"{name} did not exit {trainer_exit_s:.0f} s after another trainer finished "
                                          f"(hung); the processes were stopped (log: "
                                          f"{os.path.join(self.log_dir, name + '.log')})", process.pid)
            time.sleep(poll_s)
        deadline = time.monotonic() + server_exit_s  # trainer 0's exit tells the servers to shut down
        while any(p.poll() is None for _, p in self.servers) and time.monotonic() < deadline:
            self._sample_memory()
            time.sleep(poll_s)

    def relay(self, name: str, prefix: str = "epoch ") -> None:
        """Log the new lines of ``name``'s log that start with ``prefix`` (DGL trainer 0 writes its epochs)."""
        try:
            with open(os.path.join(self.log_dir, f"{name}.log"), "rb") as handle:
                handle.seek(self._relayed.get(name, 0))
                data = handle.read()
        except OSError:
            return
        complete = data[:data.rfind(b"\n") + 1]
        self._relayed[name] = self._relayed.get(name, 0) + len(complete)
        for line in complete.decode(errors="replace").splitlines():
            if line.startswith(prefix):
                log.info("%s", line)

    def _sample_memory(self) -> None:
        for name, process in self.servers + self.trainers:
            peak = _peak_rss_mib(process.pid)
            if peak is not None:
                self.peak_mib[name] = max(peak, self.peak_mib.get(name, 0.0))

    def last_line(self, name: str) -> str:
        """The last non-empty line of a process's log (its error, usually)."""
        try:
            with open(os.path.join(self.log_dir, f"{name}.log"), errors="replace") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except OSError:
            return "no log"
        return lines[-1][:300] if lines else "no output"

    def stop(self, grace_s: float = 3.0) -> None:
        """SIGTERM every process group still running, SIGKILL after ``grace_s``, then free shared memory."""
        with _signals_held():
            trainers, servers = [p for _, p in self.trainers], [p for _, p in self.servers]
            for process in trainers + servers:
                if process.poll() is None:
                    _signal(process, signal.SIGTERM, group=process in trainers)
            deadline = time.monotonic() + grace_s
            while any(p.poll() is None for p in trainers + servers) and time.monotonic() < deadline:
                time.sleep(0.05)
            for process in trainers + servers:
                # a trainer's group: also any child it started; a server shares the launcher's group
                _signal(process, signal.SIGKILL, group=process in trainers)
                process.wait()
            remove_shared_memory(self.token)


def _peak_rss_mib(pid: int) -> Optional[float]:
    """VmHWM (peak resident set) of a running process in MiB; None when unreadable (not Linux, ended)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        return None
    return None


def _signal(process: subprocess.Popen, signum: int, group: bool) -> None:
    """Send ``signum`` to ``process`` (to its whole process group with ``group``); gone already is fine."""
    try:
        if group:
            os.killpg(process.pid, signum)
        elif process.poll() is None:
            process.send_signal(signum)
    except (ProcessLookupError, PermissionError):
        pass


def _parent_death(signum: int):
    """A ``preexec_fn``: the child gets ``signum`` from the kernel when this process ends (see the module doc)."""
    parent = os.getpid()
    try:
        libc_handle()  # loaded here: the forked child only calls it
    except OSError:  # pragma: no cover - no C library to load: stop() still stops the children
        return None
    return lambda: die_with_parent(parent, signum)


#: Signals that stop the launcher of a job (and with it every server and trainer).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _signals_held():
    """Ignore :data:`STOP_SIGNALS` while the job is being stopped (a second Ctrl-C must not cut it short)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def raise_worker_error(errors_dir: str, pid: int) -> None:
    """Re-raise the exception trainer ``pid`` left in ``errors_dir`` (see :mod:`.worker`), if it left one.

    Only the first process to fail counts: the others then fail too, with
    connection errors that say nothing about the cause.
    """
    path = os.path.join(errors_dir, f"trainer-{pid}.pkl")
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            exc = pickle.loads(handle.read())
        if not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise exc


class JobStopped(KeyboardInterrupt):
    """The launcher got ``signum`` (SIGINT, SIGTERM or SIGHUP) and stopped every process of the job.

    A :class:`KeyboardInterrupt`, so that it passes every ``except Exception``
    between the wait and :func:`run_job`'s ``finally``; the CLI exits with
    128 + ``signum``.
    """

    def __init__(self, signum: int, run_dir: Optional[str] = None, checkpointed: Optional[bool] = None):
        super().__init__(signum)
        self.signum = int(signum)
        self.run_dir = run_dir  # set by the launcher that knows it, with whether the run wrote a checkpoint
        self.checkpointed = checkpointed

    def __str__(self) -> str:
        stopped = f"stopped by {signal.Signals(self.signum).name}: every graph server and trainer of the job was stopped"
        where = self.run_dir or "the run directory"
        if self.checkpointed is False:
            return (f"{stopped} before the run wrote its first checkpoint: nothing to resume; start it again with "
                    f"the same command plus --overwrite (or another --out)")
        return (f"{stopped}; {where} keeps its last checkpoint (continue with `geaet-dgl train --resume "
                f"{self.run_dir or '<run directory>'}`)")


def run_job(job: "LocalJob", errors_dir: str, start: "callable") -> None:
    """``start(job)`` the processes, wait for them, and stop all of them however this ends.

    SIGINT, SIGTERM and SIGHUP to the launcher raise :class:`JobStopped`.
    A failing trainer's own exception is re-raised when it left one, else
    :class:`DistributedJobError` names the process and its last log line.
    """
    stopping = []

    def on_signal(signum, frame):
        if not stopping:  # the first signal stops the job; later ones wait for that
            stopping.append(signum)
            raise JobStopped(signum)

    previous: Dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        previous = {signum: signal.signal(signum, on_signal) for signum in STOP_SIGNALS}
    try:
        start(job)
        try:
            job.wait()
        except DistributedJobError as failure:
            raise_worker_error(errors_dir, failure.pid)  # written before the trainer exits
            raise
    finally:
        job.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
