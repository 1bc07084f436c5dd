"""Run one measurement in a fresh Python process, so its peak RSS is its own.

``run_isolated(task, kwargs)`` starts ``python -m geaet_lab.benchmarking.worker
TASK KWARGS_JSON OUT_JSON``; the child calls the task's function with the
keyword arguments and writes the returned dict to ``OUT_JSON``. Jobs of :mod:`.jobs` among the keyword
arguments travel as JSON too (:func:`.jobs.encode`, :func:`.jobs.decode`). Tasks:

* ``throughput`` -> :func:`geaet_lab.benchmarking.throughput.measure_throughput`
* ``against_pyg`` -> :func:`geaet_lab.benchmarking.against_pyg.measure_against_reference`
* ``epoch`` -> :func:`geaet_lab.benchmarking.epoch.measure_epoch`
* ``scaling`` -> :func:`geaet_lab.benchmarking.scaling.measure_scaling_point`
* ``hetero`` -> :func:`geaet_lab.benchmarking.hetero.measure_hetero`
* ``hetero_pair`` -> :func:`geaet_lab.benchmarking.hetero.measure_hetero_pair`
* ``node_scaling`` -> :func:`geaet_lab.benchmarking.node_scaling.measure_node_point`

``memory_limit_mib`` caps the child's address space (``RLIMIT_AS``): a
measurement too large for it fails with an allocation error in the child
(:attr:`WorkerError.out_of_memory`) instead of exhausting the machine.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from typing import Any, Callable, Dict, Optional

from .jobs import Timing, decode, encode

TASKS = {
    "throughput": ("geaet_lab.benchmarking.throughput", "measure_throughput"),
    "against_pyg": ("geaet_lab.benchmarking.against_pyg", "measure_against_reference"),
    "epoch": ("geaet_lab.benchmarking.epoch", "measure_epoch"),
    "scaling": ("geaet_lab.benchmarking.scaling", "measure_scaling_point"),
    "hetero": ("geaet_lab.benchmarking.hetero", "measure_hetero"),
    "hetero_pair": ("geaet_lab.benchmarking.hetero", "measure_hetero_pair"),
    "node_scaling": ("geaet_lab.benchmarking.node_scaling", "measure_node_point"),
}
#: What a failed allocation prints in Python, torch's CPU allocator and C++.
_OOM_SIGNS = ("MemoryError", "can't allocate memory", "std::bad_alloc", "Cannot allocate memory", "out of memory")

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class WorkerError(RuntimeError):
    """The measurement subprocess failed; ``returncode`` is its exit status (negative: killed by a signal)."""

    def __init__(self, message: str, returncode: int, out_of_memory: bool = False):
        super().__init__(message)
        self.returncode = returncode
        #: the child ran out of memory (an allocation failed, or it was killed by SIGKILL)
        self.out_of_memory = out_of_memory


def _address_space_limit(limit_mib: float) -> Callable[[], None]:
    def apply() -> None:  # runs in the child between fork and exec
        import resource

        limit = int(limit_mib * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def _threads_of(kwargs: Dict[str, Any]) -> Optional[int]:
    """The measurement's thread count: its ``threads``, else its job's or its timing's."""
    if "threads" in kwargs:
        return kwargs["threads"]
    for value in kwargs.values():
        timing = value if isinstance(value, Timing) else getattr(value, "timing", None)
        if isinstance(timing, Timing) and timing.threads is not None:
            return timing.threads
    return None


def run_isolated(task: str, kwargs: Dict[str, Any], timeout: Optional[float] = None,
                 memory_limit_mib: Optional[float] = None, python: Optional[str] = None) -> Dict[str, Any]:
    """Run ``TASKS[task](**kwargs)`` in a fresh interpreter and return its result dict.

    ``memory_limit_mib`` caps the child's address space; ``python`` runs it with
    another interpreter (e.g. one with the reference's packages).
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; one of {', '.join(TASKS)}")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    env.setdefault("DGLBACKEND", "pytorch")
    threads = _threads_of(kwargs)
    if threads is not None:  # size OpenMP's pool before torch starts it
        env["OMP_NUM_THREADS"] = str(threads)
    with tempfile.TemporaryDirectory(prefix="geaet-bench-") as tmp:
        out_path = os.path.join(tmp, "result.json")
        spec = json.dumps(kwargs, default=encode)
        cmd = [python or sys.executable, "-m", "geaet_lab.benchmarking.worker", task, spec, out_path]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                                  preexec_fn=None if memory_limit_mib is None else _address_space_limit(memory_limit_mib))
        except subprocess.TimeoutExpired as exc:
            raise WorkerError(f"{task} worker ran past {timeout:.0f} s ({kwargs})", -1) from exc
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            killed = proc.returncode in (-9, 137)
            why = "killed (out of memory?)" if killed else f"exit status {proc.returncode}"
            oom = killed or any(sign in proc.stderr for sign in _OOM_SIGNS)
            raise WorkerError(f"{task} worker failed, {why}, for {kwargs}:\n{tail}", proc.returncode, oom)
        with open(out_path) as f:
            return json.load(f)


def main(argv) -> int:
    if len(argv) != 3:
        print("usage: python -m geaet_lab.benchmarking.worker TASK KWARGS_JSON OUT_JSON", file=sys.stderr)
        return 2
    task, spec, out_path = argv
    from geaet_dgl.allocator import configure_allocator

    configure_allocator()  # the parent's choice, passed down in $GEAET_DGL_ALLOCATOR
    module, name = TASKS[task]
    func = getattr(importlib.import_module(module), name)
    result = func(**json.loads(spec, object_hook=decode))
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
