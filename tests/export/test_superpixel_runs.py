"""VOC / COCO-shaped runs: their files store raw superpixel features, their loaders standardise them and the runs
record that transform (``data.input_transform``); the exported file carries it (the means and standard deviations
as buffers), so ``geaet-dgl export`` + ``examples/predict_exported.py`` on the raw features equal ``geaet-dgl
predict`` on the same file, to 1e-5."""
import subprocess
import sys

import dgl
import pytest
import torch

from geaet_dgl.training import make_run_config
from geaet_dgl.data.lrgb.voc_coco import SUPERPIXEL_TASKS, input_transform
from geaet_dgl.export import ExportedGEAET
from geaet_dgl.export.graphs_npz import write_graphs_npz
from geaet_dgl.export.writer import export_checkpoint, input_widths, read_metadata
from geaet_dgl.scoring import predict_file
from tests.export.cases import FIRST_BATCH, exported_inputs, prepared, random_graphs, save_run_checkpoint
from tests.export.test_example import EXAMPLE, _has, assert_same_predictions, read_rows, without_dgl

TOLERANCE = 1e-5
SMALL = {"model.hidden_dim": 16, "model.num_layers": 2}


def superpixel_checkpoint(name: str, path, **more):
    """A checkpoint of the ``name`` preset at small width, recording its loader's standardisation as a run does."""
    run = make_run_config(name, preset=name, overrides={**SMALL, **more})
    run.data.input_transform = input_transform(SUPERPIXEL_TASKS[name])
    return run, save_run_checkpoint(run, path)


def raw_superpixel_graphs(name: str, model_config, sizes, seed: int):
    """Graphs with features at the scale the dataset's files store them (means and spreads of the task's statistics:
    pixel positions near 200), so the standardisation moves them far."""
    task = SUPERPIXEL_TASKS[name]
    graphs = random_graphs(model_config, sizes, seed=seed)
    for g in graphs:
        g.ndata["feat"] = g.ndata["feat"] * torch.tensor(task.node_std) + torch.tensor(task.node_mean)
        g.edata["feat"] = g.edata["feat"] * torch.tensor(task.edge_std) + torch.tensor(task.edge_mean)
    return graphs


@pytest.mark.parametrize("name", ["voc", pytest.param("coco", marks=pytest.mark.slow)])
def test_the_exported_model_standardises_the_raw_features_inside(name, tmp_path):
    run, model = superpixel_checkpoint(name, tmp_path / "best.pt")
    raw = raw_superpixel_graphs(name, run.model, FIRST_BATCH, seed=1)
    inputs = exported_inputs(raw, input_widths(run))  # the raw features, as the example reads them
    standardised = prepared(run, raw_superpixel_graphs(name, run.model, FIRST_BATCH, seed=1))  # what predict feeds
    with torch.no_grad():
        want = model(dgl.batch(standardised))
        module = torch.jit.script(ExportedGEAET(model, run.data.input_transform))
        got = module(*inputs)
        untransformed = ExportedGEAET(model)(*inputs)
    assert module.standardize and torch.allclose(module.node_mean, torch.tensor(SUPERPIXEL_TASKS[name].node_mean))
    assert (got - want).abs().max() <= TOLERANCE
    assert (untransformed - want).abs().max() > 1e-2  # the raw features are far from the standardised ones


@pytest.mark.slow
@pytest.mark.parametrize("name", ["voc", "coco"])
def test_export_and_the_example_match_predict_on_superpixel_runs(name, tmp_path):
    """Through the harness: ``export`` of the checkpoint, the example (no dgl, no geaet_dgl) on the raw graphs, and
    ``predict`` on the same graphs as a DGL file write the same rows (several batches: batch size 2 of 5 graphs)."""
    run, _ = superpixel_checkpoint(name, tmp_path / "best.pt", **{"train.batch_size": 2})
    graphs = raw_superpixel_graphs(name, run.model, ((9, 30), (1, 0), (6, 14), (12, 40), (4, 0)), seed=2)
    dgl.save_graphs(str(tmp_path / "graphs.bin"), graphs)
    write_graphs_npz(graphs, tmp_path / "graphs.npz")
    predict_file(tmp_path / "best.pt", tmp_path / "graphs.bin", tmp_path / "theirs.csv", progress=False)
    theirs = read_rows(tmp_path / "theirs.csv")
    assert len(theirs) == 1 + 9 + 1 + 6 + 12 + 4  # one row per node
    env = without_dgl(tmp_path)
    for fmt in ["torchscript"] + (["onnx"] if _has("onnxruntime") else []):
        model_file = tmp_path / f"model.{fmt}"
        export_checkpoint(tmp_path / "best.pt", fmt, model_file)
        assert read_metadata(model_file)["dataset"] == name
        out = tmp_path / f"ours-{fmt}.csv"
        done = subprocess.run([sys.executable, str(EXAMPLE), str(model_file), str(tmp_path / "graphs.npz"),
                               "--out", str(out)], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert_same_predictions(read_rows(out), theirs)
