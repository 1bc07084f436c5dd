"""The ``geaet-dgl`` command line: the group, its subcommands, and the console entry point.

The library's subcommands live in :mod:`geaet_dgl.commands` (one module per command group)
and are imported when used; they only parse options and call the library. Bad
user input prints one line ``error: <message>`` and exits with code 2 (see
:mod:`geaet_dgl.commands.options`). Other packages add subcommands through the
``geaet_dgl.commands`` entry-point group (:data:`PLUGIN_GROUP`): the lab
(:mod:`geaet_lab.commands`) registers ``benchmark``, ``compare``, ``export-reference``,
``sweep`` and ``attention`` there in ``setup.cfg``, so the library imports nothing of it.

The installed ``geaet-dgl`` command is :func:`console_main`; ``python cli.py``
at the repository root runs :func:`main`, with the lab's commands added directly
(:func:`add_commands`) so that a checkout runs them before it is installed.
"""
from __future__ import annotations

import functools
import importlib
import importlib.metadata
from typing import Dict, Iterator, Mapping

import click

from geaet_dgl.allocator import CONSOLE_CODE, configure_allocator, restart_in_hugetlb_mode

#: subcommand -> "module:function" of the library's own commands.
COMMANDS = {
    "train": "geaet_dgl.commands.train:train",
    "eval": "geaet_dgl.commands.evaluate:eval_command",
    "predict": "geaet_dgl.commands.predict:predict",
    "presets": "geaet_dgl.commands.presets:presets",
    "datasets": "geaet_dgl.commands.datasets:datasets",
    "import-reference": "geaet_dgl.commands.interop:import_reference_command",
    "partition": "geaet_dgl.commands.partition:partition",
    "export": "geaet_dgl.commands.export:export",
}

#: The entry-point group in which installed packages register more subcommands (name = "module:function").
PLUGIN_GROUP = "geaet_dgl.commands"


@functools.lru_cache(maxsize=None)
def registered_commands() -> Dict[str, str]:
    """``{subcommand: "module:function"}`` that installed distributions register in :data:`PLUGIN_GROUP`."""
    return {entry.name: entry.value for entry in importlib.metadata.entry_points(group=PLUGIN_GROUP)}


class _Commands(Mapping):
    """:data:`COMMANDS`, the registered ones and the added ones, each imported on first use (importing the
    package loads torch and dgl). A library command's name is never taken by another's."""

    def __init__(self) -> None:
        self.added: Dict[str, str] = {}

    def table(self) -> Dict[str, str]:
        return {**registered_commands(), **self.added, **COMMANDS}

    def __getitem__(self, name: str) -> click.Command:
        module, _, function = self.table()[name].partition(":")
        return getattr(importlib.import_module(module), function)

    def __iter__(self) -> Iterator[str]:
        return iter(self.table())

    def __len__(self) -> int:
        return len(self.table())


_COMMANDS = _Commands()


def add_commands(commands: Mapping[str, str]) -> None:
    """Add subcommands (``{name: "module:function"}``) to :func:`main` without installing their entry points."""
    _COMMANDS.added.update(commands)


@click.group(commands=_COMMANDS, context_settings={"help_option_names": ["-h", "--help"],
                                                   "max_content_width": 100})
@click.pass_context
def main(ctx: click.Context) -> None:
    """GEAET (Graph External Attention Enhanced Transformer) in DGL."""
    if ctx.invoked_subcommand != "benchmark":  # benchmark applies its own --allocator
        try:
            configure_allocator()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


def console_main() -> None:
    """The ``geaet-dgl`` console command: :func:`main`, started in the default allocator mode.

    The installed command restarts before ``import geaet_dgl`` loads torch
    (:func:`geaet_dgl.allocator.restart_console_script`); called any other way,
    it restarts here.
    """
    restart_in_hugetlb_mode(CONSOLE_CODE)
    main()


if __name__ == "__main__":
    main()
