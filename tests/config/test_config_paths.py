"""Reference YAMLs and --config: one-line errors that name the real problem (not UTF-8, a section given a
value), and a graph file as the dataset."""
import pytest
import yaml
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.config import ConfigError
from geaet_dgl.interop.reference_yaml import reference_run_config
from tests.interop.test_reference_yaml import REFERENCE_YAML
from tests.own_graph_files import write_task_file
from tests.training.tiny import one_thread


def _cli(*args):
    with one_thread():
        return CliRunner().invoke(cli.main, [str(a) for a in args])


def test_a_yaml_that_is_not_utf8(tmp_path):
    """Was UnicodeDecodeError."""
    path = tmp_path / "mnist.yaml"
    path.write_bytes(b"out_dir: r\xe9sultats\n" + REFERENCE_YAML["mnist"].encode())
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at offset 10\); save it as UTF-8"):
        reference_run_config(path)


@pytest.mark.parametrize("value", [[1, 2], 3, "LayerType", None])
def test_a_section_given_a_value(tmp_path, value):
    """`gt: [1, 2]` was reported as an unsupported layer type (SANLayer, graphgym's default)."""
    tree = yaml.safe_load(REFERENCE_YAML["mnist"])
    tree["gt"] = value
    path = tmp_path / "mnist.yaml"
    path.write_text(yaml.safe_dump(tree))
    with pytest.raises(ConfigError, match=r"gt must be a section of settings .* got "):
        reference_run_config(path)


@pytest.mark.slow
def test_config_with_a_graph_file_as_dataset_trains_on_the_file(tmp_path):
    """`--config mnist.yaml --dataset many.bin` answered "unknown dataset": the file's model now reads the file."""
    config = tmp_path / "mnist.yaml"
    config.write_text(REFERENCE_YAML["mnist"])
    graphs = tmp_path / "many.bin"
    write_task_file(graphs, "graph-classification", count=10)
    result = _cli("train", "--config", config, "--dataset", graphs, "--out", tmp_path / "run", "--dry-run")
    assert result.exit_code == 0 and "unknown dataset" not in result.output, result.output
    assert str(graphs) in result.output  # the file the run would read
    assert not (tmp_path / "run").exists()
