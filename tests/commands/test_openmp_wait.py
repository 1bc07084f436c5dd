"""The ``geaet-dgl`` command lets waiting OpenMP threads sleep when other processes are running at its start."""
import json
import os
import subprocess
import sys

import pytest

from geaet_dgl.threads import available_cores
from geaet_dgl.openmp_wait import (DECISION_VAR, POLICY_VAR, describe_wait_policy, running_besides_this,
                                   wait_policy_environment)


def test_the_run_queue_is_read_without_this_process(tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.52 0.40 0.31 3/127 4242\n")
    assert running_besides_this(samples=3, interval=0, path=str(loadavg)) == 2
    loadavg.write_text("0.52 0.40 0.31 1/127 4242\n")
    assert running_besides_this(samples=1, path=str(loadavg)) == 0
    loadavg.write_text("garbled\n")
    assert running_besides_this(samples=1, path=str(loadavg)) is None
    assert running_besides_this(samples=1, path=str(tmp_path / "missing")) is None


def test_the_policy_follows_the_other_processes_and_keeps_the_users_setting():
    busy = wait_policy_environment({"PATH": "/bin"}, cores=2, others=1)
    assert busy[POLICY_VAR] == "PASSIVE" and busy["PATH"] == "/bin"
    assert describe_wait_policy(busy) == "passive (1 other process running at start)"
    quiet = wait_policy_environment({}, cores=2, others=0)
    assert POLICY_VAR not in quiet and describe_wait_policy(quiet).startswith("spinning")
    assert POLICY_VAR not in wait_policy_environment({}, cores=1, others=3)  # one thread waits for nobody
    assert POLICY_VAR not in wait_policy_environment({}, cores=2, others=None)
    mine = wait_policy_environment({POLICY_VAR: "ACTIVE"}, cores=2, others=4)
    assert mine == {POLICY_VAR: "ACTIVE"} and describe_wait_policy(mine) == "active (OMP_WAIT_POLICY set)"
    decided = {DECISION_VAR: "spinning (no other process running at start)"}
    assert wait_policy_environment(decided, cores=2, others=5) == decided  # a restarted command keeps its choice


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isfile("/proc/loadavg"), reason="Linux's run queue")
@pytest.mark.skipif(available_cores() < 2, reason="one core: a single thread waits for nobody")
def test_the_command_beside_a_busy_process_lets_its_threads_sleep(tmp_path):
    """The installed command (its console script's first import) beside a process that keeps a core busy."""
    from tests.training.tiny import SUBPROCESS_ENV, cli_args

    env = {k: v for k, v in os.environ.items() if k not in (POLICY_VAR, DECISION_VAR)}
    env.update(SUBPROCESS_ENV)
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        program = ("import sys; sys.argv[0] = '/venv/bin/geaet-dgl'; "
                   "from geaet_dgl.cli import console_main; console_main()")
        subprocess.run([sys.executable, "-c", program] + cli_args(1, tmp_path / "run"), env=env, check=True,
                       capture_output=True, text=True, timeout=300)
    finally:
        busy.kill()
        busy.wait()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["openmp_wait"].startswith("passive ("), summary["openmp_wait"]
    assert "OpenMP waiting passive (" in (tmp_path / "run" / "train.log").read_text()
