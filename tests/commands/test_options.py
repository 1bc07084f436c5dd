"""What every command shares (geaet_dgl/commands/options.py): --debug, help texts, list options."""
import click
import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.commands.options import expand_list_options


def test_debug_shows_the_traceback():
    result = CliRunner().invoke(cli.main, ["train", "--dataset", "synthetic", "--set", "model.hidden_dimm=3",
                                           "--debug"])
    assert result.exit_code == 1 and result.exception is not None
    assert type(result.exception).__name__ == "ConfigError"


@pytest.mark.parametrize("name", ["train", "eval", "presets"])
def test_every_option_is_explained_in_help(name):
    command = cli.main.commands[name]
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help text"
    result = CliRunner().invoke(cli.main, [name, "--help"])
    assert result.exit_code == 0 and "--debug" in result.stdout


def test_list_options_take_the_values_that_follow():
    expand = expand_list_options
    assert expand(["--seeds", "0", "1", "2", "--epochs", "3"], ("--seeds",)) == \
        ["--seeds", "0", "--seeds", "1", "--seeds", "2", "--epochs", "3"]
    assert expand(["--seeds=0,1", "--x"], ("--seeds",)) == ["--seeds", "0", "--seeds", "1", "--x"]
