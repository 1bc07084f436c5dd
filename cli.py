"""The ``geaet-dgl`` command line: the group, its subcommands, and the console entry point.

The subcommands live in :mod:`geaet_dgl.commands` (one module per command group)
and are imported when used; they only parse options and call the library. Bad
user input prints one line ``error: <message>`` and exits with code 2 (see
:mod:`geaet_dgl.commands.options`).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from typing import Iterator, Mapping

import click

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
        from geaet_dgl.allocator import configure_allocator

        try:
            configure_allocator()
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None


def _allocator_module():
    """``geaet_dgl/allocator.py`` on its own: the package's ``__init__`` imports torch and dgl, and a restart
    in another allocator mode must come before them."""
    package = importlib.util.find_spec("geaet_dgl")
    path = os.path.join(package.submodule_search_locations[0], "allocator.py")
    spec = importlib.util.spec_from_file_location("geaet_dgl_allocator_at_start", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def console_main() -> None:
    """The ``geaet-dgl`` console command: :func:`main`, started in the default allocator mode."""
    _allocator_module().restart_in_hugetlb_mode("import cli; cli.main(prog_name='geaet-dgl')")
    main()


if __name__ == "__main__":
    main()
