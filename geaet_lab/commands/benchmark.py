"""``geaet-dgl benchmark``: throughput, step breakdown, whole epochs and scaling, alone or against the reference.

What it measures is ``--what`` (one or more of throughput, breakdown, epoch,
scaling; default throughput). The flags ``--breakdown``, ``--epoch`` and
``--scaling`` add their job to the default throughput table, as they always did.
This module declares the options and turns them into one job of
:mod:`geaet_lab.benchmarking.jobs` (:func:`job_from_options`) for
:func:`~geaet_lab.benchmarking.run_benchmark`.
"""
from __future__ import annotations

from typing import Any, Dict, Union

import click

from geaet_dgl.commands.options import ListOptionCommand, handle_errors, threads_option
from geaet_dgl.config import ConfigError

from ..benchmarking.api import (CONFIG_FILE_ALONE, JOBS, REFERENCE_NODE_METHODS, EpochJob, ModelJob,
                                NodeScalingJob, Reference, ScalingJob, Timing, check_epoch_graphs,
                                default_batch_sizes, run_benchmark)
from ..benchmarking.exported import EXPORTED_FORMATS


@click.command(cls=ListOptionCommand)
@click.option("--what", type=click.Choice(JOBS), multiple=True, metavar="JOB [JOB ...]",
              help="What to measure, one or more of: throughput (train and inference graphs/s and peak memory "
                   "per batch size; the default), breakdown (where a training step's time goes), epoch (whole "
                   "epochs with data loading), scaling (GEANet, the GEAET layer, Performer and full attention "
                   "on 1k..--max-nodes node graphs). With --against-pyg each beside the reference (epoch: whole "
                   "epochs of both sides, alternated, instead of the step table).")
@click.option("--preset", default="mnist", show_default=True,
              help="Preset whose model is timed, on synthetic graphs shaped like its dataset (every preset; a "
                   "node set's step is its whole graph).")
@click.option("--batch-sizes", "--batch-size", "batch_sizes", type=click.IntRange(min=1), multiple=True,
              metavar="B [B ...]", help="Batch sizes for the throughput table (default 16 64 128).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to run.")
@threads_option
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed repeats per measurement (the median is reported).")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True,
              help="Untimed warm-up steps before timing.")
@click.option("--min-time", type=click.FloatRange(min=0.0), default=2.0, show_default=True, metavar="SECONDS",
              help="Side by side (--against-pyg, --exported): more rounds past --repeats until each side's timed "
                   "steps add up to this many seconds per batch size and phase, so that a ratio reads the "
                   "machine's usual speed rather than a moment of it. 0: exactly --repeats.")
@click.option("--epoch", "epoch", is_flag=True,
              help="Also time a whole training and inference epoch including data loading and batching; with "
                   "--against-pyg, whole epochs of ours and the reference alternated, each through its own loader "
                   "and training loop, at every --batch-sizes value (instead of the step table).")
@click.option("--dataset", type=click.Choice(["synthetic", "mnist", "cifar10"]), default="synthetic",
              show_default=True, help="Graphs of --epoch --against-pyg: synthetic (--num-graphs) or the real "
                                      "files in --data-dir.")
@click.option("--data-dir", type=click.Path(file_okay=False, exists=True), metavar="DIR",
              help="Processed dataset folder for --dataset mnist/cifar10.")
@click.option("--limit-train", type=click.IntRange(min=1), help="Training graphs of --epoch --against-pyg.")
@click.option("--limit-val", type=click.IntRange(min=1), help="Evaluation graphs of --epoch --against-pyg.")
@click.option("--epoch-repeats", type=click.IntRange(min=1), default=3, show_default=True,
              help="Alternated rounds (one epoch of each side) of --epoch --against-pyg; medians reported.")
@click.option("--breakdown", is_flag=True,
              help="Also split a training step into forward per branch (MPNN, self-attention, GEANet), backward and "
                   "optimizer step (with --against-pyg, the reference's beside ours).")
@click.option("--num-graphs", type=click.IntRange(min=1), default=512, show_default=True,
              help="Graphs in the --epoch dataset.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes for --epoch.")
@click.option("--scaling", is_flag=True,
              help="Also time GEANet and the GEAET layer on single kNN graphs of 1k..--max-nodes nodes "
                   "and fit the exponent of time against nodes+edges.")
@click.option("--max-nodes", type=click.IntRange(min=1000), default=10**6, show_default=True,
              help="Largest graph for --scaling and --node-scaling.")
@click.option("--node-scaling", is_flag=True,
              help="Instead: node classification on one kNN graph of 10k..--max-nodes nodes (average degree 10): "
                   "seconds per training epoch, seconds of a full-graph evaluation and peak memory with full and "
                   "cluster batches, and the fitted exponent; with --against-pyg also the reference (no sampler: "
                   "the whole graph with its dense attention and with Performer) up to where it runs out of memory.")
@click.option("--node-graph", type=click.Choice(["knn", "planted"]), default="knn", show_default=True,
              help="--node-scaling graphs: kNN graphs of random points, or planted partitions (8 blocks, no "
                   "locality).")
@click.option("--node-size", "node_sizes", type=click.IntRange(min=1000), multiple=True, metavar="N",
              help="--node-scaling sizes (repeat the option; default 10k, 30k, 100k, 300k, 1M up to --max-nodes).")
@click.option("--node-method", "node_methods", type=click.Choice(["full", "cluster"]), multiple=True,
              help="--node-scaling methods of ours (repeat; default both).")
