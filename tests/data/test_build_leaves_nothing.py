"""The data build leaves nothing behind (the child dies with its parent; stale temporaries go)."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from geaet_dgl.atomic import atomic_write

REPO = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def _wait_for(predicate, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _start(script: str, tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=REPO,
                            env={**os.environ, "OMP_NUM_THREADS": "1"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


BUILD = """
    import os, sys, time
    from geaet_dgl.data.fresh_process import run_apart
    from geaet_dgl.atomic import atomic_write

    def step():
        with atomic_write(sys.argv[1] if len(sys.argv) > 1 else {out!r}) as handle:  # a build writing its file
            open({pid_file!r}, "w").write(str(os.getpid()))
            while True:
                handle.write(b"x" * 1000)
                time.sleep(0.01)

    run_apart(step, "test data")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="signals to a forked child, as on Linux")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
@pytest.mark.slow
def test_the_build_child_dies_with_its_parent(tmp_path, signum):
    pid_file = tmp_path / "child.pid"
    parent = _start(BUILD.format(out=str(tmp_path / "built.bin"), pid_file=str(pid_file)), tmp_path)
    child = None
    try:
        # start-up imports torch and DGL: on a loaded 2-core machine that alone can take over 20 s
        assert _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), 120), "the build never started"
        child = int(pid_file.read_text())
        parent.send_signal(signum)
        parent.wait(timeout=30)
        assert _wait_for(lambda: not _alive(child), 10), "the build child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL of a writer")
@pytest.mark.slow
def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    target = tmp_path / "data" / "split.bin"
    writer = _start(f"""
        import time
        from geaet_dgl.atomic import atomic_write
        with atomic_write({str(target)!r}) as handle:
            handle.write(b"half")
            handle.flush()
            time.sleep(600)
    """, tmp_path)
    try:
        assert _wait_for(lambda: target.parent.is_dir() and any(target.parent.iterdir()), 120)
        writer.kill()
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert [p.name for p in target.parent.iterdir() if p.name.endswith(".tmp")]  # what a SIGKILL leaves
    with atomic_write(target) as handle:  # the next start writes the file again
        handle.write(b"whole")
    assert sorted(p.name for p in target.parent.iterdir()) == ["split.bin"] and target.read_bytes() == b"whole"


def test_a_live_writers_temporary_is_kept(tmp_path):
    target = tmp_path / "split.bin"
    with atomic_write(target) as first:  # still being written (this process is alive)
        first.write(b"a")
        with atomic_write(tmp_path / "other.bin") as second:
            second.write(b"b")
        with atomic_write(target.with_name("split.bin")):
            pass
        assert len([p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]) == 1
