"""Benchmark harness: report keys, JSON/PNG output, exponent fit, kNN graphs, reference comparison."""
import copy
import json
import os

import dgl
import numpy as np
import pytest
import torch

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.jobs import EpochJob, ModelJob, Reference, ScalingJob, Timing
from geaet_lab.benchmarking.inputs import SUPPORTED_PRESETS, prebuilt_batches, synthetic_graphs
from geaet_lab.benchmarking.parity import compare_models
from geaet_lab.benchmarking.report import format_table
from geaet_lab.benchmarking.scaling import fit_power_law, knn_edges, random_knn_graph
from geaet_dgl.data import synthetic_mnist_like
from geaet_dgl.models import GEAET, build_model
from geaet_dgl.config.presets import get_preset

REQUIRED_RESULT_KEYS = ("batch_size", "train_graphs_per_s", "infer_graphs_per_s", "peak_rss_mib")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_outputs(report, json_path, plot_path):
    with open(json_path) as f:
        saved = json.load(f)
    assert set(saved) == set(report)
    for key in ("preset", "threads", "device", "torch", "dgl", "repeats"):
        assert key in saved["config"]
    with open(plot_path, "rb") as f:
        assert f.read(8) == PNG_MAGIC
    return saved


@pytest.mark.slow
def test_run_benchmark_isolated_throughput(tmp_path):
    """One batch size in its own process: required keys, positive numbers, JSON and PNG written."""
    json_path, plot_path = str(tmp_path / "bench.json"), str(tmp_path / "bench.png")
    report = run_benchmark(ModelJob(batch_sizes=(2,), timing=Timing(repeats=1, warmup=0, num_batches=1, threads=1)),
                           json_path=json_path, plot_path=plot_path, echo=None)
    saved = _check_outputs(report, json_path, plot_path)
    assert saved["config"]["threads"] == 1 and saved["config"]["isolated"] is True
    (row,) = saved["results"]
    assert row["batch_size"] == 2
    for key in REQUIRED_RESULT_KEYS[1:]:
        assert row[key] > 0
    assert row["peak_rss_mib"] >= row["peak_rss_infer_mib"] >= row["base_rss_mib"] > 0
    assert row["num_parameters"] == 113_155


@pytest.mark.slow
def test_run_benchmark_epoch_and_scaling_sections(tmp_path):
    json_path, plot_path = str(tmp_path / "all.json"), str(tmp_path / "all.png")
    lines = []
    job = ModelJob(batch_sizes=(3,), epoch=EpochJob(num_graphs=6, batch_size=3),
                   scaling=ScalingJob(max_nodes=200, sizes=(60, 120, 240), components=("geanet", "geaet_layer"),
                                      repeats=1, min_time_s=0.0),
                   timing=Timing(repeats=1, warmup=0, num_batches=1, threads=1, isolate=False))
    report = run_benchmark(job, json_path=json_path, plot_path=plot_path, echo=lines.append)
    saved = _check_outputs(report, json_path, plot_path)
    epoch = saved["epoch"]
    assert epoch["num_batches"] == 2 and epoch["train_graphs_per_s"] > 0 and epoch["infer_graphs_per_s"] > 0
    assert epoch["collate_ms_per_batch"] > 0
    scaling = saved["scaling"]
    assert scaling["sizes"] == [60, 120]  # 240 > max_nodes
    assert "attention='none'" in scaling["note"]
    for entry in scaling["components"].values():
        assert [p["num_nodes"] for p in entry["points"]] == [60, 120]
        assert all(p["num_edges"] == 8 * p["num_nodes"] and p["forward_s"] > 0 for p in entry["points"])
        assert isinstance(entry["exponent_forward"], float)
    text = "\n".join(lines)
    assert "Throughput" in text and "Whole epoch" in text and "exponent vs N+E" in text


@pytest.mark.parametrize("exponent", [1.0, 1.5, 2.0])
def test_fit_power_law_recovers_exponent(exponent):
    sizes = np.logspace(3, 7, 9)
    noise = np.exp(np.random.default_rng(0).normal(0.0, 0.02, sizes.size))
    a, c = fit_power_law(sizes, 3e-8 * sizes**exponent * noise)
    assert a == pytest.approx(exponent, abs=0.03)
    assert c == pytest.approx(3e-8, rel=0.5)
    a, c = fit_power_law(sizes, 3e-8 * sizes**exponent)
    assert a == pytest.approx(exponent, abs=1e-9) and c == pytest.approx(3e-8, rel=1e-6)


def test_fit_power_law_needs_two_sizes():
    with pytest.raises(ValueError):
        fit_power_law([10.0], [1.0])


