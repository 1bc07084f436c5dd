"""The ``geaet-dgl`` command line: train, eval, predict, presets and the studies.

This module only parses options and calls ``geaet_dgl``; every decision lives
in the library. Problems a user can fix (configuration, data, checkpoint, run
directory) print one line ``error: <message>`` to stderr and exit with code 2;
``--debug`` shows the full traceback instead. A NaN/inf loss exits with code 1;
SIGINT/SIGTERM during training saves ``last.pt`` and exits with 128 + the
signal number, saying how to resume.
"""
from __future__ import annotations

import functools
import json
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import click

USAGE_EXIT = 2


def _user_errors() -> Tuple[type, ...]:
    from geaet_dgl.config import ConfigError
    from geaet_dgl.data import DataError
    from geaet_dgl.training import CheckpointError, RunDirError
    from geaet_dgl.benchmarking.against_pyg import ParityError
    from geaet_dgl.benchmarking.inputs import UnsupportedPreset
    from geaet_dgl.benchmarking.reference import ReferenceUnavailable
    from geaet_dgl.interop.reference_run import CompareError

    return (ConfigError, DataError, CheckpointError, RunDirError, ParityError, UnsupportedPreset,
            ReferenceUnavailable, CompareError)


def _handle_errors(command: Callable) -> Callable:
    """Turn the library's user-facing errors into one line on stderr (unless --debug)."""

    @functools.wraps(command)
    def wrapper(*args, debug: bool = False, **kwargs):
        _log_to_stderr(logging.DEBUG if debug else logging.INFO)
        from geaet_dgl.training import NonFiniteLossError, TrainingInterrupted

        try:
            return command(*args, **kwargs)
        except TrainingInterrupted as exc:
            click.echo(str(exc), err=True)
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt:  # a second Ctrl-C: stop at once; last.pt is whole (atomic writes)
            click.echo("interrupted; the run directory keeps its last checkpoint", err=True)
            sys.exit(130)
        except (NonFiniteLossError, *_user_errors()) as exc:
            if debug:
                raise
            click.echo(f"error: {' '.join(str(exc).split())}", err=True)
            sys.exit(1 if isinstance(exc, NonFiniteLossError) else USAGE_EXIT)

    return click.option("--debug", is_flag=True, help="Show full tracebacks and debug logging.")(wrapper)


class _StderrHandler(logging.Handler):
    """Log records as plain lines on the current stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(self.format(record), err=True)


def _log_to_stderr(level: int) -> None:
    package_logger = logging.getLogger("geaet_dgl")
    package_logger.setLevel(level)
    if not any(isinstance(h, _StderrHandler) for h in package_logger.handlers):
        package_logger.addHandler(_StderrHandler())


def _parse_settings(settings: Tuple[str, ...]) -> Dict[str, str]:
    pairs = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. model.hidden_dim=64)", param_hint="--set")
        pairs[key.strip()] = value.strip()
    return pairs


def _given(**options: Any) -> Dict[str, Any]:
    """The options that were given (not None)."""
    return {key: value for key, value in options.items() if value is not None}


def _limit_options(command: Callable) -> Callable:
    for split in ("test", "val", "train"):
        command = click.option(f"--limit-{split}", type=click.IntRange(min=1), default=None,
                               help=f"Use only the first N graphs of the {split} split.")(command)
    return command


def _data_source_options(from_run: bool) -> Callable[[Callable], Callable]:
    """--data-dir, --mnist-images and --cifar-images; ``from_run``: defaults come from a run's config."""
    if from_run:
        helps = ("Dataset folder (default: the run's).", "MNIST IDX folder (default: the run's).",
                 "cifar-10-batches-py folder (default: the run's).")
    else:
        helps = ("Where the dataset's files are, or are built (default: ./data).",
                 "Folder of the four MNIST IDX files, used only to build the MNIST superpixels.",
                 "cifar-10-batches-py folder (CIFAR-10 python batches), used only to build the CIFAR10 "
                 "superpixels.")

    def decorate(command: Callable) -> Callable:
        for name, text in reversed(list(zip(("--data-dir", "--mnist-images", "--cifar-images"), helps))):
            command = click.option(name, type=click.Path(file_okay=False), metavar="DIR", help=text)(command)
        return command

    return decorate


