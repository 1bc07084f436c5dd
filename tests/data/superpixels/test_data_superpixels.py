"""The SLIC superpixel builder (the mnist_75sp recipe, and CIFAR10's colour one) and its pickle format."""

import numpy as np
import pytest
from skimage.segmentation import slic

from geaet_dgl.data import DataError
from geaet_dgl.data.superpixels.slic import (
    CIFAR10_RECIPE,
    MNIST_N_SP,
    _legacy_colour_slic,
    build_superpixels,
    extract_superpixels,
    legacy_size_factors,
    read_superpixel_pickle,
    write_superpixel_pickle,
)


def test_bright_square_superpixels(square):
    intensity, coord, order = extract_superpixels(square, rng=np.random.default_rng(0))
    n = len(order)
    assert 1 <= n <= MNIST_N_SP
    assert intensity.shape == (n, 1) and intensity.dtype == np.float32
    assert coord.shape == (n, 2) and coord.dtype == np.float32
    assert order.shape == (n,) and order.dtype == np.int32
    assert len(np.unique(order)) == n
    assert intensity.min() >= 0.0 and intensity.max() <= 1.0
    assert coord.min() >= 0.0 and coord.max() <= 27.0
    # segments that are fully bright lie inside the square; fully dark ones have intensity 0
    bright = intensity[:, 0] > 0.999
    assert bright.any() and (intensity[:, 0] < 1e-6).any()
    assert np.all((coord[bright] >= 9) & (coord[bright] <= 18))


def test_features_match_the_recipe_loop(digit_images):
    """Mean intensity and centre of mass (row, col) per SLIC segment, as the recipe's per-mask loop."""
    image = digit_images(1, seed=5)[0]
    intensity, coord, order = extract_superpixels(image, rng=np.random.default_rng(3), legacy_slic=False)
    img = (image / 255.0).astype(np.float32)
    query = 95
    while True:
        segments = slic(img, n_segments=query, compactness=0.25, channel_axis=None, start_label=0)
        query -= 1
        if len(np.unique(segments)) <= 75:
            break
    assert sorted(order.tolist()) == np.unique(segments).tolist()
    for j, seg in enumerate(order):
        mask = segments == seg
        assert intensity[j, 0] == pytest.approx(float(np.mean(img[mask])), abs=1e-6)
        rows, cols = np.nonzero(mask)
        np.testing.assert_allclose(coord[j], [rows.mean(), cols.mean()], atol=1e-5)


def test_legacy_size_factors_restore_old_integer_thresholds():
    """Old skimage: min_size = int(0.5 * 784 / n_segments), max_size = int(3 * 784 / n_segments)."""
    from skimage.util import regular_grid

    for n_segments in range(10, 100):
        lo, hi = legacy_size_factors((28, 28), n_segments)
        slices = regular_grid((1, 28, 28), n_segments)
        n_seeds = np.prod([len(range(*s.indices(d))) for s, d in zip(slices, (1, 28, 28))])
        new_segment = 784 / n_seeds
        assert int(lo * new_segment) == int(0.5 * 784 / n_segments)
        assert int(hi * new_segment) == int(3 * 784 / n_segments)


def test_constant_image_gives_at_least_one_segment():
    intensity, coord, order = extract_superpixels(np.zeros((28, 28), np.uint8), rng=np.random.default_rng(0))
    assert 1 <= len(order) <= MNIST_N_SP and np.all(intensity == 0)


def test_rejects_non_uint8_images():
    with pytest.raises(DataError, match="uint8"):
        extract_superpixels(np.zeros((28, 28), np.float32))


def test_build_is_reproducible_and_independent_of_workers(digit_images):
    images = digit_images(6, seed=9)
    one = build_superpixels(images, seed=4, workers=1, progress=False, chunk_size=2)
    two = build_superpixels(images, seed=4, workers=2, progress=False, chunk_size=2)
    assert len(one) == len(two) == 6
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    other = build_superpixels(images[:1], seed=5, workers=1, progress=False)
    assert not np.array_equal(other[0][2], one[0][2])  # the seed drives the node permutation


def test_pickle_layout_is_what_dgl_reads(tmp_path, superpixel_records):
    labels, records = superpixel_records["train"]
    path = tmp_path / "mnist_75sp_train.pkl"
    write_superpixel_pickle(path, labels, records)
    import pickle

    with open(path, "rb") as handle:
        stored_labels, sp_data = pickle.load(handle)
    assert stored_labels.dtype == np.int32 and stored_labels.shape == (len(records),)
    for sample in sp_data:
        mean_px, coord = sample[:2]  # exactly how dgl.data.superpixel reads it
        assert mean_px.shape == (len(sample[2]), 1) and coord.shape == (len(sample[2]), 2)
    back_labels, back = read_superpixel_pickle(path)
    np.testing.assert_array_equal(back_labels, labels)
    with pytest.raises(DataError, match="one label per image"):
        write_superpixel_pickle(path, labels[:-1], records)


def test_colour_features_match_the_recipe_loop():
    """Today's SLIC on the RGB image, n_segments lowered from 200 until <= 150; per-channel means, centres."""
    rng = np.random.default_rng(4)
    image = np.kron(rng.integers(0, 256, size=(8, 8, 3)), np.ones((4, 4, 1))).astype(np.uint8)
    mean_px, coord, order = extract_superpixels(image, rng=np.random.default_rng(1), legacy_slic=False,
                                                **CIFAR10_RECIPE.kwargs())
    img = (image / 255.0).astype(np.float32)
    query = 200
    while True:
        segments = slic(img, n_segments=query, compactness=10, channel_axis=-1, start_label=0)
        query -= 1
        if len(np.unique(segments)) <= 150:
            break
    assert sorted(order.tolist()) == np.unique(segments).tolist()
    for j, seg in enumerate(order):
        mask = segments == seg
        np.testing.assert_allclose(mean_px[j], img[mask].mean(axis=0), atol=1e-6)
        rows, cols = np.nonzero(mask)
        np.testing.assert_allclose(coord[j], [rows.mean(), cols.mean()], atol=1e-5)


def test_legacy_colour_slic_only_drops_the_min_max_rescaling():
    """On an image already spanning [0, 1] today's rescaling is a no-op: both runs must agree exactly."""
    rng = np.random.default_rng(2)
    img = rng.random((32, 32, 3))
    img[0, 0], img[0, 1] = 0.0, 1.0
    today = slic(img, n_segments=150, compactness=10, channel_axis=-1, start_label=0)
    np.testing.assert_array_equal(_legacy_colour_slic(img, 150, 10, start_label=0), today)
    dim = img * 0.5  # a dim image: today's slic would stretch it, the 2019 one did not
    assert not np.array_equal(_legacy_colour_slic(dim, 150, 10, start_label=0),
                              slic(dim, n_segments=150, compactness=10, channel_axis=-1, start_label=0))
