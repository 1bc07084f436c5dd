"""What the subcommands share: error handling, logging to stderr, and the common options.

Problems a user can fix (configuration, data, checkpoint, run directory) print
one line ``error: <message>`` to stderr and exit with code 2; ``--debug`` shows
the full traceback instead. Options that conflict are usage errors (click's
format, exit 2). A NaN/inf loss exits with code 1; SIGINT/SIGTERM during
training saves ``last.pt`` and exits with 128 + the signal number.
"""
from __future__ import annotations

import functools
import logging
import sys
from typing import Any, Callable, Dict, Iterable, Tuple

import click

USAGE_EXIT = 2

#: Options gathered into one ``data`` dict (the :class:`~geaet_dgl.config.DataOptions` fields they set),
#: in this order.
DATA_KEYS = ("data_dir", "mnist_images", "cifar_images", "limit_train", "limit_val", "limit_test", "data_file",
             "split_index")


def handle_errors(command: Callable) -> Callable:
    """Turn the library's user-facing errors into one line on stderr (unless --debug)."""

    @functools.wraps(command)
    def wrapper(*args, debug: bool = False, **kwargs):
        _log_to_stderr(logging.DEBUG if debug else logging.INFO)
        from geaet_dgl.config import OptionConflict
        from geaet_dgl.errors import GeaetError
        from geaet_dgl.training import NonFiniteLossError, TrainingInterrupted

        try:
            return command(*args, **kwargs)
        except OptionConflict as exc:
            raise click.UsageError(str(exc)) from None
        except TrainingInterrupted as exc:
            click.echo(str(exc), err=True)
            sys.exit(128 + exc.signum)
        except KeyboardInterrupt as exc:  # a second Ctrl-C, or a job of processes stopped by a signal
            signum = getattr(exc, "signum", 2)  # 2: SIGINT; last.pt is whole (atomic writes)
            try:
                click.echo(str(exc) if hasattr(exc, "signum") else
                           "interrupted; the run directory keeps its last checkpoint", err=True)
            except OSError:  # the terminal is gone (SIGHUP)
                pass
            sys.exit(128 + signum)
        except (NonFiniteLossError, GeaetError) as exc:
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


def parse_settings(settings: Tuple[str, ...]) -> Dict[str, str]:
    """``--set KEY=VALUE`` items as ``{KEY: VALUE}``."""
    pairs = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE (e.g. model.hidden_dim=64)", param_hint="--set")
        pairs[key.strip()] = value.strip()
    return pairs


def given(**options: Any) -> Dict[str, Any]:
    """The options that were given (not None)."""
    return {key: value for key, value in options.items() if value is not None}


def gather_data(command: Callable) -> Callable:
    """Pass the command's :data:`DATA_KEYS` options that were given as one ``data`` dict."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        data = given(**{key: kwargs.pop(key) for key in DATA_KEYS if key in kwargs})
        return command(*args, data=data, **kwargs)

    return wrapper


def given_on_command_line(ctx: click.Context, skip: Iterable[str] = ()) -> Dict[str, str]:
    """``{parameter name: its spelling}`` for every option typed on the command line (not a default)."""
    skip = set(skip)
    found = {}
    for param in ctx.command.params:
        if param.name in skip or ctx.get_parameter_source(param.name) != click.core.ParameterSource.COMMANDLINE:
            continue
        found[param.name] = "/".join(param.opts + param.secondary_opts)
    return found


def limit_options(command: Callable) -> Callable:
    for split in ("test", "val", "train"):
        command = click.option(f"--limit-{split}", type=click.IntRange(min=1), default=None,
                               help=f"Use only the first N graphs of the {split} split.")(command)
    return command


def data_source_options(from_run: bool) -> Callable[[Callable], Callable]:
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


def expand_list_options(args: list, names: Tuple[str, ...]) -> list:
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


class ListOptionCommand(click.Command):
    """A command whose list options (``--seeds``, ``--graphs``) take every value that follows them."""

    list_options = ("--seeds", "--graphs", "--batch-sizes", "--batch-size", "--what", "--splits", "--exported")

    def parse_args(self, ctx: click.Context, args: list) -> list:
        return super().parse_args(ctx, expand_list_options(list(args), self.list_options))


def threads_option(command: Callable) -> Callable:
    return click.option("--threads", type=click.IntRange(min=1), default=None, metavar="N",
                        help="CPU threads (torch, DGL, BLAS, worker processes); default: the cores this process "
                             "may use. On a machine shared with other busy processes, fewer is faster (see "
                             "docs/performance.md).")(command)


def allow_changed_data_option(command: Callable) -> Callable:
    return click.option("--allow-changed-data", is_flag=True,
                        help="Go on although the run's data changed since it was trained (a graph file edited, "
                             "processed files rebuilt): use the run's own split and log what changed, instead of "
                             "refusing.")(command)


def split_index_option(command: Callable) -> Callable:
    return click.option("--split-index", type=click.IntRange(min=0), default=None, metavar="K",
                        help="Named node sets: the public split to train on (default 0): actor has geom-gcn's 10 "
                             "(0..9), wikics 20, cora one (see `geaet-dgl datasets`).")(command)


def seeds_option(command: Callable) -> Callable:
    return click.option("--seeds", type=click.IntRange(min=0), multiple=True, metavar="K [K ...]",
                        help="Train once per seed (e.g. --seeds 0 1 2 3), each in OUT/seed<k> (a finished seed "
                             "is skipped, an interrupted one resumed), then write OUT/aggregate.md and "
                             ".json: mean ± sample std (ddof=1) at the best-validation epoch.")(command)


def retry_failed_option(command: Callable) -> Callable:
    return click.option("--retry-failed", is_flag=True,
                        help="Studies: train again the runs that diverged before (NaN/inf loss; by default a rerun "
                             "keeps them as failed rows of the table and skips them).")(command)


def device_option(what: str) -> Callable[[Callable], Callable]:
    """--device cpu|cuda, default cpu, "Where to <what>."."""
    return click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
                        help=f"Where to {what}.")
