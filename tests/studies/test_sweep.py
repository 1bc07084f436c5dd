"""Sweeps: comma lists become a cartesian product; parameter counts differ exactly as the units imply."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.config import ConfigError
from geaet_dgl.models import build_model
from geaet_lab.studies import expand_sweep, parse_sweep_settings
from geaet_dgl.training import make_run_config

from .tiny import tiny_args

TINY = {"model.hidden_dim": "8", "model.num_layers": "1"}


def _params(point):
    return build_model(make_run_config("synthetic", "mnist", point.overrides).model).num_parameters


def test_settings_split_into_fixed_values_and_axes():
    fixed, axes = parse_sweep_settings({"geanet.num_heads": "2,4", "lr": "0.01", "model.pe": "none,lappe"})
    assert fixed == {"train.lr": "0.01"}
    assert axes == {"model.geanet.num_heads": ["2", "4"], "model.pe": ["none", "lappe"]}
    points = expand_sweep("mnist", fixed, axes)
    assert [p.values for p in points] == [
        {"model.geanet.num_heads": h, "model.pe": pe} for h in ("2", "4") for pe in ("none", "lappe")]
    with pytest.raises(ConfigError):
        parse_sweep_settings({"nonsense.key": "1,2"})


def test_heads_sweep_derives_unit_size_and_its_parameter_difference():
    fixed, axes = parse_sweep_settings({**TINY, "model.geanet.num_heads": "2,4"})
    two, four = expand_sweep("mnist", fixed, axes)
    assert (two.derived, four.derived) == ({"model.geanet.unit_size": 4}, {"model.geanet.unit_size": 2})
    # Node unit: U1, U2 = Linear(S, S) each -> 2 (S^2 + S) per layer: S=4 -> 40, S=2 -> 12.
    assert _params(two) - _params(four) == 2 * (4 * 4 + 4) - 2 * (2 * 2 + 2) == 28


def test_unit_ablation_parameter_differences():
    fixed, axes = parse_sweep_settings({**TINY, "model.geanet.unit_size": "2",
                                        "model.geanet.edge_unit": "false,true",
                                        "model.geanet.shared_unit": "false,true"})
    counts = {(p.values["model.geanet.edge_unit"], p.values["model.geanet.shared_unit"]): _params(p)
              for p in expand_sweep("mnist", fixed, axes)}
    base = counts[("false", "false")]
    assert counts[("true", "false")] - base == 2 * (2 * 2 + 2)  # edge unit: two Linear(S=2, 2)
    assert counts[("false", "true")] - base == 8 * 8 + 8  # shared unit: Linear(d=8, 8)
    assert counts[("true", "true")] - base == 12 + 72


@pytest.mark.slow
def test_sweep_command_writes_one_table_with_parameter_counts(tmp_path):
    out = tmp_path / "sweep"
    args = ["sweep", "--dataset", "synthetic", "--set", "model.geanet.num_heads=2,4", "--seeds", "0", "1",
            "--epochs", "1", "--out", str(out)] + tiny_args(unit_size=False)
    result = CliRunner().invoke(cli.main, args)
    assert result.exit_code == 0, result.output
    table = json.loads((out / "sweep.json").read_text())
    rows = {row["values"]["model.geanet.num_heads"]: row for row in table["rows"]}
    assert set(rows) == {"2", "4"} and table["seeds"] == [0, 1]
    assert rows["2"]["params"] - rows["4"]["params"] == 28  # as computed above
    for row in rows.values():
        summary = json.loads((out / row["point"] / "seed0" / "summary.json").read_text())
        assert summary["params"] == row["params"]
        assert len(row["val_metric"]["values"]) == 2 and row["val_metric"]["std"] is not None
    markdown = (out / "sweep.md").read_text()
    assert "geanet.num_heads" in markdown and "ddof=1" in markdown and f"{rows['2']['params']:,}" in markdown
    assert markdown in result.stdout
