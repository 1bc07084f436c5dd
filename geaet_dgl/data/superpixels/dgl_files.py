"""Where DGL's MNIST / CIFAR10 superpixel datasets keep their files, and an offline way to load them.

For ``raw_dir=data_dir`` both DGL classes use the same folder
``data_dir/Superpixel_<hash of its URL>/`` (DGL downloads one archive for
both) with ``superpixels/mnist_75sp_{train,test}.pkl`` and
``superpixels/cifar10_150sp_{train,test}.pkl`` (the raw pickles of
Benchmarking-GNNs) and ``processed/MNIST_{train,test}.pkl`` /
``processed/CIFAR10_{train,test}.pkl`` (their own ``save_graphs`` output).
The paths are asked from DGL itself, so they follow the installed version.
A :class:`SuperpixelSpec` (:data:`MNIST_SPEC`, :data:`CIFAR10_SPEC`) names
what differs between the two datasets.

:class:`OfflineMNISTSuperPixelDataset` / :class:`OfflineCIFAR10SuperPixelDataset`
are DGL's classes with ``download`` replaced by an error: their reading and
kNN-graph processing are DGL's own code, but they can never reach for the
network.
"""

import json
import logging
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

import dgl
import torch
from dgl.data import CIFAR10SuperPixelDataset, MNISTSuperPixelDataset
from dgl.data import superpixel as dgl_superpixel_module

from ...atomic import atomic_write
from ..errors import DataError
from ..library_output import dgl_progress_bars

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
SPLITS = ("train", "test")


class _PathOnly:
    """Mixin: instantiates nothing, only asks DGL for its paths."""

    def _load(self):  # noqa: D401 - DGL hook
        pass


class _NoDownload:
    """Mixin: DGL's superpixel dataset that raises instead of downloading.

    ``pickle_stem`` and ``build_hint`` name the missing file and the fix.
    """

    pickle_stem = ""
    build_hint = ""

    def download(self):  # DGL hook
        missing = os.path.join(self.raw_path, "superpixels", f"{self.pickle_stem}_{self.split}.pkl")
        raise DataError(
            f"{self._dataset_name} superpixel pickle {missing} is missing; "
            f"build it with {self.build_hint} or place {self.pickle_stem}_{{train,test}}.pkl there"
        )


class OfflineMNISTSuperPixelDataset(_NoDownload, MNISTSuperPixelDataset):
    """DGL's MNIST superpixel dataset that raises instead of downloading."""

    pickle_stem = "mnist_75sp"
    build_hint = "load_mnist(..., mnist_images=...)"


class OfflineCIFAR10SuperPixelDataset(_NoDownload, CIFAR10SuperPixelDataset):
    """DGL's CIFAR10 superpixel dataset that raises instead of downloading."""

    pickle_stem = "cifar10_150sp"
    build_hint = "load_cifar10(..., cifar_images=...)"


class _MNISTPathProbe(_PathOnly, MNISTSuperPixelDataset):
    pass


class _CIFAR10PathProbe(_PathOnly, CIFAR10SuperPixelDataset):
    pass


@dataclass(frozen=True)
class SuperpixelSpec:
    """What differs between DGL's two superpixel datasets.

    Attributes
    ----------
    label : str
        DGL's name, ``'MNIST'`` or ``'CIFAR10'`` (prefix of its processed files).
    offline : type
        DGL's dataset class that cannot download.
    probe : type
        DGL's dataset class that only computes paths.
    build_info : str
        File name of the local-build note (the two datasets share one folder).
    cache_tag : str
        Prefix of this dataset's PE cache tags in the shared ``processed/``
        (empty for MNIST, so its caches from before CIFAR10 support stay valid).
    images_hint : str
        How a user provides raw images, for error messages.
    """

    label: str
    offline: type
    probe: type
    build_info: str
    cache_tag: str
    images_hint: str

    @property
    def pickle_stem(self) -> str:
        """``mnist_75sp`` / ``cifar10_150sp``."""
        return self.offline.pickle_stem

    def pickle_name(self, split: str) -> str:
        """``<stem>_<split>.pkl``."""
        return f"{self.pickle_stem}_{split}.pkl"


MNIST_SPEC = SuperpixelSpec(
    label="MNIST", offline=OfflineMNISTSuperPixelDataset, probe=_MNISTPathProbe, build_info="geaet_build.json",
    cache_tag="", images_hint="MNIST images",
)
CIFAR10_SPEC = SuperpixelSpec(
    label="CIFAR10", offline=OfflineCIFAR10SuperPixelDataset, probe=_CIFAR10PathProbe,
    build_info="geaet_build_cifar10.json", cache_tag="cifar10_", images_hint="CIFAR-10 images",
)


