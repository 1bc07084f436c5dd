"""Whether the ``geaet-dgl`` command's waiting OpenMP threads spin or sleep, chosen from the machine at start.

torch and DGL parallelise each op over ``--threads`` OpenMP threads; at the end of every parallel region a
thread that finishes first *spins* (GNU OpenMP's default) until its peers arrive. On a machine whose cores are
all ours that is the fastest way to wait. When another process keeps a core busy, a peer is descheduled and the
spinning thread burns its time slice waiting for it, hundreds of times per step: measured 2026-11-29 on the
2-core AMD EPYC, ``geaet-dgl train --dataset cora`` took 8.0-8.6 s on the quiet machine, 18-23 s beside one
busy process and 28-115 s beside a 2-thread benchmark; with ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads
sleep) 10.3-10.8 s and 11-14 s there, but 10.6-11.7 s on the quiet machine (wake-ups cost about 30%), and a
shorter spin (``GOMP_SPINCOUNT=10000``) did not help the busy case (20-28 s). So neither policy is right
everywhere, and the command picks one when it starts (:func:`wait_policy_environment`): sleeping waiters when
other processes are running on the machine, libgomp's default otherwise. OpenMP reads the variable once, when
torch loads it, so the command sets it in the environment it restarts with
(:func:`choose_wait_policy`, called by :func:`geaet_dgl.allocator.restart_console_script`); a run's log says what was chosen
(:func:`describe_wait_policy`). ``OMP_WAIT_POLICY`` set by the user is always left as it is. Programs that
import the package are not touched.
"""
from __future__ import annotations

import os
import time
from typing import Dict, Mapping, Optional

from .threads import available_cores

#: OpenMP's standard variable: ``PASSIVE`` (waiting threads sleep) or ``ACTIVE`` (they spin).
POLICY_VAR = "OMP_WAIT_POLICY"
#: What the command decided and why, for the run's log (set together with the policy, and when it kept the default).
DECISION_VAR = "GEAET_DGL_OMP_WAIT"
#: Reads of the run queue at start, and the seconds between them (the median is taken: one passing process
#: does not decide).
SAMPLES, INTERVAL_S = 5, 0.01
LOADAVG = "/proc/loadavg"


def running_besides_this(samples: int = SAMPLES, interval: float = INTERVAL_S, path: str = LOADAVG
                         ) -> Optional[int]:
    """Median over ``samples`` reads of the processes running or ready to run on the machine besides this one
    (the kernel's count in ``/proc/loadavg``'s fourth field, ``running/total``); None where it cannot be read."""
    counts = []
    for index in range(samples):
        try:
            with open(path) as handle:
                counts.append(max(int(handle.read().split()[3].split("/")[0]) - 1, 0))
        except (OSError, ValueError, IndexError):
            return None
        if index + 1 < samples:
            time.sleep(interval)
    return sorted(counts)[len(counts) // 2]


def wait_policy_environment(env: Mapping[str, str], cores: int, others: Optional[int]) -> Dict[str, str]:
    """A copy of ``env`` with the wait policy of a command about to start: ``PASSIVE`` when ``others`` processes
    (:func:`running_besides_this`) are running and this one may use more than one core; ``env``'s own
    ``OMP_WAIT_POLICY``, or a decision already taken (:data:`DECISION_VAR`), is kept."""
    out = dict(env)
    if POLICY_VAR in out or DECISION_VAR in out:
        return out
    if others and cores > 1:
        out[POLICY_VAR] = "PASSIVE"
        out[DECISION_VAR] = f"passive ({others} other process{'es' if others > 1 else ''} running at start)"
    else:
        out[DECISION_VAR] = "spinning (no other process running at start)" if others is not None else \
            "spinning (the run queue was not readable)"
    return out


def describe_wait_policy(env: Optional[Mapping[str, str]] = None) -> str:
    """How this process's OpenMP threads wait, for a log line: the command's decision, the user's setting, or
    libgomp's default."""
    env = os.environ if env is None else env
    if DECISION_VAR in env:
        return env[DECISION_VAR]
    if POLICY_VAR in env:
        return f"{env[POLICY_VAR].lower()} ({POLICY_VAR} set)"
    return "libgomp's default"


def choose_wait_policy() -> None:
    """Set this command's wait policy in ``os.environ`` (:func:`wait_policy_environment`) before torch loads
    OpenMP; a restart passes it on. The run queue is read only when nothing has decided yet."""
    if POLICY_VAR not in os.environ and DECISION_VAR not in os.environ:
        os.environ.update(wait_policy_environment(os.environ, available_cores(), running_besides_this()))
