"""The CIFAR10 superpixels built from the CIFAR-10 python batches (superpixels/cifar10_images.py): the
batches read in order, the build and its reuse, a limited build, missing or damaged batch files."""
import logging
import pickle

import numpy as np
import pytest

from geaet_dgl.data import DataError, LoadOptions
from geaet_dgl.data.superpixels import cifar10 as cifar10_module
from geaet_dgl.data.superpixels.cifar10 import load_cifar10
from geaet_dgl.data.superpixels.cifar10_images import load_cifar10_images, read_batch
from geaet_dgl.data.superpixels.dgl_files import CIFAR10_SPEC, superpixel_layout
from geaet_dgl.data.superpixels.slic import CIFAR10_RECIPE, read_superpixel_pickle
from tests.data.fixtures_cifar10 import one_line, quadrant_colours, quadrant_images


def test_batches_are_read_as_rgb_rows_in_order(batches):
    folder, train_labels, test_labels = batches
    images, labels = read_batch(folder / "data_batch_1")
    assert images.shape == (2, 32, 32, 3) and images.dtype == np.uint8
    np.testing.assert_array_equal(images[1, 0, 0], quadrant_colours(1)[0, 0])  # top-left pixel, (R, G, B)
    np.testing.assert_array_equal(images[1, 31, 20], quadrant_colours(1)[1, 1])  # bottom-right quadrant
    raw = load_cifar10_images(folder.parent)  # the parent of cifar-10-batches-py works too
    assert raw.train_images.shape == (10, 32, 32, 3) and raw.test_images.shape == (3, 32, 32, 3)
    np.testing.assert_array_equal(raw.train_labels, train_labels)  # batches 1..5 in order
    np.testing.assert_array_equal(raw.test_labels, test_labels)
    np.testing.assert_array_equal(raw.train_images, quadrant_images(10))


@pytest.mark.slow
def test_build_from_batches_then_reuse(tmp_path, batches, monkeypatch, caplog):
    folder, train_labels, test_labels = batches
    data_dir = tmp_path / "built"
    with caplog.at_level(logging.INFO, logger="geaet_dgl.data"):
        splits = load_cifar10(LoadOptions(data_dir=data_dir, cifar_images=folder, pe_k=3, num_val=2, progress=False,
                                          workers=1))
    assert "not byte-identical" in caplog.text
    assert splits.sizes() == {"train": 8, "val": 2, "test": 3}
    assert "local SLIC build" in splits.source
    layout = superpixel_layout(data_dir, CIFAR10_SPEC)
    info = layout.read_build_info()
    assert info["train"] == {"built": 10, "total": 10} and info["test"] == {"built": 3, "total": 3}
    assert "n_sp=150 compactness=10.0 query n_sp+50" in info["recipe"]
    assert layout.build_info_path.name == "geaet_build_cifar10.json"

    labels, records = read_superpixel_pickle(layout.raw_pickle("train"))
    assert labels.dtype == np.int32 and labels.tolist() == train_labels.tolist()
    assert splits.val.labels.tolist() == train_labels[:2].tolist()
    assert splits.train.labels.tolist() == train_labels[2:].tolist()
    for index, ((mean_px, coord, order), graph) in enumerate(zip(records, splits.val.graphs + splits.train.graphs)):
        n = len(order)
        assert 50 <= n <= CIFAR10_RECIPE.n_sp and len(np.unique(order)) == n
        assert mean_px.shape == (n, 3) and mean_px.dtype == np.float32 and coord.shape == (n, 2)
        # every superpixel lies inside one solid quadrant: its mean colour is that quadrant's, exactly
        quadrant = (coord >= 16).astype(int)  # (row, col) quadrant of its centre
        expected = quadrant_colours(index)[quadrant[:, 0], quadrant[:, 1]] / 255.0
        np.testing.assert_allclose(mean_px, expected, atol=1e-6)
        np.testing.assert_allclose(graph.ndata["feat"].numpy(), np.hstack([mean_px, coord / 32.0]), atol=1e-6)

    def fail(*args, **kwargs):
        raise AssertionError("superpixels rebuilt although usable files exist")

    monkeypatch.setattr(cifar10_module, "build_superpixels", fail)
    again = load_cifar10(LoadOptions(data_dir=data_dir, pe_k=3, num_val=2,
                                     progress=False))  # no image folder needed now
    assert again.sizes() == splits.sizes()


def test_limited_build_processes_only_the_images_needed(tmp_path, batches):
    folder, _, _ = batches
    data_dir = tmp_path / "partial"
    splits = load_cifar10(LoadOptions(data_dir=data_dir, cifar_images=folder, pe_k=2, num_val=2, limit_train=1,
                                      limit_test=1, progress=False, workers=1))
    assert splits.sizes() == {"train": 1, "val": 2, "test": 1}
    info = superpixel_layout(data_dir, CIFAR10_SPEC).read_build_info()
    assert info["train"]["built"] == 3 and info["test"]["built"] == 1
    with pytest.raises(DataError, match="smaller local build"):
        load_cifar10(LoadOptions(data_dir=data_dir, pe_k=2, num_val=2, progress=False))


def test_missing_batch_file_is_named(tmp_path, batches):
    folder, _, _ = batches
    (folder / "data_batch_3").unlink()
    with pytest.raises(DataError) as info:
        load_cifar10(LoadOptions(data_dir=tmp_path / "data", cifar_images=folder, progress=False, workers=1))
    assert one_line(info) == (f"{folder} lacks CIFAR-10 batch file(s) data_batch_3; "
                               "unpack cifar-10-python.tar.gz there")


@pytest.mark.parametrize("damage", ["truncated", "wrong_shape"])
def test_damaged_batch_file_is_refused(tmp_path, batches, damage):
    folder, _, _ = batches
    target = folder / "test_batch"
    if damage == "truncated":
        target.write_bytes(target.read_bytes()[:300])
    else:
        with open(target, "wb") as handle:
            pickle.dump({b"data": np.zeros((3, 1024), np.uint8), b"labels": [0, 1, 2]}, handle)
    with pytest.raises(DataError) as info:
        load_cifar10(LoadOptions(data_dir=tmp_path / "data", cifar_images=folder, progress=False, workers=1))
    message = one_line(info)
    assert str(target) in message and "replace it with the file from cifar-10-python.tar.gz" in message
