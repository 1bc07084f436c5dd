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


USER_ERRORS = {  # class -> the built-in type it always was
    ("geaet_dgl.errors", "ConfigError"): ValueError, ("geaet_dgl.errors", "OptionConflict"): ValueError,
    ("geaet_dgl.data", "DataError"): ValueError, ("geaet_dgl.training", "CheckpointError"): ValueError,
    ("geaet_dgl.training", "RunDirError"): ValueError, ("geaet_lab.benchmarking.inputs", "UnsupportedPreset"): ValueError,
    ("geaet_lab.benchmarking.against_pyg", "ParityError"): RuntimeError,
    ("geaet_lab.interop.reference_model", "ReferenceUnavailable"): RuntimeError,
    ("geaet_lab.interop.reference_run", "CompareError"): RuntimeError,
    ("geaet_dgl.distgraph.processes", "DistributedJobError"): ValueError,
}


@pytest.mark.parametrize("module, name", sorted(USER_ERRORS))
def test_every_user_error_is_one_type_and_keeps_its_builtin_base(module, name):
    import importlib

    from geaet_dgl.errors import GeaetError

    error = getattr(importlib.import_module(module), name)
    assert issubclass(error, GeaetError) and issubclass(error, USER_ERRORS[module, name])


@pytest.mark.parametrize("name", ["RunDirError", "DataError"])
def test_a_user_error_prints_one_line_and_exits_2(name):
    """Any GeaetError raised below a command is one `error: ...` line (its whitespace folded), exit code 2."""
    from geaet_dgl.data import DataError
    from geaet_dgl.training import RunDirError
    from geaet_dgl.commands.options import handle_errors

    error = {"RunDirError": RunDirError, "DataError": DataError}[name]

    @click.command()
    @handle_errors
    def failing():
        raise error("the folder runs/x exists;\n  pass --resume")

    result = CliRunner().invoke(failing, [])
    assert result.exit_code == 2
    assert result.output == "error: the folder runs/x exists; pass --resume\n"
