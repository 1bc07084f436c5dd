"""PCQM-Contact from fixture files in LRGB's raw format: graphs, features, contacts, split, batching, errors."""
import gzip
import os

import numpy as np
import pytest
import torch
from rdkit import Chem

from geaet_dgl.data import DataError, GraphDataset, LoadOptions, collate_for, collate_links, load_dataset
from geaet_dgl.data.lrgb import pcqm_contact
from geaet_dgl.data.lrgb.pcqm_contact import pcqm_contact_files, shuffle_split
from geaet_dgl.data.registry import dataset_table
from geaet_dgl.data.validation import validate_dataset
from geaet_dgl.data.registry import load_with
from tests.data.fixtures_pcqm_contact import MOLECULES, SPLIT, contact_cxsmiles, write_pcqm_contact_fixture, write_tsv

CHIRALITY = ["CHI_UNSPECIFIED", "CHI_TETRAHEDRAL_CW", "CHI_TETRAHEDRAL_CCW", "CHI_OTHER"]
BOND_TYPES = {Chem.BondType.SINGLE: 0, Chem.BondType.DOUBLE: 1, Chem.BondType.TRIPLE: 2, Chem.BondType.AROMATIC: 3}


def _load(data_dir, **kwargs):
    return load_with("pcqm-contact", LoadOptions(data_dir=data_dir, pe_k=3, progress=False, **kwargs))


def _kept():
    """The fixture molecules LRGB keeps (those with a contact), in file order."""
    return [(smiles, contacts) for smiles, contacts in MOLECULES if contacts]


def _expected_atom_features(atom) -> list:
    """OGB's 9 atom feature indices, from RDKit directly (the columns whose lists are plain to write down)."""
    return [atom.GetAtomicNum() - 1, CHIRALITY.index(str(atom.GetChiralTag())), atom.GetTotalDegree(),
            atom.GetFormalCharge() + 5, atom.GetTotalNumHs(), atom.GetNumRadicalElectrons(),
            None, int(atom.GetIsAromatic()), int(atom.IsInRing())]


def test_graphs_features_and_contacts_match_rdkit(tmp_path, no_network):
    rows = write_pcqm_contact_fixture(tmp_path)
    splits = _load(tmp_path)
    assert splits.sizes() == {"train": 4, "val": 1, "test": 1} and splits.num_classes == 1
    assert splits.train.level == "link"
    kept_rows = [row for row, (_, contacts) in zip(rows, MOLECULES) if contacts]
    for split in ("train", "val", "test"):
        for (g, pairs), index in zip(getattr(splits, split), SPLIT[split]):
            smiles, contacts = _kept()[index]
            mol = Chem.MolFromSmiles(kept_rows[index], sanitize=False)
            mol.UpdatePropertyCache(strict=False)
            # Explicit hydrogens are kept: as many nodes as atoms of the molecule with Hs.
            assert g.num_nodes() == mol.GetNumAtoms() == Chem.AddHs(Chem.MolFromSmiles(smiles)).GetNumAtoms()
            feat = g.ndata["feat"]
            assert feat.dtype == torch.int64 and feat.shape == (g.num_nodes(), 9)
            for atom in mol.GetAtoms():
                expected = _expected_atom_features(atom)
                got = feat[atom.GetIdx()].tolist()
                assert [e for e in expected if e is not None] == [v for v, e in zip(got, expected) if e is not None]
            assert g.num_edges() == 2 * mol.GetNumBonds() and g.edata["feat"].shape == (g.num_edges(), 3)
            src, dst = g.edges()
            for k, bond in enumerate(mol.GetBonds()):  # each bond as two directed edges, in bond order
                ends = (bond.GetBeginAtomIdx(), bond.GetEndAtomIdx())
                assert (int(src[2 * k]), int(dst[2 * k])) == ends and (int(src[2 * k + 1]), int(dst[2 * k + 1])) \
                    == ends[::-1]
                for e in (2 * k, 2 * k + 1):
                    assert g.edata["feat"][e].tolist() == [BOND_TYPES[bond.GetBondType()], 0,
                                                           int(bond.GetIsConjugated())]
            # Contacts: both directions, sorted, mapped back to the atoms the fixture put them on.
            orig = [atom.GetIntProp("orig") for atom in mol.GetAtoms()]
            found = {(orig[i], orig[j]) for i, j in pairs.tolist()}
            assert found == {p for a, b in contacts for p in ((a, b), (b, a))}
            assert pairs.tolist() == sorted(pairs.tolist()) and len(pairs) == 2 * len(contacts)
            assert g.ndata["lap_pe"].shape == (g.num_nodes(), 3)


