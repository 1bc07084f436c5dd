"""``run_benchmark``: throughput, optional epoch/scaling/reference runs, table, JSON and plot."""
from __future__ import annotations

import contextlib
import os
from typing import Callable, Dict, Optional, Sequence, Tuple

from ..allocator import configure_allocator, environment_for, requested_mode
from ..config import ConfigError

from .epoch import run_epoch
from .inputs import check_supported
from .report import format_report, plot_report, write_json
from .scaling import DEFAULT_SIZES, run_scaling
from .throughput import run_throughput
from ..threads import resolve_threads
from .timing import check_device, environment, set_threads

#: keys copied from the isolated memory run into the interleaved results
_MEMORY_KEYS = ("peak_rss_mib", "peak_rss_infer_mib", "base_rss_mib", "peak_gpu_mib", "nodes_per_batch",
                "edges_per_batch", "num_parameters")


#: What a benchmark can measure (``geaet-dgl benchmark --what``); see :func:`run_benchmark`.
JOBS = ("throughput", "breakdown", "epoch", "scaling")


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


def run_benchmark(
    preset: str = "mnist",
    batch_sizes: Sequence[int] = (16, 64, 128),
    device: str = "cpu",
    threads: Optional[int] = None,
    repeats: int = 5,
    warmup: int = 2,
    epoch: bool = False,
    breakdown: bool = False,
    scaling: bool = False,
    max_nodes: int = 10**6,
    against_pyg: Optional[str] = None,
    json_path: Optional[str] = None,
    plot_path: Optional[str] = None,
    num_graphs: int = 512,
    epoch_batch_size: Optional[int] = None,
    workers: int = 0,
    num_batches: int = 2,
    seed: int = 0,
    scaling_sizes: Sequence[int] = DEFAULT_SIZES,
    scaling_components: Sequence[str] = ("geanet", "geaet_layer", "performer", "transformer"),
    scaling_repeats: int = 3,
    scaling_min_time_s: float = 1.0,
    force: bool = False,
    isolate: bool = True,
    allocator: Optional[str] = None,
    fold: bool = True,
    dataset: str = "synthetic",
    data_dir: Optional[str] = None,
    limit_train: Optional[int] = None,
    limit_val: Optional[int] = None,
    epoch_repeats: int = 3,
    throughput: bool = True,
    config_file: Optional[str] = None,
    echo: Optional[Callable[[str], None]] = print,
) -> Dict[str, object]:
    """Benchmark a preset's model and return the report dict (also printed, and written if asked).

    Parameters
    ----------
    preset : a preset with a synthetic generator ('mnist', 'cifar10').
    batch_sizes : throughput (and breakdown, epoch comparison) batch sizes (empty: skip throughput).
    throughput : time the training and inference steps at every batch size (the step table);
        False: only what ``breakdown``, ``epoch`` and ``scaling`` ask for.
    device : 'cpu' or 'cuda'.
    threads : torch intra-op threads, in this and every measurement process (None: the cores
        this process may use, see :mod:`geaet_dgl.threads`).
    repeats, warmup : timed and untimed steps per phase.
    epoch : also time one whole training and inference epoch through ``make_loader``
        over ``num_graphs`` synthetic graphs (batch ``epoch_batch_size``, default
        the preset's; ``workers`` loader processes). With ``against_pyg``: whole
        epochs of ours and the reference instead, each through its own data path
        and training loop, alternated ``epoch_repeats`` times, at every batch size of
        ``batch_sizes`` (see :mod:`.epoch_against_pyg`); then ``batch_sizes`` only
        sets the epoch batch sizes (no step-throughput table).
    dataset, data_dir, limit_train, limit_val : the graphs of the epoch comparison:
        'synthetic' (``limit_train`` or ``num_graphs`` graphs shaped like the preset's,
        a quarter as many to evaluate) or the real 'mnist' / 'cifar10' files in
        ``data_dir`` (first ``limit_train`` training and ``limit_val`` validation graphs).
    breakdown : also split a training step into forward per branch (MPNN,
        self-attention, GEANet), the rest of the forward, backward and
        clipping + optimizer step, at every batch size, in this process (with
        ``against_pyg``, the reference's beside ours; see :mod:`.breakdown`).
    scaling : also time GEANet and the GEAET layer (no attention) on single kNN
        graphs of ``scaling_sizes`` nodes up to ``max_nodes``; fit the exponents
        (at least ``scaling_repeats`` timed calls per phase, more for small graphs
        until ``scaling_min_time_s`` seconds are timed).
    against_pyg : a checkout of the PyG reference (icm1018/GEAET): check parity,
        then time ours and the reference interleaved on the same batches (CPU only,
        needs torch_geometric etc. in this environment). The throughput columns then
        come from that interleaved run; peak RSS still from one process per batch size.
    json_path, plot_path : where to write the JSON report and the PNG plot.
    num_batches : distinct pre-built batches cycled over per batch size.
    isolate : run each measurement in a fresh process (needed for per-measurement peak RSS).
    allocator : 'hugetlb' (transparent huge pages for large blocks, set in the measuring
        processes), 'system' (glibc's defaults) or 'keep' (freed memory stays in the heap;
        also applied to this process); None reads ``$GEAET_DGL_ALLOCATOR`` (default
        'hugetlb'). See :mod:`geaet_dgl.allocator`.
    force : time against the reference even when parity fails.
    fold : time inference on the folded model (:func:`~geaet_dgl.inference.fold_for_inference`,
        what evaluation runs); False times the model itself.
    config_file : a reference (GEAET or GraphGPS) YAML: with ``against_pyg``, the throughput table compares
        the model it describes instead of ``preset``'s (no peak-memory columns; no other job).
    echo : where the text report goes (None: silent).

    Returns
    -------
    dict with ``config``, ``results`` (per batch size: ``batch_size``,
    ``train_graphs_per_s``, ``infer_graphs_per_s``, ``peak_rss_mib`` [, ``peak_gpu_mib``]
    [, ``ref_train_graphs_per_s``, ``ref_infer_graphs_per_s``, ``ratio_train``,
    ``ratio_infer``]), and when run ``parity_max_abs_diff`` / ``parity``, ``breakdown``,
    ``epoch``, ``scaling``.
    """
    if config_file is not None:
        if against_pyg is None or epoch or scaling or not (throughput or breakdown):
            raise ConfigError("--config FILE.yaml chooses the model of the throughput comparison (or breakdown) "
                              "with the reference: use it with --against-pyg REF_DIR and no other job")
        preset = os.path.basename(config_file)
    elif batch_sizes or epoch:
        preset = check_supported(preset)
    epoch_vs_reference = epoch and against_pyg is not None
    if epoch_vs_reference and not batch_sizes:
        raise ValueError("the epoch comparison with the reference needs at least one batch size")
    if not epoch_vs_reference and (dataset != "synthetic" or data_dir is not None or limit_train or limit_val):
        raise ConfigError("--dataset, --data-dir, --limit-train and --limit-val choose the graphs of the epoch "
                          "comparison; use them with --epoch --against-pyg REF_DIR")
    check_device(device)
    threads = resolve_threads(threads)
    if against_pyg is not None and check_device(device).type != "cpu":
        raise ValueError("the reference comparison runs on CPU only (the reference bridge builds a CPU model); "
                         "use device='cpu'")
    set_threads(threads)
    requested = requested_mode(allocator)
    in_process = configure_allocator(requested)
    # Measuring processes start in the requested mode; this process (where the interleaved comparison with
    # the reference runs, and everything when isolate=False) stays in the mode it started with.
    config = dict(environment(device, threads), allocator=requested if isolate else in_process,
                  allocator_this_process=in_process, preset=preset,
                  batch_sizes=[int(b) for b in batch_sizes], repeats=repeats, warmup=warmup,
                  num_batches=num_batches, seed=seed, isolated=isolate,
                  inference="folded" if fold else "unfolded")
    report: Dict[str, object] = {"config": config, "results": []}
    with _child_environment(environment_for(requested)):  # measuring processes start in the chosen mode
        if epoch_vs_reference:
            from .epoch_against_pyg import compare_epochs

            comparison = compare_epochs(against_pyg, preset, batch_sizes, dataset=dataset, data_dir=data_dir,
                                        num_graphs=num_graphs, limit_train=limit_train, limit_val=limit_val,
                                        repeats=epoch_repeats, threads=threads, seed=seed, workers=workers,
                                        force=force, progress=echo)
            report["epoch_against_pyg"] = comparison
            report["parity_max_abs_diff"] = comparison["parity_max_abs_diff"]
            config.update(reference_dir=str(against_pyg), epoch_repeats=epoch_repeats)
        elif batch_sizes and throughput and against_pyg is not None:
            from .against_pyg import compare_with_reference

            comparison = compare_with_reference(against_pyg, preset, batch_sizes, repeats=repeats,
                                                threads=threads, warmup=warmup, num_batches=num_batches, seed=seed,
                                                force=force, progress=echo, fold=fold, config=config_file)
            memory = [] if config_file else run_throughput(preset, batch_sizes, device, threads, repeats=1, warmup=1,
                                                           num_batches=num_batches, seed=seed, isolate=isolate,
                                                           fold=fold)
            for row, mem in zip(comparison["results"], memory):
                row.update({k: mem[k] for k in _MEMORY_KEYS if k in mem})
            report["results"] = comparison["results"]
            report["parity_max_abs_diff"] = comparison["parity_max_abs_diff"]
            report["parity"] = comparison["parity"]
            report["fold_max_abs_diff"] = comparison["fold_max_abs_diff"]
            config.update(reference_dir=str(against_pyg), throughput_source=(
                "ours and the reference interleaved in one process on the same pre-built batches; peak RSS from "
                "a separate process per batch size running our model alone (1 warm-up + 1 step per phase)"))
            if config_file:
                config.update(config_file=str(config_file), throughput_source=(
                    "ours and the reference interleaved in one process on the same pre-built batches"))
        elif batch_sizes and throughput:
            report["results"] = run_throughput(preset, batch_sizes, device, threads, repeats=repeats,
                                               warmup=warmup, num_batches=num_batches, seed=seed, isolate=isolate,
                                               fold=fold)
            config["throughput_source"] = "one fresh process per batch size" if isolate else "this process"

        if breakdown and batch_sizes:
            from .breakdown import measure_breakdown

            report["breakdown"] = [
                measure_breakdown(preset, int(b), device=device, threads=threads, repeats=max(repeats, 3),
                                  warmup=max(warmup, 1), num_batches=num_batches, seed=seed, ref_dir=against_pyg,
                                  config=config_file)
                for b in batch_sizes
            ]
        if epoch and not epoch_vs_reference:
            report["epoch"] = run_epoch(preset, num_graphs=num_graphs, batch_size=epoch_batch_size,
                                        workers=workers, device=device, threads=threads, seed=seed, isolate=isolate)
        if scaling:
            report["scaling"] = run_scaling(scaling_components, scaling_sizes, max_nodes=max_nodes,
                                            repeats=scaling_repeats, min_time_s=scaling_min_time_s,
                                            threads=threads, device=device, seed=seed, isolate=isolate,
                                            progress=echo)
    _emit(report, format_report(report), json_path, echo)
    if plot_path and (report["results"] or report.get("scaling")):
        plot_report(report, plot_path)
        if echo is not None:
            echo(f"wrote {plot_path}")
    return report


