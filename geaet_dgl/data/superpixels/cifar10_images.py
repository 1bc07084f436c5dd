"""Raw CIFAR-10 images (uint8, 32x32 RGB) from the standard python distribution.

``cifar-10-python.tar.gz`` unpacks to ``cifar-10-batches-py/`` with the
pickles ``data_batch_1`` .. ``data_batch_5`` (10,000 training images each)
and ``test_batch`` (10,000). Each holds a dict with ``b'data'``: ``(n, 3072)``
uint8, one image per row as 1024 red, 1024 green, then 1024 blue values, each
plane row-major; and ``b'labels'``: ``n`` ints 0..9. The training images are
the five batches in order: the order of torchvision's ``CIFAR10``, which the
Benchmarking-GNNs superpixel recipe read.
"""

import logging
import os
import pickle
from pathlib import Path
from typing import Optional, Tuple, Union

import numpy as np

from ..errors import DataError
from .slic import RawImages

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

CIFAR_FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_BATCHES = ("test_batch",)
IMAGE_SHAPE = (32, 32, 3)
ROW_LENGTH = 32 * 32 * 3
NUM_CLASSES = 10


def find_batches_dir(folder: PathLike) -> Optional[Path]:
    """``folder`` itself if it holds the batch files, else its ``cifar-10-batches-py/`` if that does.

    Returns
    -------
    Path or None
        ``None`` when neither holds ``test_batch``.
    """
    folder = Path(folder)
    for candidate in (folder, folder / CIFAR_FOLDER):
        if (candidate / TEST_BATCHES[0]).is_file():
            return candidate
    return None


def read_batch(path: PathLike) -> Tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR-10 batch pickle.

    Parameters
    ----------
    path : path-like
        E.g. ``cifar-10-batches-py/data_batch_1``.

    Returns
    -------
    images : np.ndarray
        ``(n, 32, 32, 3)`` uint8, (row, col, RGB) as torchvision stores them.
    labels : np.ndarray
        ``(n,)`` int64 classes 0..9.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            batch = pickle.load(handle, encoding="bytes")
        data, labels = batch[b"data"], batch[b"labels"]
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, KeyError, AttributeError,
            IndexError) as exc:
        raise DataError(
            f"cannot read CIFAR-10 batch {path} ({type(exc).__name__}: {exc}); replace it with the file from "
            "cifar-10-python.tar.gz"
        ) from exc
    data = np.asarray(data)
    labels = np.asarray(labels, dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != ROW_LENGTH:
        raise DataError(
            f"CIFAR-10 batch {path} holds {data.dtype} data of shape {data.shape}, not (n, {ROW_LENGTH}) uint8; "
            "replace it with the file from cifar-10-python.tar.gz"
        )
    if labels.shape != (data.shape[0],) or (labels.size and (labels.min() < 0 or labels.max() >= NUM_CLASSES)):
        raise DataError(
            f"CIFAR-10 batch {path} has {labels.size} labels (range must be 0..9) for {data.shape[0]} images; "
            "replace it with the file from cifar-10-python.tar.gz"
        )
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels


def load_cifar10_images(cifar_images: Optional[PathLike]) -> RawImages:
    """Read the six CIFAR-10 batch pickles.

    Parameters
    ----------
    cifar_images : path-like
        ``cifar-10-batches-py/`` or the folder that holds it.

    Returns
    -------
    RawImages
        50k train (batches 1..5 in order) and 10k test images,
        ``(n, 32, 32, 3)`` uint8, labels int64.
    """
    if cifar_images is None:
        raise DataError("no raw CIFAR-10 images: pass cifar_images=<folder with cifar-10-batches-py>")
    folder = Path(cifar_images)
    if not folder.is_dir():
        raise DataError(f"CIFAR-10 image folder {folder} does not exist; pass the unpacked {CIFAR_FOLDER} folder")
    batches = find_batches_dir(folder) or folder
    missing = [name for name in TRAIN_BATCHES + TEST_BATCHES if not (batches / name).is_file()]
    if missing:
        raise DataError(
            f"{batches} lacks CIFAR-10 batch file(s) {', '.join(missing)}; unpack cifar-10-python.tar.gz there"
        )
    splits = {}
    for split, names in (("train", TRAIN_BATCHES), ("test", TEST_BATCHES)):
        parts = [read_batch(batches / name) for name in names]
        splits[split] = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
    log.info("CIFAR-10 images from %s: %d train, %d test", batches, len(splits["train"][1]), len(splits["test"][1]))
    return RawImages(
        train_images=splits["train"][0],
        train_labels=splits["train"][1],
        test_images=splits["test"][0],
        test_labels=splits["test"][1],
        source=f"CIFAR-10 python batches in {batches}",
    )