def test_limits_keep_the_split_order(tmp_path, no_network):
    write_pcqm_contact_fixture(tmp_path)
    full = _load(tmp_path)
    limited = load_dataset("pcqm-contact", tmp_path, pe_k=3, progress=False, limit_train=2, limit_test=1)
    assert limited.sizes() == {"train": 2, "val": 1, "test": 1}
    for (g, pairs), (h, full_pairs) in zip(limited.train, full.train):
        assert g.num_nodes() == h.num_nodes() and torch.equal(pairs, full_pairs)


def test_reading_in_chunks_keeps_every_sixth_row(tmp_path, no_network, monkeypatch):
    rows = write_pcqm_contact_fixture(tmp_path)
    monkeypatch.setattr(pcqm_contact, "CHUNK_ROWS", 12)  # the fixture's 37 rows in 4 chunks
    assert pcqm_contact._read_cxsmiles(pcqm_contact_files(tmp_path)["raw"]) == rows


def test_parsed_graphs_are_cached_and_refreshed_when_the_file_changes(tmp_path, no_network, monkeypatch):
    write_pcqm_contact_fixture(tmp_path)
    first = _load(tmp_path)
    assert pcqm_contact_files(tmp_path)["processed"].is_file()

    def refuse(smiles):
        raise AssertionError("parsed again although the cache matches")

    monkeypatch.setattr(pcqm_contact, "molecule_graph", refuse)
    again = _load(tmp_path)
    assert [torch.equal(a[1], b[1]) for a, b in zip(first.train, again.train)] == [True] * 4
    raw = pcqm_contact_files(tmp_path)["raw"]
    os.utime(raw, ns=(raw.stat().st_atime_ns, raw.stat().st_mtime_ns + 10**9))
    with pytest.raises(DataError, match="parsed again"):
        _load(tmp_path)


def test_generate_writes_graphgps_split(tmp_path, no_network):
    write_pcqm_contact_fixture(tmp_path, split=False)
    with pytest.raises(DataError, match="data.generate=true") as info:
        _load(tmp_path)
    assert "\n" not in str(info.value)
    splits = _load(tmp_path, generate=True)
    written = torch.load(pcqm_contact_files(tmp_path)["split"], weights_only=False)
    order = np.random.default_rng(42).permutation(6)  # GraphGPS: 90/5/5 of a seeded permutation
    assert np.array_equal(np.concatenate([written["train"], written["val"], written["test"]]), order)
    assert splits.sizes() == {"train": 5, "val": 0, "test": 1}
    sizes = {name: len(index) for name, index in shuffle_split(529_434).items()}
    assert sizes == {"train": 476_490, "val": 26_472, "test": 26_472}  # LRGB's split sizes


