"""`geaet-dgl partition`: DGL's METIS partitions of one graph, sizes, edge cut, encodings, bad input."""
import json
import os

import dgl
import pytest
import torch

from geaet_dgl.data.errors import DataError
from geaet_dgl.data.encodings.positional_encoding import laplacian_pe
from geaet_dgl.distgraph.engine import read_partitions
from geaet_dgl.distgraph.partition import check_matches_graph, partition_file, read_sidecar

from .conftest import planted_graph


def _owner_of_original_nodes(config: str, orig_nids: torch.Tensor) -> dict:
    """Original node ID -> partition, read from the partition files themselves."""
    owner = {}
    with open(config) as handle:
        parts = json.load(handle)["num_parts"]
    for part in range(parts):
        graph = dgl.distributed.load_partition(config, part)[0]
        inner = graph.ndata["inner_node"].bool()
        for new_id in graph.ndata[dgl.NID][inner].tolist():
            owner[int(orig_nids[new_id])] = part
    return owner


@pytest.mark.slow
def test_partition_sizes_edge_cut_and_balance(graph_file, tmp_path):
    out = str(tmp_path / "parts")
    report = partition_file(graph_file, 2, out, lap_k=0)
    graph = planted_graph()
    orig_nids = torch.load(os.path.join(out, "orig_nids.pt"))
    owner = _owner_of_original_nodes(report.config, orig_nids)
    assert sorted(owner) == list(range(graph.num_nodes()))  # every node in exactly one partition
    counted = [sum(1 for p in owner.values() if p == part) for part in range(2)]
    assert report.part_nodes == counted
    src, dst = graph.edges()
    cut = sum(1 for u, v in zip(src.tolist(), dst.tolist()) if owner[u] != owner[v])
    assert report.edge_cut == cut and 0 < cut < graph.num_edges() / 2
    train = graph.ndata["train_mask"]
    per_part = [sum(1 for n, p in owner.items() if p == part and train[n]) for part in range(2)]
    assert report.part_train_nodes == per_part
    assert abs(per_part[0] - per_part[1]) <= 0.1 * sum(per_part)  # balance_ntypes=train_mask
    assert sum(report.part_edges) == graph.num_edges()
    assert "edge cut" in report.lines()[-1]


@pytest.mark.slow
def test_encodings_are_computed_on_the_whole_graph(tmp_path):
    graph = planted_graph(num_nodes=120)
    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [graph])
    report = partition_file(path, 2, str(tmp_path / "parts"), lap_k=4)
    orig_nids = torch.load(str(tmp_path / "parts" / "orig_nids.pt"))
    whole, _ = laplacian_pe(graph, 4)
    for part in range(2):
        part_graph, node_feats = dgl.distributed.load_partition(report.config, part)[:2]
        inner = part_graph.ndata["inner_node"].bool()
        new_ids = part_graph.ndata[dgl.NID][inner]
        torch.testing.assert_close(node_feats["_N/lap_pe"], whole[orig_nids[new_ids]])


@pytest.mark.slow
def test_refuses_a_file_of_many_graphs(tmp_path):
    path = str(tmp_path / "many.bin")
    dgl.save_graphs(path, [planted_graph(50, seed=1), planted_graph(60, seed=2)])
    with pytest.raises(DataError, match="holds 2 graphs.*--nproc"):
        partition_file(path, 2, str(tmp_path / "parts"))


@pytest.mark.slow
def test_missing_partition_and_foreign_graph(graph_file, tmp_path):
    out = tmp_path / "parts"
    report = partition_file(graph_file, 2, str(out), lap_k=0)
    parts = read_partitions(report.config)
    check_matches_graph(report.config, read_sidecar(report.config), parts.num_nodes, parts.num_edges)
    dgl.save_graphs(graph_file, [planted_graph(seed=5)])  # the file changed after partitioning
    with pytest.raises(DataError, match="does not match"):
        check_matches_graph(report.config, read_sidecar(report.config), parts.num_nodes, parts.num_edges)
    os.remove(out / "part1" / "graph.dgl")
    with pytest.raises(DataError, match="partition 1 .* is missing"):
        read_partitions(report.config)


def test_memory_warning_says_swap_or_stop_from_the_edge_count():
    from geaet_dgl.distgraph.partition import PARTITION_BYTES_PER_EDGE, partition_memory_warning

    edges = 10_000_000
    need = PARTITION_BYTES_PER_EDGE * edges
    assert partition_memory_warning("g.bin", edges, 0, need, 0) is None  # fits exactly
    assert partition_memory_warning("g.bin", edges, need // 2, need // 2, 0) is None  # what the process holds counts
    assert partition_memory_warning("g.bin", edges, 0, None, None) is None  # unknown memory: no guess
    in_swap = partition_memory_warning("g.bin", edges, 1, need - 2, 2 ** 30)
    assert "swap" in in_swap and "slower" in in_swap and f"{edges} edges" in in_swap
    stopped = partition_memory_warning("g.bin", edges, 0, need // 2, need // 4)
    assert "may stop it" in stopped and "machine with more memory" in stopped and "\n" not in stopped


def test_partition_warns_before_it_starts_when_memory_is_short(graph_file, tmp_path, monkeypatch, caplog):
    from geaet_dgl.distgraph import partition as partition_module

    monkeypatch.setattr(partition_module, "machine_memory", lambda: (0, 1024, 1024))  # 1 kB of memory and of swap
    with caplog.at_level("WARNING", logger="geaet_dgl.distgraph.partition"):
        report = partition_file(graph_file, 1, str(tmp_path / "parts"))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and f"{report.num_edges} edges" in warnings[0] and "may stop it" in warnings[0]
    assert os.path.isfile(report.config)  # a warning, not a refusal: the estimate can be off


def test_metis_stopped_by_sigterm_is_named_and_leaves_nothing(graph_file, tmp_path, monkeypatch):
    """METIS traps SIGTERM itself and returns "other errors": the user reads that it was stopped, not that fewer
    parts would help, and the --out folder is as it was."""
    from geaet_dgl.distgraph import partition as partition_module

    def stopped(*args, **kwargs):
        raise dgl.DGLError("[03:23:00] /opt/dgl/src/graph/transform/metis_partition_hetero.cc:106: Error in Metis "
                           "partitioning: other errors")

    monkeypatch.setattr(partition_module.dgl.distributed, "partition_graph", stopped)
    out = tmp_path / "parts"
    with pytest.raises(DataError, match="METIS stopped before it finished .*SIGTERM.*run the command again") as info:
        partition_file(graph_file, 2, str(out))
    assert "fewer --parts" not in str(info.value) and not out.exists()
