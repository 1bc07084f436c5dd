"""Start the graph servers and trainers of one machine, watch them, and stop every one of them.

Each process starts in its own session (``start_new_session``: its own
process group, so a Ctrl-C in the terminal reaches only the launcher, which
then stops the groups itself). :meth:`LocalJob.stop` sends SIGTERM to every
group, SIGKILL after a grace period, and removes the shared memory the
servers of this job created (a killed server cannot). It runs on success,
on error and on Ctrl-C / SIGTERM (:func:`run_job`'s ``finally``).
"""
from __future__ import annotations

import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

from ..config import ConfigError
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
    """The processes of one machine: graph servers and trainers, each in its own process group."""

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
            process = subprocess.Popen([sys.executable, "-m", "geaet_dgl.distgraph.worker"], env=full,
                                       stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        (self.servers if server else self.trainers).append((name, process))
        self._write_pids()
        return process

    def _write_pids(self) -> None:
        pids = {name: p.pid for name, p in self.servers + self.trainers}
        path = os.path.join(self.log_dir, "pids.json")
        with open(path + ".tmp", "w") as handle:  # replaced whole: a reader (a test, a watchdog) never sees it half written
            json.dump(pids, handle)
        os.replace(path + ".tmp", path)

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
            for name, process in self.servers + self.trainers:
                code = process.poll()
                if code not in (None, 0):
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
        processes = [p for _, p in self.trainers + self.servers]
        for process in processes:
            if process.poll() is None:
                _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
            time.sleep(0.05)
        for process in processes:
            _signal_group(process, signal.SIGKILL)  # the group: also any child a worker started
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


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


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


class _Stop(Exception):
    """SIGTERM received by the launcher."""


def run_job(job: "LocalJob", errors_dir: str, start: "callable") -> None:
    """``start(job)`` the processes, wait for them, and stop all of them however this ends.

    SIGTERM to the launcher stops the job as Ctrl-C does (KeyboardInterrupt).
    A failing trainer's own exception is re-raised when it left one, else
    :class:`DistributedJobError` names the process and its last log line.
    """
    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous: Optional[object] = None
    try:
        previous = signal.signal(signal.SIGTERM, on_term)
    except ValueError:  # not the main thread
        previous = None
    try:
        start(job)
        try:
            job.wait()
        except DistributedJobError as failure:
            raise_worker_error(errors_dir, failure.pid)  # written before the trainer exits
            raise
    finally:
        job.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
