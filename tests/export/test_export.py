"""Exported models equal the trained model in eval mode (float32, 1e-5), through the files that leave the stack.

For each covered preset: the exported module in eager mode, the TorchScript file through ``torch.jit.load`` and the
ONNX file through onnxruntime (when installed) give the outputs of ``model.eval()`` and of the folded inference
model that ``geaet-dgl predict`` runs, on two batches of different shapes read by one file (graphs of unequal
sizes, an isolated node, graphs without edges).
"""
import pytest
import torch

from geaet_dgl.export import ExportError, ExportedGEAET
from geaet_dgl.export.scatter import graph_index, segment_max, segment_softmax, segment_sum
from geaet_dgl.export.writer import input_widths, read_metadata
from tests.export.cases import CASES, FIRST_BATCH, exported_inputs, prepared, random_graphs, save_case_checkpoint
from tests.export.parity import (TOLERANCE, assert_onnx_parity, assert_torchscript_parity, build_case,
                                 reference_outputs)


@pytest.fixture(scope="module", params=sorted(CASES))
def exported_case(request, tmp_path_factory):
    return build_case(request.param, tmp_path_factory.mktemp(request.param))


def test_the_exported_module_and_its_torchscript_file_equal_the_model(exported_case):
    assert_torchscript_parity(exported_case)


@pytest.mark.slow
def test_the_onnx_file_equals_the_model_on_two_batch_shapes(exported_case, tmp_path):
    assert_onnx_parity(exported_case, tmp_path)


def test_the_metadata_says_what_to_compute(exported_case):
    run = exported_case.run
    meta = read_metadata(exported_case.folder / "model.pt")
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


@pytest.mark.parametrize("preset, overrides, named", [
    ("mnist", {"model.graphormer.enable": True, "model.graphormer.graph_token": True}, "model.graphormer.graph_token"),
    ("mnist", {"model.pe": "hkdiagse"}, "model.pe=hkdiagse"),
    ("pcqm-contact", {"model.hidden_dim": 32}, "model.head=link"),
])
def test_what_is_not_covered_is_refused_in_one_line(preset, overrides, named):
    from geaet_dgl.training import make_run_config
    from geaet_dgl.models import build_model

    run = make_run_config(preset, overrides={"model.hidden_dim": 16, "model.num_layers": 1, **overrides})
    with pytest.raises(ExportError) as info:
        ExportedGEAET(build_model(run.model).eval())
    message = str(info.value)
    assert "\n" not in message and message.startswith("cannot export") and named in message


@pytest.mark.parametrize("transform", [
    {"row_normalize": {}},
    {"row_normalize": {}, "propagate": {"hops": 2}},
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
    want, _ = reference_outputs(model, raw)
    scripted = torch.jit.script(ExportedGEAET(model, transform))
    with torch.no_grad():
        assert (scripted(*inputs) - want).abs().max() <= TOLERANCE
        untransformed = ExportedGEAET(model, None)(*inputs)
    assert (untransformed - want).abs().max() > 1e-3  # the transform matters on these graphs


def test_geanet_rows_whose_weights_underflow_stay_finite():
    """Where every slot of a row underflows in the softmax over the batch's rows, the library's (and the reference's)
    two-step double normalisation divides 0 by 0; the exported one (log-sum-exp form) gives the float64 value."""
    from geaet_dgl.export.geanet import double_normalize as exported
    from geaet_dgl.nn.external_attention import double_normalize as library

    scores = torch.tensor([[0.0, 0.0, 1.0, 2.0], [-200.0, -150.0, -120.0, -130.0], [5.0, -3.0, 0.5, 0.0]])
    heads = 1
    assert torch.isnan(library(scores.view(3, heads, 4).clone(), None)).any()  # row 1: 0 / 0
    want = torch.softmax(scores.double() - torch.logsumexp(scores.double(), dim=0), dim=-1)
    got = exported(scores, heads, torch.zeros(3, dtype=torch.long), 1, per_graph=False)
    assert torch.isfinite(got).all() and torch.allclose(got.double(), want, atol=1e-6)
