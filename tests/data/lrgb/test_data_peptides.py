"""Peptides-Func / Peptides-Struct through DGL's real LRGB classes, on tiny files in the published format.

Graphs, features and labels are checked against RDKit and NumPy computed here,
independently of DGL and OGB.
"""
import gzip
import pickle

import numpy as np
import pytest
import torch
from rdkit import Chem

from geaet_dgl.data import DataError, LoadOptions, load_dataset
from geaet_dgl.data.lrgb.peptides import (ATOM_VOCAB_SIZES, BOND_VOCAB_SIZES, PEPTIDES_SIZES,
                                     peptides_files, peptides_present, published_md5)
from geaet_dgl.data.registry import DATASETS, dataset_table
from geaet_dgl.config.presets import get_preset
from geaet_dgl.training.losses import bce, l1
from geaet_dgl.training.metrics import METRICS, MetricAccumulator, average_precision
from geaet_dgl.data.registry import load_with
from tests.data.fixtures_peptides import SMILES, SPLIT, accept_as_published, write_peptides_fixture

NAMES = ("peptides-func", "peptides-struct")
BOND_TYPES = {Chem.BondType.SINGLE: 0, Chem.BondType.DOUBLE: 1, Chem.BondType.TRIPLE: 2, Chem.BondType.AROMATIC: 3}


def _load(name, data_dir, **kwargs):
    return load_with(name, LoadOptions(data_dir=data_dir, check_md5=False, progress=False, **kwargs))


def _one_line(exc_info) -> str:
    text = str(exc_info.value)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize("name", NAMES)
def test_graphs_match_rdkit_in_split_order(tmp_path, name):
    write_peptides_fixture(name, tmp_path)
    splits = _load(name, tmp_path)
    assert splits.sizes() == {split: len(rows) for split, rows in SPLIT.items()}
    for split, rows in SPLIT.items():
        for g, row in zip(getattr(splits, split).graphs, rows):
            mol = Chem.MolFromSmiles(SMILES[row])
            assert g.num_nodes() == mol.GetNumAtoms() and g.num_edges() == 2 * mol.GetNumBonds()
            feat, efeat = g.ndata["feat"], g.edata["feat"]
            assert feat.dtype == torch.int64 and feat.shape == (g.num_nodes(), 9)
            assert efeat.dtype == torch.int64 and efeat.shape == (g.num_edges(), 3)
            atoms = list(mol.GetAtoms())
            assert feat[:, 0].tolist() == [a.GetAtomicNum() - 1 for a in atoms]
            assert feat[:, 7].tolist() == [int(a.GetIsAromatic()) for a in atoms]
            assert feat[:, 8].tolist() == [int(a.IsInRing()) for a in atoms]
            # Every bond appears once in each direction, with its type.
            src, dst = (t.tolist() for t in g.edges())
            found = {(u, v): int(efeat[i, 0]) for i, (u, v) in enumerate(zip(src, dst))}
            expected = {}
            for bond in mol.GetBonds():
                u, v = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
                expected[(u, v)] = expected[(v, u)] = BOND_TYPES[bond.GetBondType()]
            assert found == expected
            assert efeat[:, 2].tolist() == [int(mol.GetBondBetweenAtoms(u, v).GetIsConjugated())
                                            for u, v in zip(src, dst)]
            assert g.ndata["lap_pe"].shape == (g.num_nodes(), 10) and g.ndata["lap_eigval"].shape == (g.num_nodes(), 10)


@pytest.mark.parametrize("name", NAMES)
def test_pe_is_the_unnormalised_laplacian_spectrum(tmp_path, name):
    write_peptides_fixture(name, tmp_path)
    g = _load(name, tmp_path).train.graphs[0]
    adj = Chem.GetAdjacencyMatrix(Chem.MolFromSmiles(SMILES[SPLIT["train"][0]])).astype(np.float64)
    spectrum = np.linalg.eigvalsh(np.diag(adj.sum(1)) - adj)  # L = D - A, the reference's laplacian_norm: none
    np.testing.assert_allclose(g.ndata["lap_eigval"][0].numpy(), spectrum[:10], atol=1e-4)
    np.testing.assert_allclose(torch.linalg.norm(g.ndata["lap_pe"], dim=0).numpy(), np.ones(10), atol=1e-4)


def test_func_labels_are_the_ten_classes_in_split_order(tmp_path):
    written = write_peptides_fixture("peptides-func", tmp_path)
    splits = _load("peptides-func", tmp_path)
    assert splits.num_classes == 10 and splits.name == "peptides-func"
    for split, rows in SPLIT.items():
        labels = getattr(splits, split).labels
        assert labels.dtype == torch.float32 and labels.shape == (len(rows), 10)
        assert torch.equal(labels, torch.from_numpy(written["targets"][rows]).float())


