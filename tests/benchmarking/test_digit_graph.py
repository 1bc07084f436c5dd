"""The digit-graph benchmark (benchmarks/digits_vs_gcn.py) on tiny IDX files: the file it writes, a run that learns."""
import dgl
import numpy as np
import pytest
import torch

from geaet_lab.benchmarking.digit_graph import compare_on_digit_graph, read_digits, write_digit_graph
from geaet_dgl.data.superpixels.idx import write_idx


def _digit_files(folder, train_images=40, test_images=20, classes=3):
    """IDX files of 28x28 images whose class is a bright 8x8 block at one of ``classes`` places, plus noise."""
    rng = np.random.default_rng(0)
    for stem, n in (("train", train_images), ("t10k", test_images)):
        labels = rng.integers(0, classes, n).astype(np.uint8)
        images = rng.integers(0, 40, (n, 28, 28)).astype(np.uint8)
        for image, label in zip(images, labels):
            image[4 + 6 * label: 12 + 6 * label, 4 + 6 * label: 12 + 6 * label] = 255
        write_idx(folder / f"{stem}-images-idx3-ubyte", images)
        write_idx(folder / f"{stem}-labels-idx1-ubyte", labels)


def test_the_graph_file_holds_training_then_test_images_with_the_split(tmp_path):
    _digit_files(tmp_path)
    pixels, digits = read_digits(tmp_path, 50)  # all 40 training images, then 10 test images
    from geaet_dgl.data.superpixels.idx import read_idx
    test_pixels = read_idx(tmp_path / "t10k-images-idx3-ubyte")[:10].reshape(10, -1) / 255.0
    assert torch.allclose(pixels[40:].double(), torch.from_numpy(test_pixels))
    assert torch.equal(digits[:40], torch.from_numpy(read_idx(tmp_path / "train-labels-idx1-ubyte")).long())

    graph = write_digit_graph(tmp_path / "digits.bin", tmp_path, images=50, k=4, train=6, val=10, seed=0)
    read = dgl.load_graphs(str(tmp_path / "digits.bin"))[0][0]
    assert read.num_nodes() == 50 and torch.equal(read.ndata["feat"], pixels)
    assert [int(read.ndata[f"{s}_mask"].sum()) for s in ("train", "val", "test")] == [6, 10, 34]
    assert int((read.ndata["train_mask"] & read.ndata["val_mask"]).sum()) == 0
    assert read.in_degrees().min() >= 4 and torch.equal(read.edges()[0].sort().values, graph.edges()[0].sort().values)


@pytest.mark.slow
def test_cluster_run_and_gcn_learn_on_the_digit_file(tmp_path):
    torch.set_num_threads(1)
    _digit_files(tmp_path, train_images=90, test_images=30)
    write_digit_graph(tmp_path / "digits.bin", tmp_path, images=120, k=5, train=24, val=24, seed=0)
    table = compare_on_digit_graph(tmp_path / "digits.bin", tmp_path / "out", samplers=("cluster",), seeds=(0,),
                                   overrides={"train.epochs": 15, "data.num_parts": 3, "train.batch_size": 2})
    assert set(table) == {"geaet (--sampler cluster)", "gcn", "mlp"}
    for name, row in table.items():  # three classes: chance is about 0.33
        assert row["test"]["mean"] > 0.7, (name, row["test"])
    assert (tmp_path / "out" / "cluster" / "digits" / "seed0" / "summary.json").exists()
