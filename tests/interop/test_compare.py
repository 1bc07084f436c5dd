"""The comparison's setup (budget, warm-up, checks) and, given the reference, the whole command end to end."""
import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_lab.interop import compare
from geaet_lab.interop.reference_run import CompareError
from geaet_dgl.config.presets import get_preset

from .fake_reference import make_fake_reference


def test_warmup_scales_with_the_epochs():
    assert [compare.scaled_warmup(5, 150, e) for e in (1, 3, 29, 30, 60, 150, 300)] == [0, 0, 0, 1, 2, 5, 5]


def test_budget_follows_the_preset_and_the_options():
    preset = get_preset("mnist").train
    run = compare.our_run_config("mnist", epochs=3, data={"limit_train": 10})
    budget = compare.budget_of(run)
    assert budget.to_dict() == {"epochs": 3, "batch_size": preset.batch_size, "lr": preset.lr,
                                "weight_decay": preset.weight_decay, "warmup_epochs": 0,
                                "clip_grad_norm": preset.clip_grad_norm}
    assert run.data.limit_train == 10 and run.preset == "mnist"
    given = compare.budget_of(compare.our_run_config("mnist", epochs=3, batch_size=32, lr=5e-4, warmup_epochs=1))
    assert (given.batch_size, given.lr, given.warmup_epochs) == (32, 5e-4, 1)
    assert compare.budget_of(compare.our_run_config("mnist")).warmup_epochs == preset.warmup_epochs
    with pytest.raises(CompareError, match="mnist or cifar10, not 'zinc'"):
        compare.our_run_config("zinc")


def test_missing_checkout_or_python_are_one_line_errors(tmp_path):
    with pytest.raises(CompareError, match="not a checkout of icm1018/GEAET \\(main.py missing\\)"):
        compare.check_reference(tmp_path, sys.executable, "mnist")
    ref = make_fake_reference(tmp_path / "GEAET")
    assert compare.check_reference(ref, sys.executable, "mnist") == "configs/GEAET/mnist.yaml"
    with pytest.raises(CompareError, match="not a checkout .*CIFAR10.yaml missing"):
        compare.check_reference(ref, sys.executable, "cifar10")
    result = CliRunner().invoke(cli.main, ["compare", "--against-pyg", str(ref), "--python", str(tmp_path / "nope"),
                                           "--out", str(tmp_path / "out"), "--epochs", "1"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --python {tmp_path / 'nope'} is not an executable file; pass the Python of the reference's "
        "environment (torch_geometric 2.5.3, yacs, ogb, torchmetrics, performer-pytorch, torch-scatter)"]
    assert not (tmp_path / "out").exists()


REF_DIR = os.environ.get("GEAET_REF_DIR")
REF_PYTHON = os.environ.get("GEAET_REF_PYTHON")
MNIST_DIR = os.environ.get("GEAET_MNIST_DIR")


@pytest.mark.skipif(not (REF_DIR and REF_PYTHON and MNIST_DIR),
                    reason="needs the reference: GEAET_REF_DIR (checkout), GEAET_REF_PYTHON (its venv's python) "
                           "and GEAET_MNIST_DIR (MNIST superpixels)")
@pytest.mark.reference
def test_end_to_end_against_the_reference(tmp_path):
    """Two seeds, one epoch, a few real MNIST graphs: both sides train, the graphs check equal, a rerun skips."""
    out = tmp_path / "cmp"
    args = ["compare", "--against-pyg", REF_DIR, "--python", REF_PYTHON, "--dataset", "mnist", "--seeds", "0", "1",
            "--epochs", "1", "--limit-train", "48", "--limit-val", "16", "--limit-test", "16", "--data-dir",
            MNIST_DIR, "--out", str(out), "--threads", "2", "--no-progress"]
    first = CliRunner().invoke(cli.main, args)
    assert first.exit_code == 0, first.output
    result = json.loads((out / "compare.json").read_text())
    check = json.loads((out / "graph_check.json").read_text())
    assert check["equal"] and check["train"]["graphs"] == [48, 48] and check["test"]["eigvals_max_diff"] < 1e-5
    assert result["num_graphs"] == {"train": 48, "val": 16, "test": 16}
    assert result["params"]["ours"] == result["params"]["reference"] == get_preset("mnist").paper_params
    for side in ("ours", "reference"):
        assert result[side]["seeds"] == [0, 1] and len(result[side]["per_epoch"]) == 1
    ckpt = Path(result["run_dirs"]["reference"][0]) / "ckpt" / "0.ckpt"
    assert ckpt.is_file()
    second = CliRunner().invoke(cli.main, args)
    assert second.exit_code == 0, second.output
    assert "graph check (cached)" in second.output
    assert json.loads((out / "compare.json").read_text())["reference"]["per_seed"] == result["reference"]["per_seed"]