def _expand_list_options(args: list, names: Tuple[str, ...]) -> list:
    """``--seeds 0 1 2`` / ``--seeds 0,1,2`` -> ``--seeds 0 --seeds 1 --seeds 2`` for multiple=True options."""
    expanded, i = [], 0
    while i < len(args):
        token = args[i]
        if token == "--":
            return expanded + args[i:]
        name, sep, inline = token.partition("=")
        if name in names:
            values = [inline] if sep else []
            i += 1
            if not sep:
                while i < len(args) and not args[i].startswith("-"):
                    values.append(args[i])
                    i += 1
            for value in values:
                for item in value.split(","):
                    if item.strip():
                        expanded += [name, item.strip()]
            if not values:
                expanded.append(name)  # click reports the missing value
            continue
        expanded.append(token)
        i += 1
    return expanded


class _ListOptionCommand(click.Command):
    """A command whose list options (``--seeds``, ``--graphs``) take every value that follows them."""

    list_options = ("--seeds", "--graphs", "--batch-sizes", "--batch-size")

    def parse_args(self, ctx: click.Context, args: list) -> list:
        return super().parse_args(ctx, _expand_list_options(list(args), self.list_options))


def _threads_option(command: Callable) -> Callable:
    return click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
                        help="CPU threads (torch, DGL, BLAS, worker processes); default: the cores this process "
                             "may use. On a machine shared with other busy processes, fewer is faster (see "
                             "docs/performance.md).")(command)


def _seeds_option(command: Callable) -> Callable:
    return click.option("--seeds", type=click.IntRange(min=0), multiple=True, metavar="K [K ...]",
                        help="Train once per seed (e.g. --seeds 0 1 2 3), each in OUT/seed<k> (a finished seed "
                             "is skipped, an interrupted one resumed), then write OUT/aggregate.md and "
                             ".json: mean ± sample std (ddof=1) at the best-validation epoch.")(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.pass_context
def main(ctx: click.Context) -> None:
    """GEAET (Graph External Attention Enhanced Transformer) in DGL."""
    if ctx.invoked_subcommand != "benchmark":  # benchmark applies its own --allocator
        from geaet_dgl.allocator import configure_allocator

        try:
            configure_allocator()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


@main.command(cls=_ListOptionCommand)
@click.option("--dataset", help="Dataset to train on: a graph file PATH.bin (dgl.save_graphs), or mnist, cifar10, "
                                "pattern, cluster, zinc, voc, coco, "
                                "peptides-func, peptides-struct, pcqm-contact, tree, or synthetic "
                                "(random MNIST-shaped graphs); see `geaet-dgl datasets`. Required unless --resume.")
@click.option("--preset", help="Configuration preset (see `geaet-dgl presets`); default: the dataset's own "
                               "(mnist for synthetic).")
@click.option("--config", type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="A reference/GraphGPS config (e.g. GEAET's configs/GEAET/mnist.yaml) instead of --preset; "
                   "--dataset then only replaces its data set (e.g. synthetic). See docs/reference-interop.md.")
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate (train.lr).")
@click.option("--seed", type=int, help="Seed of initialisation, batch order and dropout (train.seed).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Where to train (default cpu).")
@click.option("--workers", type=click.IntRange(min=0), help="DataLoader worker processes (default 0).")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="Run directory; default "
                                                             "runs/<dataset>-<preset>-seed<seed>.")
@_data_source_options(from_run=False)
@click.option("--set", "settings", multiple=True, metavar="KEY=VALUE",
              help="Override a preset value, e.g. --set model.hidden_dim=64 --set train.lr=5e-4 (repeatable).")
@_limit_options
@click.option("--checkpoint-every", type=click.IntRange(min=0), help="Also write last.pt every N training "
                                                                     "steps inside an epoch (default 0: at "
                                                                     "epoch ends only).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True), metavar="RUN_DIR",
              help="Continue the run in RUN_DIR from its last.pt, with its own configuration "
                   "(only --device and --workers may change).")
@click.option("--overwrite", is_flag=True, help="Replace the run files of an existing run directory.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@click.option("--nproc", type=click.IntRange(min=1), default=None,
              help="Data-parallel processes on this machine (DistributedDataParallel: gloo on cpu, nccl on cuda, "
                   "one GPU each); --batch-size is per process. With --resume: default the run's own. "
                   "Under torchrun leave it out.")
@click.option("--sync-bn/--no-sync-bn", "sync_bn", default=None,
              help="Multi-process runs: synchronise BatchNorm statistics over all processes (default on).")
