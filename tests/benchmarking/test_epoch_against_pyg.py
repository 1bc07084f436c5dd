"""The whole-epoch comparison: alternation, summaries, our side through the trainer, inputs, CLI errors.

The parts that need the reference run only where torch_geometric and a checkout are present.
"""
import os
import statistics

import pytest
import torch
from click.testing import CliRunner

from geaet_lab.benchmarking.api import run_benchmark
from geaet_lab.benchmarking.jobs import EpochJob, ModelJob, Reference, Timing
from geaet_lab.benchmarking.epoch_against_pyg import (OurEpochs, alternate, epoch_inputs, summarize_rounds)
from geaet_lab.benchmarking.inputs import UnsupportedPreset
from geaet_lab.benchmarking.report import epoch_comparison_table
from geaet_dgl.config import ConfigError
from geaet_dgl.data import DataError
from geaet_dgl.config.presets import get_preset

REF_DIR = os.environ.get("GEAET_REF_DIR", "/work/ref/GEAET")
#: a 1-layer width-8 model keeps our side's passes fast
TINY = {"model.hidden_dim": 8, "model.num_layers": 1, "model.geanet.unit_size": 2}


class _Recorder:
    """A side whose phases record the order they ran in."""

    def __init__(self, name, log, seconds=None):
        self.name, self.log, self.seconds = name, log, seconds

    def phases(self, epoch):
        def train():
            self.log.append((self.name, "train", epoch))
            return 10 if self.seconds is None else (10, self.seconds[epoch])
        return [("train", train), ("eval", lambda: self.log.append((self.name, "eval", epoch)) or 4)]


def test_alternate_switches_the_first_side_every_round():
    log = []
    times = alternate([_Recorder("ours", log), _Recorder("ref", log)], repeats=3)
    firsts = [log[i][0] for i in range(0, len(log), 4)]
    assert firsts == ["ours", "ref", "ours"]
    assert [entry[2] for entry in log if entry[1] == "train"] == [0, 0, 1, 1, 2, 2]
    assert times["ours"]["train"]["graphs"] == [10, 10, 10] and times["ref"]["eval"]["graphs"] == [4, 4, 4]
    assert all(s >= 0 for s in times["ours"]["eval"]["seconds"])


def test_alternate_keeps_a_phase_own_timing():
    times = alternate([_Recorder("ours", [], seconds=[0.5, 0.25])], repeats=2)
    assert times["ours"]["train"]["seconds"] == [0.5, 0.25]
    with pytest.raises(ValueError, match="repeats"):
        alternate([], repeats=0)


def test_summarize_rounds_medians_and_ratios():
    times = {
        "ours": {"train": {"seconds": [2.0, 4.0, 3.0], "graphs": [12] * 3},
                 "eval": {"seconds": [1.0, 1.0, 2.0], "graphs": [6] * 3},
                 "load": {"seconds": [0.3, 0.1, 0.2], "graphs": [12] * 3},
                 "step": {"seconds": [1.0, 1.5, 2.0], "graphs": [6] * 3}},
        "ref": {"train": {"seconds": [6.0, 6.0, 3.0], "graphs": [12] * 3},
                "eval": {"seconds": [2.0, 3.0, 2.0], "graphs": [6] * 3},
                "load": {"seconds": [1.0, 1.0, 1.0], "graphs": [12] * 3}},
    }
    row = summarize_rounds(times)
    assert row["train_s"] == 3.0 and row["ref_train_s"] == 6.0
    assert row["train_graphs_per_s"] == pytest.approx(4.0) and row["ref_eval_graphs_per_s"] == pytest.approx(3.0)
    assert row["epoch_s"] == statistics.median([3.0, 5.0, 5.0]) and row["ref_epoch_s"] == 8.0
    assert row["ratio_train"] == pytest.approx(2.0) and row["ratio_epoch"] == pytest.approx(8.0 / 5.0)
    assert row["ratio_train_paired"] == pytest.approx(statistics.median([3.0, 1.5, 1.0]))
    assert row["load_share_of_train"] == pytest.approx(0.2 / 3.0)
    assert row["train_pass_over_step"] == pytest.approx(4.0 / 4.0)  # step: 6 graphs / 1.5 s
    assert "ratio_train" not in summarize_rounds({"ours": times["ours"]})
    table = epoch_comparison_table([dict(row, batch_size=4)]).splitlines()
    assert table[0].split()[:3] == ["batch", "train", "ours"]
    assert "2.00x" in table[-1] and "1.60x" in table[-1] and "6.7%" in table[-1]


def _tiny_inputs(n=8):
    return epoch_inputs("mnist", "synthetic", num_graphs=n, limit_val=4)


def test_epoch_inputs_sizes_and_errors(tmp_path):
    inputs = _tiny_inputs()
    assert (len(inputs.train), len(inputs.evaluation)) == (8, 4)
    assert len(epoch_inputs("mnist", num_graphs=8).evaluation) == 2  # a quarter by default
    with pytest.raises(DataError, match="--data-dir"):
        epoch_inputs("mnist", "mnist")
    with pytest.raises(UnsupportedPreset, match="--preset mnist"):
        epoch_inputs("cifar10", "mnist", data_dir=str(tmp_path))
    with pytest.raises(ValueError, match="synthetic, mnist, cifar10"):
        epoch_inputs("mnist", "zinc")


