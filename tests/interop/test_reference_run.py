"""Running the reference's main.py: the command line, reading its stats.json, skipping finished runs."""
import json
import sys

import pytest

from geaet_lab.interop import compare, reference_run
from geaet_lab.interop.reference_run import Budget, CompareError

from .fake_reference import make_fake_reference

BUDGET = Budget(epochs=3, batch_size=16, lr=1e-3, weight_decay=1e-5, warmup_epochs=0, clip_grad_norm=1.0)


def test_overrides_carry_the_whole_budget(tmp_path):
    opts = reference_run.reference_overrides(BUDGET, 2, tmp_path / "out", tmp_path / "pyg", threads=2)
    pairs = dict(zip(opts[::2], opts[1::2]))
    assert len(opts) == 2 * len(pairs)
    assert pairs["seed"] == "2" and pairs["optim.max_epoch"] == "3" and pairs["optim.num_warmup_epochs"] == "0"
    assert pairs["optim.base_lr"] == "0.001" and pairs["optim.weight_decay"] == "1e-05"
    assert pairs["train.batch_size"] == "16"
    assert pairs["optim.clip_grad_norm"] == "True" and pairs["optim.clip_grad_norm_value"] == "1.0"
    assert pairs["out_dir"] == str((tmp_path / "out").resolve()) and pairs["dataset.dir"] == str(tmp_path / "pyg")
    assert pairs["accelerator"] == "cpu" and pairs["num_threads"] == "2" and pairs["wandb.use"] == "False"
    assert pairs["train.ckpt_period"] == "3"  # one checkpoint, after the last epoch
    no_clip = dict(zip(*[iter(reference_run.reference_overrides(
        Budget(1, 8, 0.1, 0.0, 1, None), 0, "o", "d", device="cuda"))] * 2))
    assert no_clip["optim.clip_grad_norm"] == "False" and no_clip["accelerator"] == "cuda:0"


def test_command_runs_main_py_with_its_config(tmp_path):
    command = reference_run.reference_command("/env/bin/python", tmp_path, "configs/GEAET/mnist.yaml", ["seed", "1"])
    assert command[:2] == ["/env/bin/python", "-c"]
    assert command[3:] == [str(tmp_path / "main.py"), "--cfg", str(tmp_path / "configs/GEAET/mnist.yaml"),
                           "--repeat", "1", "seed", "1"]
    assert reference_run.reference_run_dir("o", "configs/GEAET/mnist.yaml", 4) == reference_run.Path("o/mnist/4")


def write_stats(run_dir, split, rows):
    (run_dir / split).mkdir(parents=True, exist_ok=True)
    (run_dir / split / "stats.json").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_stats_are_read_per_epoch(tmp_path):
    # the reference's logger: one line per epoch, epochs from 0; a rerun epoch appends a line (the last wins)
    write_stats(tmp_path, "train", [
        {"epoch": 0, "time_epoch": 10.0, "eta": 20.0, "eta_hours": 0.01, "loss": 2.3, "lr": 0.001, "params": 7,
         "time_iter": 0.02, "accuracy": 0.11},
        {"epoch": 1, "time_epoch": 9.0, "eta": 0.0, "eta_hours": 0.0, "loss": 9.9, "lr": 0.0005, "params": 7,
         "time_iter": 0.02, "accuracy": 0.99},
        {"epoch": 1, "time_epoch": 9.5, "eta": 0.0, "eta_hours": 0.0, "loss": 1.7, "lr": 0.0005, "params": 7,
         "time_iter": 0.02, "accuracy": 0.42}])
    for split, acc in (("val", (0.2, 0.5)), ("test", (0.25, 0.55))):
        write_stats(tmp_path, split, [{"epoch": e, "time_epoch": 1.0 + e, "loss": 2.0 - e, "lr": 0, "params": 7,
                                       "time_iter": 0.01, "accuracy": a} for e, a in enumerate(acc)])
    rows = reference_run.epoch_rows(tmp_path, "accuracy")
    assert [r["epoch"] for r in rows] == [1, 2]
    assert rows[1]["train_loss"] == 1.7 and rows[1]["train_metric"] == 0.42
    assert rows[0]["val_metric"] == 0.2 and rows[1]["test_metric"] == 0.55 and rows[1]["val_loss"] == 1.0
    assert rows[0]["seconds"] == pytest.approx(10.0 + 1.0 + 1.0) and rows[1]["train_seconds"] == 9.5
    assert rows[0]["params"] == 7 and rows[1]["lr"] == 0.0005
    assert not reference_run.finished(tmp_path, 2)  # no checkpoint yet
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "1.ckpt").write_bytes(b"")
    assert reference_run.finished(tmp_path, 2) and not reference_run.finished(tmp_path, 3)


def test_unreadable_stats_give_one_line_errors(tmp_path):
    write_stats(tmp_path, "train", [{"epoch": 0, "loss": 1.0, "accuracy": 0.5, "time_epoch": 1.0}])
    write_stats(tmp_path, "val", [{"epoch": 1, "loss": 1.0, "accuracy": 0.5, "time_epoch": 1.0}])
    write_stats(tmp_path, "test", [{"epoch": 0, "loss": 1.0, "accuracy": 0.5, "time_epoch": 1.0}])
    with pytest.raises(CompareError, match="val/stats.json has other epochs"):
        reference_run.epoch_rows(tmp_path, "accuracy")
    (tmp_path / "test" / "stats.json").write_text('{"epoch": 0, "loss": \n')
    with pytest.raises(CompareError, match="test/stats.json line 1 is not JSON"):
        reference_run.read_stats(tmp_path / "test" / "stats.json")


def test_a_seed_runs_once_then_is_skipped(tmp_path):
    ref = make_fake_reference(tmp_path / "GEAET")
    out, pyg = tmp_path / "cmp", tmp_path / "cmp" / "pyg"
    args = (BUDGET, out, ref, sys.executable, "configs/GEAET/mnist.yaml", pyg, "cpu", 1)
    run_dir = compare.run_reference_seed(1, *args, overwrite=False)
    assert run_dir == out / "reference" / "seed1" / "out" / "mnist" / "1"
    rows = reference_run.epoch_rows(run_dir, "accuracy")
    assert [r["val_metric"] for r in rows] == pytest.approx([0.51, 0.61, 0.71])
    calls = out / "reference" / "seed1" / "calls.txt"
    assert len(calls.read_text().splitlines()) == 1
    compare.run_reference_seed(1, *args, overwrite=False)
    assert len(calls.read_text().splitlines()) == 1  # finished with the same command: skipped
    compare.run_reference_seed(1, *args, overwrite=True)
    assert len(calls.read_text().splitlines()) == 2
    other = (Budget(**{**BUDGET.to_dict(), "lr": 5e-4}),) + args[1:]
    with pytest.raises(CompareError, match="started with another command"):
        compare.run_reference_seed(1, *other, overwrite=False)


def test_a_failing_reference_is_one_line_naming_its_log(tmp_path):
    ref = make_fake_reference(tmp_path / "GEAET")
    command = reference_run.reference_command(sys.executable, ref, "configs/GEAET/mnist.yaml", ["fail", "yes"])
    with pytest.raises(CompareError, match=r"the reference's Python exited with code 3: RuntimeError: something broke .*main\.log"):
        reference_run.run_reference(command, tmp_path / "work")
