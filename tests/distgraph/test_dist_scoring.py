"""How a partitioned run's trainer scores its share (``data.dist_scoring``), on a local stand-in for DGL's servers.

The stand-in answers the two questions a trainer asks the servers (its share of the nodes, the in-edges of a node
set) from a plain DGLGraph, so the task's scoring code runs as it does under DistDGL, in one process.
"""
import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError
from geaet_dgl.distgraph.trainer import HALO_SCORING_LIMIT, DistNodeTask, DistSource, scoring_mode
from geaet_dgl.inference.layerwise import ONE_PASS_BYTES
from geaet_dgl.models import build_model
from geaet_dgl.training import make_run_config
from geaet_dgl.training.losses import get_loss

from .conftest import SMALL_RUN, planted_graph


class LocalSource(DistSource):
    """A :class:`DistSource` on a DGLGraph in memory, serving ``share`` as the trainer's nodes; it records the node
    count of every batch it builds."""

    def __init__(self, graph: dgl.DGLGraph, share: torch.Tensor):
        super().__init__(graph)
        self.share = share
        self.batch_sizes = []

    def node_ids(self) -> torch.Tensor:
        return self.share

    def in_edges(self, nodes):
        src, dst, eids = self.graph.in_edges(nodes, form="all")
        order = torch.sort(dst * self.graph.num_nodes() + src, stable=True).indices
        return src[order], dst[order], eids[order]

    def batch(self, nodes):
        self.batch_sizes.append(len(nodes))
        return super().batch(nodes)


def _task(tmp_path, graph, share, scoring):
    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [graph])
    run = make_run_config(path, "geaet-node", dict(SMALL_RUN, **{"data.num_parts": "8", "train.batch_size": "2",
                                                                 "data.dist_scoring": scoring}), threads=1)
    torch.manual_seed(0)
    model = build_model(run.model).eval()
    source = LocalSource(graph, share)
    return DistNodeTask(run, source, torch.device("cpu")), model, source


def _accuracy(model, graph, nodes, scored, split="val"):
    """Accuracy on the ``split`` nodes among ``scored`` of the model run on the subgraph ``nodes`` induce."""
    sub = dgl.node_subgraph(graph, nodes)
    output = model(sub)
    keep = torch.isin(sub.ndata[dgl.NID], scored) & sub.ndata[f"{split}_mask"].bool()
    return (output[keep].argmax(1) == sub.ndata["label"][keep]).sum().item(), int(keep.sum())


def test_the_setting_and_the_automatic_choice():
    big = ONE_PASS_BYTES + 1
    assert scoring_mode("halo", 10_000, 10, big) == "halo" and scoring_mode("parts", 0, 10, 0) == "parts"
    assert scoring_mode("auto", int(HALO_SCORING_LIMIT * 100), 100, big) == "halo"
    assert scoring_mode("auto", int(HALO_SCORING_LIMIT * 100) + 1, 100, big) == "parts"
    assert scoring_mode("auto", 10_000, 100, ONE_PASS_BYTES) == "halo"  # a large halo, but a small pass


def test_an_unknown_setting_is_refused(tmp_path):
    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [planted_graph(200)])
    with pytest.raises(ConfigError, match="data.dist_scoring='all'.*auto, halo, parts"):
        make_run_config(path, "geaet-node", {"data.dist_scoring": "all"})


def test_parts_score_each_batch_of_parts_on_its_own_subgraph(tmp_path):
    graph = planted_graph(600)
    share = torch.arange(0, 600, 2)  # every other node: its in-neighbours are most of the rest
    task, model, source = _task(tmp_path, graph, share, "parts")
    assert task.scoring == "parts"
    val, test = task.score_splits(model, get_loss("cross_entropy"), 0)
    # independently: each pass is 2 of the trainer's METIS parts, in order, scored on its own subgraph
    right = total = test_right = test_total = 0
    for start in range(0, len(task.parts), 2):
        nodes = torch.cat(task.parts[start:start + 2])
        r, t = _accuracy(model, graph, nodes, nodes)
        right, total = right + r, total + t
        r, t = _accuracy(model, graph, nodes, nodes, "test")
        test_right, test_total = test_right + r, test_total + t
    assert total == int(graph.ndata["val_mask"][share].sum())  # every validation node of the share, once
    assert val["metric"] == pytest.approx(right / total)
    assert test["metric"] == pytest.approx(test_right / test_total)
    # memory follows a batch: no pass is larger than the two largest parts
    largest = sum(sorted(len(p) for p in task.parts)[-2:])
    assert max(source.batch_sizes) <= largest < len(share)


