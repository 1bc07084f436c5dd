"""Clocks, summaries and memory readings shared by the benchmarks."""
from __future__ import annotations

import resource
import statistics
import sys
import time
from typing import Callable, Dict, List, Sequence

import torch

from geaet_dgl.threads import apply_threads


def set_threads(threads: int) -> None:
    """Use ``threads`` intra-op threads (and one inter-op thread where still settable), in torch, DGL and
    BLAS, and in the processes started from here (:func:`geaet_dgl.threads.apply_threads`)."""
    apply_threads(int(threads))


def check_device(device: str) -> torch.device:
    """``'cpu'`` or ``'cuda[:i]'`` as a ``torch.device``; a clear error when CUDA is absent."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} asked for but torch.cuda.is_available() is False; use device='cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device={device!r} is not supported; use 'cpu' or 'cuda'")
    return dev


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_call(fn: Callable[[], object], device: torch.device) -> float:
    """Seconds one call of ``fn`` takes (device work included)."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def summarize(values: Sequence[float]) -> Dict[str, float]:
    """``{'median', 'min', 'max'}`` of a non-empty list."""
    if not values:
        raise ValueError("no measurements to summarize; use repeats >= 1")
    return {"median": float(statistics.median(values)), "min": float(min(values)), "max": float(max(values))}


def rates(graphs: Sequence[int], seconds: Sequence[float]) -> List[float]:
    """Graphs per second of each timed step."""
    return [g / s for g, s in zip(graphs, seconds)]


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, MiB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``, the high-water mark of
    this process's own address space. ``getrusage(RUSAGE_SELF).ru_maxrss`` is
    not used there because Linux carries it over (v)fork + exec: a worker started
    by a 2 GiB parent would report at least 2 GiB. Elsewhere ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0  # bytes on macOS, KiB on Linux


def current_rss_mib() -> float:
    """Resident set size of this process now, MiB."""
    import psutil

    return psutil.Process().memory_info().rss / (1024.0 * 1024.0)


def peak_gpu_mib(device: torch.device) -> float:
    return torch.cuda.max_memory_allocated(device) / (1024.0 * 1024.0)


def environment(device: str, threads: int) -> Dict[str, object]:
    """Versions and machine facts for the JSON ``config`` section."""
    import platform

    import dgl
    import os

    info = {
        "device": str(device),
        "threads": int(threads),
        "torch": torch.__version__,
        "dgl": dgl.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }
    if torch.device(device).type == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(torch.device(device))
    return info
