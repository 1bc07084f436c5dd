"""The parity checks that test_export.py (the presets) and test_export_menu.py (the rest of the layer menu) run per case.

A case is exported once to TorchScript; the exported module in eager mode, the file through ``torch.jit.load`` and
an ONNX file through onnxruntime must give ``model.eval()``'s outputs (and the folded inference model's) to 1e-5
on two batches of different shapes (graphs of unequal sizes, an isolated node, graphs without edges).
"""
import json
from typing import NamedTuple

import dgl
import pytest
import torch

from geaet_dgl.export import INPUT_NAMES, ExportedGEAET
from geaet_dgl.export.writer import METADATA_NAME, export_checkpoint, input_widths
from geaet_dgl.inference import fold_for_inference
from tests.export.cases import FIRST_BATCH, SECOND_BATCH, exported_inputs, prepared, random_graphs, \
    save_case_checkpoint

TOLERANCE = 1e-5


class ExportedCase(NamedTuple):
    name: str
    run: object
    model: torch.nn.Module
    folder: object
    batches: list  # (graphs, exported inputs) pairs


def reference_outputs(model, graphs):
    """``model.eval()``'s and the folded inference model's outputs on ``graphs`` batched with DGL."""
    batch = dgl.batch(graphs)
    with torch.no_grad():
        return model(batch), fold_for_inference(model)(batch)


def build_case(name: str, folder) -> ExportedCase:
    """Checkpoint, two batches and the TorchScript file ``folder/model.pt`` of case ``name``."""
    run, model = save_case_checkpoint(name, folder / "best.pt")
    widths = input_widths(run)
    batches = []
    for seed, sizes in enumerate((FIRST_BATCH, SECOND_BATCH)):
        graphs = prepared(run, random_graphs(run.model, sizes, seed=seed))
        batches.append((graphs, exported_inputs(graphs, widths)))
    export_checkpoint(folder / "best.pt", "torchscript", folder / "model.pt")
    return ExportedCase(name, run, model, folder, batches)


def assert_torchscript_parity(case: ExportedCase) -> None:
    module = ExportedGEAET(case.model, None)
    loaded = torch.jit.load(str(case.folder / "model.pt"))
    for graphs, inputs in case.batches:
        want, folded = reference_outputs(case.model, graphs)
        rows = len(graphs) if case.run.model.head != "node" else sum(g.num_nodes() for g in graphs)
        assert want.shape[0] == rows
        with torch.no_grad():
            eager, scripted = module(*inputs), loaded(*inputs)
        assert eager.shape == want.shape == scripted.shape
        assert (eager - want).abs().max() <= TOLERANCE, case.name
        assert (scripted - want).abs().max() <= TOLERANCE, case.name
        assert (scripted - folded).abs().max() <= TOLERANCE, case.name


def assert_onnx_parity(case: ExportedCase, folder) -> None:
    ort = pytest.importorskip("onnxruntime")
    result = export_checkpoint(case.folder / "best.pt", "onnx", folder / "model.onnx")
    assert result["metadata"]["output"]["width"] == case.run.model.out_feats
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert json.loads(session.get_modelmeta().custom_metadata_map[METADATA_NAME]) == result["metadata"]
    for graphs, inputs in case.batches:
        want, _ = reference_outputs(case.model, graphs)
        feed = dict(zip(INPUT_NAMES, inputs))
        (got,) = session.run(None, {name: feed[name].numpy() for name in names})
        assert got.shape == tuple(want.shape)
        assert abs(torch.from_numpy(got) - want).max() <= TOLERANCE, case.name