@_seeds_option
@click.option("--data-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Train on your own graphs: a dgl.save_graphs file (same as --dataset PATH.bin); see "
                   "docs/your-own-graphs.md.")
@click.option("--task", type=click.Choice(["graph-classification", "graph-regression", "node-classification"]),
              help="Graph files: the task (default: inferred from the labels).")
@click.option("--split-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Graph files: JSON or NPZ with train/val/test lists of graph indices.")
@click.option("--split", "split_fractions", type=click.FloatRange(min=0, min_open=True), nargs=3, default=None,
              metavar="TRAIN VAL TEST", help="Graph files: seeded random split fractions (default 0.8 0.1 0.1; "
                                             "seed: --set data.split_seed=K).")
@click.option("--tensorboard", is_flag=True, default=None,
              help="Also write TensorBoard event files (per-epoch metrics, lr, parameter count) to the run "
                   "directory; needs `pip install tensorboard`.")
@_threads_option
@_handle_errors
def train(dataset: Optional[str], preset: Optional[str], epochs: Optional[int], batch_size: Optional[int],
          lr: Optional[float], seed: Optional[int], device: Optional[str], workers: Optional[int],
          out: Optional[str], data_dir: Optional[str], mnist_images: Optional[str], settings: Tuple[str, ...],
          limit_train: Optional[int], limit_val: Optional[int], limit_test: Optional[int],
          checkpoint_every: Optional[int], resume_dir: Optional[str], overwrite: bool, progress: bool,
          nproc: Optional[int] = None, sync_bn: Optional[bool] = None, seeds: Tuple[int, ...] = (),
          cifar_images: Optional[str] = None, data_file: Optional[str] = None, task: Optional[str] = None,
          split_file: Optional[str] = None, split_fractions: Optional[Tuple[float, ...]] = None,
          tensorboard: Optional[bool] = None, config: Optional[str] = None, threads: Optional[int] = None) -> None:
    """Train GEAET; write checkpoints, metrics, curves and a summary to the run directory.

    Your own graphs: --dataset PATH.bin (a dgl.save_graphs file), preset `geaet` unless --preset.

    With --seeds K [K ...]: one run per seed in OUT/seed<k>, and their mean ± std in OUT/aggregate.md.

    Data-parallel: `--nproc N`, or `torchrun --nproc_per_node N cli.py train ...` (see docs/distributed.md).
    """
    from geaet_dgl import training
    from geaet_dgl.training import distributed, launcher

    if nproc is not None and distributed.launched_by_torchrun():
        raise click.UsageError("under torchrun the number of processes comes from torchrun; drop --nproc")
    if seeds and nproc not in (None, 1):
        raise click.UsageError("--seeds runs one seed after another in this process; drop --nproc")

    if seeds and (resume_dir is not None or seed is not None):
        raise click.UsageError("--seeds runs (and resumes) one run per seed; drop --seed/--resume")

    if resume_dir is not None:
        fixed = {"--dataset": dataset, "--preset": preset, "--config": config, "--epochs": epochs,
                 "--batch-size": batch_size, "--lr": lr, "--seed": seed, "--out": out, "--data-dir": data_dir,
                 "--mnist-images": mnist_images,
                 "--cifar-images": cifar_images,
                 "--set": settings or None, "--limit-train": limit_train, "--limit-val": limit_val,
                 "--limit-test": limit_test, "--checkpoint-every": checkpoint_every,
                 "--overwrite": overwrite or None, "--sync-bn/--no-sync-bn": sync_bn, "--data-file": data_file,
                 "--task": task, "--split-file": split_file, "--split": split_fractions, "--tensorboard": tensorboard}
        given = [name for name, value in fixed.items() if value is not None]
        if given:
            raise click.UsageError(f"--resume continues a run with its saved configuration; drop {', '.join(given)}")
        summary = launcher.resume_job(resume_dir, nproc=nproc, device=device, workers=workers,
                                      progress=progress, threads=threads)
        if summary is not None:  # None on the ranks other than 0 under torchrun
            _print_summary(summary, resume_dir)
        return
    if dataset is None and data_file is None and config is None:
        raise click.UsageError("--dataset is required (or --data-file PATH, --config FILE.yaml, or --resume RUN_DIR)")
    if config is not None and preset is not None:
        raise click.UsageError("--config gives the whole configuration; drop --preset")
    overrides: Dict[str, Any] = _parse_settings(settings)
    for key, value in (("train.epochs", epochs), ("train.batch_size", batch_size), ("train.lr", lr),
                       ("train.seed", seed)):
        if value is not None:
            overrides[key] = value
    data = _given(data_dir=data_dir, mnist_images=mnist_images, cifar_images=cifar_images, limit_train=limit_train,
                  limit_val=limit_val, limit_test=limit_test, data_file=data_file, task=task, split_file=split_file,
                  split=list(split_fractions) if split_fractions else None)
    if config is not None:
        from geaet_dgl.interop import reference_run_config

        run = reference_run_config(config, overrides, {**data, **_given(dataset=dataset)}, device=device or "cpu",
                                   workers=workers or 0, checkpoint_every=checkpoint_every or 0, threads=threads)
    else:
        run = training.make_run_config(dataset, preset, overrides, data, device=device or "cpu",
                                       workers=workers or 0, checkpoint_every=checkpoint_every or 0,
                                       threads=threads)
    if sync_bn is not None:
        run.sync_bn = sync_bn
    run.tensorboard = bool(tensorboard)
    run.validate()
    if seeds:
        _train_seeds(run, list(seeds), out or f"runs/{run.data.name}-{run.preset}-seeds", overwrite, progress)
        return
    run_dir = out or str(training.default_run_dir(run.data.name, run.preset, run.train.seed))
    summary = launcher.train_job(run, run_dir, nproc=nproc or 1, overwrite=overwrite, progress=progress)
    if summary is not None:  # None on the ranks other than 0 under torchrun
        _print_summary(summary, run_dir)


