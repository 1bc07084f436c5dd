"""OGB graph property loaders on fixture folders in OGB's raw layout: OGB's own processing runs, and what comes
out matches what the fixture wrote; our Atom/Bond encoders and metrics agree with OGB's modules."""
import numpy as np
import pytest
import torch
from ogb.graphproppred import Evaluator
from ogb.graphproppred.mol_encoder import AtomEncoder, BondEncoder

from geaet_dgl.data import DataError, load_dataset
from geaet_dgl.data.ogbg.graphprop import missing_files, ogbg_present
from geaet_dgl.models.encoders import TypeEmbeddingEncoder
from geaet_dgl.training.metrics import accuracy, average_precision, roc_auc
from tests.data.fixtures_ogbg import SMILES, SPLIT, write_molecule_fixture, write_ppa_fixture


@pytest.mark.parametrize("name", ["ogbg-molhiv", "ogbg-molpcba"])
def test_molecules_follow_ogb_split_features_and_labels(tmp_path, name):
    written = write_molecule_fixture(name, tmp_path)
    splits = load_dataset(name, tmp_path, pe_k=3, progress=False)
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        part = getattr(splits, ours)
        assert len(part) == len(SPLIT[theirs])
        for graph, index in zip(part.graphs, SPLIT[theirs]):
            mol = written["graphs"][index]
            assert torch.equal(graph.ndata["feat"], torch.from_numpy(mol["node_feat"]))
            # OGB adds the inverse of every bond: the molecule's both-way edge set, features alike
            src, dst = graph.edges()
            ours_edges = {(int(s), int(d), *map(int, f)) for s, d, f in zip(src, dst, graph.edata["feat"])}
            theirs_edges = {(int(s), int(d), *map(int, f)) for (s, d), f in zip(mol["edge_index"].T, mol["edge_feat"])}
            assert ours_edges == theirs_edges
            assert graph.ndata["lap_pe"].shape == (mol["num_nodes"], 3)
        labels = torch.as_tensor(written["labels"][SPLIT[theirs]])
        if name == "ogbg-molhiv":
            assert part.labels.dtype == torch.int64 and torch.equal(part.labels, labels.reshape(-1))
        else:
            assert torch.equal(torch.isnan(part.labels), torch.isnan(labels))
            assert torch.equal(part.labels.nan_to_num(-1), labels.float().nan_to_num(-1))
    assert splits.num_classes == (2 if name == "ogbg-molhiv" else 128)


def test_ppa_has_constant_node_input_and_float_edge_features(tmp_path):
    written = write_ppa_fixture(tmp_path)
    splits = load_dataset("ogbg-ppa", tmp_path, progress=False)
    index = SPLIT["test"][1]
    graph = splits.test.graphs[1]
    assert graph.num_nodes() == written["num_nodes"][index]
    assert torch.equal(graph.ndata["feat"], torch.zeros(graph.num_nodes(), 1))
    feats = written["edge_feat"][sum(len(e) for e in written["edges"][:index]):][:len(written["edges"][index])]
    assert graph.edata["feat"].dtype == torch.float32 and graph.edata["feat"].shape[1] == 7
    expected = torch.from_numpy(np.concatenate([feats, feats])).float()  # the edges, then their inverses
    assert torch.allclose(torch.sort(graph.edata["feat"], dim=0).values, torch.sort(expected, dim=0).values)
    assert torch.equal(splits.test.labels, torch.as_tensor(written["labels"][SPLIT["test"], 0]))
    assert splits.num_classes == 37


def test_missing_files_are_named_and_nothing_is_downloaded(tmp_path, monkeypatch):
    import ogb.utils.url

    monkeypatch.setattr(ogb.utils.url, "download_url", lambda *a, **k: pytest.fail("tried to download"))
    written = write_molecule_fixture("ogbg-molhiv", tmp_path)
    (written["root"] / "raw" / "graph-label.csv.gz").unlink()
    assert not ogbg_present("ogbg-molhiv", tmp_path)
    assert [p.name for p in missing_files("ogbg-molhiv", tmp_path)] == ["graph-label.csv.gz"]
    with pytest.raises(DataError, match=r"graph-label\.csv\.gz is missing; download .*hiv\.zip"):
        load_dataset("ogbg-molhiv", tmp_path, progress=False)


def test_processed_file_is_read_without_raw_files(tmp_path):
    write_molecule_fixture("ogbg-molhiv", tmp_path)
    first = load_dataset("ogbg-molhiv", tmp_path, progress=False)
    for path in (tmp_path / "ogbg_molhiv" / "raw").iterdir():
        path.unlink()
    again = load_dataset("ogbg-molhiv", tmp_path, progress=False)
    assert torch.equal(first.train.labels, again.train.labels)