def test_our_side_is_the_trainers_pass_and_learns():
    """Our training pass trains through the trainer at the preset's full learning rate (no warm-up
    epoch, as the reference side's constant schedule): every graph once per pass, the loss falls
    clearly over passes on a learnable set; evaluation, loader and step phases count the right graphs."""
    torch.manual_seed(0)
    inputs = epoch_inputs("mnist", "synthetic", num_graphs=16, limit_val=4)
    ours = OurEpochs(inputs, "mnist", batch_size=8, step_repeats=2, overrides={**TINY, "train.lr": 0.01})
    assert ours.trainer.optimizer.param_groups[0]["lr"] == 0.01
    ours.warm_up()
    losses = []
    for epoch in range(5):
        assert ours.train_pass(epoch) == 16
        losses.append(ours.last["train"]["loss"])
    assert losses[-1] < losses[0] - 0.1
    assert ours.eval_pass() == 4 and set(ours.last["eval"]) >= {"loss", "metric"}
    assert ours.load_pass(0) == 16
    graphs, seconds = ours.step_pass()
    assert graphs == 16 and seconds > 0
    assert OurEpochs(inputs, "mnist", batch_size=4, overrides=TINY).trainer.optimizer.param_groups[0]["lr"] == \
        get_preset("mnist").train.lr


def test_our_side_starts_from_the_given_weights():
    inputs = _tiny_inputs()
    first = OurEpochs(inputs, "mnist", batch_size=4, overrides=TINY)
    state = {k: v + 0.01 if v.is_floating_point() else v for k, v in first.model.state_dict().items()}
    second = OurEpochs(inputs, "mnist", batch_size=4, state_dict=state, overrides=TINY)
    assert all(torch.equal(state[k], v) for k, v in second.model.state_dict().items())


def test_two_of_our_sides_alternated_give_a_full_row():
    inputs = _tiny_inputs()
    ours = OurEpochs(inputs, "mnist", batch_size=4, step_repeats=1, overrides=TINY)
    other = OurEpochs(inputs, "mnist", batch_size=4, overrides=TINY)
    other.name = "ref"
    row = summarize_rounds(alternate([ours, other], repeats=2))
    for key in ("ratio_train", "ratio_eval", "ratio_epoch", "train_pass_over_step", "ref_load_share_of_train"):
        assert row[key] > 0
    assert row["train_graphs"] == 8 and row["eval_graphs"] == 4


def test_dataset_options_need_the_epoch_comparison():
    with pytest.raises(ConfigError, match="--epoch --against-pyg"):
        run_benchmark(ModelJob(batch_sizes=(2,), epoch=EpochJob(dataset="mnist")), echo=None)


def test_cli_dataset_without_comparison_is_a_one_line_error():
    from geaet_dgl import cli

    result = CliRunner().invoke(cli.main, ["benchmark", "--dataset", "mnist", "--batch-sizes", "2"])
    assert result.exit_code == 2
    assert "--epoch --against-pyg" in result.output and "Traceback" not in result.output


def _reference_available():
    pytest.importorskip("torch_geometric")
    if not os.path.isdir(REF_DIR):
        pytest.skip(f"no reference checkout at {REF_DIR} (set GEAET_REF_DIR)")


@pytest.mark.reference
def test_pyg_data_list_batches_like_the_dgl_batch():
    _reference_available()
    from torch_geometric.data import Batch

    from geaet_lab.interop.pyg_export import to_pyg_batch, to_pyg_data_list
    from geaet_dgl.data import collate_for

    inputs = _tiny_inputs()
    ours = to_pyg_batch(*collate_for(inputs.train)([inputs.train[i] for i in range(4)]))
    theirs = Batch.from_data_list(to_pyg_data_list(inputs.train)[:4])
    for key in ("x", "edge_index", "edge_attr", "y", "EigVecs", "EigVals", "batch"):
        assert torch.equal(ours[key], theirs[key]), key


@pytest.mark.reference
def test_compare_epochs_tiny():
    _reference_available()
    from geaet_lab.benchmarking.epoch_against_pyg import compare_epochs

    out = compare_epochs(Reference(REF_DIR), "mnist", batch_sizes=(4,),
                         epoch=EpochJob(num_graphs=8, limit_val=4, rounds=2), timing=Timing(threads=1))
    assert out["parity_max_abs_diff"] < 1e-5
    (row,) = out["results"]
    assert row["train_graphs"] == row["ref_train_graphs"] == 8 and row["ref_eval_graphs"] == 4
    for key in ("ratio_train", "ratio_eval", "ratio_epoch", "train_pass_over_step"):
        assert row[key] > 0
    assert set(row["ref_metrics"]) >= {"train_loss", "train_accuracy", "eval_loss", "eval_accuracy"}
