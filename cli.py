"""The ``geaet-dgl`` command line: train, eval, presets.

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
from typing import Any, Callable, Dict, Optional, Tuple

import click

USAGE_EXIT = 2


def _user_errors() -> Tuple[type, ...]:
    from geaet_dgl.config import ConfigError
    from geaet_dgl.data import DataError
    from geaet_dgl.training import CheckpointError, RunDirError

    return ConfigError, DataError, CheckpointError, RunDirError


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


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def main() -> None:
    """GEAET (Graph External Attention Enhanced Transformer) in DGL."""


@main.command()
@click.option("--dataset", help="Dataset to train on: mnist, or synthetic (random MNIST-shaped graphs). "
                                "Required unless --resume.")
@click.option("--preset", help="Configuration preset (see `geaet-dgl presets`); default: the dataset's own "
                               "(mnist for synthetic).")
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate (train.lr).")
@click.option("--seed", type=int, help="Seed of initialisation, batch order and dropout (train.seed).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), help="Where to train (default cpu).")
@click.option("--workers", type=click.IntRange(min=0), help="DataLoader worker processes (default 0).")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR", help="Run directory; default "
                                                             "runs/<dataset>-<preset>-seed<seed>.")
@click.option("--data-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where the dataset's files are, or are built (default: ./data).")
@click.option("--mnist-images", type=click.Path(file_okay=False), metavar="DIR",
              help="Folder of the four MNIST IDX files, used only to build the MNIST superpixels.")
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
@_handle_errors
def train(dataset: Optional[str], preset: Optional[str], epochs: Optional[int], batch_size: Optional[int],
          lr: Optional[float], seed: Optional[int], device: Optional[str], workers: Optional[int],
          out: Optional[str], data_dir: Optional[str], mnist_images: Optional[str], settings: Tuple[str, ...],
          limit_train: Optional[int], limit_val: Optional[int], limit_test: Optional[int],
          checkpoint_every: Optional[int], resume_dir: Optional[str], overwrite: bool, progress: bool) -> None:
    """Train GEAET; write checkpoints, metrics, curves and a summary to the run directory."""
    from geaet_dgl import training

    if resume_dir is not None:
        fixed = {"--dataset": dataset, "--preset": preset, "--epochs": epochs, "--batch-size": batch_size,
                 "--lr": lr, "--seed": seed, "--out": out, "--data-dir": data_dir, "--mnist-images": mnist_images,
                 "--set": settings or None, "--limit-train": limit_train, "--limit-val": limit_val,
                 "--limit-test": limit_test, "--checkpoint-every": checkpoint_every,
                 "--overwrite": overwrite or None}
        given = [name for name, value in fixed.items() if value is not None]
        if given:
            raise click.UsageError(f"--resume continues a run with its saved configuration; drop {', '.join(given)}")
        summary = training.resume(resume_dir, device=device, workers=workers, progress=progress)
        _print_summary(summary, resume_dir)
        return
    if dataset is None:
        raise click.UsageError("--dataset is required (or --resume RUN_DIR)")
    overrides: Dict[str, Any] = _parse_settings(settings)
    for key, value in (("train.epochs", epochs), ("train.batch_size", batch_size), ("train.lr", lr),
                       ("train.seed", seed)):
        if value is not None:
            overrides[key] = value
    data = _given(data_dir=data_dir, mnist_images=mnist_images, limit_train=limit_train, limit_val=limit_val,
                  limit_test=limit_test)
    run = training.make_run_config(dataset, preset, overrides, data, device=device or "cpu",
                                   workers=workers or 0, checkpoint_every=checkpoint_every or 0)
    run_dir = out or str(training.default_run_dir(dataset, run.preset, run.train.seed))
    summary = training.train(run, run_dir, overwrite=overwrite, progress=progress)
    _print_summary(summary, run_dir)


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
@click.option("--data-dir", type=click.Path(file_okay=False), help="Dataset folder (default: the run's).")
@click.option("--mnist-images", type=click.Path(file_okay=False), help="MNIST IDX folder (default: the run's).")
@_limit_options
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="Where to evaluate.")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes.")
@_handle_errors
def eval_command(checkpoint: str, split: str, as_json: bool, data_dir: Optional[str], mnist_images: Optional[str],
                 limit_train: Optional[int], limit_val: Optional[int], limit_test: Optional[int], device: str,
                 workers: int) -> None:
    """Recompute a checkpoint's metric on one split (the run's data limits unless given)."""
    from geaet_dgl.training import evaluate_checkpoint

    data = _given(data_dir=data_dir, mnist_images=mnist_images, limit_train=limit_train, limit_val=limit_val,
                  limit_test=limit_test)
    result = evaluate_checkpoint(checkpoint, split, data, device=device, workers=workers, progress=not as_json)
    if as_json:
        click.echo(json.dumps({key: result[key] for key in ("split", "metric_name", "metric")}))
    else:
        click.echo(f"{result['split']} {result['metric_name']}: {result['metric']:.6f} (loss {result['loss']:.6f})")


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


# ---------------------------------------------------------------------------------------------
# benchmark: reserved. The lead adds the `benchmark` command here (@main.command()).
# ---------------------------------------------------------------------------------------------


if __name__ == "__main__":
    main()
