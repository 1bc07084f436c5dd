"""Allocator modes: 'keep' reuses freed large blocks, 'hugetlb' maps them with huge pages; both cut page faults."""
import json
import subprocess
import sys

import os

import pytest

from geaet_dgl.allocator import configure_allocator, environment_for
from geaet_lab.benchmarking.jobs import ScalingJob, Timing
from geaet_lab.benchmarking.worker import run_isolated

# In a fresh interpreter: allocate, touch and free a 64 MiB tensor 16 times; print the page faults of the
# last 4 rounds (glibc's heap needs a few rounds to hold enough free blocks for the aligned requests).
_PROBE = """
import resource, sys, torch
from geaet_dgl.allocator import configure_allocator
from geaet_dgl.allocator import allocator_mode
configure_allocator(sys.argv[1])
print(allocator_mode())
def round_trip():
    t = torch.ones(16 * 2**20)  # 64 MiB, above glibc's largest mmap threshold
    del t
for _ in range(12):
    round_trip()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    round_trip()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str):
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True,
                         env=environment_for(mode))
    applied, faults = out.stdout.split()
    return applied, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
@pytest.mark.slow
def test_keep_mode_reuses_freed_memory_without_page_faults():
    applied, faults_system = _faults("system")
    assert applied == "system"
    # glibc's default maps every 64 MiB block afresh: 4 rounds x 16,384 pages of 4 KiB fault in again
    assert faults_system >= 4 * 16_384 * 0.9
    applied, faults_keep = _faults("keep")
    assert applied == "keep"
    assert faults_keep < 0.05 * faults_system


def _transparent_huge_pages_off() -> bool:
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            return "[never]" in f.read()
    except OSError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux") or _transparent_huge_pages_off(),
                    reason="needs glibc and transparent huge pages (always or madvise)")
@pytest.mark.slow
def test_hugetlb_mode_maps_large_blocks_with_huge_pages():
    _, faults_system = _faults("system")
    applied, faults_huge = _faults("hugetlb")
    assert applied == "hugetlb"
    assert faults_huge < 0.05 * faults_system  # 2 MiB pages: 512x fewer faults for the same memory


def test_environment_for_sets_and_clears_the_tunable():
    base = {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=0", "HOME": "/h"}
    env = environment_for("hugetlb", base)
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"
    assert env["GEAET_DGL_ALLOCATOR"] == "hugetlb" and env["HOME"] == "/h"
    assert environment_for("system", base)["GLIBC_TUNABLES"] == "glibc.malloc.arena_max=2"
    assert "GLIBC_TUNABLES" not in environment_for("keep", {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
    assert base["GLIBC_TUNABLES"].endswith("hugetlb=0")  # the input is not modified


def test_unknown_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="not one of system, hugetlb, keep"):
        configure_allocator("jemalloc")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
@pytest.mark.parametrize("mode", ["keep", "system", "hugetlb"])
@pytest.mark.slow
def test_measuring_processes_inherit_the_mode(monkeypatch, mode):
    for name, value in environment_for(mode).items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    job = ScalingJob(repeats=1, warmup=0, backward=False, min_time_s=0.0)
    point = run_isolated("scaling", dict(component="geanet", num_nodes=50, job=job, timing=Timing(threads=1)))
    assert point["allocator"] == mode


@pytest.mark.slow
def test_benchmark_cli_records_the_allocator(tmp_path):
    from click.testing import CliRunner

    from geaet_dgl import cli

    path = tmp_path / "bench.json"
    result = CliRunner().invoke(cli.main, ["benchmark", "--batch-size", "2", "--repeats", "1", "--warmup", "0",
                                           "--threads", "1", "--allocator", "system", "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert json.loads(path.read_text())["config"]["allocator"] == "system"
    assert "allocator=system" in result.output


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
@pytest.mark.parametrize("mode", ["hugetlb", "system"])
@pytest.mark.slow
def test_console_command_starts_in_the_chosen_mode(tmp_path, mode):
    """`geaet-dgl` restarts itself with glibc's huge-page tunable by default; the run records the mode."""
    from tests.training.tiny import SUBPROCESS_ENV, cli_args

    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env.update(SUBPROCESS_ENV, GEAET_DGL_ALLOCATOR=mode)
    command = [sys.executable, "-c", "from geaet_dgl.cli import console_main; console_main()"] + cli_args(1, tmp_path / "run")
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["allocator"] == mode


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_installed_command_restarts_before_torch_is_imported():
    """The console script's `from geaet_dgl.cli import console_main` restarts in `import geaet_dgl`, before torch."""
    probe = ("import os, sys; sys.argv[0] = '/venv/bin/geaet-dgl'; "
             "os.execve = lambda path, argv, env: print(repr(('torch' in sys.modules, argv[1:], "
             "env.get('GLIBC_TUNABLES')))) or sys.exit(0); "
             "from geaet_dgl.cli import console_main")
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "GEAET_DGL_ALLOCATOR")}
    done = subprocess.run([sys.executable, "-c", probe, "train", "--help"], env=env, check=True,
                          capture_output=True, text=True)
    torch_loaded, argv, tunables = eval(done.stdout.strip())
    assert not torch_loaded
    assert argv == ["-c", "from geaet_dgl.cli import main; main(prog_name='geaet-dgl')", "train", "--help"]
    assert tunables == "glibc.malloc.hugetlb=1"


@pytest.mark.parametrize("program, restarted", [("/venv/bin/geaet-dgl", True), ("/venv/bin/python", False),
                                                 ("my-geaet-dgl-script", False)])
def test_only_the_console_script_is_restarted_on_import(monkeypatch, program, restarted):
    """`import geaet_dgl` restarts the process only when it is the installed `geaet-dgl` command."""
    from geaet_dgl import allocator

    calls = []
    monkeypatch.setattr(allocator, "restart_in_hugetlb_mode", calls.append)
    monkeypatch.setattr(allocator, "choose_wait_policy", lambda: calls.append("wait policy"))
    monkeypatch.setattr(sys, "argv", [program, "train"])
    allocator.restart_console_script()
    assert calls == (["wait policy", allocator.CONSOLE_CODE] if restarted else [])
