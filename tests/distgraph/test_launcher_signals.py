"""However the launcher of ``train --partitions`` ends, no graph server or trainer outlives it.

A closed terminal (SIGHUP), ``kill`` (SIGTERM), Ctrl-C (SIGINT) and ``kill -9`` of the launcher each
leave no process of the job running a few seconds later: the launcher stops its servers and trainers on
every way out, the servers stop at once on SIGTERM, and the kernel stops every child when the launcher
itself is killed (parent-death signal).

The launcher's own code (:func:`~geaet_dgl.distgraph.processes.run_job` with
:class:`~geaet_dgl.distgraph.processes.LocalJob`) is tested for every signal with stand-in workers that
start in milliseconds: a stand-in server runs the real servers' signal handling
(:func:`~geaet_dgl.distgraph.worker.stop_on_signals`) while its main thread waits in a blocking call, as a
DGL server waits in its C++ RPC loop. One real job (``train --partitions`` with DGL's servers, trainers
training) is then killed with ``kill -9``: only the kernel's parent-death signals stop it.
"""
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import dgl
import pytest

from geaet_dgl.distgraph import worker
from geaet_dgl.distgraph.partition import partition_file
from geaet_dgl.distgraph.processes import JobStopped, LocalJob, run_job

from .conftest import SMALL_RUN, _alive, planted_graph

pytestmark = pytest.mark.distributed

#: Seconds every process of the job has to be gone after the signal.
GONE_WITHIN_S = 6.0
SIGNALS = [signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGKILL]
IDS = ["SIGHUP", "SIGTERM", "SIGINT", "kill-9"]

#: A stand-in worker without torch or DGL: a server takes the real servers' signal handling (worker.py loaded
#: by path, not through the package, whose import loads DGL), then both roles wait in a blocking call.
STAND_IN = f"""
import importlib.util, os, time
if os.environ["DGL_ROLE"] == "server":
    spec = importlib.util.spec_from_file_location("worker", {worker.__file__!r})
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.stop_on_signals(lambda: open(os.environ["CLEANED"], "w").close())
print("ready", flush=True)
time.sleep(600)
"""


class StandInJob(LocalJob):
    worker_command = ("-c", STAND_IN)


def _job_pids(run_dir: str) -> dict:
    try:
        with open(os.path.join(run_dir, "dist-logs", "pids.json")) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def _stand_in_launcher(run_dir: str) -> None:
    """What a forked launcher runs: 2 servers and 2 trainers under run_job; exit 128 + the signal that stopped it."""
    for signum in SIGNALS[:3]:
        signal.signal(signum, signal.SIG_DFL)
    job = StandInJob(os.path.join(run_dir, "dist-logs"), "gdtest")

    def start(job):
        for k in range(2):
            job.start(f"server-{k}", {"DGL_ROLE": "server", "CLEANED": os.path.join(run_dir, f"cleaned-{k}")}, True)
        for k in range(2):
            job.start(f"trainer-{k}", {"DGL_ROLE": "client"}, False)

    try:
        run_job(job, run_dir, start)
    except JobStopped as stopped:
        os._exit(128 + stopped.signum)
    os._exit(0)


def _ready(run_dir: str, pids: dict) -> bool:
    def said_ready(name):
        try:
            with open(os.path.join(run_dir, "dist-logs", f"{name}.log")) as handle:
                return "ready" in handle.read()
        except OSError:
            return False
    return len(pids) == 4 and all(_alive(pid) and said_ready(name) for name, pid in pids.items())


def _wait_gone(pids: dict, launcher_gone) -> list:
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline and (not launcher_gone() or any(map(_alive, pids.values()))):
        time.sleep(0.02)
    return [name for name, pid in pids.items() if _alive(pid)]


def _kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("signum", SIGNALS, ids=IDS)
def test_no_stand_in_process_outlives_the_launcher(tmp_path, signum):
    run_dir = str(tmp_path)
    launcher = multiprocessing.get_context("fork").Process(target=_stand_in_launcher, args=(run_dir,))
    launcher.start()
    pids = {}
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _ready(run_dir, pids):
            pids = _job_pids(run_dir)
            time.sleep(0.02)
        assert _ready(run_dir, pids), "the stand-in job did not start"
        os.kill(launcher.pid, signum)
        left = _wait_gone(pids, lambda: not launcher.is_alive())
        assert not launcher.is_alive(), "the launcher still runs"
        assert not left, f"left running {GONE_WITHIN_S} s after {signal.Signals(signum).name}: {left}"
        # the servers stopped on their own signal (SIGTERM from the launcher or the kernel), so they cleaned up
        assert sorted(os.listdir(run_dir)) == ["cleaned-0", "cleaned-1", "dist-logs"]
        assert launcher.exitcode == (-signal.SIGKILL if signum == signal.SIGKILL else 128 + signum)
    finally:
        _kill_all(pids.values())
        launcher.kill()
        launcher.join()


def test_kill_9_of_a_real_launcher_stops_dgl_servers_and_trainers(tmp_path):
    """``train --partitions`` through the CLI; ``kill -9`` while the trainers train: nothing runs on, no shared memory."""
    path = str(tmp_path / "planted.bin")
    dgl.save_graphs(path, [planted_graph(300)])
    config = partition_file(path, 2, str(tmp_path / "parts"), lap_k=0).config
    run_dir = str(tmp_path / "run")
    settings = [arg for key, value in dict(SMALL_RUN, **{"train.epochs": "500", "train.batch_size": "150"}).items()
                for arg in ("--set", f"{key}={value}")]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    launcher = subprocess.Popen([sys.executable, "cli.py", "train", "--partitions", config, "--nproc", "2", "--out",
                                 run_dir, "--no-progress", "--threads", "2", *settings], cwd=root,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    pids = {}
    try:
        metrics = os.path.join(run_dir, "metrics.jsonl")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and launcher.poll() is None and not os.path.isfile(metrics):
            time.sleep(0.05)
        pids = _job_pids(run_dir)
        assert os.path.isfile(metrics) and len(pids) == 4, "the job did not train"
        with open(f"/proc/{pids['server-0']}/environ", "rb") as handle:
            token = dict(item.split(b"=", 1) for item in handle.read().split(b"\0") if b"=" in item)[
                b"GEAET_DGL_SHM_PREFIX"].decode()
        launcher.kill()
        left = _wait_gone(pids, lambda: launcher.poll() is not None)
        assert not left, f"left running {GONE_WITHIN_S} s after kill -9 of the launcher: {left}"
        assert not [name for name in os.listdir("/dev/shm") if token in name]  # the servers removed theirs
        assert not os.path.isfile(os.path.join(run_dir, "summary.json"))
    finally:
        _kill_all(pids.values())
        launcher.kill()
        launcher.wait()


def test_wait_reports_the_killed_trainer_before_the_ones_that_lost_their_connection(tmp_path):
    """Two trainers ended by the same poll: trainer-0 with 1 (its peer vanished), trainer-1 killed by SIGKILL.
    The job error names the killed one, whatever the list order."""
    from geaet_dgl.distgraph.processes import DistributedJobError, LocalJob

    job = LocalJob(str(tmp_path / "logs"), "t")
    lost = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    killed.kill()
    lost.wait(), killed.wait()
    for name in ("trainer-0", "trainer-1"):
        (tmp_path / "logs" / f"{name}.log").write_text("connection reset\n")
    job.trainers = [("trainer-0", lost), ("trainer-1", killed)]
    with pytest.raises(DistributedJobError, match="trainer-1 exited with code -9 \\(killed by SIGKILL\\)"):
        job.wait(poll_s=0.01)