def _train_seeds(run: Any, seeds: list, out: str, overwrite: bool, progress: bool) -> None:
    from geaet_dgl.studies import format_mean_std, run_seeds
    from geaet_dgl.studies.seeds import AGGREGATE_MD

    agg = run_seeds(run, seeds, out, overwrite=overwrite, progress=progress,
                    on_seed=lambda k, summary: _print_summary(summary, f"{out}/seed{k}"))
    metric = agg["metric_name"]
    click.echo(f"{agg['n']} seeds {agg['seeds']}, {agg['std']}:")
    for name in ("val_metric", "test_metric"):
        stat = agg[name]
        click.echo(f"  {name.split('_')[0]} {metric}: {format_mean_std(stat['mean'], stat['std'])}")
    click.echo(f"table in {out}/{AGGREGATE_MD} (and aggregate.json)")


def _print_summary(summary: Dict[str, Any], run_dir: str) -> None:
    click.echo(f"best epoch {summary['best_epoch']}/{summary['epochs']}: val {summary['metric_name']} "
               f"{summary['val_metric']:.6f}, test {summary['test_metric']:.6f} "
               f"({summary['params']:,} parameters, {summary['seconds_per_epoch']:.1f} s/epoch); "
               f"run directory {run_dir}")


@main.command(name="eval")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run; model and data settings come from it.")
@click.option("--split", type=click.Choice(["test", "val", "train"]), default="test", show_default=True,
              help="Split to score.")
@click.option("--json", "as_json", is_flag=True, help='Print exactly one JSON object '
                                                      '{"split", "metric_name", "metric"}.')
@_data_source_options(from_run=True)
@click.option("--data-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Graph-file runs: the file, if it moved (default: the run's).")
@_limit_options
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to evaluate.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes.")
@click.option("--no-fold", is_flag=True,
              help="Score with the model as trained instead of its folded inference copy (BatchNorms folded "
                   "into linear maps: same outputs up to float rounding, faster; what training scores with).")
@_threads_option
@_handle_errors
def eval_command(checkpoint: str, split: str, as_json: bool, data_dir: Optional[str], mnist_images: Optional[str],
                 limit_train: Optional[int], limit_val: Optional[int], limit_test: Optional[int], device: str,
                 workers: int, no_fold: bool = False, cifar_images: Optional[str] = None,
                 data_file: Optional[str] = None, threads: Optional[int] = None) -> None:
    """Recompute a checkpoint's metric on one split (the run's data limits unless given)."""
    from geaet_dgl.training import evaluate_checkpoint

    data = _given(data_dir=data_dir, mnist_images=mnist_images, cifar_images=cifar_images, limit_train=limit_train,
                  limit_val=limit_val, limit_test=limit_test, data_file=data_file)
    result = evaluate_checkpoint(checkpoint, split, data, device=device, workers=workers, progress=not as_json,
                                 fold=not no_fold, threads=threads)
    if as_json:
        click.echo(json.dumps({key: result[key] for key in ("split", "metric_name", "metric")}))
    else:
        click.echo(f"{result['split']} {result['metric_name']}: {result['metric']:.6f} (loss {result['loss']:.6f})")


