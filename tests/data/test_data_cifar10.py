"""CIFAR10 superpixels, offline: DGL's own processing of cifar10_150sp pickles, the split, the build from the
CIFAR-10 python batches, and one-line errors."""
import logging
import pickle

import numpy as np
import pytest
import torch
from skimage.segmentation import slic

from geaet_dgl.data import DataError, load_dataset
from geaet_dgl.data.superpixels import cifar10 as cifar10_module
from geaet_dgl.data import pe_cache
from geaet_dgl.data.superpixels.cifar10 import CIFAR10_NUM_VAL, load_cifar10
from geaet_dgl.data.superpixels.cifar10_images import load_cifar10_images, read_batch
from geaet_dgl.data.superpixels.dgl_files import (
    CIFAR10_SPEC,
    OfflineCIFAR10SuperPixelDataset,
    superpixel_layout,
    superpixels_present,
)
from geaet_dgl.data.superpixels.mnist import load_mnist
from geaet_dgl.data.registry import DATASETS
from geaet_dgl.data.superpixels.slic import (
    CIFAR10_RECIPE,
    _legacy_colour_slic,
    extract_superpixels,
    read_superpixel_pickle,
)
from geaet_dgl.data.generated.synthetic import knn_superpixel_graph
from tests.data.fixtures_cifar10 import quadrant_colours, quadrant_images, write_cifar_batches, write_published_pickles

NUM_VAL = 3


def _one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message
    return message


@pytest.fixture
def published(tmp_path):
    """A data_dir with DGL's raw CIFAR10 pickles (8 train, 4 test graphs) as if downloaded."""
    data_dir = tmp_path / "published"
    return data_dir, write_published_pickles(data_dir)


@pytest.fixture
def batches(tmp_path):
    """A fake cifar-10-batches-py (10 train images over five batches, 3 test images); -> (folder, labels)."""
    train_labels = (np.arange(10) * 3) % 10
    test_labels = np.array([7, 1, 4])
    folder = write_cifar_batches(tmp_path / "raw", quadrant_images(10), train_labels, quadrant_images(3, offset=1),
                                 test_labels)
    return folder, train_labels, test_labels


# --- DGL's loader on the published format -------------------------------------------------------------------

def test_published_pickles_go_through_dgl_and_the_benchmark_split(published):
    data_dir, written = published
    splits = load_cifar10(data_dir, pe_k=4, num_val=NUM_VAL, progress=False)
    assert splits.sizes() == {"train": 5, "val": NUM_VAL, "test": 4}
    assert splits.num_classes == 10 and splits.name == "cifar10" and "published cifar10_150sp" in splits.source
    labels, records = written["train"]
    # Benchmarking-GNNs split: val = first num_val graphs of the train pickle, train = the rest, in order
    assert splits.val.labels.tolist() == labels[:NUM_VAL].tolist()
    assert splits.train.labels.tolist() == labels[NUM_VAL:].tolist()
    assert splits.test.labels.tolist() == written["test"][0].tolist()
    assert splits.train.labels.dtype == torch.int64
    layout = superpixel_layout(data_dir, CIFAR10_SPEC)
    assert layout.processed("train").name == "CIFAR10_train.pkl" and layout.processed("train").is_file()

    for graph, (mean_px, coord, _) in zip(splits.val.graphs + splits.train.graphs, records):
        n = len(mean_px)
        feat = graph.ndata["feat"]
        assert feat.shape == (n, 5) and feat.dtype == torch.float32
        np.testing.assert_allclose(feat[:, :3].numpy(), mean_px, atol=1e-6)  # mean RGB first
        np.testing.assert_allclose(feat[:, 3:].numpy(), coord / 32.0, atol=1e-6)  # then (row, col) / 32
        assert graph.edata["feat"].shape == (graph.num_edges(), 1)
        assert torch.all(graph.out_degrees() == 8)  # 8-NN graph
        assert graph.ndata["lap_pe"].shape == (n, 4) and graph.ndata["lap_eigval"].shape == (n, 4)
        ours = knn_superpixel_graph(mean_px, coord / 32.0)  # DGL's kNN on positions only
        assert torch.equal(torch.stack(ours.edges()), torch.stack(graph.edges()))
        torch.testing.assert_close(ours.edata["feat"], graph.edata["feat"])


def test_limits_and_registry(published):
    data_dir, _ = published
    splits = load_dataset("cifar10", data_dir, pe_k=3, num_val=NUM_VAL, limit_train=2, limit_val=1, limit_test=2,
                          progress=False, mnist_images="ignored", generate=True, depth=3)
    assert splits.sizes() == {"train": 2, "val": 1, "test": 2}
    assert splits.node_feat_dim == 5 and splits.edge_feat_dim == 1
    info = DATASETS["cifar10"]
    assert (info.task, info.metric, info.size) == ("graph classification (10)", "accuracy", "45,000/5,000/10,000")
    assert info.present(data_dir) and not superpixels_present(data_dir)  # CIFAR10 files only, no MNIST ones
    # the Benchmarking-GNNs split by default: 5,000 validation graphs off the 50k training pickle
    assert CIFAR10_NUM_VAL == 5000 and load_cifar10.__kwdefaults__["num_val"] == 5000


def test_cifar_images_reaches_only_cifar10():
    splits = load_dataset("synthetic", None, limit_train=4, limit_val=2, limit_test=2, pe_k=2, progress=False,
                          cifar_images="/nowhere")
    assert splits.sizes() == {"train": 4, "val": 2, "test": 2}
    with pytest.raises(DataError, match="needs data_dir"):
        load_dataset("cifar10", None, cifar_images="/nowhere")