def test_knn_edges_are_the_true_k_nearest_in_edges():
    """Each node gets exactly k IN-edges, from its k nearest other points (brute force on 200 points)."""
    k, n = 8, 200
    points = np.random.default_rng(1).random((n, 2))
    src, dst = knn_edges(points, k)
    assert src.shape == dst.shape == (k * n,)
    assert np.all(np.bincount(dst, minlength=n) == k)
    assert not np.any(src == dst)
    dist = np.linalg.norm(points[:, None] - points[None], axis=-1)
    np.fill_diagonal(dist, np.inf)
    truth = np.argsort(dist, axis=1)[:, :k]
    for node in range(n):
        assert set(src[dst == node]) == set(truth[node])


def test_random_knn_graph_shape():
    g = random_knn_graph(500, k=8, seed=3)
    assert g.num_nodes() == 500 and g.num_edges() == 4000
    assert torch.all(g.in_degrees() == 8)


def test_synthetic_inputs_match_presets():
    from geaet_dgl.config.presets import preset_names

    assert set(preset_names()) <= set(SUPPORTED_PRESETS)
    cifar = synthetic_graphs("cifar10", 3, seed=0)
    assert cifar.graphs[0].ndata["feat"].shape[1] == 5 and 85 <= cifar.graphs[0].num_nodes() <= 150
    (graph, labels), = prebuilt_batches("mnist", 4, 1, torch.device("cpu"))
    assert graph.batch_size == 4 and labels.shape == (4,) and graph.ndata["feat"].shape[1] == 3


def test_synthetic_pattern_inputs_are_node_level_with_rwse():
    from geaet_dgl.data.encodings.positional_encoding import random_walk_se

    (graph, labels), = prebuilt_batches("pattern", 3, 1, torch.device("cpu"))
    assert graph.batch_size == 3 and labels.shape == (graph.num_nodes(),)
    assert set(labels.unique().tolist()) == {0, 1}
    feat = graph.ndata["feat"]
    assert feat.shape[1] == 3 and torch.equal(feat.sum(1), torch.ones(graph.num_nodes()))  # one-hot
    first = dgl.unbatch(graph)[0]
    assert torch.allclose(first.ndata["rwse"], random_walk_se(first, 16))
    # the preset's model runs on it and its loss is the weighted cross-entropy of one logit per node
    model = build_model(get_preset("pattern").model)
    from geaet_lab.benchmarking.inputs import loss_function

    loss = loss_function("pattern")(model(graph), labels)
    assert loss.ndim == 0 and torch.isfinite(loss)


def test_synthetic_molecules_fit_the_peptides_preset():
    from geaet_dgl.data.encodings.positional_encoding import laplacian_pe

    config = get_preset("peptides-struct").model
    (graph, targets), = prebuilt_batches("peptides-struct", 3, 1, torch.device("cpu"))
    assert targets.shape == (3, 11) and targets.dtype == torch.float32
    for g in dgl.unbatch(graph):
        assert 100 <= g.num_nodes() <= 200 and g.num_edges() % 2 == 0
        src, dst = g.edges()
        assert not torch.any(src == dst) and g.has_edges_between(dst, src).all()  # bonds both ways, no loops
        vecs, _ = laplacian_pe(g, config.pe_k, norm="none")
        assert torch.equal(g.ndata["lap_pe"], vecs)
    for feat, sizes in ((graph.ndata["feat"], config.node_vocab_sizes),
                        (graph.edata["feat"], config.edge_vocab_sizes)):
        assert feat.dtype == torch.int64 and torch.all(feat < torch.tensor(sizes)) and torch.all(feat >= 0)
    model = build_model(config)
    from geaet_lab.benchmarking.inputs import loss_function

    assert torch.isfinite(loss_function("peptides-struct")(model(graph), targets))


@pytest.mark.slow
def test_run_benchmark_counts_graphs_not_nodes_for_node_level_presets():
    report = run_benchmark(ModelJob(preset="pattern", batch_sizes=(2,),
                                    timing=Timing(repeats=1, warmup=0, num_batches=1, threads=1, isolate=False)),
                           echo=None)
    (row,) = report["results"]
    assert row["num_parameters"] == 429_052
    assert row["nodes_per_batch"] > 40 * 2  # PATTERN graphs have 44-180 nodes; rates are per graph
    assert 0 < row["train_graphs_per_s"] < row["infer_graphs_per_s"]


def test_format_table_aligns_columns():
    lines = format_table(["a", "long header"], [[1, 2.5], [1000, None]]).splitlines()
    assert len({len(line) for line in lines}) == 1 and lines[3].endswith("-")


REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")


@pytest.mark.reference
def test_compare_with_reference_tiny():
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    from geaet_lab.benchmarking.against_pyg import compare_with_reference

    for preset in ("mnist", "pattern", "peptides-struct"):
        out = compare_with_reference(Reference(REF_DIR), preset, batch_sizes=(2,),
                                     timing=Timing(repeats=2, warmup=0, threads=1, num_batches=1, min_time=0.0))
        assert out["parity"]["checked_diff"] < 1e-5
        assert out["parity"]["params_ours"] == out["parity"]["params_reference"]
        (row,) = out["results"]
        for key in ("ref_train_graphs_per_s", "ref_infer_graphs_per_s", "ratio_train", "ratio_infer"):
            assert row[key] > 0


