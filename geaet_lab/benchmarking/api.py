"""``run_benchmark(job)``: the one front door of every benchmark job (:mod:`.jobs`); table, JSON and plot.

* :class:`ModelJob`: step table, breakdown, whole epochs, scaling, alone or beside the reference;
* :class:`NodeScalingJob`: node classification on one graph of growing size (:mod:`.node_scaling`);
* :class:`HeteroJob`: the heterograph model's two local MPNNs (:mod:`.hetero`);
* :class:`NodeBaselinesJob`: GEAET beside a GCN and an MLP on node files (:mod:`.node_baselines`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from typing import Callable, Dict, Optional, Tuple

from geaet_dgl.allocator import configure_allocator, environment_for, requested_mode
from geaet_dgl.openmp_wait import describe_wait_policy
from geaet_dgl.config import ConfigError

from .epoch import run_epoch
from .jobs import EpochJob, HeteroJob, ModelJob, NodeBaselinesJob, NodeScalingJob, Reference, ScalingJob, Timing
from .report import format_report, plot_report, write_json
from .scaling import run_scaling
from .subject import Subject
from .throughput import run_throughput
from .timing import check_device, environment, set_threads

__all__ = ["CONFIG_FILE_ALONE", "EpochJob", "HeteroJob", "JOBS", "ModelJob", "NodeBaselinesJob", "NodeScalingJob",
           "Reference", "ScalingJob", "Timing", "check_epoch_graphs", "default_batch_sizes", "node_scaling_methods",
           "run_benchmark"]

#: keys copied from the isolated memory run into the interleaved results
_MEMORY_KEYS = ("peak_rss_mib", "peak_rss_infer_mib", "base_rss_mib", "peak_gpu_mib", "nodes_per_batch",
                "edges_per_batch", "num_parameters")

#: What a :class:`ModelJob` can measure (``geaet-dgl benchmark --what``).
JOBS = ("throughput", "breakdown", "epoch", "scaling")

#: the reference's methods of :class:`NodeScalingJob`, added to ours when it runs beside the reference
REFERENCE_NODE_METHODS = ("ref-none", "ref-transformer", "ref-performer")

Echo = Optional[Callable[[str], None]]

#: what a reference YAML is for, when asked of something else
CONFIG_FILE_ALONE = ("--config FILE.yaml chooses the model of the step table (throughput) and breakdown, alone or "
                     "with --against-pyg REF_DIR: use it with no other job (not --epoch, --scaling)")


def default_batch_sizes(epoch: bool, against_pyg: Optional[str]) -> Tuple[int, ...]:
    """Batch sizes when none are given: 16 and 128 for whole epochs against the reference (each costs
    an epoch per side and round), else 16, 64 and 128."""
    return (16, 128) if epoch and against_pyg else (16, 64, 128)


@contextlib.contextmanager
def _child_environment(env: Dict[str, str]):
    """Make ``env`` the environment that measuring processes inherit, for the duration of the block."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run_benchmark(job, json_path: Optional[str] = None, plot_path: Optional[str] = None,
                  echo: Echo = print) -> Dict[str, object]:
    """Run a benchmark job; print its text report through ``echo`` (None: silent), write the JSON report to
    ``json_path`` and (a :class:`ModelJob`'s throughput or scaling) a PNG plot to ``plot_path``.

    Returns the report dict. A :class:`ModelJob`'s holds ``config`` and ``results`` (per batch size:
    ``batch_size``, ``train_graphs_per_s``, ``infer_graphs_per_s``, ``peak_rss_mib`` [, ``peak_gpu_mib``]
    [, ``ref_train_graphs_per_s``, ``ref_infer_graphs_per_s``, ``ratio_train``, ``ratio_infer``]), and
    when run ``parity_max_abs_diff`` / ``parity``, ``exported`` (the exported files' inference beside ours,
    :mod:`.exported`), ``breakdown``, ``epoch``, ``epoch_against_pyg``,
    ``scaling``; a :class:`NodeScalingJob`'s ``config`` and ``node_scaling``; a :class:`HeteroJob`'s
    ``rows``; a :class:`NodeBaselinesJob`'s ``table``.
    """
    if isinstance(job, ModelJob):
        return _run_model(job, json_path, plot_path, echo)
    if isinstance(job, NodeScalingJob):
        return _run_node_scaling(job, json_path, echo)
    if isinstance(job, HeteroJob):
        return _run_hetero(job, json_path, echo)
    if isinstance(job, NodeBaselinesJob):
        return _run_node_baselines(job, echo)
    raise TypeError(f"run_benchmark takes a job of geaet_lab.benchmarking.jobs, not {type(job).__name__}")


