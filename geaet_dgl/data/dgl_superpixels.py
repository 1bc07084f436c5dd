"""Where DGL's ``MNISTSuperPixelDataset`` keeps its files, and an offline way to load it.

For ``raw_dir=data_dir`` DGL uses ``data_dir/Superpixel_<hash of its URL>/``
with ``superpixels/mnist_75sp_{train,test}.pkl`` (the raw pickles of
Benchmarking-GNNs) and ``processed/MNIST_{train,test}.pkl`` (its own
``save_graphs`` output). The paths are asked from DGL itself, so they follow
the installed version.

:class:`OfflineMNISTSuperPixelDataset` is DGL's class with ``download``
replaced by an error: its reading and kNN-graph processing are DGL's own
code, but it can never reach for the network.
"""

import contextlib
import functools
import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

import dgl
import torch
from dgl.data import MNISTSuperPixelDataset
from dgl.data import superpixel as dgl_superpixel_module

from ..atomic import atomic_write
from .errors import DataError

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
SPLITS = ("train", "test")
RAW_PICKLE = "mnist_75sp_{split}.pkl"
BUILD_INFO = "geaet_build.json"


class _PathProbe(MNISTSuperPixelDataset):
    """Instantiates nothing: only asks DGL for its paths."""

    def _load(self):  # noqa: D401 - DGL hook
        pass


class OfflineMNISTSuperPixelDataset(MNISTSuperPixelDataset):
    """DGL's MNIST superpixel dataset that raises instead of downloading."""

    def download(self):  # DGL hook
        raise DataError(
            f"MNIST superpixel pickles are missing under {self.raw_path}; "
            "build them with load_mnist(..., mnist_images=...) or place mnist_75sp_{train,test}.pkl there"
        )


@dataclass(frozen=True)
class SuperpixelLayout:
    """Paths of one MNIST superpixel dataset folder in DGL's layout.

    Attributes
    ----------
    data_dir : Path
        What the user passed (DGL's ``raw_dir``).
    raw_path : Path
        ``data_dir/Superpixel_<hash>``.
    """

    data_dir: Path
    raw_path: Path

    @property
    def pickle_dir(self) -> Path:
        """Folder of the raw ``mnist_75sp_*.pkl`` files."""
        return self.raw_path / "superpixels"

    @property
    def processed_dir(self) -> Path:
        """Folder of DGL's processed files and our PE caches."""
        return self.raw_path / "processed"

    @property
    def build_info_path(self) -> Path:
        """JSON note written next to pickles that were built here."""
        return self.pickle_dir / BUILD_INFO

    def raw_pickle(self, split: str) -> Path:
        """``superpixels/mnist_75sp_<split>.pkl``."""
        return self.pickle_dir / RAW_PICKLE.format(split=split)

    def processed(self, split: str) -> Path:
        """DGL's processed file of ``split`` (DGL names it ``MNIST_<split>.pkl``)."""
        return Path(_PathProbe(raw_dir=str(self.data_dir), split=split).graph_path)

    def has_split(self, split: str) -> bool:
        """DGL can load ``split`` without a download: raw pickle or processed file present."""
        return self.raw_pickle(split).is_file() or self.processed(split).is_file()

    def read_build_info(self) -> Optional[dict]:
        """The note of a local build, or ``None`` for published (or absent) pickles."""
        path = self.build_info_path
        if not path.is_file():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"build note {path} is unreadable ({exc}); delete {self.raw_path} to rebuild") from exc

    def write_build_info(self, info: dict) -> None:
        """Write the local-build note atomically."""
        with atomic_write(self.build_info_path, "w") as handle:
            json.dump(info, handle, indent=2, sort_keys=True)

    def source_stamp(self, split: str) -> str:
        """``"<size>:<mtime_ns>"`` of the processed file (changes when DGL reprocesses)."""
        stat = self.processed(split).stat()
        return f"{stat.st_size}:{stat.st_mtime_ns}"


def superpixel_layout(data_dir: PathLike) -> SuperpixelLayout:
    """The DGL layout rooted at ``data_dir`` (nothing is created or read)."""
    data_dir = Path(data_dir).expanduser().resolve()
    raw_path = Path(_PathProbe(raw_dir=str(data_dir), split="train").raw_path)
    return SuperpixelLayout(data_dir=data_dir, raw_path=raw_path)


def adopt_loose_pickles(layout: SuperpixelLayout) -> bool:
    """Link ``mnist_75sp_*.pkl`` found directly in ``data_dir`` (or ``data_dir/superpixels``) into DGL's layout.

    The Benchmarking-GNNs download unpacks to ``superpixels/mnist_75sp_*.pkl``;
    this lets such a folder be passed as ``data_dir`` without copying.

    Returns
    -------
    bool
        True if both splits were linked.
    """
    for folder in (layout.data_dir, layout.data_dir / "superpixels"):
        sources = {split: folder / RAW_PICKLE.format(split=split) for split in SPLITS}
        if all(p.is_file() for p in sources.values()):
            layout.pickle_dir.mkdir(parents=True, exist_ok=True)
            for split, src in sources.items():
                dst = layout.raw_pickle(split)
                if not dst.exists():
                    os.symlink(src, dst)
            log.info("linked published pickles from %s into %s", folder, layout.pickle_dir)
            return True
    return False


@contextlib.contextmanager
def _dgl_progress_bars(enabled: bool):
    """Silence the tqdm bars of DGL's ``process`` (they ignore any verbosity flag) while loading."""
    if enabled:
        yield
        return
    original = dgl_superpixel_module.tqdm
    dgl_superpixel_module.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        dgl_superpixel_module.tqdm = original


def load_dgl_split(
    layout: SuperpixelLayout, split: str, verbose: bool = False, progress: bool = True
) -> Tuple[List[dgl.DGLGraph], torch.Tensor]:
    """Run DGL's ``MNISTSuperPixelDataset`` on ``split`` (offline) and return its graphs.

    Parameters
    ----------
    layout : SuperpixelLayout
    split : {'train', 'test'}
    verbose : bool
        DGL's own verbosity.
    progress : bool
        Show DGL's processing progress bars.

    Returns
    -------
    graphs : list of dgl.DGLGraph
        ``ndata['feat']`` ``(N, 3)`` float32 = (intensity, row/28, col/28),
        ``edata['feat']`` ``(E, 1)`` float32 kNN weights.
    labels : torch.Tensor
        ``(G,)`` int64.
    """
    if not layout.has_split(split):
        raise DataError(
            f"no MNIST superpixel {split} data under {layout.raw_path}; build or place mnist_75sp_{split}.pkl there"
        )
    layout.raw_path.mkdir(parents=True, exist_ok=True)  # DGL downloads only when this folder is missing
    try:
        with _dgl_progress_bars(progress):
            dataset = OfflineMNISTSuperPixelDataset(
                raw_dir=str(layout.data_dir), split=split, force_reload=False, verbose=verbose
            )
    except DataError:
        raise
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, pickle.UnpicklingError) as exc:
        # DGL itself re-processes a damaged processed file from the raw pickle; landing here means the
        # raw pickle is damaged too (truncated download, interrupted copy).
        raise DataError(
            f"DGL could not load the MNIST superpixel {split} split from {layout.raw_path} "
            f"({type(exc).__name__}: {exc}); {layout.raw_pickle(split)} is damaged: replace it with an intact "
            f"copy, or delete {layout.raw_path} to rebuild it from MNIST images"
        ) from exc
    return list(dataset.graphs), torch.as_tensor(dataset.labels).to(torch.int64)
