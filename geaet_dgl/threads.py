"""How many CPU threads this process computes with: torch, DGL, BLAS, and the processes it starts.

One number, ``threads``, sizes every pool a run uses:

* torch's intra-op pool (``torch.set_num_threads``), which DGL's kernels share
  (DGL and torch load one OpenMP runtime; DGL's own setting is applied too);
* torch's inter-op pool, set to one thread while it is still settable:
  nothing in training, evaluation or the benchmark runs operators side by side;
* the BLAS pools of NumPy and SciPy (OpenBLAS), used by the Laplacian PE's
  eigen-decompositions when the data are prepared, through ``threadpoolctl``;
* the processes a run starts: the superpixel build starts ``threads`` worker
  processes (its default), data-parallel ranks share ``threads`` between them
  (:func:`per_process_threads`), DataLoader workers compute with one thread
  each (torch sets that in every worker).

The default (:func:`default_threads`) is ``$OMP_NUM_THREADS`` when set, else
the number of cores this process may run on (``os.sched_getaffinity``), so
``taskset -c 0 geaet-dgl train ...`` trains on one thread. On a machine shared
with other CPU-bound work, fewer threads than cores is faster: OpenMP threads
that wait for a descheduled peer spin (see docs/performance.md, "A busy
machine").
"""
from __future__ import annotations

import os
from typing import Optional

#: The standard way to size OpenMP pools; an explicit setting is the default here too.
OMP_ENV_VAR = "OMP_NUM_THREADS"

_blas_limits = None  # the threadpoolctl limit in force (kept alive: dropping it does not undo it, but be explicit)
_applied: Optional[int] = None


def available_cores() -> int:
    """Cores this process may run on: ``len(os.sched_getaffinity(0))``, else ``os.cpu_count()``, at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


def default_threads() -> int:
    """``$OMP_NUM_THREADS`` if it is an integer >= 1, else :func:`available_cores`."""
    value = os.environ.get(OMP_ENV_VAR, "").strip()
    if value.isdigit() and int(value) >= 1:
        return int(value)
    return available_cores()


def check_threads(threads: object, where: str = "threads") -> int:
    """``threads`` as an int >= 1, else ``ValueError`` naming ``where`` and the fix."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"{where}={threads!r} must be an integer >= 1 (leave it out for {default_threads()}: "
                         f"$OMP_NUM_THREADS if set, else the cores this process may use)")
    return int(threads)


def resolve_threads(threads: Optional[int] = None) -> int:
    """``threads`` checked, or :func:`default_threads` when ``None``."""
    return default_threads() if threads is None else check_threads(threads)


def current_threads() -> int:
    """What :func:`apply_threads` last applied in this process, else :func:`default_threads`."""
    return _applied if _applied is not None else default_threads()


def per_process_threads(threads: int, processes: int) -> int:
    """Threads each of ``processes`` data-parallel processes uses so that together they use ``threads``."""
    return max(1, check_threads(threads) // max(1, int(processes)))


def apply_threads(threads: Optional[int] = None) -> int:
    """Size every thread pool of this process, and of the processes it starts, to ``threads``.

    Parameters
    ----------
    threads : int, optional
        ``None``: :func:`default_threads`.

    Returns
    -------
    int
        The number applied (what ``torch.get_num_threads()`` now returns).
    """
    global _blas_limits, _applied
    threads = resolve_threads(threads)
    import torch

    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # set before, or inter-op work already started: it can be set only once
        pass
    try:
        from dgl.utils import set_num_threads as dgl_set_num_threads

        dgl_set_num_threads(threads)
    except ImportError:  # pragma: no cover - dgl is a dependency
        pass
    try:
        from threadpoolctl import threadpool_limits

        _blas_limits = threadpool_limits(limits=threads, user_api="blas")
    except ImportError:  # optional: without it NumPy's BLAS keeps its own size
        pass
    _applied = threads
    return threads