@main.command(name="import-reference")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False), metavar="REF.ckpt",
              help="A checkpoint of the reference's main.py (<out_dir>/<cfg>/<seed>/ckpt/<epoch>.ckpt).")
@click.option("--config", required=True, type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="The reference YAML it was trained with.")
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="RUN_DIR",
              help="Our run directory to write (config.json, best.pt, imported.json).")
@click.option("--data-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where the dataset is, for `geaet-dgl eval` on the run (default ./data).")
@_limit_options
@click.option("--overwrite", is_flag=True, help="Replace the run files of an existing RUN_DIR.")
@_handle_errors
def import_reference_command(checkpoint: str, config: str, out: str, data_dir: Optional[str],
                             limit_train: Optional[int], limit_val: Optional[int], limit_test: Optional[int],
                             overwrite: bool) -> None:
    """Turn a reference (PyG) checkpoint into our run directory; score it with `geaet-dgl eval`."""
    from geaet_dgl.interop.reference_checkpoint import import_reference

    data = _given(data_dir=data_dir, limit_train=limit_train, limit_val=limit_val, limit_test=limit_test)
    result = import_reference(checkpoint, config, out, data, overwrite=overwrite)
    click.echo(f"imported {result['params']:,} parameters (reference epoch {result['epoch']}) into "
               f"{result['checkpoint']}; score it with: geaet-dgl eval --checkpoint {result['checkpoint']}")


@main.command(name="export-reference")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False), metavar="RUN_DIR/best.pt",
              help="Our best.pt or last.pt.")
@click.option("--out", type=click.Path(dir_okay=False), metavar="PATH.ckpt",
              help="Where to write (default RUN_DIR/reference/ckpt/<epoch>.ckpt, the layout graphgym's load_ckpt "
                   "reads).")
@_handle_errors
def export_reference_command(checkpoint: str, out: Optional[str]) -> None:
    """Write our checkpoint as the reference's (graphgym) checkpoint: {"model_state": ...} with its names."""
    from geaet_dgl.interop.reference_checkpoint import export_reference

    result = export_reference(checkpoint, out)
    click.echo(f"wrote {result['params']:,} parameters (epoch {result['epoch']}) to {result['path']}")


@main.command()
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run (any dataset, named or a graph file).")
@click.option("--graphs", "graphs_path", required=True, type=click.Path(dir_okay=False), metavar="NEW.bin",
              help="The graphs to predict: a dgl.save_graphs file with the features the run trained on.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), metavar="PATH",
              help="Where the predictions go (CSV: one row per graph, or per node for node-level models).")
@click.option("--json", "as_json", is_flag=True, help="Write JSON lines instead of CSV.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to predict.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@_handle_errors
def predict(checkpoint: str, graphs_path: str, out: str, as_json: bool, device: str, progress: bool) -> None:
    """Predict new graphs with a trained checkpoint: class and probabilities, or regressed values.

    Graphs are batched as the run evaluated (its train.batch_size, reported); with GEANet in batch scope a
    graph's output depends on its batch-mates, in graph scope (preset geaet) it does not.
    """
    from geaet_dgl.training.predict import predict_file

    result = predict_file(checkpoint, graphs_path, out, as_json=as_json, device=device, progress=progress)
    per = "node" if result["level"] == "node" else "graph"
    scope = {"batch": "GEANet batch scope: outputs depend on batch-mates",
             "graph": "GEANet graph scope: each graph independent"}.get(result["scope"], "no GEANet")
    click.echo(f"wrote {result['rows']} rows (one per {per}, {result['graphs']} graphs, {result['kind']}) to "
               f"{result['out']}; batches of {result['batch_size']} graphs as the run trained ({scope})")


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, dataset, params, paper_params}.")
@_handle_errors
def presets(as_json: bool) -> None:
    """List the presets with their parameter count (built from the config) and the paper's."""
    from geaet_dgl.models import build_model
    from geaet_dgl.presets import get_preset, preset_names

    rows = []
    for name in preset_names():
        preset = get_preset(name)
        rows.append({"name": name, "dataset": preset.dataset, "params": build_model(preset.model).num_parameters,
                     "paper_params": preset.paper_params})
    if as_json:
        click.echo(json.dumps(rows))
        return
    click.echo(f"{'name':<16} {'dataset':<16} {'params':>10} {'paper':>10}")
    for row in rows:
        paper = f"{row['paper_params']:,}" if row["paper_params"] is not None else "-"
        click.echo(f"{row['name']:<16} {row['dataset']:<16} {row['params']:>10,} {paper:>10}")


