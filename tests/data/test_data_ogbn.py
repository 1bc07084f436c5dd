"""ogbn-arxiv / ogbn-products through OGB's own loader, on fixture files in OGB's raw layout."""
import numpy as np
import pytest
import torch

from geaet_dgl.data import DataError
from geaet_dgl.data.ogbn import OGBN, PROCESSED, ogbn_present, read_ogbn
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
