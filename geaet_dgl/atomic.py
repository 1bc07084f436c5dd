"""Atomic file writes: temp file in the same folder, fsync, then ``os.replace``.

A reader therefore sees either the old file or the complete new one, never a
half-written file, even if the writer is killed mid-way.
"""

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator, Union

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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_current_umask())  # mkstemp makes 0600; use the usual mode
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise
    _fsync_dir(path.parent)


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
