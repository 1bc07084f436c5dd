"""What ``pip install`` puts in site-packages: the library ``geaet_dgl`` and its lab ``geaet_lab`` only, a console
script into the library, and the lab's subcommands as entry points of the library's command group."""
import configparser
import importlib
from pathlib import Path

import setuptools

REPO = Path(__file__).resolve().parents[1]


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return parser


def _entry_points(group: str) -> dict:
    lines = _setup_cfg()["options.entry_points"][group].strip().splitlines()
    return dict(tuple(part.strip() for part in line.split("=", 1)) for line in lines)


def _console_scripts() -> dict:
    return _entry_points("console_scripts")


def test_nothing_but_the_library_and_its_lab_is_installed_at_the_top_level():
    options = _setup_cfg()["options"]
    assert "py_modules" not in options  # a top-level `cli` module would clash with other distributions'
    include = [p.strip() for p in _setup_cfg()["options.packages.find"]["include"].split(",")]
    packages = setuptools.find_packages(str(REPO), include=include)
    assert "geaet_dgl" in packages and "geaet_dgl.commands" in packages
    assert {"geaet_lab", "geaet_lab.benchmarking", "geaet_lab.commands"} <= set(packages)
    assert {name.split(".")[0] for name in packages} == {"geaet_dgl", "geaet_lab"}
    on_disk = {str(p.parent.relative_to(REPO)).replace("/", ".") for top in ("geaet_dgl", "geaet_lab")
               for p in (REPO / top).rglob("*.py")}
    assert on_disk == set(packages)  # every folder of modules is a package (a namespace one would not be installed)


def test_the_lab_commands_are_registered_as_entry_points_of_the_command_group():
    from geaet_dgl import cli
    from geaet_lab.commands import COMMANDS as LAB_COMMANDS

    registered = _entry_points(cli.PLUGIN_GROUP)
    assert registered == LAB_COMMANDS
    assert not set(registered) & set(cli.COMMANDS)  # a library command is never replaced
    for name, target in registered.items():
        module, _, function = target.partition(":")
        command = getattr(importlib.import_module(module), function)
        assert command.name == name


def test_the_command_line_takes_its_registered_commands_from_the_metadata(monkeypatch):
    """What ``importlib.metadata`` lists in the group becomes a subcommand (here a fake one: the library's
    ``presets`` under another name), imported only when it is used."""
    import importlib.metadata

    from click.testing import CliRunner

    from geaet_dgl import cli

    fake = importlib.metadata.EntryPoint("listed-presets", "geaet_dgl.commands.presets:presets", cli.PLUGIN_GROUP)
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [fake] if group == cli.PLUGIN_GROUP else [])
    cli.registered_commands.cache_clear()
    try:
        assert "listed-presets" in cli.main.commands
        result = CliRunner().invoke(cli.main, ["listed-presets", "--help"])
        assert result.exit_code == 0 and "--debug" in result.output
    finally:
        monkeypatch.undo()
        cli.registered_commands.cache_clear()
    assert "listed-presets" not in cli.main.commands


def test_the_console_script_points_into_the_package():
    scripts = _console_scripts()
    assert list(scripts) == ["geaet-dgl"]
    module, _, function = scripts["geaet-dgl"].partition(":")
    assert module.split(".")[0] == "geaet_dgl"
    entry = getattr(importlib.import_module(module), function)
    from geaet_dgl.cli import console_main

    assert entry is console_main


def test_the_root_cli_file_runs_the_same_group_with_the_lab_commands():
    import cli as root_cli
    from geaet_dgl import cli
    from geaet_lab.commands import COMMANDS as LAB_COMMANDS

    assert root_cli.main is cli.main and root_cli.console_main is cli.console_main
    assert set(LAB_COMMANDS) | set(cli.COMMANDS) <= set(cli.main.commands)
