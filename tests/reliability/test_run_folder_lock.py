"""One process per run folder: claimed atomically before any data is read; a second process is refused in one
line; a lock left by a killed process is stale and taken over; released when the process ends."""
import json
import os
import signal
import socket
import subprocess
import time

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training.run_dir import RunDirError
from geaet_dgl.training.run_lock import RunDirInUse, claim_run_dir, lock_path
from tests.training.tiny import SUBPROCESS_ENV, cli_args, subprocess_command

from .helpers import one_line_error


def _invoke(args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def _start_time(pid):
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[19]


def _write_lock(run_dir, **holder):
    path = lock_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"host": socket.gethostname(), "since": time.time(), **holder}))
    return path


def _dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.slow
def test_a_second_train_on_a_folder_in_use_is_refused_before_reading_data_and_a_killed_one_is_taken_over(tmp_path):
    out = tmp_path / "run"
    first = subprocess.Popen(subprocess_command(cli_args(500, out)), env={**os.environ, **SUBPROCESS_ENV},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "metrics.jsonl").is_file():  # the first run trains
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        holder = json.loads(lock_path(out).read_text())
        assert holder["pid"] == first.pid and holder["host"] == socket.gethostname()

        second = _invoke(cli_args(1, out))
        line = one_line_error(second, exit_code=2)
        assert line.startswith(f"error: {out} is in use by another geaet-dgl process (pid {first.pid} on "
                               f"{socket.gethostname()}")
        assert line.endswith("wait for it to end, or choose another --out")
        # claimed before any data is read: a missing graph file is not what stops it
        missing = one_line_error(_invoke(["train", "--dataset", tmp_path / "absent.bin", "--out", out]), exit_code=2)
        assert "is in use by another geaet-dgl process" in missing
        with_overwrite = one_line_error(_invoke(cli_args(1, out, ["--overwrite"])), exit_code=2)
        assert "is in use" in with_overwrite
        # nothing of the refused 1-epoch runs mixed in: the folder holds the first run's 500-epoch configuration
        assert json.loads((out / "config.json").read_text())["train"]["epochs"] == 500
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    assert lock_path(out).is_file()  # SIGKILL: nothing released it

    third = _invoke(cli_args(1, out, ["--overwrite"]))
    assert third.exit_code == 0, third.output
    assert f"taking over the lock of process {first.pid}, which no longer runs" in third.output
    assert json.loads((out / "summary.json").read_text())["epochs"] == 1
    assert not lock_path(out).exists()  # released on exit


def test_a_lock_of_a_dead_process_or_of_a_reused_pid_is_stale(tmp_path):
    dead = tmp_path / "dead"
    _write_lock(dead, pid=_dead_pid(), started="1")
    with claim_run_dir(dead) as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()
    assert not path.exists()
    reused = tmp_path / "reused"  # a live process id, but a later process than the one that wrote the lock
    _write_lock(reused, pid=os.getppid(), started=str(int(_start_time(os.getppid())) + 1))
    with claim_run_dir(reused):
        pass


def test_a_live_holder_is_refused_and_its_lock_kept(tmp_path):
    run = tmp_path / "run"
    path = _write_lock(run, pid=os.getppid(), started=_start_time(os.getppid()))
    with pytest.raises(RunDirInUse, match=f"pid {os.getppid()} on "):
        with claim_run_dir(run):
            pass
    assert json.loads(path.read_text())["pid"] == os.getppid()


def test_a_holder_on_another_machine_is_refused_with_the_file_to_delete(tmp_path):
    run = tmp_path / "run"
    path = _write_lock(run, pid=1234, host="elsewhere.example")
    with pytest.raises(RunDirInUse) as caught:
        with claim_run_dir(run):
            pass
    assert "on another machine (pid 1234 on elsewhere.example" in str(caught.value)
    assert str(caught.value).endswith(f"delete {path})")


def test_claims_nest_and_are_released_when_the_block_fails(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(KeyError):
        with claim_run_dir(run) as path:
            with claim_run_dir(run):
                assert path.is_file()
            assert path.is_file()  # the outer claim still holds it
            raise KeyError("stop")
    assert not path.exists()


def test_a_study_folder_in_use_is_refused(tmp_path):
    out = tmp_path / "study"
    _write_lock(out, pid=os.getppid(), started=_start_time(os.getppid()))
    line = one_line_error(_invoke(cli_args(1, out, ["--seeds", "0", "1"])), exit_code=2)
    assert line.startswith(f"error: {out} is in use by another geaet-dgl process")
    assert not out.exists()
    sweep = _invoke(["sweep", "--dataset", "synthetic", "--set", "train.lr=0.1,0.2", "--out", out])
    assert "is in use by another geaet-dgl process" in one_line_error(sweep, exit_code=2)


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    line = one_line_error(_invoke(cli_args(1, tmp_path / "file" / "run")), exit_code=2)
    assert line.startswith(f"error: cannot create {tmp_path / 'file'} for the run folder ")
    assert line.endswith("choose another --out")