class _OwnModelAsReference(GEAET):
    """Our model behind the reference's calling convention: forward(batch) -> (pred, label)."""

    def forward(self, graph):
        return super().forward(graph), None


def _parity_pair():
    config = get_preset("mnist").model
    ours = build_model(config)
    reference = _OwnModelAsReference(config)
    reference.load_state_dict(ours.state_dict())
    graphs = synthetic_mnist_like(6, seed=3)
    graph = dgl.batch([graphs[i][0] for i in range(6)])
    return reference, ours, graph, torch.arange(6) % 10


def _nodes_reversed_in_each_graph(graph):
    """The same batch with every graph's nodes in reverse order: the same model on it sums in another order."""
    parts = [dgl.reorder_graph(g, node_permute_algo="custom", edge_permute_algo="src",
                               permute_config={"nodes_perm": torch.arange(g.num_nodes() - 1, -1, -1)})
             for g in dgl.unbatch(graph)]
    return dgl.batch(parts)


@pytest.mark.slow
def test_parity_check_passes_on_identical_models_in_float64_and_leaves_the_inputs_alone():
    reference, ours, graph, labels = _parity_pair()
    report = compare_models(reference, ours, graph, labels, graph)
    assert report.dtype == "float64" and report.checked_diff < 1e-12
    assert report.params_ours == report.params_reference == 113_155
    assert next(ours.parameters()).dtype == torch.float64  # the models are moved ...
    assert graph.ndata["feat"].dtype == torch.float32  # ... the caller's graph is not


@pytest.mark.slow
def test_summation_order_moves_float32_gradients_but_not_the_float64_check():
    """The reference's view of the batch with every graph's nodes reversed: the same function summed in
    another order, as another CPU's kernels would. In float32 that alone moves the gradients by 1e-6, and a
    gradient whose exact value is 0 (a bias before BatchNorm) by all of its own size, so no float32 measure
    tells it from an error; in float64 every difference stays 1000 times under the tolerance."""
    reference, ours, graph, labels = _parity_pair()
    reversed_input = _nodes_reversed_in_each_graph(graph)
    in_float32 = compare_models(copy.deepcopy(reference), copy.deepcopy(ours), graph, labels, reversed_input,
                                dtype=torch.float32)
    in_float64 = compare_models(reference, ours, graph, labels, reversed_input)
    assert in_float32.checked_diff > 1e-5 and in_float32.grad_max_abs_diff > 1e3 * in_float64.grad_max_abs_diff
    assert in_float64.checked_diff < 1e-8, in_float64


def test_parity_check_detects_a_planted_difference():
    reference, ours, graph, labels = _parity_pair()
    with torch.no_grad():
        reference.layers[2].external_model.node_U1.weight[0, 0] += 1e-4
    report = compare_models(reference, ours, graph, labels, graph)
    # a weight moved by 1e-4 moves outputs and gradient entries by less than 1e-5 (by 5e-6 at 1e-4 on one CPU, 5e-5
    # at 1e-3: the margin depends on the machine's arithmetic): the gradients' norms see it
    assert report.max_abs_diff < 1e-5 < report.checked_diff == report.grad_max_rel_diff
    assert report.as_dict()["checked_diff"] == report.checked_diff
    from geaet_lab.benchmarking.against_pyg import ParityError, check_parity_tolerance

    with pytest.raises(ParityError, match="differ by .* in float64"):
        check_parity_tolerance(report)
    check_parity_tolerance(report, force=True)


def test_gradient_parity_reads_each_gradient_relative_to_its_norm():
    from geaet_lab.benchmarking.parity import GRAD_NORM_FLOOR, grad_differences

    big = torch.full((4,), 1.0, dtype=torch.float64)
    small = torch.tensor([3e-6, -4e-6], dtype=torch.float64)  # a small gradient, all wrong in the other model
    worst, worst_name, rel, rel_name = grad_differences({"a": (big, big), "s": (-small, small)})
    assert worst < 1e-5  # the absolute measure misses it ...
    assert rel_name == "s" and rel == pytest.approx(2.0)  # ... the relative one does not
    # an exact zero gradient (a bias before BatchNorm) holds rounding noise in both: read against the floor
    noise = torch.tensor([1e-17, -3e-17], dtype=torch.float64)
    _, _, rel, _ = grad_differences({"a": (big, big), "z": (noise, -noise)})
    assert rel == pytest.approx(2 * noise.norm().item() / (GRAD_NORM_FLOOR * big.norm().item()))
    assert rel < 1e-9
