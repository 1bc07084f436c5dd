"""benchmark --node-scaling: the graphs, the out-of-memory handling, the exponent."""
import numpy as np
import pytest
import torch

from geaet_lab.benchmarking.node_scaling import (DEGREE, FEAT_DIM, NUM_CLASSES, _fit, _in_passes, _pass_columns,
                                                 dense_attention_mib, node_task_graph, run_node_scaling, sparse_matvec,
                                                 sparse_pass)
from geaet_lab.benchmarking.jobs import NodeScalingJob, Reference


def test_node_task_graph_is_a_knn_graph_with_a_learnable_task():
    graph = node_task_graph(2000, seed=1)
    assert graph.num_edges() == DEGREE * 2000
    assert torch.all(graph.in_degrees() == DEGREE)
    src, dst = graph.edges()
    assert not torch.any(src == dst)
    feat, label = graph.ndata["feat"], graph.ndata["label"]
    assert feat.shape == (2000, FEAT_DIM) and label.min() >= 0 and label.max() == NUM_CLASSES - 1
    # the grid cells make neighbours agree far more often than chance (1/8)
    assert (label[src] == label[dst]).float().mean() > 0.8
    masks = torch.stack([graph.ndata[m] for m in ("train_mask", "val_mask", "test_mask")])
    assert torch.all(masks.sum(0) == 1)  # disjoint, every node in one
    assert abs(float(masks[0].float().mean()) - 0.5) < 0.05
    again = node_task_graph(2000, seed=1)
    assert torch.equal(again.edges()[0], src) and torch.equal(again.ndata["feat"], feat)


@pytest.mark.slow
def test_a_size_that_cannot_be_allocated_is_reported_and_larger_ones_skipped():
    """The child fails to allocate (here: 1e12 points) under its address-space limit; nothing larger runs."""
    result = run_node_scaling(NodeScalingJob(max_nodes=10**13, sizes=(10**12, 10**13), methods=("full",),
                                             memory_limit_gib=4))
    entry = result["methods"]["full"]
    assert entry["points"] == [] and entry["out_of_memory"]["num_nodes"] == 10**12
    assert "4 GiB" in entry["out_of_memory"]["reason"] and entry["exponent"] is None


def test_dense_attention_is_not_started_where_its_scores_exceed_the_limit():
    assert dense_attention_mib(10_000) == pytest.approx(2 * 4 * 10_000**2 * 4 / 2**20)
    result = run_node_scaling(NodeScalingJob(max_nodes=10**6, sizes=(10**5,), methods=("ref-transformer",),
                                             reference=Reference("/nonexistent"), memory_limit_gib=8))
    oom = result["methods"]["ref-transformer"]["out_of_memory"]
    assert oom["num_nodes"] == 10**5 and "not started" in oom["reason"]
    with pytest.raises(ValueError, match="needs the reference's checkout"):
        run_node_scaling(NodeScalingJob(sizes=(10**4,), methods=("ref-performer",)))
    with pytest.raises(ValueError, match="full, cluster, ref-transformer, ref-performer, ref-none"):
        run_node_scaling(NodeScalingJob(sizes=(10**4,), methods=("sparse",)))


def test_a_size_predicted_past_the_limit_is_not_started(monkeypatch):
    from geaet_lab.benchmarking import node_scaling, worker

    started = []

    def fake_run(task, kwargs, **options):
        started.append(kwargs["num_nodes"])
        return {"num_nodes": kwargs["num_nodes"], "num_edges": 10 * kwargs["num_nodes"], "epoch_s": 1.0,
                "epoch_cpu_s": 1.0, "eval_s": 1.0, "eval_cpu_s": 1.0, "start_rss_mib": 500.0,
                "peak_rss_mib": 500.0 + kwargs["num_nodes"] / 100}  # 1 GiB more per ~100k nodes

    monkeypatch.setattr(worker, "run_isolated", fake_run)
    result = node_scaling.run_node_scaling(NodeScalingJob(max_nodes=10**6, sizes=(10**5, 3 * 10**5, 10**6),
                                                          methods=("full",), memory_limit_gib=8))
    oom = result["methods"]["full"]["out_of_memory"]
    assert started == [10**5, 3 * 10**5] and oom["num_nodes"] == 10**6  # 0.5 + 3 x 10/3 GiB predicted > 8
    assert "predicted peak RSS 10.3 GiB" in oom["reason"] and "not started" in oom["reason"]


def test_exponent_fits_epoch_time_from_the_large_sizes():
    points = [{"num_nodes": n, "epoch_s": 3e-6 * n ** 1.1, "eval_s": 1e-6 * n} for n in (10**4, 10**5, 10**6)]
    points[0]["epoch_s"] *= 5  # a slow small size counts in the fit over all sizes only
    assert _fit(points, "epoch_s", 10**5) == pytest.approx(1.1)
    assert _fit(points, "epoch_s") < 1.0
    assert _fit(points, "eval_s", 10**5) == pytest.approx(1.0)
    assert _fit(points[:1], "epoch_s") is None