def run_node_scaling_benchmark(max_nodes: int = 10**6, threads: Optional[int] = None,
                               against_pyg: Optional[str] = None, python: Optional[str] = None,
                               memory_limit_gib: float = 12.0, allocator: Optional[str] = None,
                               json_path: Optional[str] = None, seed: int = 0, epochs: int = 1,
                               echo: Optional[Callable[[str], None]] = print, graph_kind: str = "knn",
                               sizes: Optional[Sequence[int]] = None, methods: Optional[Sequence[str]] = None
                               ) -> Dict[str, object]:
    """``benchmark --node-scaling``: a training epoch and a full-graph evaluation per graph size and method.

    Ours with ``full`` and ``cluster`` batches and, with ``against_pyg`` (run by
    ``python``, default this interpreter), the reference on the whole graph
    without global attention (our layers), with its dense attention and with
    Performer; see :mod:`.node_scaling`. Every
    measurement runs in a fresh process in the ``allocator`` mode, under a
    ``memory_limit_gib`` address-space limit.
    """
    from .node_scaling import DEFAULT_NODE_SIZES, format_node_scaling, run_node_scaling

    threads = resolve_threads(threads)
    requested = requested_mode(allocator)
    if not methods:
        methods = ["full", "cluster"] + (["ref-none", "ref-transformer", "ref-performer"] if against_pyg else [])
    with _child_environment(environment_for(requested)):
        result = run_node_scaling(max_nodes=max_nodes, sizes=sizes or DEFAULT_NODE_SIZES, methods=methods,
                                  threads=threads, seed=seed, ref_dir=against_pyg, ref_python=python,
                                  memory_limit_mib=memory_limit_gib * 1024, epochs=epochs, progress=echo,
                                  graph_kind=graph_kind)
    report = {"config": dict(environment("cpu", threads), allocator=requested, max_nodes=max_nodes,
                             reference_dir=against_pyg, reference_python=python),
              "node_scaling": result}
    _emit(report, format_node_scaling(result), json_path, echo)
    return report


def _emit(report: Dict[str, object], text: str, json_path: Optional[str],
          echo: Optional[Callable[[str], None]]) -> None:
    """Print the text report and write the JSON one (and say so)."""
    if echo is not None:
        echo(text)
    if json_path:
        write_json(report, json_path)
        if echo is not None:
            echo(f"wrote {json_path}")
