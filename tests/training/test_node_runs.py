"""Training on one graph with node masks: samplers against full and logistic regression, masked loss,
exact resume after SIGKILL, and eval / predict of the checkpoint on the whole graph."""
import json
import os
import signal
import subprocess

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli

from geaet_dgl.data.generated.node_graphs import knn_graph, planted_partition, two_circles, with_masks
from geaet_lab.studies.node_samplers import compare_samplers
from geaet_dgl.training import load_checkpoint, resume, train
from geaet_dgl.training import make_run_config
from geaet_dgl.scoring.predict import read_predictions

from .test_trainer import _wait_for_checkpoint
from .tiny import SUBPROCESS_ENV, strip_timing, subprocess_command

#: A small GEAET (GatedGCN + GEANet with BatchNorm and residuals, no self-attention, light dropout): 5.7k
#: parameters. Pinned here (the node preset's recipe is regularised for sparse labels: docs/node-classification.md).
SMALL = {"train.epochs": 12, "train.warmup_epochs": 0, "model.pe": "none", "model.attention": "none",
         "train.batch_size": 4, "data.num_parts": 8, "model.num_layers": 2, "model.hidden_dim": 16,
         "model.geanet.unit_size": 4, "train.lr": 0.02, "model.mpnn": "gatedgcn", "model.norm": "batch",
         "model.residual": True, "model.use_ffn": True, "model.head_layers": 2, "model.input_dropout": 0.0,
         "model.feature_dropout": 0.0, "model.local_dropout": 0.1, "model.external_dropout": 0.1,
         "model.ffn_dropout": 0.1, "train.weight_decay": 1e-5, "model.input_gcn_weight": 0.0}


def _save(graph, path):
    dgl.save_graphs(str(path), [graph])
    return path


@pytest.mark.parametrize("kind", ["planted partition", "kNN graph of two circles"])
@pytest.mark.slow
def test_sampled_training_matches_full_and_beats_logistic_regression(tmp_path, kind):
    if kind == "planted partition":  # the features hint at the block, the edges tell it
        graph = planted_partition(300, 3, p_in=0.08, p_out=0.004, seed=0)
    else:  # no line separates the circles
        points, label = two_circles(300, noise=0.1, seed=0)
        graph = with_masks(knn_graph(points, 8), points, label)
    rows = compare_samplers(_save(graph, tmp_path / "g.bin"), tmp_path / "runs", SMALL)
    full, baseline = rows["full"]["test_metric"], rows["logistic regression"]["test_metric"]
    for sampler in ("cluster", "random"):
        assert rows[sampler]["test_metric"] >= full - 0.01, rows
    assert min(rows[s]["test_metric"] for s in ("full", "cluster", "random")) > baseline + 0.1, rows


@pytest.mark.slow
def test_loss_counts_only_the_training_nodes(tmp_path):
    graph = planted_partition(200, 3, p_in=0.08, p_out=0.004, seed=1)
    other = graph.clone()
    outside = ~graph.ndata["train_mask"]
    other.ndata["label"] = torch.where(outside, (graph.ndata["label"] + 1) % 3, graph.ndata["label"])
    weights = []
    for name, g in (("a", graph), ("b", other)):
        run = make_run_config(str(_save(g, tmp_path / f"{name}.bin")),
                              overrides={**SMALL, "train.epochs": 2, "data.sampler": "random"}, threads=1)
        summary = train(run, tmp_path / name, progress=False)
        weights.append((load_checkpoint(tmp_path / name / "last.pt")["model"], summary))
    (first, summary_a), (second, summary_b) = weights
    assert all(torch.equal(first[key], second[key]) for key in first)  # the other labels were never read
    assert summary_a["train_metric"] == summary_b["train_metric"]
    assert summary_a["test_metric"] != summary_b["test_metric"]  # but they are what val/test score against


