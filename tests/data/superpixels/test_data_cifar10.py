"""CIFAR10 superpixels, offline (superpixels/cifar10.py, dgl_files.py, registry): DGL's own processing of the
cifar10_150sp pickles, the split, the routes to the data, and one-line errors. The build from the CIFAR-10
python batches is in test_data_cifar10_images.py, its colour SLIC in test_data_superpixels.py."""
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.encodings import pe_cache
from geaet_dgl.data.superpixels import cifar10 as cifar10_module
from geaet_dgl.data.superpixels.cifar10 import CIFAR10_NUM_VAL
from geaet_dgl.data.superpixels.dgl_files import (
    CIFAR10_SPEC,
    OfflineCIFAR10SuperPixelDataset,
    superpixel_layout,
    superpixels_present,
)
from geaet_dgl.data.registry import DATASETS
from geaet_dgl.data.generated.synthetic import knn_superpixel_graph
from tests.data.fixtures_cifar10 import one_line, write_published_pickles
from geaet_dgl.data.registry import load_with


def load_mnist(options):
    """``load_mnist`` and the one encoding path after it, as ``load_dataset`` runs them."""
    return load_with("mnist", options)


def load_cifar10(options):
    """``load_cifar10`` and the one encoding path after it, as ``load_dataset`` runs them."""
    return load_with("cifar10", options)

NUM_VAL = 3


@pytest.fixture
def published(tmp_path):
    """A data_dir with DGL's raw CIFAR10 pickles (8 train, 4 test graphs) as if downloaded."""
    data_dir = tmp_path / "published"
    return data_dir, write_published_pickles(data_dir)


# --- DGL's loader on the published format -------------------------------------------------------------------

def test_published_pickles_go_through_dgl_and_the_benchmark_split(published):
    data_dir, written = published
    splits = load_cifar10(LoadOptions(data_dir=data_dir, pe_k=4, num_val=NUM_VAL, progress=False))
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


def test_limits_and_registry(published, monkeypatch):
    data_dir, _ = published
    splits = load_dataset("cifar10", data_dir, pe_k=3, num_val=NUM_VAL, limit_train=2, limit_val=1, limit_test=2,
                          progress=False, mnist_images="ignored", generate=True, depth=3)
    assert splits.sizes() == {"train": 2, "val": 1, "test": 2}
    assert splits.node_feat_dim == 5 and splits.edge_feat_dim == 1
    info = DATASETS["cifar10"]
    assert (info.task, info.metric, info.size) == ("graph classification (10)", "accuracy", "45,000/5,000/10,000")
    assert info.present(data_dir) and not superpixels_present(data_dir)  # CIFAR10 files only, no MNIST ones
    # the Benchmarking-GNNs split by default: 5,000 validation graphs off the 50k training pickle
    seen = []
    monkeypatch.setattr(cifar10_module, "load_superpixel_splits", lambda *args: seen.append(args[-1]))
    load_cifar10(LoadOptions(data_dir=data_dir))
    assert CIFAR10_NUM_VAL == 5000 and seen[0].num_val == 5000


def test_cifar_images_reaches_only_cifar10():
    splits = load_dataset("synthetic", None, limit_train=4, limit_val=2, limit_test=2, pe_k=2, progress=False,
                          cifar_images="/nowhere")
    assert splits.sizes() == {"train": 4, "val": 2, "test": 2}
    with pytest.raises(DataError, match="needs data_dir"):
        load_dataset("cifar10", None, cifar_images="/nowhere")


@pytest.mark.slow
def test_mnist_and_cifar10_share_dgls_folder_without_clashing(published_dir, batches, monkeypatch):
    """Both DGL classes use one Superpixel_<hash>/ folder: files, PE caches and build notes must not collide."""
    folder, _, _ = batches
    mnist_layout, cifar_layout = superpixel_layout(published_dir), superpixel_layout(published_dir, CIFAR10_SPEC)
    assert cifar_layout.raw_path == mnist_layout.raw_path
    mnist = load_mnist(LoadOptions(data_dir=published_dir, pe_k=2, num_val=NUM_VAL,
                                   progress=False))  # published MNIST, PE cached
    cifar = load_cifar10(LoadOptions(data_dir=published_dir, cifar_images=folder, pe_k=2, num_val=2, progress=False,
                                     workers=1))  # built
    assert mnist.node_feat_dim == 3 and cifar.node_feat_dim == 5
    assert mnist_layout.read_build_info() is None  # MNIST still counts as published
    assert cifar_layout.read_build_info()["state"] == "complete"
    monkeypatch.setattr(pe_cache, "compute_split_pe", lambda *a, **k: pytest.fail("PE recomputed"))
    assert load_mnist(LoadOptions(data_dir=published_dir, pe_k=2, num_val=NUM_VAL,
                                  progress=False)).sizes() == mnist.sizes()
    assert load_cifar10(LoadOptions(data_dir=published_dir, pe_k=2, num_val=2, progress=False)).sizes() == cifar.sizes()


def test_loose_pickles_are_linked(tmp_path):
    loose = tmp_path / "benchmark_download"
    write_published_pickles(tmp_path / "elsewhere")
    source = superpixel_layout(tmp_path / "elsewhere", CIFAR10_SPEC)
    (loose / "superpixels").mkdir(parents=True)
    for split in ("train", "test"):
        source.raw_pickle(split).rename(loose / "superpixels" / f"cifar10_150sp_{split}.pkl")
    assert load_cifar10(LoadOptions(data_dir=loose, pe_k=2, num_val=NUM_VAL, progress=False)).sizes()["test"] == 4


# --- missing or damaged files: one line naming the fix --------------------------------------------------------

def test_no_route_is_one_clear_error(tmp_path):
    with pytest.raises(DataError) as info:
        load_cifar10(LoadOptions(data_dir=tmp_path / "empty", progress=False))
    message = one_line(info)
    assert message.startswith("no CIFAR10 superpixel data route works (no complete set of superpixel files in "
                              "data_dir, no cifar_images folder)")
    assert "DGL's CIFAR10 superpixel files" in message and "cifar_images=" in message


def test_truncated_raw_pickle_is_one_line(published):
    data_dir, _ = published
    layout = superpixel_layout(data_dir, CIFAR10_SPEC)
    raw = layout.raw_pickle("train")
    raw.write_bytes(raw.read_bytes()[:200])
    with pytest.raises(DataError) as info:
        load_cifar10(LoadOptions(data_dir=data_dir, pe_k=2, num_val=NUM_VAL, progress=False))
    message = one_line(info)
    assert message.startswith("DGL could not load the CIFAR10 superpixel train split")
    assert f"{raw} is damaged" in message and "CIFAR-10 images" in message
    assert not layout.processed("train").exists()


def test_dgl_class_never_downloads(tmp_path):
    with pytest.raises(DataError) as info:
        OfflineCIFAR10SuperPixelDataset(raw_dir=str(tmp_path / "nothing"), split="test")
    message = one_line(info)
    assert "cifar10_150sp_test.pkl is missing" in message and "cifar_images=" in message