def check_epoch_graphs(epoch: EpochJob, against_reference: bool) -> None:
    """Refuse ``epoch``'s choice of graphs (dataset, data_dir, limits) outside the comparison with the reference."""
    if epoch.picks_graphs and not against_reference:
        raise ConfigError("--dataset, --data-dir, --limit-train and --limit-val choose the graphs of the epoch "
                          "comparison; use them with --epoch --against-pyg REF_DIR")


def _checked_subject(job: ModelJob) -> Subject:
    """``job``'s model, resolved once (its preset checked, or its YAML read), after checking that its parts go
    together."""
    reference, epoch = job.reference, job.epoch
    config_file = job.model_file
    if config_file is not None:
        if epoch is not None or job.scaling is not None or not (job.throughput or job.breakdown):
            raise ConfigError(CONFIG_FILE_ALONE)
        subject = None  # the YAML is read once the job's parts are checked
    else:
        subject = Subject.from_preset(job.preset) if job.batch_sizes or epoch else Subject.named(job.preset)
    if job.epochs_against_reference and not job.batch_sizes:
        raise ValueError("the epoch comparison with the reference needs at least one batch size")
    if epoch is not None:
        check_epoch_graphs(epoch, job.epochs_against_reference)
    device = check_device(job.timing.device)
    if reference is not None and device.type != "cpu":
        raise ValueError("the reference comparison runs on CPU only (the reference bridge builds a CPU model); "
                         "use device='cpu'")
    if job.exported:
        _check_exported(job)
    return subject if subject is not None else Subject.from_config_file(config_file)


#: what ``--exported`` is for, when asked of something else
EXPORTED_ALONE = ("--exported times a preset's model in the step table (throughput), beside ours and with "
                  "--against-pyg the reference's: not with --config, nor with --epoch --against-pyg (whole epochs "
                  "replace the step table), and not without throughput")


def _check_exported(job: ModelJob) -> None:
    """Refuse ``job.exported`` where there is no step table of a preset's model to add the files to."""
    from .exported import check_formats

    if job.model_file is not None or job.epochs_against_reference or not job.throughput or not job.batch_sizes:
        raise ConfigError(EXPORTED_ALONE)
    check_formats(job.exported, job.timing.device)


def _run_model(job: ModelJob, json_path: Optional[str], plot_path: Optional[str], echo: Echo) -> Dict[str, object]:
    """A :class:`ModelJob`: its parts in turn, into one report."""
    subject = _checked_subject(job)
    job = _one_graph_batches(job, subject, echo)
    timing = job.timing.resolved()
    set_threads(timing.threads)
    requested = requested_mode(timing.allocator)
    in_process = configure_allocator(requested)
    # Measuring processes start in the requested mode; this process (where the interleaved comparison with
    # the reference runs, and everything when isolate=False) stays in the mode it started with.
    config = dict(environment(timing.device, timing.threads),
                  allocator=requested if timing.isolate else in_process, allocator_this_process=in_process,
                  preset=subject.name, batch_sizes=[int(b) for b in job.batch_sizes], repeats=timing.repeats,
                  min_time=timing.min_time, warmup=timing.warmup, num_batches=timing.num_batches, seed=timing.seed,
                  isolated=timing.isolate,
                  inference="folded" if job.fold else "unfolded",
                  openmp_wait=describe_wait_policy())
    if job.config_file is not None:
        config["config_file"] = str(job.config_file)
    report: Dict[str, object] = {"config": config, "results": []}
    with _child_environment(environment_for(requested)):  # measuring processes start in the chosen mode
        if job.epochs_against_reference:
            _epochs_against_reference(job, subject, timing, report, echo)
        elif job.batch_sizes and job.throughput:
            if job.reference is not None:
                _throughput_against_reference(job, subject, timing, report, echo)
            else:
                report["results"] = run_throughput(subject, job.batch_sizes, timing, fold=job.fold)
                config["throughput_source"] = "one fresh process per batch size" if timing.isolate else "this process"
                if job.exported:
                    from .exported import compare_exported

                    report["exported"] = compare_exported(subject, job.batch_sizes, timing, job.exported,
                                                          fold=job.fold, force=job.force, progress=echo)
        if job.breakdown and job.batch_sizes:
            from .breakdown import measure_breakdown

            steps = _breakdown_timing(timing)
            report["breakdown"] = [measure_breakdown(subject, int(b), steps, job.reference)
                                   for b in job.batch_sizes]
        if job.epoch is not None and not job.epochs_against_reference:
            report["epoch"] = run_epoch(subject, job.epoch, timing)
        if job.scaling is not None:
            report["scaling"] = run_scaling(job.scaling, timing, progress=echo)
    _emit(report, format_report(report), json_path, echo)
    if plot_path and (report["results"] or report.get("scaling")):
        plot_report(report, plot_path)
        if echo is not None:
            echo(f"wrote {plot_path}")
    return report


