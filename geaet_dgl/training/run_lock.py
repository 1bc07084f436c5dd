"""One process per run folder: a lock file claimed atomically before the folder is checked or any data read.

``claim_run_dir(path)`` creates ``<parent>/.<name>.lock`` with ``O_CREAT | O_EXCL`` (so of two processes
exactly one succeeds) holding ``{"pid", "host", "started"}`` (``started``: the process's start time, which
tells a live holder from a process that reused a dead holder's id) and removes it when the block ends. The
lock sits next to the folder rather than inside it, so an empty run folder stays empty.

- another live process holds it: :class:`RunDirInUse` (one ``error:`` line naming the process and the fix);
- its holder is gone (killed by SIGKILL, the machine rebooted): the lock is stale, taken over and logged;
- a holder on another host (a shared file system) cannot be checked: refused, naming that host and how
  to remove the lock if that process is gone.

Claims nest: a process that holds a folder may claim it again (the CLI claims ``--out`` before it reads
the data, the training call inside claims it once more).

Example
-------
>>> with claim_run_dir("/tmp/run-lock-example"):
...     pass
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Union

from ..atomic import process_alive
from .run_dir import RunDirError

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

#: Locks this process holds: lock path -> how many claims are open.
_HELD: Dict[str, int] = {}


class RunDirInUse(RunDirError):
    """Another process trains in (or writes) the run folder."""


def lock_path(run_dir: PathLike) -> Path:
    """``<parent>/.<name>.lock`` of the run folder ``run_dir``."""
    path = Path(os.path.abspath(run_dir))
    return path.parent / f".{path.name}.lock"


def _start_time(pid: int) -> Optional[str]:
    """The start time of process ``pid`` (clock ticks since boot, from /proc; None where /proc has none)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def _alive(holder: Dict[str, Any]) -> bool:
    """Whether the process that wrote ``holder`` (on this host) still runs."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0 or not process_alive(pid):
        return False
    started = holder.get("started")
    return started is None or _start_time(pid) in (None, started)  # same id, later process: the holder is gone


def _read(path: Path) -> Optional[Dict[str, Any]]:
    try:
        holder = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def _holder_words(holder: Dict[str, Any]) -> str:
    since = holder.get("since")
    when = f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}" if isinstance(since, (int, float)) \
        else ""
    return f"pid {holder.get('pid')} on {holder.get('host')}{when}"


def _try_create(path: Path) -> bool:
    me = {"pid": os.getpid(), "host": socket.gethostname(), "started": _start_time(os.getpid()), "since": time.time()}
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as handle:
        json.dump(me, handle)
    return True


def _acquire(run_dir: PathLike, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"cannot create {path.parent} for the run folder {run_dir} ({exc.strerror}); choose "
                          "another --out") from None
    for _ in range(5):
        try:
            if _try_create(path):
                return
        except OSError as exc:
            raise RunDirError(f"cannot claim the run folder {run_dir}: {path} cannot be created ({exc.strerror}); "
                              "choose a writable --out") from None
        holder = _read(path)
        if holder is None:  # being written by its creator this instant, or damaged: wait, then judge
            time.sleep(0.2)
            holder = _read(path)
            if holder is None:
                holder = {"pid": None, "host": socket.gethostname()}
        if holder.get("host") != socket.gethostname():
            raise RunDirInUse(f"{run_dir} is claimed by a geaet-dgl process on another machine "
                              f"({_holder_words(holder)}); wait for it to end, or choose another --out (if that "
                              f"process is gone, delete {path})")
        if _alive(holder):
            raise RunDirInUse(f"{run_dir} is in use by another geaet-dgl process ({_holder_words(holder)}); wait "
                              "for it to end, or choose another --out")
        stale = path.with_name(f"{path.name}.stale-{os.getpid()}")
        try:
            os.rename(path, stale)  # of two processes taking it over, one renames it
        except FileNotFoundError:
            continue
        if _read(stale) != holder and _read(stale) is not None:  # a live claim came in between: put it back
            os.rename(stale, path)
            continue
        stale.unlink(missing_ok=True)
        log.warning("%s: taking over the lock of process %s, which no longer runs (stopped without releasing it)",
                    run_dir, holder.get("pid"))
    raise RunDirInUse(f"{run_dir} is being claimed by other processes at this moment; wait for them, or choose "
                      "another --out")


@contextlib.contextmanager
def claim_run_dir(run_dir: PathLike) -> Iterator[Path]:
    """Hold the run folder ``run_dir`` for this process while the block runs (see the module docstring);
    yields the lock file's path."""
    path = lock_path(run_dir)
    key = str(path)
    if _HELD.get(key):
        _HELD[key] += 1
    else:
        _acquire(run_dir, path)
        _HELD[key] = 1
    try:
        yield path
    finally:
        _HELD[key] -= 1
        if not _HELD[key]:
            del _HELD[key]
            if (_read(path) or {}).get("pid") == os.getpid():
                path.unlink(missing_ok=True)
