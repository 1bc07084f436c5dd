"""GAT, PNA, GENConv and Performer checkpoints: the reference's parameter names both ways, and what cannot export."""
import dataclasses

import pytest

from geaet_dgl.interop.reference_checkpoint import CheckpointError, exportable
from geaet_dgl.interop.reference_names import ours_to_reference, reference_to_ours
from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset


@pytest.mark.parametrize("mpnn, attention, names", [
    ("gat", "performer", ["layers.0.local_model.att_edge", "layers.0.local_model.lin_edge.weight",
                          "layers.0.global_model.fast_attention.projection_matrix",
                          "layers.0.global_model.to_q.weight"]),
    ("pna", "none", ["layers.0.local_model.aggr_module.avg_deg_lin", "layers.0.local_model.pre_nns.0.0.weight",
                     "layers.0.local_model.edge_encoder.weight"]),
    ("genconv", "transformer", ["layers.0.local_model.mlp.1.running_var", "layers.0.local_model.mlp.4.weight"]),
])
def test_reference_names_round_trip(mpnn, attention, names):
    config = dataclasses.replace(get_preset("mnist").model, mpnn=mpnn, attention=attention, pe="none",
                                 performer_pad_keys=True, num_layers=1)
    state = build_model(config).state_dict()
    theirs = ours_to_reference(state, config)
    for name in names:  # PyG's and performer_pytorch's own names under the reference's layer
        assert name in theirs
    assert set(reference_to_ours(theirs)) == set(state)
    exportable(config)


def test_what_the_reference_cannot_compute_does_not_export():
    base = get_preset("mnist").model
    with pytest.raises(CheckpointError, match="performer_pad_keys=false"):
        exportable(dataclasses.replace(base, attention="performer"))
    with pytest.raises(CheckpointError, match="model.pe=eslappe with mpnn=gat"):
        exportable(dataclasses.replace(base, mpnn="gat"))