@main.command(cls=_ListOptionCommand)
@click.option("--dataset", required=True, help="Dataset: mnist or synthetic.")
@click.option("--preset", help="Configuration preset; default: the dataset's own (mnist for synthetic).")
@click.option("--set", "settings", multiple=True, metavar="KEY=V1[,V2...]",
              help="A comma list sweeps KEY over its values (the points are the cartesian product of all "
                   "lists); one value fixes KEY for every point. E.g. --set model.geanet.num_heads=2,4 "
                   "(unit_size then follows as hidden_dim // num_heads unless set), --set model.pe=none,lappe, "
                   "--set model.geanet.edge_unit=false,true (ablation). Repeatable.")
@_seeds_option
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate (train.lr).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to train.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Sweep directory (default runs/sweep-<dataset>-<preset>): one folder per point, each with "
                   "seed<k>/ runs; sweep.md and sweep.json hold the table. Rerun to continue.")
@_data_source_options(from_run=False)
@_limit_options
@click.option("--overwrite", is_flag=True, help="Retrain every point and seed from scratch.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@_handle_errors
def sweep(dataset: str, preset: Optional[str], settings: Tuple[str, ...], seeds: Tuple[int, ...],
          epochs: Optional[int], batch_size: Optional[int], lr: Optional[float], device: str, workers: int,
          out: Optional[str], data_dir: Optional[str], mnist_images: Optional[str], limit_train: Optional[int],
          limit_val: Optional[int], limit_test: Optional[int], overwrite: bool, progress: bool,
          cifar_images: Optional[str] = None) -> None:
    """Sweep settings (heads, PE, GEANet unit ablation) over seeds; print one table with parameter counts."""
    from geaet_dgl.studies import run_sweep
    from geaet_dgl.studies.sweep import SWEEP_MD

    pairs: Dict[str, Any] = _parse_settings(settings)
    for key, value in (("train.epochs", epochs), ("train.batch_size", batch_size), ("train.lr", lr)):
        if value is not None:
            pairs[key] = str(value)
    data = _given(data_dir=data_dir, mnist_images=mnist_images, cifar_images=cifar_images, limit_train=limit_train,
                  limit_val=limit_val, limit_test=limit_test)
    out = out or f"runs/sweep-{dataset}-{preset or 'default'}"
    run_sweep(dataset, preset, pairs, list(seeds) or [0], out, data, device=device, workers=workers,
              overwrite=overwrite, progress=progress)
    click.echo((Path(out) / SWEEP_MD).read_text(), nl=False)
    click.echo(f"table in {out}/{SWEEP_MD} (and sweep.json)")


@main.command(cls=_ListOptionCommand)
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run; model and data settings come from it.")
@click.option("--graphs", type=click.IntRange(min=0), multiple=True, required=True, metavar="I [I ...]",
              help="Indices of the graphs to draw (e.g. --graphs 0 5 7).")
@click.option("--split", type=click.Choice(["test", "val", "train"]), default="test", show_default=True,
              help="Split the indices refer to.")
@click.option("--dataset", help="Dataset (default: the run's); mnist and synthetic load today.")
@_data_source_options(from_run=True)
@_limit_options
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Where graph<i>.png and attention.json go (default: attention/ next to the checkpoint).")
@_handle_errors
def attention(checkpoint: str, graphs: Tuple[int, ...], split: str, dataset: Optional[str], data_dir: Optional[str],
              mnist_images: Optional[str], limit_train: Optional[int], limit_val: Optional[int],
              limit_test: Optional[int], out: Optional[str], cifar_images: Optional[str] = None) -> None:
    """Draw per-node GEANet and self-attention scores of chosen graphs (PNG per graph + JSON).

    Each graph runs alone (a batch of one), so in geanet.scope=batch its GEANet weights are its own.
    GEANet score of node i: mean over heads of max over slots of the doubly normalised weights
    A[i,h,s] (1/S: spread evenly, 1: one slot). Transformer score: the attention a node receives,
    averaged over heads and query nodes. Both are averaged over layers in the figure; per-layer
    values (and GEANet's full (N, H, S) weights) are in the JSON.
    """
    from geaet_dgl.studies import attention_maps
    from geaet_dgl.studies.attention import ATTENTION_JSON

    data = _given(dataset=dataset, data_dir=data_dir, mnist_images=mnist_images, cifar_images=cifar_images,
                  limit_train=limit_train, limit_val=limit_val, limit_test=limit_test)
    result = attention_maps(checkpoint, list(graphs), split, data, out)
    folder = Path(result["graphs"][0]["png"]).parent
    for entry in result["graphs"]:
        click.echo(f"graph {entry['index']}: {entry['num_nodes']} nodes, label {entry['label']}, predicted "
                   f"{entry['prediction']} -> {entry['png']}")
    click.echo(f"scores in {folder / ATTENTION_JSON}")


@main.command(cls=_ListOptionCommand)
@click.option("--against-pyg", "ref_dir", required=True, type=click.Path(file_okay=False, exists=True),
              metavar="REF_DIR", help="Checkout of icm1018/GEAET; its main.py trains the reference (run from there).")
@click.option("--python", "python", type=click.Path(dir_okay=False), metavar="PATH",
              help="Python of the reference's environment (default: this one).")
@click.option("--dataset", type=click.Choice(["mnist", "cifar10"]), default="mnist", show_default=True)
@click.option("--seeds", type=click.IntRange(min=0), multiple=True, metavar="K [K ...]",
              help="Seeds; each side trains once per seed (default 0 1 2).")
@click.option("--epochs", type=click.IntRange(min=1), help="Epochs of both (default: the preset's).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch of both (default: the preset's).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate of both.")
@click.option("--warmup-epochs", type=click.IntRange(min=0),
              help="Warm-up epochs of both (default: the preset's 5 of 150 scaled to --epochs, rounded down).")
@_data_source_options(from_run=False)
@_limit_options
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Comparison folder: pyg/ (the exported graphs), ours/seed<k>/, reference/seed<k>/, compare.json, "
                   "compare.md, compare.png. Rerun to continue (finished runs are skipped).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), help="torch threads of both sides (default: torch's).")
@click.option("--overwrite", is_flag=True, help="Retrain every seed of both sides.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@_handle_errors
def compare(ref_dir: str, python: Optional[str], dataset: str, seeds: Tuple[int, ...], epochs: Optional[int],
            batch_size: Optional[int], lr: Optional[float], warmup_epochs: Optional[int], data_dir: Optional[str],
            mnist_images: Optional[str], cifar_images: Optional[str], limit_train: Optional[int],
            limit_val: Optional[int], limit_test: Optional[int], out: str, device: str, threads: Optional[int],
            overwrite: bool, progress: bool) -> None:
    """Train ours and the PyG reference on the same graphs with the same budget, per seed; compare the curves."""
    from geaet_dgl.interop.compare import COMPARE_MD, compare_against_reference

    data = _given(data_dir=data_dir, mnist_images=mnist_images, cifar_images=cifar_images, limit_train=limit_train,
                  limit_val=limit_val, limit_test=limit_test)
    compare_against_reference(ref_dir, dataset, list(seeds) or [0, 1, 2], out, python=python or sys.executable,
                              epochs=epochs, batch_size=batch_size, lr=lr, warmup_epochs=warmup_epochs, data=data,
                              device=device, threads=threads, overwrite=overwrite, progress=progress,
                              echo=click.echo)
    click.echo((Path(out) / COMPARE_MD).read_text(), nl=False)
    click.echo(f"table in {out}/{COMPARE_MD}, curves in {out}/compare.png, everything in {out}/compare.json")


@main.command()
@click.option("--data-dir", type=click.Path(file_okay=False), default="data", show_default=True, metavar="DIR",
              help="Where to look for each dataset's files.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, task, metric, size, present, note}.")
@_handle_errors
def datasets(data_dir: str, as_json: bool) -> None:
    """List the datasets: task, metric, split sizes, and whether their files are under --data-dir."""
    from geaet_dgl.data.registry import dataset_table

    rows = dataset_table(data_dir)
    if as_json:
        click.echo(json.dumps(rows))
        return
    words = {True: "yes", False: "no", None: "generated"}
    click.echo(f"{'name':<16} {'task':<36} {'metric':<18} {'train/val/test':<42} {'present':<9} note")
    for row in rows:
        click.echo(f"{row['name']:<16} {row['task']:<36} {row['metric']:<18} {row['size']:<42} "
                   f"{words[row['present']]:<9} {row['note']}")


@main.command(cls=_ListOptionCommand)
@click.option("--preset", default="mnist", show_default=True,
              help="Preset whose model is timed (synthetic graphs shaped like its dataset: mnist, cifar10, pattern).")
@click.option("--batch-sizes", "--batch-size", "batch_sizes", type=click.IntRange(min=1), multiple=True,
              metavar="B [B ...]", help="Batch sizes for the throughput table (default 16 64 128).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to run.")
@_threads_option
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True,
              help="Timed repeats per measurement (the median is reported).")
@click.option("--warmup", type=click.IntRange(min=0), default=2, show_default=True,
              help="Untimed warm-up steps before timing.")
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
              help="Largest graph for --scaling.")
@click.option("--against-pyg", "against_pyg", type=click.Path(file_okay=False), metavar="REF_DIR",
              help="A checkout of icm1018/GEAET (its dependencies installed here): check parity on the same "
                   "weights, then time both models interleaved on the same batches and report the ratios.")
@click.option("--force", is_flag=True, help="Time against the reference even if parity fails.")
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
@_handle_errors
def benchmark(preset: str, batch_sizes: Tuple[int, ...], device: str, threads: Optional[int], repeats: int, warmup: int,
              epoch: bool, breakdown: bool, num_graphs: int, workers: int, scaling: bool, max_nodes: int,
              against_pyg: Optional[str], force: bool, allocator: Optional[str], json_path: Optional[str],
               plot_path: Optional[str], dataset: str, data_dir: Optional[str], limit_train: Optional[int],
               limit_val: Optional[int], epoch_repeats: int, no_fold: bool = False) -> None:
    """Throughput (graphs/s, train and inference), peak memory, where a step's time goes, epoch time,
    scaling; optionally side by side with the PyG reference. Speed is only comparable within one run."""
    from geaet_dgl.benchmarking.api import run_benchmark

    default_sizes = (16, 128) if epoch and against_pyg else (16, 64, 128)
    run_benchmark(preset=preset, batch_sizes=batch_sizes or default_sizes, device=device, threads=threads,
                  repeats=repeats, warmup=warmup, epoch=epoch, breakdown=breakdown, num_graphs=num_graphs,
                  workers=workers, scaling=scaling, max_nodes=max_nodes, against_pyg=against_pyg, force=force,
                  allocator=allocator, json_path=json_path, plot_path=plot_path, dataset=dataset, data_dir=data_dir,
                  limit_train=limit_train, limit_val=limit_val, epoch_repeats=epoch_repeats, fold=not no_fold,
                  echo=click.echo)


#: Kept in step with geaet_dgl.allocator (not imported here: importing the package loads torch and dgl,
#: which this must run before).
_ALLOCATOR_ENV_VAR = "GEAET_DGL_ALLOCATOR"
_HUGETLB_TUNABLE = "glibc.malloc.hugetlb=1"


def _restart_with_huge_pages() -> None:
    """Re-execute this process with glibc's huge-page tunable, unless asked not to or already done.

    glibc reads ``GLIBC_TUNABLES`` only at start-up, so the default allocator mode
    (``hugetlb``, see ``geaet_dgl/allocator.py``: about 3x faster GEANet on a
    100k-node graph, the same memory) needs a fresh start of the interpreter: the
    same process id, arguments and environment plus the tunable. Skipped with
    ``GEAET_DGL_ALLOCATOR=system`` or ``keep``, off Linux, and when the tunable is set.
    """
    import os

    mode = os.environ.get(_ALLOCATOR_ENV_VAR, "hugetlb").lower()
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if mode != "hugetlb" or not sys.platform.startswith("linux") or "glibc.malloc.hugetlb=" in tunables:
        return
    env = dict(os.environ, GLIBC_TUNABLES=":".join(t for t in (tunables, _HUGETLB_TUNABLE) if t))
    env[_ALLOCATOR_ENV_VAR] = "hugetlb"
    try:
        os.execve(sys.executable, [sys.executable, "-c", "import cli; cli.main(prog_name='geaet-dgl')"]
                  + sys.argv[1:], env)
    except OSError:
        pass  # keep running with glibc's defaults


def console_main() -> None:
    """The ``geaet-dgl`` console command: :func:`main`, started with the default allocator mode."""
    _restart_with_huge_pages()
    main()


if __name__ == "__main__":
    main()
