"""Numeric options are range-checked in one place (``geaet_dgl.config.NUMERIC_RANGES``).

NaN, inf and out-of-range values of the learning rate, weight decay, every dropout and the clip norm
give one line naming the option and its range, from the command line (``--lr``, ``--set``), from a
preset override in Python and from a reference YAML, before anything is written.
"""
import dataclasses
import math

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.config import NUMERIC_RANGES, ConfigError, ModelConfig, TrainConfig
from geaet_dgl.config.presets import get_preset
from tests.training.tiny import one_thread

DROPOUTS = sorted(path for path in NUMERIC_RANGES if path.endswith("dropout"))


def test_every_dropout_field_is_in_the_table():
    """A dropout added to the configuration later is checked too: the table is built from the dataclasses."""
    found = {f"model.{f.name}" for f in dataclasses.fields(ModelConfig) if f.name.endswith("dropout")}
    found.add("model.graphormer.input_dropout")
    assert found <= set(DROPOUTS) and len(DROPOUTS) >= 7
    assert {"train.lr", "train.weight_decay", "train.clip_grad_norm"} <= set(NUMERIC_RANGES)


def _bad(path):
    lows = {"train.lr": ["0", "-1e-3"], "train.weight_decay": ["-1"], "train.clip_grad_norm": ["0", "-2"]}
    return ["nan", "inf", "-inf"] + lows.get(path, ["-1", "1", "2"])


CASES = [(path, value) for path in sorted(NUMERIC_RANGES) for value in _bad(path)]


@pytest.mark.parametrize("path,value", CASES, ids=[f"{p}={v}" for p, v in CASES])
def test_out_of_range_values_are_one_line_naming_option_and_range(tmp_path, path, value):
    out_dir = tmp_path / "run"
    with one_thread():
        result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--out", str(out_dir),
                                               "--no-progress", "--set", f"{path}={value}"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert f"{path}=" in lines[0] and NUMERIC_RANGES[path] in lines[0], lines[0]
    assert not out_dir.exists() or not any(out_dir.iterdir())


@pytest.mark.parametrize("flag,value", [("--lr", "nan"), ("--lr", "inf")])
def test_lr_option_nan_and_inf(tmp_path, flag, value):
    with one_thread():
        result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--out", str(tmp_path / "run"),
                                               "--no-progress", flag, value])
    assert result.exit_code == 2 and result.output.startswith("error: train.lr="), result.output
    assert NUMERIC_RANGES["train.lr"] in result.output


def test_values_inside_the_ranges_are_accepted():
    preset = get_preset("mnist")
    model = dataclasses.replace(preset.model, head_dropout=0.0, ffn_dropout=0.5, attn_dropout=0.999)
    train = dataclasses.replace(preset.train, lr=1e-9, weight_decay=0.0, clip_grad_norm=None)
    model.validate(), train.validate()
    train = dataclasses.replace(train, clip_grad_norm=1e6, lr=10.0, weight_decay=2.0)
    train.validate()
    with pytest.raises(ConfigError, match=r"train\.weight_decay=nan"):
        dataclasses.replace(train, weight_decay=math.nan).validate()
    graphormer = dataclasses.replace(preset.model.graphormer, input_dropout=1.5)
    with pytest.raises(ConfigError, match=r"model\.graphormer\.input_dropout=1\.5"):
        dataclasses.replace(preset.model, graphormer=graphormer).validate()


def test_a_reference_yaml_with_a_nan_learning_rate(tmp_path):
    from geaet_dgl.interop.reference_yaml import reference_run_config
    from tests.interop.test_reference_yaml import REFERENCE_YAML

    text = REFERENCE_YAML["mnist"]
    path = tmp_path / "mnist.yaml"
    path.write_text(text.replace("base_lr: 0.001", "base_lr: .nan"))
    assert "base_lr: .nan" in path.read_text()
    with pytest.raises(ConfigError, match=r"train\.lr=nan"):
        reference_run_config(path)