def _one_graph_batches(job: ModelJob, subject: Subject, echo: Echo) -> ModelJob:
    """A one-graph node set's step is its whole graph: one batch size (1) instead of several alike."""
    from .inputs import is_transductive

    dataset = subject.dataset
    if not is_transductive(dataset) or tuple(job.batch_sizes) in ((), (1,)):
        return job
    if echo is not None:
        echo(f"{dataset}: one graph with node masks; every step runs on the whole graph (batch size 1), "
             f"not {', '.join(map(str, job.batch_sizes))}")
    return dataclasses.replace(job, batch_sizes=(1,))


def _breakdown_timing(timing: Timing) -> Timing:
    """The breakdown's steps: at least 3 timed and 1 untimed (its medians split a step into parts)."""
    return dataclasses.replace(timing, repeats=max(timing.repeats, 3), warmup=max(timing.warmup, 1))


def _epochs_against_reference(job: ModelJob, subject: Subject, timing: Timing, report: Dict[str, object],
                              echo: Echo) -> None:
    from .epoch_against_pyg import compare_epochs

    comparison = compare_epochs(job.reference, subject, job.batch_sizes, job.epoch, timing, progress=echo)
    report["epoch_against_pyg"] = comparison
    report["parity_max_abs_diff"] = comparison["parity_max_abs_diff"]
    report["config"].update(reference_dir=str(job.reference.ref_dir), epoch_repeats=job.epoch.rounds)


def _throughput_against_reference(job: ModelJob, subject: Subject, timing: Timing, report: Dict[str, object],
                                  echo: Echo) -> None:
    """The step table of ours and the reference interleaved; peak memory from our model alone."""
    from .against_pyg import compare_in_fresh_processes, compare_with_reference

    config_file = subject.config_file  # the reference's --config
    config = report["config"]
    if timing.isolate:  # the first batch size here only where this process runs in the requested allocator mode
        comparison = compare_in_fresh_processes(job.reference, subject, job.batch_sizes, timing, fold=job.fold,
                                                progress=echo, exported=job.exported,
                                                first_here=config["allocator_this_process"] == config["allocator"])
    else:
        comparison = compare_with_reference(job.reference, subject, job.batch_sizes, timing, fold=job.fold,
                                            progress=echo, exported=job.exported)
    if "exported" in comparison:
        report["exported"] = comparison["exported"]
    memory_timing = dataclasses.replace(timing, repeats=1, warmup=1)
    memory = [] if config_file else run_throughput(subject, job.batch_sizes, memory_timing, fold=job.fold)
    for row, mem in zip(comparison["results"], memory):
        row.update({k: mem[k] for k in _MEMORY_KEYS if k in mem})
    report["results"] = comparison["results"]
    report["parity_max_abs_diff"] = comparison["parity_max_abs_diff"]
    report["parity"] = comparison["parity"]
    report["fold_max_abs_diff"] = comparison["fold_max_abs_diff"]
    if "parity_reference_statistics" in comparison:
        report["parity_reference_statistics"] = comparison["parity_reference_statistics"]
    where = "a process of its own per batch size" if timing.isolate else "one process"
    config.update(reference_dir=str(job.reference.ref_dir), throughput_source=(
        f"ours and the reference interleaved in {where} on the same pre-built batches; peak RSS from "
        "a separate process per batch size running our model alone (1 warm-up + 1 step per phase)"))
    if config_file:
        config.update(config_file=str(config_file), throughput_source=(
            f"ours and the reference interleaved in {where} on the same pre-built batches"))


