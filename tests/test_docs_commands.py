"""Every ``geaet-dgl ...`` command shown in README.md and docs/*.md parses against the CLI as written.

Commands are found in two places: lines that start with ``geaet-dgl `` (in code
blocks or not, also after ``.venv/bin/``, after ``$ `` or ``&&``, joined over
trailing backslashes) and inline code spans that start with it (tables,
prose; not in headings, which name a command without its options). Each is parsed by click down to its subcommand, as a real call would
be, but nothing runs: unknown options, missing values, bad choices or numbers
and missing required options fail the test, naming the file and line. A path
that must exist (``--resume RUN_DIR``) counts as parsed: it names a run the
reader made before.
"""

import re
import shlex
from pathlib import Path
from typing import List, Tuple

import click
import pytest

from geaet_dgl import cli

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "docs" / "results").glob("*.md"))]

_PREFIX = re.compile(r"^(?:\$\s+)?(?:\S*/)?(geaet-dgl\s+\S.*)$")


def _command_in(segment: str) -> str:
    """``segment`` without a ``$ `` prompt or a ``.venv/bin/``-style directory if it is a geaet-dgl call, else ''."""
    match = _PREFIX.match(segment.strip())
    return match.group(1) if match else ""


def commands_in(text: str) -> List[Tuple[int, str]]:
    """``(line number, command)`` for every geaet-dgl command line and inline code span in ``text``."""
    found = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        line, first = lines[number], number + 1
        while line.rstrip().endswith("\\") and number + 1 < len(lines):
            number += 1
            line = line.rstrip()[:-1].rstrip() + " " + lines[number].strip()
        number += 1
        for segment in line.split("&&"):
            command = _command_in(segment)
            if command:
                found.append((first, command))
        if not _command_in(line.split("&&")[0]) and not line.startswith("#"):  # a heading names a command
            spans = line.split("`")[1:-1:2] if line.count("`") >= 2 else []
            found += [(first, _command_in(span)) for span in spans if _command_in(span)]
    return found


def parse(command: str) -> None:
    """Parse ``command`` (a ``geaet-dgl ...`` line) down to its subcommand without running it.

    Raises click.UsageError (or a subclass) if click would refuse it.
    """
    args = shlex.split(command, comments=True)[1:]
    try:
        ctx = cli.main.make_context("geaet-dgl", list(args), resilient_parsing=False)
        with ctx:
            first = next((i for i, arg in enumerate(args) if not arg.startswith("-")), None)
            if first is None:
                raise click.UsageError("no subcommand")
            name, command_obj, rest = cli.main.resolve_command(ctx, args[first:])
            try:
                command_obj.make_context(name, rest, parent=ctx, resilient_parsing=False)
            except click.BadParameter as exc:
                if not _missing_path(exc):
                    raise
    except click.exceptions.Exit:  # --help
        pass


def _missing_path(exc: click.BadParameter) -> bool:
    kind = getattr(exc.param, "type", None)
    return isinstance(kind, click.Path) and kind.exists and "does not exist" in exc.format_message()


def _all_commands() -> List[Tuple[str, str]]:
    return [(f"{path.relative_to(REPO)}:{number}", command)
            for path in DOCS for number, command in commands_in(path.read_text())]


def test_extraction_finds_lines_spans_and_chains():
    text = "\n".join([
        "python3 -m venv .venv && .venv/bin/geaet-dgl train --dataset mnist",
        "geaet-dgl sweep --dataset mnist --set a=1,2 \\",
        "  --seeds 0 1   # comment",
        "| Table | `geaet-dgl eval --checkpoint x.pt` | `pip install geaet-dgl` |",
        "text `error: then `geaet-dgl no` quoted` text",
        "### `geaet-dgl eval`",
    ])
    assert commands_in(text) == [
        (1, "geaet-dgl train --dataset mnist"),
        (2, "geaet-dgl sweep --dataset mnist --set a=1,2 --seeds 0 1   # comment"),
        (4, "geaet-dgl eval --checkpoint x.pt"),
    ]


@pytest.mark.parametrize("bad", [
    "geaet-dgl train --datset mnist",          # misspelt option
    "geaet-dgl train --device tpu",            # not a choice
    "geaet-dgl train --epochs two",            # not a number
    "geaet-dgl eval --split test",             # --checkpoint is required
    "geaet-dgl trian --dataset mnist",         # no such command
    "geaet-dgl benchmark --batch-size 16 [--against-pyg ../GEAET]",  # a placeholder, not a command
])
def test_a_command_the_cli_refuses_is_caught(bad):
    with pytest.raises(click.UsageError):
        parse(bad)


def test_help_and_a_run_directory_made_earlier_parse():
    parse("geaet-dgl train --help")
    parse("geaet-dgl train --resume runs/not-made-here")


def test_the_docs_show_commands():
    places = {where.split(":")[0] for where, _ in _all_commands()}
    assert "README.md" in places and len(_all_commands()) >= 20


@pytest.mark.parametrize("where,command", _all_commands(), ids=[w for w, _ in _all_commands()])
def test_every_documented_command_parses(where, command):
    try:
        parse(command)
    except click.UsageError as exc:
        pytest.fail(f"{where}: `{command}` does not parse: {exc.format_message()}")