@dataclass(frozen=True)
class SuperpixelLayout:
    """Paths of one superpixel dataset (MNIST or CIFAR10) in DGL's layout.

    Attributes
    ----------
    data_dir : Path
        What the user passed (DGL's ``raw_dir``).
    raw_path : Path
        ``data_dir/Superpixel_<hash>``.
    spec : SuperpixelSpec
        Which of the two datasets.
    """

    data_dir: Path
    raw_path: Path
    spec: SuperpixelSpec = MNIST_SPEC

    @property
    def pickle_dir(self) -> Path:
        """Folder of the raw ``<stem>_*.pkl`` files."""
        return self.raw_path / "superpixels"

    @property
    def processed_dir(self) -> Path:
        """Folder of DGL's processed files and our PE caches."""
        return self.raw_path / "processed"

    @property
    def build_info_path(self) -> Path:
        """JSON note written next to pickles that were built here."""
        return self.pickle_dir / self.spec.build_info

    def raw_pickle(self, split: str) -> Path:
        """``superpixels/<stem>_<split>.pkl``."""
        return self.pickle_dir / self.spec.pickle_name(split)

    def processed(self, split: str) -> Path:
        """DGL's processed file of ``split`` (DGL names it ``MNIST_<split>.pkl`` / ``CIFAR10_<split>.pkl``)."""
        return Path(self.spec.probe(raw_dir=str(self.data_dir), split=split).graph_path)

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


def superpixel_layout(data_dir: PathLike, spec: SuperpixelSpec = MNIST_SPEC) -> SuperpixelLayout:
    """The DGL layout of dataset ``spec`` rooted at ``data_dir`` (nothing is created or read)."""
    data_dir = Path(data_dir).expanduser().resolve()
    raw_path = Path(spec.probe(raw_dir=str(data_dir), split="train").raw_path)
    return SuperpixelLayout(data_dir=data_dir, raw_path=raw_path, spec=spec)


def superpixels_present(data_dir: PathLike, spec: SuperpixelSpec = MNIST_SPEC) -> bool:
    """Can DGL load both splits of ``spec`` from ``data_dir`` without a download?"""
    layout = superpixel_layout(data_dir, spec)
    return all(layout.has_split(split) for split in SPLITS)


def adopt_loose_pickles(layout: SuperpixelLayout) -> bool:
    """Link ``<stem>_*.pkl`` found directly in ``data_dir`` (or ``data_dir/superpixels``) into DGL's layout.

    The Benchmarking-GNNs download unpacks to ``superpixels/mnist_75sp_*.pkl``
    and ``superpixels/cifar10_150sp_*.pkl``; this lets such a folder be passed
    as ``data_dir`` without copying.

    Returns
    -------
    bool
        True if both splits were linked.
    """
    for folder in (layout.data_dir, layout.data_dir / "superpixels"):
        sources = {split: folder / layout.spec.pickle_name(split) for split in SPLITS}
        if all(p.is_file() for p in sources.values()):
            layout.pickle_dir.mkdir(parents=True, exist_ok=True)
            for split, src in sources.items():
                dst = layout.raw_pickle(split)
                if not dst.exists():
                    os.symlink(src, dst)
            log.info("linked published pickles from %s into %s", folder, layout.pickle_dir)
            return True
    return False


def load_dgl_split(
    layout: SuperpixelLayout, split: str, verbose: bool = False, progress: bool = True
) -> Tuple[List[dgl.DGLGraph], torch.Tensor]:
    """Run DGL's ``MNISTSuperPixelDataset`` / ``CIFAR10SuperPixelDataset`` on ``split`` (offline).

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
        ``ndata['feat']`` float32 ``(N, 3)`` = (intensity, row/28, col/28)
        for MNIST, ``(N, 5)`` = (r, g, b, row/32, col/32) for CIFAR10;
        ``edata['feat']`` ``(E, 1)`` float32 kNN weights.
    labels : torch.Tensor
        ``(G,)`` int64.
    """
    spec = layout.spec
    if not layout.has_split(split):
        raise DataError(
            f"no {spec.label} superpixel {split} data under {layout.raw_path}; "
            f"build or place {spec.pickle_name(split)} there"
        )
    layout.raw_path.mkdir(parents=True, exist_ok=True)  # DGL downloads only when this folder is missing
    try:
        with dgl_progress_bars(dgl_superpixel_module, progress):
            dataset = spec.offline(raw_dir=str(layout.data_dir), split=split, force_reload=False, verbose=verbose)
    except DataError:
        raise
    except (OSError, EOFError, ValueError, KeyError, IndexError, TypeError, pickle.UnpicklingError) as exc:
        # DGL itself re-processes a damaged processed file from the raw pickle; landing here means the
        # raw pickle is damaged too (truncated download, interrupted copy).
        raise DataError(
            f"DGL could not load the {spec.label} superpixel {split} split from {layout.raw_path} "
            f"({type(exc).__name__}: {exc}); {layout.raw_pickle(split)} is damaged: replace it with an intact "
            f"copy, or delete {layout.raw_path} to rebuild it from {spec.images_hint}"
        ) from exc
    return list(dataset.graphs), torch.as_tensor(dataset.labels).to(torch.int64)
