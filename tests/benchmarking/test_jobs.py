"""The benchmark jobs: they travel to measuring processes as JSON; run_benchmark takes only them."""
import json

import pytest

from geaet_dgl.benchmarking import run_benchmark
from geaet_dgl.benchmarking.jobs import (SCALING_COMPONENTS, EpochJob, ModelJob, NodeBaselinesJob, Reference,
                                         ScalingJob, Timing, decode, encode)
from geaet_dgl.benchmarking.scaling import COMPONENTS
from geaet_dgl.benchmarking.worker import run_isolated


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
