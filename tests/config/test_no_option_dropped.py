"""No option is dropped silently (graph-file options elsewhere, split fractions, rounding)."""
import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data import DataError
from geaet_dgl.data.own_files.graph_files import split_indices
from tests.own_graph_files import write_task_file
from tests.studies.tiny import tiny_args

MNIST_YAML = "GEAET/configs/GEAET/mnist.yaml"


def _error_line(args):
    result = CliRunner().invoke(cli.main, args)
    errors = [line for line in result.output.splitlines() if line.lower().startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


@pytest.mark.parametrize("option, named", [(["--split", "0.5", "0.25", "0.25"], "--split"),
                                           (["--split-file", "s.json"], "--split-file"),
                                           (["--task", "graph-regression"], "--task"),
                                           (["--set", "data.split_seed=3"], "data.split_seed")])
def test_graph_file_options_with_a_named_dataset_are_refused(tmp_path, option, named):
    line = _error_line(["train", "--dataset", "synthetic", "--epochs", "1", "--out", str(tmp_path / "run")]
                       + tiny_args() + option)
    assert named in line and "graph file" in line
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_a_graph_file_with_a_reference_config_is_refused(tmp_path):
    path = tmp_path / "g.bin"
    write_task_file(path, "graph-classification", count=20)
    config = tmp_path / "mnist.yaml"
    config.write_text("dataset:\n  format: PyG-GNNBenchmarkDataset\n  name: MNIST\n")
    line = _error_line(["train", "--config", str(config), "--data-file", str(path), "--out", str(tmp_path / "run")])
    assert "--data-file" in line and "--config" in line


def test_split_fractions_that_leave_graphs_unused_are_refused():
    with pytest.raises(DataError, match=r"add up to 0.9.*in no split"):
        split_indices(40, "g.bin", fractions=(0.7, 0.1, 0.1))


def test_rounding_never_shrinks_the_test_split():
    # 25 graphs at 0.8/0.1/0.1: val and test are 2.5 graphs each; round-half-even gave 2 and 2 (train 21)
    sizes = {name: len(v) for name, v in split_indices(25, "g.bin").items()}
    assert sizes["test"] >= 2.5 and sum(sizes.values()) == 25
    sizes = {name: len(v) for name, v in split_indices(45, "g.bin", fractions=(0.7, 0.2, 0.1)).items()}
    assert sizes["test"] >= 4.5 and sum(sizes.values()) == 45  # 4.5 -> 4 before


@pytest.mark.slow
def test_a_graph_file_run_from_before_the_recorded_split_keeps_its_split(tmp_path):
    from geaet_dgl.config import DataOptions
    from geaet_dgl.data.run_splits import load_splits

    path = tmp_path / "g.bin"
    write_task_file(path, "graph-classification", count=25)
    old = DataOptions(dataset="file", data_file=str(path), task="graph-classification")  # no split_indices
    splits = load_splits(old, 0)
    assert splits.sizes() == {"train": 21, "val": 2, "test": 2}  # round(2.5) = 2 twice, as it was trained
    assert split_indices(25, path, legacy=True)["test"] != split_indices(25, path)["test"]
