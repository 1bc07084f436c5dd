"""Training-step breakdown: the branch hooks find each branch, the parts add up, the report shows them."""
import os

import dgl
import pytest
import torch

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.breakdown import PARTS, BranchTimer, measure_breakdown
from geaet_lab.benchmarking.jobs import ModelJob, Reference, Timing
from geaet_dgl.config import GEANetConfig, ModelConfig
from geaet_dgl.data import synthetic_mnist_like
from geaet_dgl.models import build_model

REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")
GRAPHGPS_DIR = os.environ.get("GRAPHGPS_DIR", "/work/GraphGPS")


def _batch(n=3):
    graphs = synthetic_mnist_like(n, seed=1)
    return dgl.batch([graphs[i][0] for i in range(n)])


def test_branch_timer_times_the_branches_that_exist_and_removes_its_hooks():
    config = ModelConfig(node_in_feats=3, edge_in_feats=1, out_feats=10, pe="none", hidden_dim=8, num_layers=2,
                         mpnn="gatedgcn", attention="none", geanet=GEANetConfig(num_heads=2, unit_size=4))
    model = build_model(config)
    timer = BranchTimer(model, torch.device("cpu"))
    model(_batch())
    assert timer.totals["mpnn"] > 0 and timer.totals["geanet"] > 0
    assert timer.totals["attention"] == 0.0  # no self-attention in this model
    timer.remove()
    before = dict(timer.totals)
    model(_batch())
    assert timer.totals == before
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


@pytest.mark.slow
def test_parts_add_up_to_the_step():
    out = measure_breakdown("mnist", batch_size=2, timing=Timing(threads=1, repeats=2, warmup=1, num_batches=1))
    ours = out["ours"]
    assert set(ours) == set(PARTS) and "ref" not in out
    assert all(ours[k] > 0 for k in ("forward", "mpnn", "attention", "geanet", "backward", "optimizer"))
    # Medians of two samples are means, so the parts still sum exactly.
    assert ours["forward"] + ours["backward"] + ours["optimizer"] == pytest.approx(ours["step"], rel=1e-9)
    branches = ours["mpnn"] + ours["attention"] + ours["geanet"]
    assert branches + ours["other_forward"] == pytest.approx(ours["forward"], rel=1e-9)
    assert branches < ours["forward"]


@pytest.mark.slow
def test_run_benchmark_reports_the_breakdown():
    lines = []
    job = ModelJob(batch_sizes=(2,), breakdown=True,
                   timing=Timing(repeats=1, warmup=0, num_batches=1, threads=1, isolate=False))
    report = run_benchmark(job, echo=lines.append)
    (entry,) = report["breakdown"]
    assert entry["batch_size"] == 2 and entry["ours"]["step"] > 0
    text = "\n".join(lines)
    assert "Where a training step's time goes" in text and "of which GEANet" in text


@pytest.mark.reference
def test_breakdown_beside_the_reference():
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")
    out = measure_breakdown("mnist", batch_size=2, timing=Timing(threads=1, repeats=2, warmup=1, num_batches=1),
                            reference=Reference(REF_DIR))
    for side in ("ours", "ref"):
        assert all(out[side][k] > 0 for k in ("mpnn", "attention", "geanet", "backward", "optimizer")), side


@pytest.mark.reference
def test_breakdown_of_a_config_file_beside_the_reference_feeds_the_reference_the_files_encodings():
    """A file's reference batches carry its encodings and edge types as the throughput table's do
    (ZINC's bond types as one column: plain to_pyg_batch made the reference's BatchNorm fail)."""
    pytest.importorskip("torch_geometric")
    config = os.path.join(GRAPHGPS_DIR, "configs", "GPS", "zinc-GPSwGraphormer.yaml")
    if not os.path.isdir(REF_DIR) or not os.path.isfile(config):
        pytest.skip(f"no reference checkout at {REF_DIR} or no {config} (set GEAET_REF_DIR, GRAPHGPS_DIR)")
    out = measure_breakdown(batch_size=2, timing=Timing(threads=1, repeats=1, warmup=0, num_batches=1),
                            reference=Reference(REF_DIR, config_file=config))
    for side in ("ours", "ref"):
        assert all(out[side][k] > 0 for k in ("mpnn", "attention", "backward", "optimizer")), side
