"""Silence the tqdm bars that DGL's dataset ``process`` methods draw (they ignore any verbosity flag)."""
import contextlib
import functools
from types import ModuleType
from typing import Iterator


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