@pytest.mark.parametrize("ogb_module, vocab", [(AtomEncoder, [119, 5, 12, 12, 10, 6, 6, 2, 2]),
                                               (BondEncoder, [5, 6, 2])])
def test_embedding_encoder_equals_ogb_atom_and_bond_encoders(ogb_module, vocab):
    torch.manual_seed(0)
    theirs = ogb_module(16)
    ours = TypeEmbeddingEncoder(vocab, 16)
    embeddings = theirs.atom_embedding_list if ogb_module is AtomEncoder else theirs.bond_embedding_list
    assert [e.num_embeddings for e in embeddings] == vocab
    for mine, their in zip(ours.embeddings, embeddings):
        mine.weight.data.copy_(their.weight.data)
    feats = torch.stack([torch.randint(0, size, (50,)) for size in vocab], dim=1)
    assert torch.allclose(ours(feats), theirs(feats), atol=1e-6)
    (ours(feats) ** 2).sum().backward()
    (theirs(feats) ** 2).sum().backward()
    for mine, their in zip(ours.embeddings, embeddings):
        assert torch.allclose(mine.weight.grad, their.weight.grad, atol=1e-5)


def test_metrics_equal_ogb_evaluators():
    rng = np.random.default_rng(0)
    hiv_true = rng.integers(0, 2, (40, 1))
    hiv_score = rng.normal(size=(40, 1)) + hiv_true
    expected = Evaluator("ogbg-molhiv").eval({"y_true": hiv_true, "y_pred": hiv_score})["rocauc"]
    assert roc_auc(torch.from_numpy(hiv_score), torch.from_numpy(hiv_true).reshape(-1)) == pytest.approx(expected)
    pcba_true = rng.integers(0, 2, (60, 128)).astype(float)
    pcba_true[rng.random(pcba_true.shape) < 0.4] = np.nan
    pcba_score = rng.normal(size=(60, 128))
    expected = Evaluator("ogbg-molpcba").eval({"y_true": pcba_true, "y_pred": pcba_score})["ap"]
    assert average_precision(torch.from_numpy(pcba_score), torch.from_numpy(pcba_true)) == pytest.approx(expected)
    ppa_true, ppa_pred = rng.integers(0, 37, (80, 1)), rng.integers(0, 37, (80, 1))
    expected = Evaluator("ogbg-ppa").eval({"y_true": ppa_true, "y_pred": ppa_pred})["acc"]
    assert accuracy(torch.from_numpy(ppa_pred), torch.from_numpy(ppa_true)) == pytest.approx(expected)
    with pytest.raises(ValueError, match="both positives and negatives"):
        roc_auc(torch.zeros(5, 2), torch.ones(5, 2))  # several tasks, none with both classes


def test_pcqm4mv2_variants_follow_graphgps(tmp_path, monkeypatch):
    from rdkit import Chem  # noqa: F401  (OGB's smiles2graph needs it)
    from geaet_dgl.data.ogbg import pcqm4mv2
    from tests.data.fixtures_pcqm4mv2 import SPLIT as OGB_SPLIT, small_variants, write_pcqm4mv2_fixture

    written = write_pcqm4mv2_fixture(tmp_path)
    small_variants(monkeypatch)
    shuffled = np.random.default_rng(42).permutation(np.asarray(OGB_SPLIT["train"]))  # GraphGPS's shuffle
    expected = {
        "pcqm4mv2": (shuffled[3:], shuffled[:3], OGB_SPLIT["valid"]),
        "pcqm4mv2-subset": (shuffled[3:][:int(0.5 * 7)], shuffled[:2], OGB_SPLIT["valid"]),
        "pcqm4mv2-inference": (OGB_SPLIT["valid"], OGB_SPLIT["test-dev"], OGB_SPLIT["test-challenge"]),
    }
    for name, parts in expected.items():
        splits = load_dataset(name, tmp_path, pe_k=2, progress=False)
        for part, index in zip((splits.train, splits.val, splits.test), parts):
            gaps = torch.as_tensor(written["gaps"][np.asarray(index)], dtype=torch.float32).reshape(-1, 1)
            assert torch.equal(part.labels.nan_to_num(-1), gaps.nan_to_num(-1)), name
            for graph, i in zip(part.graphs, index):
                assert graph.num_nodes() == Chem.MolFromSmiles(SMILES[i]).GetNumAtoms()
                assert graph.ndata["feat"].shape[1] == 9 and graph.edata["feat"].shape[1] == 3
    assert pcqm4mv2.SIZES["pcqm4mv2"] == (3_228_606, 150_000, 73_545)
    assert pcqm4mv2.SIZES["pcqm4mv2-subset"] == (322_860, 50_000, 73_545)
    (written["files"]["release"]).unlink()
    with pytest.raises(DataError, match=r"RELEASE_v1\.txt is missing; download .*pcqm4m-v2\.zip"):
        load_dataset("pcqm4mv2", tmp_path, progress=False)