def test_struct_targets_are_standardised_over_the_whole_file(tmp_path):
    written = write_peptides_fixture("peptides-struct", tmp_path)
    raw = written["targets"]
    expected = (raw - raw.mean(0)) / raw.std(0, ddof=1)
    splits = _load("peptides-struct", tmp_path)
    assert splits.num_classes == 11
    for split, rows in SPLIT.items():
        labels = getattr(splits, split).labels
        assert labels.dtype == torch.float32 and labels.shape == (len(rows), 11)
        np.testing.assert_allclose(labels.numpy(), expected[rows], rtol=1e-5, atol=1e-6)


def test_limits_keep_the_first_graphs_of_each_split(tmp_path):
    write_peptides_fixture("peptides-func", tmp_path)
    full = _load("peptides-func", tmp_path)
    small = _load("peptides-func", tmp_path, limit_train=2, limit_val=1, limit_test=1)
    assert small.sizes() == {"train": 2, "val": 1, "test": 1}
    assert torch.equal(small.train.labels, full.train.labels[:2])
    assert [g.num_nodes() for g in small.train.graphs] == [g.num_nodes() for g in full.train.graphs[:2]]


def test_vocabularies_are_ogbs_and_the_presets(tmp_path):
    assert ATOM_VOCAB_SIZES == [119, 5, 12, 12, 10, 6, 6, 2, 2] and BOND_VOCAB_SIZES == [5, 6, 2]
    for name in NAMES:
        model = get_preset(name).model
        assert model.node_vocab_sizes == ATOM_VOCAB_SIZES and model.edge_vocab_sizes == BOND_VOCAB_SIZES


def test_presets_tasks():
    func, struct = get_preset("peptides-func"), get_preset("peptides-struct")
    assert (func.model.out_feats, func.train.loss, func.train.metric) == (10, "bce", "average_precision")
    assert (struct.model.out_feats, struct.train.loss, struct.train.metric) == (11, "l1", "mae")
    assert func.paper_params is None and "ours" in func.note and struct.paper_params == 463_211


@pytest.mark.parametrize("name", NAMES)
def test_missing_files_are_a_one_line_error(tmp_path, name):
    with pytest.raises(DataError) as err:
        load_with(name, LoadOptions(data_dir=tmp_path))
    text = _one_line(err)
    files = peptides_files(name, tmp_path)
    assert files.csv.name in text and files.split.name in text and str(files.folder) in text
    write_peptides_fixture(name, tmp_path)
    files.split.unlink()
    with pytest.raises(DataError) as err:
        load_with(name, LoadOptions(data_dir=tmp_path))
    assert str(files.split) in _one_line(err) and str(files.csv) + "," not in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_checksum_mismatch_is_a_one_line_error(tmp_path, name):
    written = write_peptides_fixture(name, tmp_path)
    with pytest.raises(DataError) as err:
        load_with(name, LoadOptions(data_dir=tmp_path, progress=False))
    text = _one_line(err)
    assert "MD5" in text and published_md5(name)[0] in text and written["files"].csv_url in text


def test_published_files_pass_the_checksum(tmp_path, monkeypatch):
    write_peptides_fixture("peptides-func", tmp_path)
    accept_as_published(monkeypatch, "peptides-func", tmp_path)
    assert load_with("peptides-func", LoadOptions(data_dir=tmp_path, progress=False)).sizes()["train"] == 6
    with open(peptides_files("peptides-func", tmp_path).split, "ab") as handle:
        handle.write(b"\0")  # one stray byte: no longer the published file
    with pytest.raises(DataError, match="MD5"):
        load_with("peptides-func", LoadOptions(data_dir=tmp_path, progress=False))


@pytest.mark.parametrize("content, match", [
    (b"not gzip at all", "not a readable gzip CSV"),
    (gzip.compress(b"smiles,label\nNCC(=O)O,[0]\n"), "lacks the column"),
    (gzip.compress(b'smiles,labels\nNCC(=O)O,"[0, 1]"\n'), "row 0"),
    (gzip.compress(b'smiles,labels\nNCC(=O)O,"__import__(\'os\')"\n'), "row 0"),
    (gzip.compress(b'smiles,labels\nnot-a-smiles,"[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]"\n'), "DGL could not turn"),
])
def test_corrupt_func_csv_is_a_one_line_error(tmp_path, content, match):
    files = write_peptides_fixture("peptides-func", tmp_path)["files"]
    files.csv.write_bytes(content)
    with pytest.raises(DataError, match=match) as err:
        _load("peptides-func", tmp_path)
    assert "dropbox" in _one_line(err)