def test_mnist_and_cifar10_share_dgls_folder_without_clashing(published_dir, batches, monkeypatch):
    """Both DGL classes use one Superpixel_<hash>/ folder: files, PE caches and build notes must not collide."""
    folder, _, _ = batches
    mnist_layout, cifar_layout = superpixel_layout(published_dir), superpixel_layout(published_dir, CIFAR10_SPEC)
    assert cifar_layout.raw_path == mnist_layout.raw_path
    mnist = load_mnist(published_dir, pe_k=2, num_val=NUM_VAL, progress=False)  # published MNIST, PE cached
    cifar = load_cifar10(published_dir, cifar_images=folder, pe_k=2, num_val=2, progress=False, workers=1)  # built
    assert mnist.node_feat_dim == 3 and cifar.node_feat_dim == 5
    assert mnist_layout.read_build_info() is None  # MNIST still counts as published
    assert cifar_layout.read_build_info()["state"] == "complete"
    monkeypatch.setattr(pe_cache, "compute_split_pe", lambda *a, **k: pytest.fail("PE recomputed"))
    assert load_mnist(published_dir, pe_k=2, num_val=NUM_VAL, progress=False).sizes() == mnist.sizes()
    assert load_cifar10(published_dir, pe_k=2, num_val=2, progress=False).sizes() == cifar.sizes()


def test_loose_pickles_are_linked(tmp_path):
    loose = tmp_path / "benchmark_download"
    write_published_pickles(tmp_path / "elsewhere")
    source = superpixel_layout(tmp_path / "elsewhere", CIFAR10_SPEC)
    (loose / "superpixels").mkdir(parents=True)
    for split in ("train", "test"):
        source.raw_pickle(split).rename(loose / "superpixels" / f"cifar10_150sp_{split}.pkl")
    assert load_cifar10(loose, pe_k=2, num_val=NUM_VAL, progress=False).sizes()["test"] == 4


# --- the build from the CIFAR-10 python batches ---------------------------------------------------------------

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


def test_build_from_batches_then_reuse(tmp_path, batches, monkeypatch, caplog):
    folder, train_labels, test_labels = batches
    data_dir = tmp_path / "built"
    with caplog.at_level(logging.INFO, logger="geaet_dgl.data"):
        splits = load_cifar10(data_dir, cifar_images=folder, pe_k=3, num_val=2, progress=False, workers=1)
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
    again = load_cifar10(data_dir, pe_k=3, num_val=2, progress=False)  # no image folder needed now
    assert again.sizes() == splits.sizes()


def test_limited_build_processes_only_the_images_needed(tmp_path, batches):
    folder, _, _ = batches
    data_dir = tmp_path / "partial"
    splits = load_cifar10(data_dir, cifar_images=folder, pe_k=2, num_val=2, limit_train=1, limit_test=1,
                          progress=False, workers=1)
    assert splits.sizes() == {"train": 1, "val": 2, "test": 1}
    info = superpixel_layout(data_dir, CIFAR10_SPEC).read_build_info()
    assert info["train"]["built"] == 3 and info["test"]["built"] == 1
    with pytest.raises(DataError, match="smaller local build"):
        load_cifar10(data_dir, pe_k=2, num_val=2, progress=False)


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


# --- missing or damaged files: one line naming the fix --------------------------------------------------------

def test_no_route_is_one_clear_error(tmp_path):
    with pytest.raises(DataError) as info:
        load_cifar10(tmp_path / "empty", progress=False)
    message = _one_line(info)
    assert message.startswith("no CIFAR10 superpixel data route works (no complete set of superpixel files in "
                              "data_dir, no cifar_images folder)")
    assert "DGL's CIFAR10 superpixel files" in message and "cifar_images=" in message


def test_missing_batch_file_is_named(tmp_path, batches):
    folder, _, _ = batches
    (folder / "data_batch_3").unlink()
    with pytest.raises(DataError) as info:
        load_cifar10(tmp_path / "data", cifar_images=folder, progress=False, workers=1)
    assert _one_line(info) == (f"{folder} lacks CIFAR-10 batch file(s) data_batch_3; "
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
        load_cifar10(tmp_path / "data", cifar_images=folder, progress=False, workers=1)
    message = _one_line(info)
    assert str(target) in message and "replace it with the file from cifar-10-python.tar.gz" in message


def test_truncated_raw_pickle_is_one_line(published):
    data_dir, _ = published
    layout = superpixel_layout(data_dir, CIFAR10_SPEC)
    raw = layout.raw_pickle("train")
    raw.write_bytes(raw.read_bytes()[:200])
    with pytest.raises(DataError) as info:
        load_cifar10(data_dir, pe_k=2, num_val=NUM_VAL, progress=False)
    message = _one_line(info)
    assert message.startswith("DGL could not load the CIFAR10 superpixel train split")
    assert f"{raw} is damaged" in message and "CIFAR-10 images" in message
    assert not layout.processed("train").exists()


def test_dgl_class_never_downloads(tmp_path):
    with pytest.raises(DataError) as info:
        OfflineCIFAR10SuperPixelDataset(raw_dir=str(tmp_path / "nothing"), split="test")
    message = _one_line(info)
    assert "cifar10_150sp_test.pkl is missing" in message and "cifar_images=" in message
