"""Node settings are never dropped without a word: a raw-feature branch setting with no effect is refused in one
line, and integer node features that turn the preset's branch off say so in the log."""
import logging

import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError, RunConfig
from geaet_dgl.training import make_run_config
from geaet_dgl.models import build_model


def _node_file(tmp_path, integer: bool):
    n = 30
    g = dgl.graph((torch.arange(n), (torch.arange(n) + 1) % n), num_nodes=n)
    g.ndata["feat"] = torch.randint(0, 4, (n, 3)) if integer else torch.randn(n, 3)
    g.ndata["label"] = torch.arange(n) % 3
    for i, name in enumerate(("train_mask", "val_mask", "test_mask")):
        g.ndata[name] = torch.arange(n) % 3 == i
    path = tmp_path / ("ints.bin" if integer else "floats.bin")
    dgl.save_graphs(str(path), [g])
    return str(path)


@pytest.mark.parametrize("overrides, message", [
    ({"model.input_branch_hops": 2},
     "model.input_branch_hops=2 is read by model.input_branch=hops or appnp only, but input_branch=gcn"),
    ({"model.input_branch": "hops", "model.input_gcn_weight": 0.0},
     "model.input_branch=hops has no effect: model.input_gcn_weight=0.0 builds no raw-feature branch"),
    ({"model.input_branch_mix": "logits", "model.input_branch_hops": 3, "model.input_branch": "hops",
      "model.input_gcn_weight": 0.0},
     "model.input_branch=hops and model.input_branch_hops=3 and model.input_branch_mix=logits have no effect: "
     "model.input_gcn_weight=0.0 builds no raw-feature branch"),
])
@pytest.mark.slow
def test_branch_settings_without_effect_are_refused(tmp_path, overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_run_config(_node_file(tmp_path, integer=False), "geaet-node", overrides)


@pytest.mark.slow
def test_a_weight_of_zero_turns_the_presets_branch_off_without_complaint(tmp_path):
    run = make_run_config(_node_file(tmp_path, integer=False), "texas", {"model.input_gcn_weight": 0.0})
    assert build_model(run.model).input_gcn is None  # the ablation of the preset's hop branch


@pytest.mark.slow
def test_the_settings_that_take_effect_build_their_branch(tmp_path):
    run = make_run_config(_node_file(tmp_path, integer=False), "geaet-node",
                          {"model.input_branch": "hops", "model.input_branch_hops": 2,
                           "model.input_gcn_weight": 0.5, "model.hidden_dim": 8, "model.geanet.unit_size": 2})
    branch = build_model(run.model).input_gcn
    assert type(branch).__name__ == "HopBranch" and branch.hops == 2


@pytest.mark.slow
def test_integer_node_features_turn_the_presets_branch_off_and_say_so(tmp_path, caplog):
    path = _node_file(tmp_path, integer=True)
    with caplog.at_level(logging.INFO, logger="geaet_dgl"):
        run = make_run_config(path, "texas")  # texas: a hop branch at weight 0.9, mixed with the logits
    assert run.model.input_gcn_weight == 0.0 and build_model(run.model).input_gcn is None
    assert (run.model.input_branch, run.model.input_branch_hops, run.model.input_branch_mix) == ("gcn", 1, "hidden")
    lines = [r.getMessage() for r in caplog.records if "input_gcn_weight=0" in r.getMessage()]
    assert len(lines) == 1
    assert "integer (type) node features" in lines[0] and "preset texas's raw-feature branch" in lines[0]
    assert "input_branch=hops" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="geaet_dgl"):
        make_run_config(path, "geaet")  # no branch to turn off: nothing to say
    assert not [r for r in caplog.records if "input_gcn_weight=0" in r.getMessage()]


@pytest.mark.slow
def test_saved_runs_with_a_branch_setting_left_over_still_load(tmp_path):
    run = make_run_config(_node_file(tmp_path, integer=False), "geaet-node")
    saved = run.to_dict()
    saved["model"].update(input_branch="hops", input_branch_hops=2, input_branch_mix="logits", input_gcn_weight=0.0)
    assert RunConfig.from_dict(saved).model.input_branch == "hops"  # eval / --resume of runs trained before
