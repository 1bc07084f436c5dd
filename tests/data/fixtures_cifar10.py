"""Tiny CIFAR-10 files in the exact formats the loaders read.

* the python distribution's batches (``cifar-10-batches-py/data_batch_1..5``,
  ``test_batch``: pickled dicts with ``b'data'`` (n, 3072) uint8 as R, G, B
  planes and ``b'labels'``), written here without the package's code;
* DGL's raw superpixel pickles ``cifar10_150sp_{train,test}.pkl``:
  ``(labels int32, [(mean_px (n, 3) f32, coord (n, 2) f32, order (n,) i32), ...])``.
"""
import pickle
from pathlib import Path

import numpy as np

from geaet_dgl.data.superpixels.dgl_files import CIFAR10_SPEC, superpixel_layout

#: Four strongly different colours; each fixture image is a 2x2 grid of them.
PALETTE = np.array([[230, 30, 30], [30, 200, 40], [20, 40, 220], [240, 240, 60]], dtype=np.uint8)


def quadrant_colours(index: int) -> np.ndarray:
    """``(2, 2, 3)`` uint8 colours of image ``index``'s quadrants: a rotation of the palette."""
    return np.roll(PALETTE, index, axis=0).reshape(2, 2, 3)


def quadrant_images(n: int, offset: int = 0) -> np.ndarray:
    """``(n, 32, 32, 3)`` uint8 images: 16x16 quadrants of solid colour (rows/cols 0-15, 16-31)."""
    images = np.zeros((n, 32, 32, 3), dtype=np.uint8)
    for i in range(n):
        colours = quadrant_colours(offset + i)
        for qr in range(2):
            for qc in range(2):
                images[i, 16 * qr:16 * (qr + 1), 16 * qc:16 * (qc + 1)] = colours[qr, qc]
    return images


def write_cifar_batches(root: Path, train_images, train_labels, test_images, test_labels) -> Path:
    """Write ``root/cifar-10-batches-py`` (training images spread over five batches, in order); return it."""
    folder = Path(root) / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    chunks = zip(np.array_split(np.asarray(train_images), 5), np.array_split(np.asarray(train_labels), 5))
    names = [f"data_batch_{i}" for i in range(1, 6)]
    for name, (images, labels) in list(zip(names, chunks)) + [("test_batch", (test_images, test_labels))]:
        images = np.asarray(images)
        rows = images.transpose(0, 3, 1, 2).reshape(len(images), 3072)  # R plane, G plane, B plane
        batch = {b"batch_label": name.encode(), b"labels": [int(x) for x in labels], b"data": rows,
                 b"filenames": [f"img{i}.png".encode() for i in range(len(images))]}
        with open(folder / name, "wb") as handle:
            pickle.dump(batch, handle, protocol=2)
    return folder


def random_superpixels(rng: np.random.Generator, count: int):
    """``count`` sp_data entries with 10..40 nodes (never 8: DGL's kNN code fails there)."""
    records = []
    for _ in range(count):
        n = int(rng.integers(10, 41))
        mean_px = rng.random((n, 3)).astype(np.float32)
        coord = rng.uniform(0, 31, size=(n, 2)).astype(np.float32)
        records.append((mean_px, coord, rng.permutation(n).astype(np.int32)))
    return records


def write_published_pickles(data_dir: Path, sizes=(8, 4), seed: int = 0) -> dict:
    """DGL's raw ``cifar10_150sp_{train,test}.pkl`` as downloaded; -> {split: (labels, sp_data)}."""
    rng = np.random.default_rng(seed)
    layout = superpixel_layout(data_dir, CIFAR10_SPEC)
    layout.pickle_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for split, count in zip(("train", "test"), sizes):
        labels = rng.integers(0, 10, size=count).astype(np.int32)
        records = random_superpixels(rng, count)
        with open(layout.pickle_dir / f"cifar10_150sp_{split}.pkl", "wb") as handle:
            pickle.dump((labels, records), handle, protocol=2)
        out[split] = (labels, records)
    return out


def one_line(exc_info) -> str:
    """The message of a raised error (``pytest.raises`` info), checked to be one line."""
    message = str(exc_info.value)
    assert "\n" not in message
    return message
