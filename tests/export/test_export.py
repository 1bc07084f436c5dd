"""Exported models equal the trained model in eval mode (float32, 1e-5), through the files that leave the stack.

For each covered preset: the exported module in eager mode, the TorchScript file through ``torch.jit.load`` and the
ONNX file through onnxruntime (when installed) give the outputs of ``model.eval()`` and of the folded inference
model that ``geaet-dgl predict`` runs, on two batches of different shapes read by one file (graphs of unequal
sizes, an isolated node, graphs without edges).
"""
import json

import dgl
import pytest
import torch

from geaet_dgl.export import ExportError, ExportedGEAET
from geaet_dgl.export.scatter import graph_index, segment_max, segment_softmax, segment_sum
from geaet_dgl.export.writer import METADATA_NAME, export_checkpoint, input_widths, read_metadata
from geaet_dgl.inference import fold_for_inference
from tests.export.cases import (CASES, FIRST_BATCH, SECOND_BATCH, exported_inputs, prepared, random_graphs,
                                save_case_checkpoint)

TOLERANCE = 1e-5


def _reference(model, graphs):
    batch = dgl.batch(graphs)
    with torch.no_grad():
        return model(batch), fold_for_inference(model)(batch)


@pytest.fixture(scope="module", params=sorted(CASES))
def exported_case(request, tmp_path_factory):
    """(case, run, model, TorchScript path, batches as (graphs, inputs) pairs)."""
    folder = tmp_path_factory.mktemp(request.param)
    run, model = save_case_checkpoint(request.param, folder / "best.pt")
    widths = input_widths(run)
    batches = []
    for seed, sizes in enumerate((FIRST_BATCH, SECOND_BATCH)):
        graphs = prepared(run, random_graphs(run.model, sizes, seed=seed))
        batches.append((graphs, exported_inputs(graphs, widths)))
    export_checkpoint(folder / "best.pt", "torchscript", folder / "model.pt")
    return request.param, run, model, folder, batches


def test_the_exported_module_and_its_torchscript_file_equal_the_model(exported_case):
    case, run, model, folder, batches = exported_case
    module = ExportedGEAET(model, None)
    loaded = torch.jit.load(str(folder / "model.pt"))
    for graphs, inputs in batches:
        want, folded = _reference(model, graphs)
        rows = len(graphs) if run.model.head != "node" else sum(g.num_nodes() for g in graphs)
        assert want.shape[0] == rows
        with torch.no_grad():
            eager, scripted = module(*inputs), loaded(*inputs)
        assert eager.shape == want.shape == scripted.shape
        assert (eager - want).abs().max() <= TOLERANCE, case
        assert (scripted - want).abs().max() <= TOLERANCE, case
        assert (scripted - folded).abs().max() <= TOLERANCE, case


def test_the_onnx_file_equals_the_model_on_two_batch_shapes(exported_case, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    case, run, model, folder, batches = exported_case
    result = export_checkpoint(folder / "best.pt", "onnx", tmp_path / "model.onnx")
    assert result["metadata"]["output"]["width"] == run.model.out_feats
    session = ort.InferenceSession(str(tmp_path / "model.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert json.loads(session.get_modelmeta().custom_metadata_map[METADATA_NAME]) == result["metadata"]
    for graphs, inputs in batches:
        want, _ = _reference(model, graphs)
        feed = dict(zip(("x", "edge_index", "edge_attr", "node_counts", "lap_pe", "lap_eigval", "rwse"), inputs))
        (got,) = session.run(None, {name: feed[name].numpy() for name in names})
        assert got.shape == tuple(want.shape)
        assert abs(torch.from_numpy(got) - want).max() <= TOLERANCE, case


def test_the_metadata_says_what_to_compute(exported_case):
    case, run, model, folder, _ = exported_case
    meta = read_metadata(folder / "model.pt")
    assert meta["batch_size"] == run.train.batch_size
    assert meta["output"]["level"] == ("node" if run.model.head == "node" else "graph")
    encodings = meta["encodings"]
    assert encodings["lap_pe_k"] == (run.model.pe_k if run.model.pe in ("eslappe", "lappe") else 0)
    assert encodings["rwse_k"] == (run.model.pe_k if run.model.pe == "rwse" else 0)


def test_the_scatter_ops_equal_dense_computations():
    counts = torch.tensor([3, 0, 2, 1])
    index = graph_index(counts, 6)
    assert index.tolist() == [0, 0, 0, 2, 2, 3]
    values = torch.randn(6, 4)
    sums = torch.stack([values[index == b].sum(0) for b in range(4)])
    assert torch.allclose(segment_sum(values, index, 4), sums)
    maxima = torch.stack([values[index == b].amax(0) if (index == b).any() else torch.zeros(4) for b in range(4)])
    assert torch.equal(segment_max(values, index, 4), maxima)
    soft = segment_softmax(values, index, 4)
    for b in (0, 2, 3):
        assert torch.allclose(soft[index == b], torch.softmax(values[index == b], dim=0))


@pytest.mark.parametrize("overrides, named", [
    ({"model.mpnn": "gat"}, "model.mpnn=gat"),
    ({"model.attention": "performer"}, "model.attention=performer"),
    ({"model.pe": "signnet"}, "model.pe=signnet"),
])
def test_what_is_not_covered_is_refused_in_one_line(overrides, named, tmp_path):
    from geaet_dgl.config import make_run_config
    from geaet_dgl.models import build_model

    run = make_run_config("mnist", overrides={"model.hidden_dim": 16, "model.num_layers": 1, **overrides})
    with pytest.raises(ExportError) as info:
        ExportedGEAET(build_model(run.model).eval())
    message = str(info.value)
    assert "\n" not in message and message.startswith("cannot export") and named in message


@pytest.mark.parametrize("transform", [
    {"row_normalize": {}},
    {"standardize": {"node_mean": [0.5, -1.0, 2.0], "node_std": [2.0, 0.5, 1.5], "edge_mean": [0.3],
                     "edge_std": [0.7]}},
])
def test_the_runs_input_transform_is_applied_inside(transform, tmp_path):
    """The exported model reads the features as files store them and transforms them as ``predict`` does."""
    from geaet_dgl.data.input_transform import apply_input_transform

    run, model = save_case_checkpoint("mnist", tmp_path / "best.pt")
    raw = prepared(run, random_graphs(run.model, FIRST_BATCH, seed=2))
    inputs = exported_inputs(raw, input_widths(run))
    apply_input_transform(raw, transform)
    want, _ = _reference(model, raw)
    scripted = torch.jit.script(ExportedGEAET(model, transform))
    with torch.no_grad():
        assert (scripted(*inputs) - want).abs().max() <= TOLERANCE
        untransformed = ExportedGEAET(model, None)(*inputs)
    assert (untransformed - want).abs().max() > 1e-3  # the transform matters on these graphs