def test_sparse_pass_times_a_copy_u_sum_and_grows_with_the_edges():
    import dgl

    small, large = dgl.rand_graph(2000, 20_000), dgl.rand_graph(2000, 400_000)
    assert 0 < sparse_pass(small, repeats=3) < sparse_pass(large, repeats=3)  # 20x the edges, same nodes
    assert 0 < sparse_matvec(small, repeats=3) < sparse_matvec(large, repeats=3)


def test_per_pass_exponent_divides_the_machines_per_edge_cost_out():
    # The evaluation always costs 40 sparse passes, but a pass costs 3x more per node above 100k (out of cache):
    # the raw exponent is above 1, the exponent in passes is 0.
    passes = {10**5: 1e-7 * 10**5, 10**6: 3e-7 * 10**6, 3 * 10**6: 3e-7 * 3 * 10**6}
    points = [{"num_nodes": n, "sparse_pass_cpu_s": unit, "eval_cpu_s": 40 * unit, "encoding_cpu_s": None,
               "sparse_matvec_cpu_s": unit / 4} for n, unit in passes.items()]
    assert _fit(points, "eval_cpu_s") > 1.2
    assert _fit(_in_passes(points, "eval_cpu_s"), "eval_cpu_s") == pytest.approx(0.0, abs=1e-9)
    assert _fit(_in_passes(points, "encoding_cpu_s"), "encoding_cpu_s") is None  # not measured: no fit
    assert _pass_columns(points[0]).split() == ["10.0", "40", "2.5", "-"]
    assert _pass_columns(dict(points[0], encoding_cpu_s=5e-3)).split()[-1] == "2"  # 5 ms in 2.5 ms matvecs
    assert _pass_columns({"eval_cpu_s": 1.0}).split() == ["-", "-", "-", "-"]


@pytest.mark.slow
def test_cli_node_scaling_times_full_and_cluster_and_writes_json(tmp_path):
    import json

    from click.testing import CliRunner

    from geaet_dgl import cli

    out = tmp_path / "nodes.json"
    result = CliRunner().invoke(cli.main, ["benchmark", "--node-scaling", "--max-nodes", "1500", "--threads", "1",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "epoch CPU-time exponent" in result.output
    saved = json.loads(out.read_text())["node_scaling"]
    assert saved["sizes"] == [1500] and set(saved["methods"]) == {"full", "cluster"}
    for entry in saved["methods"].values():
        (point,) = entry["points"]
        assert point["num_nodes"] == 1500 and point["num_edges"] == DEGREE * 1500
        assert point["epoch_s"] > 0 and point["eval_s"] > 0 and point["peak_rss_mib"] > 0
        assert 0 < point["epoch_cpu_s"] and 0 < point["eval_cpu_s"]
        assert point["address_space_limit_mib"] == 12 * 1024 and entry["out_of_memory"] is None


@pytest.mark.slow
def test_cli_node_scaling_on_planted_partitions_times_the_lappe(tmp_path):
    import json

    from click.testing import CliRunner

    from geaet_dgl import cli

    out = tmp_path / "planted.json"
    result = CliRunner().invoke(cli.main, ["benchmark", "--node-scaling", "--node-graph", "planted", "--node-size",
                                           "1500", "--max-nodes", "2500", "--node-method", "cluster", "--threads",
                                           "1", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "LapPE CPU-time exponent" in result.output and "peak RSS exponent" in result.output
    saved = json.loads(out.read_text())["node_scaling"]
    assert saved["graph"] == "planted" and saved["sizes"] == [1500, 2500] and set(saved["methods"]) == {"cluster"}
    entry = saved["methods"]["cluster"]
    assert [p["num_nodes"] for p in entry["points"]] == [1500, 2500]
    assert all(p["encoding_cpu_s"] > 0 and p["graph"] == "planted" for p in entry["points"])
    assert entry["encoding_exponent"] is not None and entry["eval_exponent"] is not None
    assert all(p["sparse_pass_cpu_s"] > 0 and p["sparse_matvec_cpu_s"] > 0 for p in entry["points"])
    assert "eval/pass" in result.output and "LapPE/matvec" in result.output


def test_planted_task_graph_has_the_asked_degree_and_blocks():
    from geaet_lab.benchmarking.node_scaling import planted_task_graph

    g = planted_task_graph(20_000)
    assert abs(g.num_edges() / g.num_nodes() - DEGREE) < 0.5
    src, dst = g.edges()
    same = (g.ndata["label"][src] == g.ndata["label"][dst]).float().mean()
    assert 0.75 < float(same) < 0.85  # 4/5 of the edges inside blocks


def test_short_measurements_are_repeated_and_long_ones_are_not():
    from geaet_lab.benchmarking.node_scaling import repeat_while_short

    calls = []
    times = repeat_while_short(lambda: calls.append(1), 1, short_cpu_s=10.0, most=5)
    assert len(times) == 5 == len(calls)  # each call far under 10 CPU s: repeated up to 5 calls

    def busy():
        calls.append(1)
        sum(i * i for i in range(20_000))

    calls.clear()
    assert len(repeat_while_short(busy, 2, short_cpu_s=1e-9, most=5)) == 2 == len(calls)  # long: only the asked 2
