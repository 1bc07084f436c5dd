"""How this process's C allocator serves large CPU tensors (glibc on Linux).

glibc's ``malloc`` serves every request above its mmap threshold (at most 32
MiB) with a fresh ``mmap`` and returns it with ``munmap`` on free. PyTorch's
CPU allocator is plain ``malloc``, so on a big graph each op that outputs an
(E, d) tensor (1M nodes x 8 edges x 40 channels = 1.2 GiB) maps new memory, and
the kernel faults in and zeroes every 4 KiB page on first touch. For
GEANet on a 1M-node kNN graph that costs as much as the arithmetic, and it is
why time grows faster than N+E between 1e4 nodes (tensors reused from the
heap) and 1e5 nodes (fresh pages every op). Three modes:

``hugetlb`` (the default)
    glibc's ``glibc.malloc.hugetlb=1`` tunable: mmapped blocks get transparent
    huge pages, 512x fewer page faults, the same memory. A tunable is read at
    process start: the ``geaet-dgl`` command restarts itself with it in
    ``GLIBC_TUNABLES`` (:func:`restart_console_script`), and the benchmark starts its
    measuring processes with it. Python code that imports the package runs in
    whatever mode its interpreter started with; start it with
    ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` for the same effect.
``system``
    glibc's defaults (what PyTorch users get unless they change something).
``keep``
    ``mallopt(M_MMAP_MAX, 0)`` and a 2 GiB trim threshold, set in the running
    process: every block comes from the heap, and freed blocks are reused with
    no new page faults. Fastest, but the heap fragments: peak RSS grew 2.5x
    on a 1M-node graph, so it is never the default.

:func:`configure_allocator` applies a mode to this process (``$GEAET_DGL_ALLOCATOR``,
default ``hugetlb``); :func:`environment_for` gives the environment variables a
child process needs for a mode.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Dict, Optional

from .openmp_wait import choose_wait_policy

ENV_VAR = "GEAET_DGL_ALLOCATOR"
#: The installed console command, and the code its restart runs (:func:`restart_console_script`).
CONSOLE_SCRIPT = "geaet-dgl"
CONSOLE_CODE = "from geaet_dgl.cli import main; main(prog_name='geaet-dgl')"
CHOICES = ("system", "hugetlb", "keep")
HUGETLB_TUNABLE = "glibc.malloc.hugetlb=1"

# glibc's mallopt parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_TRIM_THRESHOLD_BYTES = 2**31 - 1  # the largest value mallopt's int takes: ~2 GiB kept after frees

_applied: Optional[str] = None
# Tunables are read when the process starts; later changes to os.environ (made for children) do not count.
_STARTED_WITH_HUGETLB = HUGETLB_TUNABLE in os.environ.get("GLIBC_TUNABLES", "").split(":")


def _libc() -> Optional[ctypes.CDLL]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") else None
    except OSError:
        return None


def _check(mode: str) -> str:
    mode = mode.lower()
    if mode not in CHOICES:
        raise ValueError(f"allocator mode {mode!r} is not one of {', '.join(CHOICES)} (from ${ENV_VAR} or "
                         f"--allocator)")
    return mode


def requested_mode(mode: Optional[str] = None) -> str:
    """``mode``, else ``$GEAET_DGL_ALLOCATOR``, else ``'hugetlb'``; checked."""
    return _check(mode or os.environ.get(ENV_VAR) or "hugetlb")


def configure_allocator(mode: Optional[str] = None) -> str:
    """Apply allocator ``mode`` to this process; returns what is in effect.

    Parameters
    ----------
    mode : {'system', 'hugetlb', 'keep'}, optional
        ``None``: :func:`requested_mode`. ``'system'`` and ``'hugetlb'`` change
        nothing in a running process (``hugetlb`` needs the tunable at start).

    Returns
    -------
    str
        ``'keep'`` when glibc now keeps freed memory (also when an earlier call
        set it: it cannot be undone), ``'hugetlb'`` when this process started
        with the tunable, ``'system'`` otherwise, ``'unavailable'`` for
        ``keep`` without glibc's ``mallopt``.
    """
    global _applied
    mode = requested_mode(mode)
    if _applied == "keep":
        return "keep"
    if mode == "keep":
        libc = _libc()
        if libc is None:
            return "unavailable"
        ok = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES) == 1
        _applied = "keep" if ok else None
        return _applied or "system"
    return allocator_mode()


def allocator_mode() -> str:
    """The mode in effect in this process: ``'keep'``, ``'hugetlb'`` (started with the tunable) or ``'system'``."""
    if _applied == "keep":
        return "keep"
    if _STARTED_WITH_HUGETLB and _libc() is not None:
        return "hugetlb"
    return "system"


def environment_for(mode: str, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """A copy of ``base`` (default ``os.environ``) with which a new process runs in allocator ``mode``."""
    env = dict(os.environ if base is None else base)
    mode = _check(mode)
    env[ENV_VAR] = mode
    tunables = [t for t in env.get("GLIBC_TUNABLES", "").split(":") if t and not t.startswith("glibc.malloc.hugetlb=")]
    if mode == "hugetlb":
        tunables.append(HUGETLB_TUNABLE)
    if tunables:
        env["GLIBC_TUNABLES"] = ":".join(tunables)
    else:
        env.pop("GLIBC_TUNABLES", None)
    return env


def restart_in_hugetlb_mode(code: str) -> None:
    """Re-execute this interpreter with glibc's huge-page tunable, unless asked not to or already done.

    glibc reads ``GLIBC_TUNABLES`` only at start-up, so the default mode
    (``hugetlb``: about 3x faster GEANet on a 100k-node graph, the same memory)
    needs a fresh start: the same process id, ``python -c code`` with this
    process's arguments, and the environment of :func:`environment_for`. Skipped
    with ``$GEAET_DGL_ALLOCATOR`` ``system`` or ``keep``, off Linux, and when a
    hugetlb tunable is set. The ``geaet-dgl`` command calls it before it imports
    anything heavy (:func:`restart_console_script`).
    """
    mode = os.environ.get(ENV_VAR, "hugetlb").lower()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if mode != "hugetlb" or not sys.platform.startswith("linux") or "glibc.malloc.hugetlb=" in tunables:
        return
    try:
        os.execve(sys.executable, [sys.executable, "-c", code] + sys.argv[1:], environment_for("hugetlb"))
    except OSError:
        pass  # keep running with glibc's defaults


def restart_console_script() -> None:
    """:func:`restart_in_hugetlb_mode` now, if this process is the installed ``geaet-dgl`` command.

    The console script's first statement is ``from geaet_dgl.cli import console_main``,
    which runs ``geaet_dgl/__init__.py`` (and so imports torch and dgl) before
    :func:`~geaet_dgl.cli.console_main` could restart. The package's ``__init__``
    calls this first instead, so that the restart costs no second import of torch.
    Any other program (``sys.argv[0]`` not ``geaet-dgl``) is left alone. Before the restart it chooses
    OpenMP's wait policy for the command (:func:`choose_wait_policy`).
    """
    if os.path.basename(sys.argv[0] if sys.argv else "") == CONSOLE_SCRIPT:
        choose_wait_policy()
        restart_in_hugetlb_mode(CONSOLE_CODE)