def test_halo_scores_the_share_in_one_pass_with_its_in_neighbours(tmp_path):
    graph = planted_graph(600)
    share = torch.arange(0, 600, 2)
    task, model, source = _task(tmp_path, graph, share, "halo")
    val, _ = task.score_splits(model, get_loss("cross_entropy"), 0)
    halo = torch.unique(torch.cat([share, graph.in_edges(share)[0]]))
    right, total = _accuracy(model, graph, halo, share)
    assert val["metric"] == pytest.approx(right / total)
    assert source.batch_sizes[-1] == len(halo)


def test_auto_keeps_one_pass_where_the_halo_is_small(tmp_path):
    # a ring: the first half of the nodes has two in-neighbours outside it
    n = 400
    src = torch.arange(n)
    graph = dgl.graph((torch.cat([src, (src + 1) % n]), torch.cat([(src + 1) % n, src])), num_nodes=n)
    reference = planted_graph(n)
    for key, value in reference.ndata.items():
        graph.ndata[key] = value
    task, model, _ = _task(tmp_path, graph, torch.arange(n // 2), "auto")
    assert task.scoring == "halo"


@pytest.mark.slow
def test_auto_scores_on_parts_where_a_large_halo_makes_a_large_pass(tmp_path, monkeypatch):
    import geaet_dgl.distgraph.trainer as trainer_module

    share = torch.arange(0, 600, 2)  # every other node: its in-neighbours are most of the rest
    task, _, _ = _task(tmp_path, planted_graph(600), share, "auto")
    assert task.scoring == "halo"  # a small graph: the one pass is cheap
    monkeypatch.setattr(trainer_module, "ONE_PASS_BYTES", 1000)  # as if the pass were large
    task, _, _ = _task(tmp_path, planted_graph(600), share, "auto")
    assert task.scoring == "parts"


@pytest.mark.slow
def test_best_pt_is_scored_on_the_graph_file_only_where_it_fits(tmp_path, caplog):
    from geaet_dgl.distgraph.launch import partitioned_summary_line, score_best_on_graph, score_on_graph
    from geaet_dgl.training.trainer import train

    path = str(tmp_path / "g.bin")
    dgl.save_graphs(path, [planted_graph(300)])
    run_dir = str(tmp_path / "run")
    train(make_run_config(path, "geaet-node", dict(SMALL_RUN, **{"train.epochs": "1"}), threads=1), run_dir,
          progress=False)
    with caplog.at_level("WARNING"):
        skipped = score_best_on_graph(run_dir, path, needed_bytes=2**60)
    assert "full_graph_val_metric" not in skipped
    assert "not scored on the whole graph file here" in caplog.text and "geaet-dgl eval --checkpoint" in caplog.text
    assert "best.pt on the whole graph: not scored" in partitioned_summary_line(skipped)
    scored = score_best_on_graph(run_dir, path, needed_bytes=0)
    expected = score_on_graph(str(tmp_path / "run" / "best.pt"), path)
    assert scored["full_graph_val_metric"] == expected["val"] and scored["full_graph_test_metric"] == expected["test"]
    assert partitioned_summary_line(scored).startswith(f"best.pt on the whole graph: val accuracy {expected['val']:.6f}")


def test_the_share_is_read_in_chunks_into_the_subgraph_it_induces():
    graph = planted_graph(600)
    share = torch.sort(torch.randperm(600, generator=torch.Generator().manual_seed(1))[:250]).values
    source = LocalSource(graph, share)
    whole, whole_halo, whole_count = source.induced_structure(share, chunk=len(share))
    chunked, halo, count = source.induced_structure(share, chunk=7)
    expected = dgl.node_subgraph(graph, share)
    outside = torch.unique(graph.in_edges(share)[0])
    assert torch.equal(halo, outside[~torch.isin(outside, share)]) and torch.equal(halo, whole_halo)
    assert count == whole_count == len(graph.in_edges(share)[0])
    assert torch.equal(torch.stack(chunked.edges()), torch.stack(whole.edges()))  # the same order, so METIS's input
    key = lambda g: torch.sort(g.edges()[0] * 600 + g.edges()[1]).values
    assert torch.equal(key(chunked), key(expected))
    # a batch: the same subgraph with its features
    batch = source.batch(share)
    assert torch.equal(key(batch), key(expected)) and torch.equal(batch.ndata["feat"], expected.ndata["feat"])
