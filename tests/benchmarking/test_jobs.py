"""The benchmark jobs: they travel to measuring processes as JSON; run_benchmark takes only them; the study scripts
build them."""
import importlib.util
import json
from pathlib import Path

import pytest

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.jobs import (SCALING_COMPONENTS, EpochJob, HeteroJob, ModelJob, NodeBaselinesJob,
                                         Reference, ScalingJob, Timing, decode, encode)
from geaet_lab.benchmarking.scaling import COMPONENTS
from geaet_lab.benchmarking.worker import run_isolated


def _round_trip(value):
    return json.loads(json.dumps(value, default=encode), object_hook=decode)


def test_jobs_come_back_from_json_as_they_went():
    job = ModelJob(batch_sizes=(2, 3), epoch=EpochJob(limit_val=4), scaling=ScalingJob(sizes=(10, 20)),
                   reference=Reference("REF"), timing=Timing(threads=2))
    assert _round_trip({"job": job, "n": 3}) == {"job": job, "n": 3}
    baselines = NodeBaselinesJob(files=("a.bin",), out="out", overrides={"train.lr": "0.1"})
    assert _round_trip([baselines]) == [baselines]
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps({"x": object()}, default=encode)


@pytest.mark.slow
def test_a_measuring_process_receives_the_job():
    """The child rebuilds the job: the graph's k and the number of timed calls are the ones sent."""
    job = ScalingJob(k=4, repeats=3, warmup=0, backward=False, min_time_s=0.0)
    point = run_isolated("scaling", dict(component="geanet", num_nodes=30, job=job, timing=Timing(threads=1)))
    assert point["num_edges"] == 4 * 30 and point["forward_repeats"] == 3 and "forward_backward_s" not in point


def test_scaling_components_are_the_ones_scaling_describes():
    assert SCALING_COMPONENTS == tuple(COMPONENTS)


def test_run_benchmark_takes_a_job():
    with pytest.raises(TypeError, match="takes a job"):
        run_benchmark({"preset": "mnist"}, echo=None)


REPO = Path(__file__).resolve().parents[2]


def _script(name, monkeypatch):
    """A study script of benchmarks/ as a module, its run_benchmark recording the job instead of running it."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"study_{name}", REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen = []
    monkeypatch.setattr(module, "run_benchmark", lambda job, **outputs: seen.append((job, outputs)))
    return module, seen


def test_study_scripts_build_their_jobs(monkeypatch):
    hetero, seen = _script("hetero_local_weights", monkeypatch)
    hetero.main([])
    assert seen.pop() == (HeteroJob(), {"json_path": None})
    assert HeteroJob() == HeteroJob(etypes=(2, 4, 6, 10), batch_size=32, nodes_per_type=20, edges_per_relation=40,
                                    timing=Timing(threads=1, repeats=10, warmup=2))
    hetero.main(["--etypes", "3", "--batch-size", "4", "--repeats", "2", "--no-memory", "--json", "h.json"])
    job, outputs = seen.pop()
    assert job == HeteroJob(etypes=(3,), batch_size=4, memory=False, timing=Timing(threads=1, repeats=2))
    assert outputs == {"json_path": "h.json"}
    baselines, seen = _script("node_vs_baselines", monkeypatch)
    baselines.main(["--files", "a.bin", "b.bin", "--out", "runs", "--set", "train.lr=0.1", "--baselines-only"])
    job, _ = seen.pop()
    assert job == NodeBaselinesJob(files=("a.bin", "b.bin"), out="runs", overrides={"train.lr": "0.1"},
                                   skip_geaet=True)


def test_study_scripts_do_not_reuse_the_package_module_names():
    package = {path.name for path in (REPO / "geaet_dgl").rglob("*.py")}
    assert not package & {path.name for path in (REPO / "benchmarks").glob("*.py")}
