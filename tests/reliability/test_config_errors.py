"""Configuration mistakes: one line naming the problem and the fix, exit code 2, nothing written.

Also: a positional encoding the dataset does not carry by default (RWSE) is
computed by the data layer when the model asks for it, and LapPE works.
"""
import json

import pytest

from geaet_dgl.config import ConfigError, ModelConfig
from geaet_dgl.data import synthetic_splits
from geaet_dgl.data.model_fit import check_data_fits
from geaet_dgl.training import make_run_config
from geaet_dgl.data.run_splits import load_splits
from geaet_dgl.config import DataOptions
from tests.training.tiny import TINY_DATA, cli_args

from .helpers import nothing_written, one_line_error, partial_files, run_cli

# (--set values, start of the error line after "error: ", a fragment naming the fix)
CASES = {
    "unknown_key": (["model.hidden_dimm=3"], "unknown setting 'model.hidden_dimm'", "valid keys here:"),
    "unknown_train_key": (["train.lrr=0.1"], "unknown setting 'train.lrr'", "lr"),
    "unknown_section": (["model.geanett.scope=graph"], "unknown setting 'model.geanett.scope'",
                        "use keys like model.hidden_dim"),
    "int_not_a_number": (["model.hidden_dim=abc"], "model.hidden_dim must be an integer, got 'abc'",
                         "fix that value"),
    "int_given_a_float": (["model.hidden_dim=1.5"], "model.hidden_dim must be an integer, got 1.5",
                          "fix that value"),
    "float_not_a_number": (["train.lr=fast"], "train.lr must be a number, got 'fast'", "fix that value"),
    "bool_not_a_bool": (["model.external=maybe"], "model.external must be true or false, got 'maybe'",
                        "fix that value"),
    "list_not_a_list": (["model.node_vocab_sizes=abc"], "model.node_vocab_sizes must be a list of integers",
                        "e.g. 119,5,12"),
    "section_given_a_value": (["model.geanet=3"], "model.geanet must be a mapping, got int",
                              "model.geanet.<field>"),
    "unknown_choice": (["model.pe=magic"], "pe='magic' is not one of none, eslappe, lappe, rwse", "rwse"),
    "heads_do_not_divide_width": (["model.num_heads=3"], "num_heads=3 does not divide hidden_dim=40",
                                  "choose a head count that divides the width"),
    "unit_size_times_heads_not_width": (["model.geanet.unit_size=7"],
                                        "geanet.unit_size * geanet.num_heads = 7*4 must equal hidden_dim=40",
                                        "set geanet.unit_size=10"),
    "pe_wider_than_model": (["model.pe=lappe", "model.pe_dim=40"], "pe_dim=40 must be smaller than hidden_dim=40",
                            "smaller"),
    "no_branch_left": (["model.mpnn=none", "model.attention=none", "model.external=false"],
                       "a GEAET layer needs at least one branch", "set mpnn, attention or external"),
    "zero_epochs": (["train.epochs=0"], "batch_size, epochs and lr must be positive", "positive"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_config_mistake_is_one_line_and_writes_nothing(case, tmp_path):
    settings, start, fix = CASES[case]
    out = tmp_path / "run"
    args = ["train", "--dataset", "synthetic", "--out", out, "--no-progress"]
    for item in settings:
        args += ["--set", item]
    line = one_line_error(run_cli(args))
    assert line.startswith(f"error: {start}"), line
    assert fix in line, line
    assert nothing_written(out) and not partial_files(tmp_path)


def test_model_that_does_not_fit_the_data_is_refused_before_training(tmp_path):
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(1, out, ["--set", "model.out_feats=7", "--set", "model.node_in_feats=5"])))
    assert line.startswith("error: the model does not fit dataset 'synthetic': ")
    assert "model.node_in_feats=5 but the graphs have 3 node features" in line
    assert "model.out_feats=7 but 'synthetic' has 10 classes" in line
    assert "fix these with --set" in line
    assert nothing_written(out) and not partial_files(tmp_path)


def test_missing_positional_encoding_is_named():
    splits = synthetic_splits(4, 2, 2)  # carries lap_pe/lap_eigval only
    with pytest.raises(ConfigError, match=r"model\.pe='rwse' reads ndata\['rwse'\], which the graphs lack"):
        check_data_fits(ModelConfig(pe="rwse", pe_dim=4), splits)


@pytest.mark.parametrize("pe, extra", [("rwse", ["--set", "model.pe_k=6"]), ("lappe", [])])
def test_rwse_and_lappe_train_end_to_end(pe, extra, tmp_path):
    out = tmp_path / "run"
    result = run_cli(cli_args(1, out, ["--set", f"model.pe={pe}", "--set", "model.pe_dim=3", *extra]))
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["pe"] == pe
    assert "best epoch 1/1" in result.stdout


def test_load_splits_computes_rwse_when_the_model_reads_it():
    run = make_run_config("synthetic", overrides={"model.pe": "rwse", "model.pe_k": 5, "model.pe_dim": 3},
                          data=TINY_DATA)
    splits = load_splits(run.data, run.model, progress=False)
    graph = splits.train.graphs[0]
    assert graph.ndata["rwse"].shape == (graph.num_nodes(), 5)
    check_data_fits(run.model, splits)  # no complaint
    plain = load_splits(DataOptions(dataset="synthetic", limit_train=2, limit_val=2, limit_test=2), 8,
                        progress=False)
    assert "rwse" not in plain.train.graphs[0].ndata  # computed only when asked for
