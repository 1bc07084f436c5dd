"""ogbn-arxiv / ogbn-products through OGB's own loader, on fixture files in OGB's raw layout."""
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError
from geaet_dgl.data.nodes.ogbn import OGBN, PROCESSED, ogbn_present, read_ogbn
from tests.data.fixtures_ogbn import NUM_NODES, write_ogbn_fixture


@pytest.mark.parametrize("name", sorted(OGBN))
def test_ogbn_graph_is_ogbs_raw_files(tmp_path, name):
    written = write_ogbn_fixture(name, tmp_path)
    assert ogbn_present(name, tmp_path)
    graph, classes = read_ogbn(name, tmp_path)
    assert graph.num_nodes() == NUM_NODES and classes == OGBN[name].num_classes
    pairs = set(zip(written["src"].tolist(), written["dst"].tolist()))
    both = pairs | {(d, s) for s, d in pairs}  # arxiv: bidirected by us; products: inverse edges added by OGB
    src, dst = graph.edges()
    assert set(zip(src.tolist(), dst.tolist())) == both
    assert graph.num_edges() == 2 * len(written["src"])
    np.testing.assert_allclose(graph.ndata["feat"].numpy(), written["feat"], rtol=1e-6)
    assert graph.ndata["feat"].dtype == torch.float32
    assert torch.equal(graph.ndata["label"], torch.from_numpy(written["label"]).long())
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        mask = graph.ndata[f"{ours}_mask"]
        assert mask.dtype == torch.bool
        assert sorted(mask.nonzero().squeeze(1).tolist()) == sorted(written["split"][theirs].tolist())
    assert (tmp_path / OGBN[name].folder / PROCESSED).is_file()  # OGB processed raw/ itself
    again, _ = read_ogbn(name, tmp_path)  # second read: OGB's processed file
    assert torch.equal(again.ndata["feat"], graph.ndata["feat"]) and again.num_edges() == graph.num_edges()


def test_ogbn_missing_files_say_where_to_put_them(tmp_path):
    with pytest.raises(DataError, match=r"ogbn_arxiv/RELEASE_v1.txt is missing; download .*arxiv.zip, unzip"):
        read_ogbn("ogbn-arxiv", tmp_path)
    write_ogbn_fixture("ogbn-products", tmp_path)
    (tmp_path / "ogbn_products" / "split" / "sales_ranking" / "valid.csv.gz").unlink()
    assert not ogbn_present("ogbn-products", tmp_path)
    with pytest.raises(DataError, match="valid.csv.gz is missing"):
        read_ogbn("ogbn-products", tmp_path)


def test_ogbn_truncated_processed_file_is_rebuilt(tmp_path):
    write_ogbn_fixture("ogbn-arxiv", tmp_path)
    first, _ = read_ogbn("ogbn-arxiv", tmp_path)
    processed = tmp_path / "ogbn_arxiv" / PROCESSED
    processed.write_bytes(processed.read_bytes()[:100])
    second, _ = read_ogbn("ogbn-arxiv", tmp_path)
    assert torch.equal(first.ndata["feat"], second.ndata["feat"])


def test_ogbn_dataset_is_a_node_graph_with_cached_encodings(tmp_path):
    from geaet_dgl.data import load_dataset
    from geaet_dgl.data.nodes.node_graph import NodeGraph
    from geaet_dgl.data.registry import DATASETS, dataset_table

    written = write_ogbn_fixture("ogbn-arxiv", tmp_path)
    data = load_dataset("ogbn-arxiv", tmp_path, pe_k=3, rwse_k=4, limit_train=5, progress=False)
    assert isinstance(data, NodeGraph) and data.task == "node-classification" and data.num_classes == 40
    assert data.sizes() == {"train": 5, "val": 8, "test": 8}
    assert data.nodes("train").tolist() == sorted(written["split"]["train"].tolist())[:5]
    assert data.graph.ndata["lap_pe"].shape == (NUM_NODES, 3) and data.graph.ndata["rwse"].shape == (NUM_NODES, 4)
    assert list((tmp_path / "ogbn_arxiv" / "geaet_cache").glob("geaet_pe_ogbn-arxiv_*.pt"))
    row = next(r for r in dataset_table(tmp_path) if r["name"] == "ogbn-arxiv")
    assert row["present"] is True and "90,941/29,799/48,603" in DATASETS["ogbn-arxiv"].size
    with pytest.raises(DataError, match="needs data_dir"):
        load_dataset("ogbn-products")


def test_ogbn_presets_fit_the_data(tmp_path):
    from geaet_dgl.data import load_dataset
    from geaet_dgl.config.presets import get_preset
    from geaet_dgl.data.model_fit import check_data_fits

    for name in sorted(OGBN):
        write_ogbn_fixture(name, tmp_path)
        preset = get_preset(name)
        preset.model.node_in_feats = 5  # the fixture's feature width (128 / 100 in the published files)
        check_data_fits(preset.model, load_dataset(name, tmp_path, progress=False))
