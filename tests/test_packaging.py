"""What ``pip install`` puts in site-packages: the ``geaet_dgl`` package only, and a console script into it."""
import configparser
import importlib
from pathlib import Path

import setuptools

REPO = Path(__file__).resolve().parents[1]


def _setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    return parser


def _console_scripts() -> dict:
    lines = _setup_cfg()["options.entry_points"]["console_scripts"].strip().splitlines()
    return dict(tuple(part.strip() for part in line.split("=", 1)) for line in lines)


def test_nothing_but_the_package_is_installed_at_the_top_level():
    options = _setup_cfg()["options"]
    assert "py_modules" not in options  # a top-level `cli` module would clash with other distributions'
    include = [p.strip() for p in _setup_cfg()["options.packages.find"]["include"].split(",")]
    packages = setuptools.find_packages(str(REPO), include=include)
    assert "geaet_dgl" in packages and "geaet_dgl.commands" in packages
    assert {name.split(".")[0] for name in packages} == {"geaet_dgl"}


def test_the_console_script_points_into_the_package():
    scripts = _console_scripts()
    assert list(scripts) == ["geaet-dgl"]
    module, _, function = scripts["geaet-dgl"].partition(":")
    assert module.split(".")[0] == "geaet_dgl"
    entry = getattr(importlib.import_module(module), function)
    from geaet_dgl.cli import console_main

    assert entry is console_main


def test_the_root_cli_file_runs_the_same_group():
    import cli as root_cli
    from geaet_dgl import cli

    assert root_cli.main is cli.main and root_cli.console_main is cli.console_main
