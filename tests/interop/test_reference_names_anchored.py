"""The reference-checkpoint name table anchored by the reference itself.

The round trip ours -> export -> import used one name table both ways, so a wrong or swapped entry
cancelled out. Here a checkpoint written by the real reference (graphgym's ``save_ckpt`` of its GEAET
network for a width-8 MNIST config, fixtures/reference-tiny, made by its make.py) is imported and our
model must compute the reference's own outputs on the same graphs.
"""

import dgl
import torch

from geaet_dgl.interop.reference_checkpoint import import_reference
from geaet_dgl.models import build_model
from geaet_dgl.config import RunConfig
from geaet_dgl.training import load_checkpoint
from tests.fixtures import FIXTURES

TINY = FIXTURES / "reference-tiny"


def test_a_real_reference_checkpoint_computes_the_references_outputs(tmp_path):
    result = import_reference(TINY / "ckpt" / "3.ckpt", TINY / "mnist-tiny.yaml", tmp_path / "run")
    state = load_checkpoint(result["checkpoint"])
    model = build_model(RunConfig.from_dict(state["run_config"]).model)
    model.load_state_dict(state["model"])
    graphs, _ = dgl.load_graphs(str(TINY / "batch.bin"))
    with torch.no_grad():
        ours = model.eval()(dgl.batch(graphs))
    expected = torch.load(TINY / "outputs.pt", weights_only=True)
    assert result["params"] == 2404  # the reference's parameter count (make.py prints it)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-5)
