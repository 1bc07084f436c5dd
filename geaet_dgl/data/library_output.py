"""Keep what DGL's and OGB's dataset code prints out of the way: progress bars off on request, OGB's prints in the log.

DGL's dataset ``process`` methods draw tqdm bars that ignore any verbosity flag
(:func:`dgl_progress_bars`); OGB prints progress on stdout and stderr and may
start an update check when imported (:func:`quiet_ogb`).
"""
import contextlib
import functools
import io
import logging
import sys
from types import ModuleType
from typing import Iterator

log = logging.getLogger(__name__)


@contextlib.contextmanager
def dgl_progress_bars(module: ModuleType, show: bool) -> Iterator[None]:
    """Within the block, ``module.tqdm`` (a DGL dataset module's progress bar) draws only if ``show``."""
    if show:
        yield
        return
    original = module.tqdm
    module.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        module.tqdm = original


@contextlib.contextmanager
def quiet_ogb():
    """OGB prints progress on stdout and stderr (and its import may start an update check): send it to the log."""
    hidden = "outdated" not in sys.modules
    if hidden:
        sys.modules["outdated"] = None  # type: ignore[assignment]
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            yield
    finally:
        if hidden:
            sys.modules.pop("outdated", None)
        for line in sink.getvalue().splitlines():
            log.info("ogb: %s", line)