@pytest.mark.slow
def test_sampled_run_resumes_exactly_after_sigkill(tmp_path):
    path = _save(planted_partition(200, 3, p_in=0.08, p_out=0.004, seed=2), tmp_path / "g.bin")
    settings = {**SMALL, "train.epochs": 6, "data.sampler": "random", "model.num_layers": 1}
    reference = tmp_path / "uninterrupted"
    run = make_run_config(str(path), overrides=settings, threads=1, checkpoint_every=1)
    train(run, reference, progress=False)
    killed = tmp_path / "killed"
    args = ["train", "--dataset", path, "--out", killed, "--no-progress", "--checkpoint-every", 1, "--threads", 1]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    process = subprocess.Popen(subprocess_command(args), env={**os.environ, **SUBPROCESS_ENV},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = _wait_for_checkpoint(process, killed / "last.pt", min_global_step=5)
    process.kill()
    process.communicate()
    assert process.returncode == -signal.SIGKILL and state["global_step"] < 12

    resume(killed, progress=False)
    a, b = load_checkpoint(reference / "last.pt"), load_checkpoint(killed / "last.pt")
    assert a["global_step"] == b["global_step"] == 12
    assert all(torch.equal(a["model"][key], b["model"][key]) for key in a["model"])
    assert strip_timing(a["history"]) == strip_timing(b["history"])


def _cli(*args):
    result = CliRunner().invoke(cli.main, [str(a) for a in args])
    return result


@pytest.mark.slow
def test_cli_train_eval_predict_on_one_graph(tmp_path):
    graph = planted_partition(200, 3, p_in=0.08, p_out=0.004, seed=3)
    path = _save(graph, tmp_path / "g.bin")
    run_dir = tmp_path / "run"
    settings = [a for key, value in SMALL.items() if key != "train.epochs" for a in ("--set", f"{key}={value}")]
    trained = _cli("train", "--dataset", path, "--sampler", "cluster", "--epochs", 3, "--out", run_dir,
                   "--no-progress", "--threads", 1, *settings)
    assert trained.exit_code == 0, trained.output
    config = json.loads((run_dir / "config.json").read_text())
    assert config["preset"] == "geaet-node" and config["data"]["sampler"] == "cluster"
    summary = json.loads((run_dir / "summary.json").read_text())

    scored = _cli("eval", "--checkpoint", run_dir / "best.pt", "--split", "test", "--json")
    assert scored.exit_code == 0, scored.output
    result = json.loads(scored.stdout.strip().splitlines()[-1])
    assert result["metric"] == summary["test_metric"] and result["metric_name"] == "accuracy"

    everything = _cli("predict", "--checkpoint", run_dir / "best.pt", "--graphs", path, "--out", tmp_path / "a.csv")
    assert everything.exit_code == 0 and "every node scored with its whole graph" in everything.stdout
    rows = read_predictions(tmp_path / "a.csv")
    assert [int(r["node"]) for r in rows] == list(range(200))
    test_nodes = graph.ndata["test_mask"].nonzero().squeeze(1).tolist()
    only_test = _cli("predict", "--checkpoint", run_dir / "best.pt", "--graphs", path, "--out", tmp_path / "t.json",
                     "--json", "--nodes", "test")
    assert only_test.exit_code == 0, only_test.output
    lines = [json.loads(line) for line in (tmp_path / "t.json").read_text().splitlines()]
    assert [row["node"] for row in lines] == test_nodes
    predicted = torch.tensor([row["predicted"] for row in lines])
    accuracy = (predicted == graph.ndata["label"][test_nodes]).double().mean().item()
    assert accuracy == pytest.approx(summary["test_metric"])

    graph.ndata["val_mask"] = graph.ndata["val_mask"] | graph.ndata["test_mask"]
    bad = _cli("train", "--dataset", _save(graph, tmp_path / "bad.bin"), "--out", tmp_path / "bad")
    lines = bad.stderr.strip().splitlines()
    assert bad.exit_code != 0 and len(lines) == 1
    assert lines[0].startswith("error: ") and "is in both val_mask and test_mask" in lines[0]


@pytest.mark.slow
def test_float_labels_train_a_node_regression(tmp_path):
    graph = planted_partition(150, 3, p_in=0.08, p_out=0.004, seed=4)
    graph.ndata["label"] = graph.ndata["label"].float() * 2.0 - 1.0  # a float target per node
    run = make_run_config(str(_save(graph, tmp_path / "r.bin")), overrides={**SMALL, "train.epochs": 2}, threads=1)
    assert (run.data.task, run.train.loss, run.train.metric, run.model.out_feats) == \
        ("node-regression", "l1", "mae", 1)
    summary = train(run, tmp_path / "run", progress=False)
    assert summary["metric_name"] == "mae" and 0 <= summary["test_metric"] < 2


def test_predict_nodes_needs_a_mask_of_one_graph(tmp_path):
    from geaet_dgl.config import ConfigError
    from geaet_dgl.data import DataError
    from geaet_dgl.scoring.predict import node_selection

    graph = planted_partition(30, 3, p_in=0.2, p_out=0.02, seed=5)
    assert torch.equal(node_selection([graph], "g.bin", "val", "node"), graph.ndata["val_mask"])
    with pytest.raises(ConfigError, match="this checkpoint predicts whole graphs; drop --nodes"):
        node_selection([graph], "g.bin", "val", "graph")
    with pytest.raises(DataError, match="g.bin holds 2 graphs; --nodes reads the node masks of a file with one"):
        node_selection([graph, graph], "g.bin", "val", "node")
    graph.ndata.pop("test_mask")
    with pytest.raises(DataError, match=r"the graph has no ndata\['test_mask'\]; --nodes test keeps"):
        node_selection([graph], "g.bin", "test", "node")


@pytest.mark.slow
def test_predict_nodes_refuses_the_runs_own_file_changed_since_training(tmp_path):
    graph = planted_partition(120, 3, p_in=0.1, p_out=0.005, seed=4)
    path = _save(graph, tmp_path / "g.bin")
    run_dir = tmp_path / "run"
    settings = [a for key, value in SMALL.items() if key != "train.epochs" for a in ("--set", f"{key}={value}")]
    trained = _cli("train", "--dataset", path, "--epochs", 1, "--out", run_dir, "--no-progress", "--threads", 1,
                   *settings)
    assert trained.exit_code == 0, trained.output
    predict = ["predict", "--checkpoint", run_dir / "best.pt", "--graphs", path, "--nodes", "test"]
    assert _cli(*predict, "--out", tmp_path / "before.csv").exit_code == 0
    # Another file with the same masks is new data to score, not the run's split: never refused.
    copy = _save(graph, tmp_path / "copy.bin")
    assert _cli("predict", "--checkpoint", run_dir / "best.pt", "--graphs", copy, "--nodes", "test",
                "--out", tmp_path / "copy.csv").exit_code == 0

    moved = graph.ndata["val_mask"].nonzero()[0, 0]  # a validation node moves into the test mask
    graph.ndata["val_mask"][moved], graph.ndata["test_mask"][moved] = False, True
    _save(graph, path)
    refused = _cli(*predict, "--out", tmp_path / "after.csv")
    lines = refused.stderr.strip().splitlines()
    assert refused.exit_code != 0 and len(lines) == 1, refused.output
    assert lines[0].startswith("error: graph file") and "changed since the run was trained" in lines[0]
    assert "--allow-changed-data" in lines[0] and not (tmp_path / "after.csv").exists()

    allowed = _cli(*predict, "--out", tmp_path / "after.csv", "--allow-changed-data")
    assert allowed.exit_code == 0, allowed.output
    rows = read_predictions(tmp_path / "after.csv")
    assert [int(r["node"]) for r in rows] == graph.ndata["test_mask"].nonzero().squeeze(1).tolist()


@pytest.mark.slow
def test_cluster_defaults_learn_from_few_labels(tmp_path):
    """4,000 nodes, 40 labelled: the default parts are 2 (a batch of 4 parts holds every label), not 4 of ~1,000
    nodes (~10 labels a step); the geaet-node defaults with --sampler cluster learn what the graph tells."""
    graph = planted_partition(4000, 3, p_in=0.005, p_out=0.0005, signal=0.3, seed=4)
    order = torch.randperm(4000, generator=torch.Generator().manual_seed(0))
    for name, chosen in (("train_mask", order[:40]), ("val_mask", order[40:140]), ("test_mask", order[140:])):
        graph.ndata[name] = torch.zeros(4000, dtype=torch.bool)
        graph.ndata[name][chosen] = True
    path = _save(graph, tmp_path / "sparse.bin")
    rows = compare_samplers(path, tmp_path / "runs", {"train.epochs": 15}, samplers=("cluster",))
    assert [p.name.split("-")[2] for p in (tmp_path / "geaet_cache").glob("sparse-metis-*.pkl")] == ["2"]
    assert rows["cluster"]["test_metric"] > rows["logistic regression"]["test_metric"] + 0.2, rows
