"""Training on DGL partitions: 2 graph servers + 2 trainers vs one process; faults stop every process."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

from geaet_dgl.distgraph.launch import partitioned_run_config, score_on_graph, train_partitioned
from geaet_dgl.distgraph.partition import partition_file
from geaet_dgl.distgraph.processes import DistributedJobError
from geaet_dgl.training.checkpoint import load_checkpoint
from geaet_dgl.training.run_config import make_run_config
from geaet_dgl.training.trainer import train

from .conftest import SMALL_RUN, leftover_processes


def read_metrics(run_dir: str) -> list:
    with open(os.path.join(run_dir, "metrics.jsonl")) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _shm_left(token_part: str = "gd") -> list:
    return [name for name in os.listdir("/dev/shm") if "planted-gd" in name or name.startswith("gd")] \
        if os.path.isdir("/dev/shm") else []


def test_two_trainers_on_two_partitions_match_one_process(graph_file, tmp_path, job_guard):
    config = partition_file(graph_file, 2, str(tmp_path / "parts"), lap_k=0).config
    # one process: the single-graph trainer, METIS batches of 500 nodes (4 parts of 250 nodes, 2 per step)
    one = make_run_config(graph_file, None, dict(SMALL_RUN, **{"data.sampler": "cluster", "data.num_parts": "4",
                                                               "train.batch_size": "2"}), threads=1)
    train(one, str(tmp_path / "one"), progress=False)
    single = score_on_graph(str(tmp_path / "one" / "last.pt"), graph_file)

    two = str(tmp_path / "two")
    job_guard.append(two)
    # two trainers: 4 METIS parts (2 per trainer) of 250 nodes, 1 per trainer and step: 500 nodes per step in all
    run = partitioned_run_config(config, None, dict(SMALL_RUN, **{"data.num_parts": "4", "train.batch_size": "1"}),
                                 threads=2)
    summary = train_partitioned(run, two, config, nproc=2)
    assert summary["world_size"] == 2
    losses = [row["train_loss"] for row in read_metrics(two)]
    assert all(later < earlier for earlier, later in zip(losses, losses[1:])), losses
    # both after the same 6 epochs, every node scored with the whole graph (as `geaet-dgl eval` does)
    distributed = score_on_graph(os.path.join(two, "last.pt"), graph_file)
    print("test accuracy: one process", single["test"], "two trainers", distributed["test"])
    assert single["test"] > 0.88  # it learned (features alone give about 0.83)
    assert distributed["test"] >= single["test"] - 0.01
    state = load_checkpoint(os.path.join(two, "best.pt"))
    assert state["ranks"]["world_size"] == 2
    assert not leftover_processes(two)
    assert not _shm_left()


def test_a_trainer_that_dies_stops_the_job(graph_file, tmp_path, job_guard):
    config = partition_file(graph_file, 2, str(tmp_path / "parts"), lap_k=0).config
    run_dir = str(tmp_path / "run")
    job_guard.append(run_dir)
    run = partitioned_run_config(config, None, dict(SMALL_RUN, **{"train.epochs": "50", "data.num_parts": "4"}),
                                 threads=2)

    def kill_trainer_after_first_epoch():
        metrics = os.path.join(run_dir, "metrics.jsonl")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not os.path.isfile(metrics):
            time.sleep(0.1)
        import json

        with open(os.path.join(run_dir, "dist-logs", "pids.json")) as handle:
            os.kill(json.load(handle)["trainer-1"], signal.SIGKILL)

    killer = threading.Thread(target=kill_trainer_after_first_epoch)
    killer.start()
    with pytest.raises(DistributedJobError, match="trainer-1 exited with code -9"):
        train_partitioned(run, run_dir, config, nproc=2)
    killer.join()
    assert not leftover_processes(run_dir)
    assert not _shm_left()
    load_checkpoint(os.path.join(run_dir, "last.pt"))  # whole: written atomically by rank 0
    assert not [name for name in os.listdir(run_dir) if name.endswith(".tmp") or name.startswith(".")]


def test_ctrl_c_stops_servers_and_trainers(graph_file, tmp_path, job_guard):
    config = partition_file(graph_file, 2, str(tmp_path / "parts"), lap_k=0).config
    run_dir = str(tmp_path / "run")
    job_guard.append(run_dir)
    script = textwrap.dedent(f"""
        from geaet_dgl.distgraph.launch import partitioned_run_config, train_partitioned
        run = partitioned_run_config({config!r}, None, {dict(SMALL_RUN, **{"train.epochs": "50"})!r}, threads=2)
        try:
            train_partitioned(run, {run_dir!r}, {config!r}, nproc=2)
        except KeyboardInterrupt:
            raise SystemExit(130)
    """)
    launcher = subprocess.Popen([sys.executable, "-c", script], cwd=os.getcwd())
    try:
        pids = os.path.join(run_dir, "dist-logs", "pids.json")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(leftover_processes(run_dir)) < 4:
            time.sleep(0.1)
        assert len(leftover_processes(run_dir)) == 4 and os.path.isfile(pids)
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 130
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert not leftover_processes(run_dir)


def _without_timings(rows: list) -> list:
    return [{key: value for key, value in row.items() if key not in ("seconds", "graphs_per_s")} for row in rows]


def test_resume_of_a_killed_run_continues_at_the_step(graph_file, tmp_path, job_guard):
    """Killed inside an epoch, resumed from last.pt: the same metrics.jsonl and weights as without the kill."""
    from geaet_dgl.distgraph.launch import resume_partitioned

    config = partition_file(graph_file, 2, str(tmp_path / "parts"), lap_k=0).config
    # 8 METIS parts, 4 per trainer, 1 per step: 4 steps per epoch, last.pt after every step
    settings = dict(SMALL_RUN, **{"train.epochs": "3", "data.num_parts": "8", "train.batch_size": "1"})
    reference, killed = str(tmp_path / "reference"), str(tmp_path / "killed")
    job_guard.extend([reference, killed])
    train_partitioned(partitioned_run_config(config, None, settings, threads=2, checkpoint_every=1), reference,
                      config, nproc=2)
    seen = {}

    def kill_trainer_inside_epoch_two():
        last = os.path.join(killed, "last.pt")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                state = load_checkpoint(last) if os.path.isfile(last) else None
            except Exception:  # replaced while read
                state = None
            if state is not None and state["global_step"] >= 5:
                seen["step"] = (state["epoch"], state["step"])
                break
            time.sleep(0.05)
        with open(os.path.join(killed, "dist-logs", "pids.json")) as handle:
            os.kill(json.load(handle)["trainer-1"], signal.SIGKILL)

    killer = threading.Thread(target=kill_trainer_inside_epoch_two)
    killer.start()
    with pytest.raises(DistributedJobError, match="trainer-1 exited with code -9"):
        train_partitioned(partitioned_run_config(config, None, settings, threads=2, checkpoint_every=1), killed,
                          config, nproc=2)
    killer.join()
    assert not leftover_processes(killed)
    interrupted_at = load_checkpoint(os.path.join(killed, "last.pt"))
    assert interrupted_at["global_step"] < 12, "the run ended before it was killed"
    print("killed after", seen, "resuming from epoch", interrupted_at["epoch"], "step", interrupted_at["step"])

    resume_partitioned(killed)
    assert not leftover_processes(killed)
    assert _without_timings(read_metrics(killed)) == _without_timings(read_metrics(reference))
    a, b = load_checkpoint(os.path.join(reference, "last.pt")), load_checkpoint(os.path.join(killed, "last.pt"))
    assert a["global_step"] == b["global_step"] == 12
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
