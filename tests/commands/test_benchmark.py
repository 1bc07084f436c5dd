"""`geaet-dgl benchmark`: --what names its jobs; the flags of every documented spelling still mean what they did;
the options become the job that run_benchmark receives."""
import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_lab.benchmarking.jobs import EpochJob, ModelJob, NodeScalingJob, Reference, ScalingJob, Timing
from geaet_lab.commands import benchmark as command


@pytest.fixture
def calls(monkeypatch):
    """The job (and outputs) each invocation hands to run_benchmark (which is not run)."""
    seen = []
    monkeypatch.setattr(command, "run_benchmark", lambda job, **outputs: seen.append((job, outputs)))
    return seen


def _job(calls, args):
    result = CliRunner().invoke(cli.main, ["benchmark"] + args)
    assert result.exit_code == 0, result.output
    return calls.pop()


def _jobs(calls, args):
    job, _ = _job(calls, args)
    parts = {"throughput": job.throughput, "breakdown": job.breakdown, "epoch": job.epoch is not None,
             "scaling": job.scaling is not None}
    return {name for name, on in parts.items() if on}, tuple(job.batch_sizes)


@pytest.mark.parametrize("args, jobs, sizes", [
    ([], {"throughput"}, (16, 64, 128)),
    (["--epoch", "--scaling", "--max-nodes", "1000000"], {"throughput", "epoch", "scaling"}, (16, 64, 128)),
    (["--batch-size", "16", "--breakdown"], {"throughput", "breakdown"}, (16,)),
    (["--epoch", "--against-pyg", "../GEAET"], {"throughput", "epoch"}, (16, 128)),
    (["--what", "scaling"], {"scaling"}, (16, 64, 128)),
    (["--what", "breakdown", "epoch", "--batch-sizes", "8"], {"breakdown", "epoch"}, (8,)),
    (["--what", "throughput,breakdown"], {"throughput", "breakdown"}, (16, 64, 128)),
    (["--what", "breakdown", "--scaling"], {"breakdown", "scaling"}, (16, 64, 128)),
])
def test_what_and_the_flags_choose_the_jobs(calls, args, jobs, sizes):
    assert _jobs(calls, args) == (jobs, sizes)


def test_an_unknown_job_lists_the_choices(calls):
    result = CliRunner().invoke(cli.main, ["benchmark", "--what", "memory"])
    assert result.exit_code == 2 and "'throughput', 'breakdown', 'epoch', 'scaling'" in result.output
    assert calls == []


def test_the_defaults_are_the_jobs_defaults(calls):
    """The command's defaults and the dataclasses' agree: a bare call is the default job."""
    job, outputs = _job(calls, [])
    assert job == ModelJob()
    assert outputs["json_path"] is None and outputs["plot_path"] is None
    job, _ = _job(calls, ["--epoch", "--scaling"])
    assert job.epoch == EpochJob() and job.scaling == ScalingJob()
    job, _ = _job(calls, ["--node-scaling"])
    assert job == NodeScalingJob()


def test_every_option_reaches_the_job(calls, tmp_path):
    config = tmp_path / "model.yaml"
    config.write_text("{}")
    job, outputs = _job(calls, [
        "--preset", "cifar10", "--batch-sizes", "4", "8", "--device", "cpu", "--threads", "3", "--repeats", "7",
        "--warmup", "1", "--min-time", "0.5", "--allocator", "keep", "--no-fold", "--force", "--against-pyg", "REF",
        "--config", str(config), "--breakdown", "--json", "out.json", "--plot", "out.png"])
    assert job == ModelJob(preset="cifar10", batch_sizes=(4, 8), breakdown=True, fold=False,
                           reference=Reference("REF", force=True, config_file=str(config)),
                           timing=Timing(threads=3, repeats=7, warmup=1, min_time=0.5, allocator="keep"), force=True)
    assert outputs["json_path"] == "out.json" and outputs["plot_path"] == "out.png"
    job, _ = _job(calls, ["--epoch", "--against-pyg", "REF", "--dataset", "mnist", "--data-dir", str(tmp_path),
                          "--limit-train", "5", "--limit-val", "2", "--epoch-repeats", "4", "--num-graphs", "9",
                          "--workers", "1"])
    assert job.epoch == EpochJob(num_graphs=9, workers=1, dataset="mnist", data_dir=str(tmp_path), limit_train=5,
                                 limit_val=2, rounds=4)
    assert job.epochs_against_reference


def test_node_scaling_options_and_the_reference_methods(calls):
    job, _ = _job(calls, ["--node-scaling", "--max-nodes", "20000", "--node-size", "10000", "--node-method", "full",
                          "--node-graph", "planted", "--memory-limit", "3", "--threads", "1"])
    assert job == NodeScalingJob(max_nodes=20000, sizes=(10000,), methods=("full",), graph_kind="planted",
                                 memory_limit_gib=3.0, timing=Timing(threads=1))
    job, _ = _job(calls, ["--node-scaling", "--node-method", "cluster", "--against-pyg", "REF"])
    assert job.methods == ("cluster", "ref-none", "ref-transformer", "ref-performer")
    assert job.reference == Reference("REF")
    job, _ = _job(calls, ["--node-scaling", "--against-pyg", "REF"])
    assert job.methods is None  # all methods: ours and the reference's


def test_config_alone_times_the_files_model(calls, tmp_path):
    config = tmp_path / "model.yaml"
    config.write_text("{}")
    job, _ = _job(calls, ["--config", str(config), "--batch-sizes", "4"])
    assert job == ModelJob(batch_sizes=(4,), config_file=str(config)) and job.model_file == str(config)


def test_exported_takes_one_or_both_formats(calls):
    for args in (["--exported", "torchscript,onnx"], ["--exported", "onnx", "torchscript", "--batch-sizes", "16"]):
        job, _ = _job(calls, args)
        assert sorted(job.exported) == ["onnx", "torchscript"] and not job.force
    job, _ = _job(calls, ["--exported", "torchscript", "--force", "--against-pyg", "REF"])
    assert job.exported == ("torchscript",) and job.force and job.reference == Reference("REF", force=True)
    result = CliRunner().invoke(cli.main, ["benchmark", "--exported", "tflite"])
    assert result.exit_code == 2 and "'torchscript', 'onnx'" in result.output and calls == []


@pytest.mark.parametrize("args, message", [
    (["--config", "cli.py", "--epoch"], "use it with no other job"),
    (["--config", "cli.py", "--what", "scaling"], "use it with no other job"),
    (["--dataset", "mnist"], "--epoch --against-pyg"),
])
def test_options_without_their_job_are_one_line_errors(calls, args, message):
    result = CliRunner().invoke(cli.main, ["benchmark"] + args)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert calls == []