@click.option("--memory-limit", type=click.FloatRange(min=1), default=12.0, show_default=True, metavar="GIB",
              help="Address space each --node-scaling measuring process may take; a size beyond it is reported as "
                   "out of memory (the dense attention is not started where its scores alone exceed it).")
@click.option("--python", "ref_python", type=click.Path(dir_okay=False, exists=True), metavar="PYTHON",
              help="Interpreter with the reference's packages for --node-scaling --against-pyg (default: this one).")
@click.option("--against-pyg", "against_pyg", type=click.Path(file_okay=False), metavar="REF_DIR",
              help="A checkout of icm1018/GEAET (its dependencies installed here): check parity on the same "
                   "weights, then time both models interleaved on the same batches (each batch size in a process "
                   "of its own, at least --min-time seconds a side) and report the ratios.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="Time the model this reference (GEAET) or GraphGPS YAML describes instead of --preset's "
                   "(throughput and breakdown; with --against-pyg beside the reference's), on synthetic graphs "
                   "shaped like its dataset (any a file can name: superpixels, SBMs, molecules, OGB, PCQM, "
                   "MalNet, the node sets) carrying the encodings it reads.")
@click.option("--exported", "exported", type=click.Choice(EXPORTED_FORMATS), multiple=True,
              metavar="FORMAT [FORMAT ...]",
              help="Also export the timed model (as `geaet-dgl export` does: torchscript, onnx) to a temporary folder "
                   "and time each file's inference (torch.jit.load, onnxruntime on CPU) beside our eval path (and "
                   "with --against-pyg the reference's), interleaved in one process on the same batches, after "
                   "checking that its outputs match ours to 1e-5: a table of graphs/s per batch size.")
@click.option("--force", is_flag=True,
              help="Time against the reference, and the --exported files, even if parity fails.")
@click.option("--allocator", type=click.Choice(["hugetlb", "system", "keep"]), default=None,
              help="How glibc serves large tensors in the measuring processes: transparent huge pages (512x "
                   "fewer page faults, same memory), glibc's defaults, or keep freed memory for reuse (more "
                   "memory). See geaet_dgl/allocator.py. Default: $GEAET_DGL_ALLOCATOR, else hugetlb.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), metavar="PATH",
              help="Write the results as JSON.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="PATH",
              help="Write a PNG plot of throughput (and scaling).")
@click.option("--no-fold", is_flag=True,
              help="Time inference on the model as trained instead of its folded inference copy (what eval uses).")
@handle_errors
def benchmark(**options) -> None:
    """Throughput (graphs/s, train and inference), peak memory, where a step's time goes, epoch time,
    scaling; optionally side by side with the PyG reference. Speed is only comparable within one run."""
    run_benchmark(job_from_options(options), json_path=options["json_path"], plot_path=options["plot_path"],
                  echo=click.echo)


def job_from_options(options: Dict[str, Any]) -> Union[ModelJob, NodeScalingJob]:
    """The :mod:`~geaet_lab.benchmarking.jobs` job the command's options describe."""
    timing = Timing(device=options["device"], threads=options["threads"], repeats=options["repeats"],
                    warmup=options["warmup"], min_time=options["min_time"], allocator=options["allocator"])
    return _node_scaling_job(options, timing) if options["node_scaling"] else _model_job(options, timing)


def _node_scaling_job(options: Dict[str, Any], timing: Timing) -> NodeScalingJob:
    """``--node-scaling``: without ``--node-method``, ours both ways and, beside the reference, its three."""
    against_pyg = options["against_pyg"]
    reference = Reference(against_pyg, python=options["ref_python"]) if against_pyg else None
    ours = tuple(options["node_methods"])
    methods = ours + (REFERENCE_NODE_METHODS if against_pyg else ()) if ours else None
    return NodeScalingJob(max_nodes=options["max_nodes"], sizes=options["node_sizes"] or None, methods=methods,
                          graph_kind=options["node_graph"], memory_limit_gib=options["memory_limit"],
                          reference=reference, timing=timing)


def _model_job(options: Dict[str, Any], timing: Timing) -> ModelJob:
    """``--what`` and the flags ``--breakdown``, ``--epoch``, ``--scaling`` pick the parts of one job."""
    against_pyg = options["against_pyg"]
    parts = set(options["what"] or ("throughput",))
    parts.update(part for part in ("breakdown", "epoch", "scaling") if options[part])
    epoch = EpochJob(num_graphs=options["num_graphs"], workers=options["workers"], dataset=options["dataset"],
                     data_dir=options["data_dir"], limit_train=options["limit_train"],
                     limit_val=options["limit_val"], rounds=options["epoch_repeats"])
    check_epoch_graphs(epoch, "epoch" in parts and against_pyg is not None)
    if options["config_file"] and ({"epoch", "scaling"} & parts or not {"throughput", "breakdown"} & parts):
        raise ConfigError(CONFIG_FILE_ALONE)
    reference = (Reference(against_pyg, force=options["force"], config_file=options["config_file"])
                 if against_pyg else None)
    return ModelJob(preset=options["preset"],
                    batch_sizes=options["batch_sizes"] or default_batch_sizes("epoch" in parts, against_pyg),
                    throughput="throughput" in parts, breakdown="breakdown" in parts,
                    epoch=epoch if "epoch" in parts else None,
                    scaling=ScalingJob(max_nodes=options["max_nodes"]) if "scaling" in parts else None,
                    reference=reference, fold=not options["no_fold"], timing=timing,
                    config_file=None if against_pyg else options["config_file"],
                    exported=tuple(options["exported"]), force=options["force"])
