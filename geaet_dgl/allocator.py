"""Keep freed memory in glibc's heap, so large CPU tensors do not pay page faults on every op.

On Linux, glibc's ``malloc`` serves every request above its mmap threshold (at
most 32 MiB) with a fresh ``mmap`` and gives it back with ``munmap`` on free.
PyTorch's CPU allocator is plain ``malloc``, so each op that outputs a large
tensor (an (E, d) edge tensor of a big graph or batch: 1M nodes x 8 edges x 40
channels is 1.2 GiB) maps new pages, and the kernel faults in and zeroes every
4 KiB page on first touch. On this project's kNN graphs that costs more than
the arithmetic: GEANet's forward on a 1M-node graph takes about 3x longer with
glibc's defaults than with freed memory kept (``geaet-dgl benchmark --scaling``
measures both ways with ``--allocator``).

:func:`configure_allocator` ``('keep')`` sets ``M_MMAP_MAX = 0`` (every block
comes from the heap, which reuses freed blocks) and a 2 GiB trim threshold
(freed memory is kept for the next step instead of returned to the OS).
PyTorch's CPU performance guide recommends jemalloc/tcmalloc for the same
reason; this gets most of their effect without an ``LD_PRELOAD``.
The cost: the process keeps its high-water mark of memory until it exits, as
the CUDA caching allocator does on a GPU.

The CLI applies it at start-up; ``GEAET_DGL_ALLOCATOR=system`` (or ``--allocator
system`` on ``benchmark``) leaves glibc's defaults. On systems without glibc it
does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from typing import Optional

ENV_VAR = "GEAET_DGL_ALLOCATOR"
CHOICES = ("keep", "system")

# glibc's mallopt parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_TRIM_THRESHOLD_BYTES = 2**31 - 1  # the largest value mallopt's int takes: ~2 GiB kept after frees

_applied: Optional[str] = None


def _libc() -> Optional[ctypes.CDLL]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") else None
    except OSError:
        return None


def configure_allocator(mode: Optional[str] = None) -> str:
    """Apply allocator ``mode`` to this process; returns what is in effect.

    Parameters
    ----------
    mode : {'keep', 'system'}, optional
        ``None`` reads ``$GEAET_DGL_ALLOCATOR`` (default ``'keep'``).
        ``'system'`` changes nothing.

    Returns
    -------
    str
        ``'keep'`` when glibc now keeps freed memory (also when an earlier call
        set it: glibc cannot be put back), ``'system'`` when the defaults are in
        effect, ``'unavailable'`` where there is no glibc ``mallopt``.
    """
    global _applied
    mode = (mode or os.environ.get(ENV_VAR) or "keep").lower()
    if mode not in CHOICES:
        raise ValueError(f"allocator mode {mode!r} is not one of {', '.join(CHOICES)} (from ${ENV_VAR} or "
                         f"--allocator)")
    if _applied == "keep":
        return "keep"
    if mode == "system":
        _applied = "system"
        return "system"
    libc = _libc()
    if libc is None:
        return "unavailable"
    ok = libc.mallopt(_M_MMAP_MAX, 0) == 1 and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES) == 1
    _applied = "keep" if ok else "system"
    return _applied


def allocator_mode() -> str:
    """What :func:`configure_allocator` put in effect in this process (``'system'`` if never called)."""
    return _applied or "system"