def node_scaling_methods(job: NodeScalingJob) -> Tuple[str, ...]:
    """The methods ``job`` runs: its own, else ours and, beside the reference, the reference's."""
    if job.methods:
        return tuple(job.methods)
    return ("full", "cluster") + (REFERENCE_NODE_METHODS if job.reference is not None else ())


def _run_node_scaling(job: NodeScalingJob, json_path: Optional[str], echo: Echo) -> Dict[str, object]:
    """A :class:`NodeScalingJob`: every measurement in a fresh process in the allocator mode, under the
    address-space limit."""
    from .node_scaling import format_node_scaling, run_node_scaling

    timing = job.timing.resolved()
    requested = requested_mode(timing.allocator)
    job = dataclasses.replace(job, methods=node_scaling_methods(job), timing=timing)
    with _child_environment(environment_for(requested)):
        result = run_node_scaling(job, progress=echo)
    reference = job.reference
    report = {"config": dict(environment("cpu", timing.threads), allocator=requested, max_nodes=job.max_nodes,
                             reference_dir=reference.ref_dir if reference else None,
                             reference_python=reference.python if reference else None),
              "node_scaling": result}
    _emit(report, format_node_scaling(result), json_path, echo)
    return report


def _run_hetero(job: HeteroJob, json_path: Optional[str], echo: Echo) -> Dict[str, object]:
    """A :class:`HeteroJob`: the table; the JSON file holds the rows alone."""
    from .hetero import hetero_table, run_hetero_benchmark

    rows = run_hetero_benchmark(job)
    if echo is not None:
        echo(hetero_table(rows))
    if json_path:
        os.makedirs(os.path.dirname(os.path.abspath(json_path)), exist_ok=True)
        with open(json_path, "w") as handle:
            json.dump(rows, handle, indent=1)
    return {"rows": rows}


def _run_node_baselines(job: NodeBaselinesJob, echo: Echo) -> Dict[str, object]:
    """A :class:`NodeBaselinesJob`: the table, also written to ``job.out``/node_baselines.md and .json."""
    from geaet_dgl.threads import apply_threads
    from .node_baselines import compare_with_baselines, format_table, node_set_files

    apply_threads(job.threads)
    os.makedirs(job.out, exist_ok=True)
    overrides = dict(job.overrides)
    files, preset = tuple(job.files), job.preset
    if job.dataset:
        files = tuple(node_set_files(job.dataset, job.data_dir, job.splits, os.path.join(job.out, "graphs")))
        preset = preset or job.dataset
    table = compare_with_baselines(files, job.out, seeds=job.seeds, preset=preset, overrides=overrides,
                                   hidden=job.hidden, threads=job.threads, skip_geaet=job.skip_geaet)
    title = (f"{', '.join(os.path.basename(f) for f in files)}; seeds {list(job.seeds)}; GEAET preset "
             f"{preset or 'geaet-node'} {overrides or ''}")
    text = f"{title}\n\n{format_table(table)}"
    if echo is not None:
        echo(text)
    with open(os.path.join(job.out, "node_baselines.md"), "w") as handle:
        handle.write(text + "\n")
    with open(os.path.join(job.out, "node_baselines.json"), "w") as handle:
        json.dump({"files": list(files), "seeds": list(job.seeds), "preset": preset,
                   "overrides": overrides, "table": table}, handle, indent=1)
    return {"table": table}


def _emit(report: Dict[str, object], text: str, json_path: Optional[str], echo: Echo) -> None:
    """Print the text report and write the JSON one (and say so)."""
    if echo is not None:
        echo(text)
    if json_path:
        write_json(report, json_path)
        if echo is not None:
            echo(f"wrote {json_path}")