@pytest.mark.parametrize("damage, message", [
    ("missing", "pcqm4m-contact.tsv.gz there"),
    ("not_gzip", "download pcqm4m-contact.tsv.gz again"),
    ("no_column", "'cxsmiles' column"),
    ("bad_smiles", "line 2 is not a valid contact CXSMILES"),
    ("one_atom_contact", "held by 1 atoms"),
    ("split_out_of_range", "does not belong"),
    ("split_unreadable", "cannot read the split file"),
])
def test_damaged_files_are_one_line_errors(tmp_path, no_network, damage, message):
    files = pcqm_contact_files(tmp_path)
    write_pcqm_contact_fixture(tmp_path)
    if damage == "missing":
        files["raw"].unlink()
    elif damage == "not_gzip":
        files["raw"].write_bytes(b"cxsmiles\nCCO\n" * 3)
    elif damage == "no_column":
        with gzip.open(files["raw"], "wt") as handle:
            handle.write("smiles\nCCO\n")
    elif damage == "bad_smiles":
        write_tsv(files["raw"], ["C1CC(", "C"])
    elif damage == "one_atom_contact":
        mol = Chem.AddHs(Chem.MolFromSmiles("CCO"))
        mol.GetAtomWithIdx(0).SetProp("contact", "0")
        write_tsv(files["raw"], [Chem.MolToCXSmiles(mol)])
    elif damage == "split_out_of_range":
        torch.save({"train": np.array([0, 6]), "val": np.array([1]), "test": np.array([2])}, files["split"])
    elif damage == "split_unreadable":
        files["split"].write_bytes(b"\x00 not a pickle")
    with pytest.raises(DataError, match=message) as info:
        _load(tmp_path)
    assert "\n" not in str(info.value)


def test_registry_lists_it(tmp_path, no_network):
    rows = {row["name"]: row for row in dataset_table(tmp_path)}
    assert rows["pcqm-contact"]["present"] is False and rows["pcqm-contact"]["metric"] == "mrr"
    assert "476,490/26,472/26,472" in rows["pcqm-contact"]["size"] and "529,434" in rows["pcqm-contact"]["size"]
    write_pcqm_contact_fixture(tmp_path)
    assert {row["name"]: row for row in dataset_table(tmp_path)}["pcqm-contact"]["present"] is True


def test_batching_offsets_pairs_and_names_graph_ranges(tmp_path, no_network):
    write_pcqm_contact_fixture(tmp_path)
    train = _load(tmp_path).train
    assert collate_for(train) is collate_links
    samples = [train[i] for i in range(len(train))]
    batch, target = collate_links(samples)
    assert target.dtype == torch.int64 and target.shape == (sum(len(p) for _, p in samples), 4)
    row, first = 0, 0
    for g, pairs in samples:
        rows = target[row:row + len(pairs)]
        assert torch.equal(rows[:, :2], pairs + first)
        assert (rows[:, 2] == first).all() and (rows[:, 3] == g.num_nodes()).all()
        # The shifted ids are the same atoms in the batched graph.
        assert torch.equal(batch.ndata["feat"][rows[:, 0]], g.ndata["feat"][pairs[:, 0]])
        row, first = row + len(pairs), first + g.num_nodes()
    assert batch.num_nodes() == first


def test_link_dataset_subset_and_checks():
    import dgl

    graphs = [dgl.graph(([0], [1]), num_nodes=n) for n in (2, 3, 4)]
    pairs = torch.tensor([[0, 1], [1, 0], [0, 2], [3, 1], [1, 3]])
    dataset = GraphDataset(graphs, pairs, level="link", counts=torch.tensor([2, 1, 2]))
    assert torch.equal(dataset[1][1], torch.tensor([[0, 2]])) and torch.equal(dataset[2][1], pairs[3:])
    head = dataset.subset(2)
    assert len(head) == 2 and torch.equal(head.labels, pairs[:3]) and torch.equal(head[1][1], pairs[2:3])
    with pytest.raises(DataError, match="counts"):
        GraphDataset(graphs, pairs, level="link")
    with pytest.raises(DataError, match="one count per graph"):
        GraphDataset(graphs, pairs, level="link", counts=torch.tensor([2, 2, 2]))
    for g in graphs:
        g.ndata["feat"] = torch.zeros(g.num_nodes(), 1)
    bad = GraphDataset(graphs, torch.tensor([[0, 1], [0, 3]]), level="link", counts=torch.tensor([1, 1, 0]))
    with pytest.raises(DataError, match=r"graph 1 has the pair \[0, 3\] outside its nodes 0..2"):
        validate_dataset(bad, "train", "toy")


def test_molecule_without_contact_is_none():
    assert pcqm_contact.molecule_graph(contact_cxsmiles("CCO", [])) is None
