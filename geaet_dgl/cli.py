"""The ``geaet-dgl`` command line: the group, its subcommands, and the console entry point.

The subcommands live in :mod:`geaet_dgl.commands` (one module per command group)
and are imported when used; they only parse options and call the library. Bad
user input prints one line ``error: <message>`` and exits with code 2 (see
:mod:`geaet_dgl.commands.options`).

The installed ``geaet-dgl`` command is :func:`console_main`; ``python cli.py``
at the repository root runs :func:`main`.
"""
from __future__ import annotations

import importlib
from typing import Iterator, Mapping

import click

from geaet_dgl.allocator import CONSOLE_CODE, configure_allocator, restart_in_hugetlb_mode

#: subcommand -> "module of geaet_dgl.commands:function".
COMMANDS = {
    "train": "train:train",
    "eval": "evaluate:eval_command",
    "predict": "predict:predict",
    "presets": "presets:presets",
    "datasets": "datasets:datasets",
    "sweep": "studies:sweep",
    "attention": "studies:attention",
    "import-reference": "interop:import_reference_command",
    "export-reference": "interop:export_reference_command",
    "compare": "interop:compare",
    "benchmark": "benchmark:benchmark",
    "partition": "partition:partition",
    "export": "export:export",
}


class _Commands(Mapping):
    """:data:`COMMANDS`, each imported on first use (importing the package loads torch and dgl)."""

    def __getitem__(self, name: str) -> click.Command:
        module, _, function = COMMANDS[name].partition(":")
        return getattr(importlib.import_module(f"geaet_dgl.commands.{module}"), function)

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


@click.group(commands=_Commands(), context_settings={"help_option_names": ["-h", "--help"],
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
