"""Atomic file writes: temp file in the same folder, fsync, then ``os.replace``.

A reader therefore sees either the old file or the complete new one, never a
half-written file, even if the writer is killed mid-way. The temp file is
named ``.<name>.<writer pid>-<random>.tmp``; one whose writer is gone (killed
by SIGKILL, which no ``finally`` survives) is removed by the next write of
the same file, or by :func:`remove_stale_temporaries` of its folder.
"""

import contextlib
import os
import re
import tempfile
from pathlib import Path
from typing import IO, Iterator, List, Optional, Union

PathLike = Union[str, os.PathLike]


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temp file next to ``path``; on success move it onto ``path``.

    Parameters
    ----------
    path : path-like
        Final destination. Its folder is created if missing.
    mode : str
        ``"wb"`` (default) or ``"w"``.

    Yields
    ------
    file object
        Write the whole content to it; it is flushed, fsynced and renamed
        onto ``path`` when the ``with`` block exits without an exception,
        and deleted otherwise.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    with atomic_path(path) as temp, open(temp, mode) as handle:  # created with the usual mode (umask)
        yield handle


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """A path next to ``path``, not yet existing, for a writer that takes a file name (a library's own save);
    when the ``with`` block exits without an exception the file written there is fsynced and moved onto
    ``path``, otherwise it is deleted. The temp file is named as the module docstring says (a killed writer's is
    removed by the next); :func:`atomic_write` opens one for writing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path.parent, path.name)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.unlink(tmp_name)  # the name is this writer's (pid and random part); the file is the writer's to create
    try:
        yield Path(tmp_name)
        with open(tmp_name, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (best effort: not every platform allows it)."""
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<pid>\d+)-[^.]+\.tmp$")


def remove_stale_temporaries(folder: PathLike, name: Optional[str] = None) -> List[Path]:
    """Delete the temp files of :func:`atomic_write` in ``folder`` (of target ``name`` only, if given) whose
    writer process no longer exists; return them. Temp files of live processes are kept."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if not match or (name is not None and match.group("name") != name) or process_alive(int(match.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed.append(Path(entry.path))
    return removed


def process_alive(pid: int) -> bool:
    """Whether a process with id ``pid`` exists (this one counts; another user's too)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except OSError:
        return True
    return True