def test_corrupt_struct_csv_is_a_one_line_error(tmp_path):
    files = write_peptides_fixture("peptides-struct", tmp_path)["files"]
    with gzip.open(files.csv, "rt") as handle:
        lines = handle.read().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0] + ",oops"
    with gzip.open(files.csv, "wt") as handle:
        handle.write("\n".join(lines) + "\n")
    with pytest.raises(DataError, match="row 2: target Plane_best_fit") as err:
        _load("peptides-struct", tmp_path)
    _one_line(err)


@pytest.mark.parametrize("split, match", [
    (b"garbage", "could not read the split file"),
    ({"train": np.array([0, 1]), "val": np.array([2])}, "keys train, val, test"),
    ({"train": np.array([0, 1]), "val": np.array([2]), "test": np.array([10])}, "outside 0..9"),
    ({"train": np.array([0, 1]), "val": np.array([1]), "test": np.array([3])}, "appears twice"),
    ({"train": np.array([0.0, 1.0]), "val": np.array([2]), "test": np.array([3])}, "not integers"),
])
def test_bad_split_file_is_a_one_line_error(tmp_path, split, match):
    files = write_peptides_fixture("peptides-func", tmp_path)["files"]
    files.split.write_bytes(split if isinstance(split, bytes) else pickle.dumps(split))
    with pytest.raises(DataError, match=match) as err:
        _load("peptides-func", tmp_path)
    assert "dropbox" in _one_line(err)


def test_a_replaced_csv_is_processed_again(tmp_path):
    processed = write_peptides_fixture("peptides-struct", tmp_path, seed=0)["files"].processed
    first = _load("peptides-struct", tmp_path).train.labels
    built = processed.stat().st_mtime_ns
    assert torch.equal(_load("peptides-struct", tmp_path).train.labels, first)
    assert processed.stat().st_mtime_ns == built  # read from DGL's cache, not processed again
    write_peptides_fixture("peptides-struct", tmp_path, seed=1)
    second = _load("peptides-struct", tmp_path).train.labels
    assert not torch.allclose(first, second)


def test_registry_loads_and_lists_both(tmp_path, monkeypatch):
    rows = {row["name"]: row for row in dataset_table(tmp_path)}
    assert rows["peptides-func"]["present"] is False and rows["peptides-struct"]["present"] is False
    for name in NAMES:
        write_peptides_fixture(name, tmp_path)
        accept_as_published(monkeypatch, name, tmp_path)
        assert peptides_present(name, tmp_path)
        splits = load_dataset(name, tmp_path, pe_k=4, limit_train=3, progress=False, generate=False, depth=3,
                              mnist_images=None)
        assert splits.sizes()["train"] == 3 and splits.pe_dim == 4
    rows = {row["name"]: row for row in dataset_table(tmp_path)}
    assert rows["peptides-func"]["present"] is True and rows["peptides-struct"]["present"] is True
    assert DATASETS["peptides-func"].metric == "average_precision" and DATASETS["peptides-struct"].metric == "mae"
    for name in NAMES:
        assert "10,873/2,331/2,331" in DATASETS[name].size and "15,535" in DATASETS[name].size
    assert sum(PEPTIDES_SIZES.values()) == 15535
    with pytest.raises(DataError, match="needs data_dir"):
        load_dataset("peptides-func")


def test_losses_and_metrics_on_multi_target_outputs():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(12, 10, generator=gen)
    target = (torch.rand(12, 10, generator=gen) < 0.4).float()
    target[0] = 1 - target[1]  # every column has both classes
    loss = bce(logits, target)
    assert loss.shape == ()
    assert torch.isclose(loss, torch.nn.functional.binary_cross_entropy_with_logits(logits, target))
    sklearn = pytest.importorskip("sklearn.metrics")
    expected = np.mean([sklearn.average_precision_score(target[:, c], logits[:, c]) for c in range(10)])
    assert average_precision(logits, target) == pytest.approx(expected)
    assert METRICS["average_precision"].reads == "scores" and METRICS["average_precision"].higher_is_better
    # The accumulator keeps (B, 10) scores per batch and scores the whole split at once.
    acc = MetricAccumulator("average_precision")
    for rows in (slice(0, 5), slice(5, 12)):
        acc.update(logits[rows], target[rows], bce(logits[rows], target[rows]).item(), rows.stop - rows.start)
    assert acc.compute()["metric"] == pytest.approx(expected)
    out, y = torch.randn(7, 11, generator=gen), torch.randn(7, 11, generator=gen)
    assert l1(out, y).shape == () and torch.isclose(l1(out, y), (out - y).abs().mean())
    assert METRICS["mae"].fn(out, y) == pytest.approx((out - y).abs().mean().item())
