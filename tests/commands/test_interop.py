"""The CLI around the reference: train --config, import-reference, export-reference."""
import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.training import load_checkpoint
from tests.interop.test_reference_checkpoint import _our_run, _yaml
from tests.interop.test_reference_yaml import REFERENCE_YAML


def test_train_config_refuses_an_unsupported_key_in_one_line(tmp_path):
    path = tmp_path / "mnist.yaml"
    path.write_text(REFERENCE_YAML["mnist"].replace("optimizer: adamW", "optimizer: sgd"))
    result = CliRunner().invoke(cli.main, ["train", "--config", str(path), "--dataset", "synthetic",
                                           "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: mnist.yaml: optim.optimizer='sgd' changes the result and is not supported; geaet-dgl reproduces "
        "only 'adamW' / 'adam'")
    assert not (tmp_path / "run").exists()
    both = CliRunner().invoke(cli.main, ["train", "--config", str(path), "--preset", "mnist"])
    assert both.exit_code == 2 and "drop --preset" in both.output


@pytest.mark.slow
def test_export_then_import_through_the_cli(tmp_path):
    ours, model = _our_run(tmp_path, "pattern")
    exported = CliRunner().invoke(cli.main, ["export-reference", "--checkpoint", str(ours),
                                             "--out", str(tmp_path / "ref" / "ckpt" / "9.ckpt")])
    assert exported.exit_code == 0, exported.output
    run = tmp_path / "imported"
    imported = CliRunner().invoke(cli.main, ["import-reference", "--checkpoint", str(tmp_path / "ref/ckpt/9.ckpt"),
                                             "--config", str(_yaml(tmp_path, "pattern")), "--out", str(run),
                                             "--data-dir", str(tmp_path / "data")])
    assert imported.exit_code == 0, imported.output
    assert "429,052 parameters (reference epoch 9)" in imported.output
    state = load_checkpoint(run / "best.pt")
    assert state["run_config"]["data"]["data_dir"] == str(tmp_path / "data")
    assert all((state["model"][k] == v).all() for k, v in model.state_dict().items())
    again = CliRunner().invoke(cli.main, ["import-reference", "--checkpoint", str(tmp_path / "ref/ckpt/9.ckpt"),
                                          "--config", str(_yaml(tmp_path, "pattern")), "--out", str(run)])
    assert again.exit_code == 2 and "already exists" in again.output
