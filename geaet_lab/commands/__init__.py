"""The lab's subcommands of ``geaet-dgl``: benchmark, compare, export-reference, sweep, attention.

The library's command line (:mod:`geaet_dgl.cli`) does not import the lab: it finds these
through the ``geaet_dgl.commands`` entry-point group, which ``setup.cfg`` fills from
:data:`COMMANDS` (``tests/test_packaging.py`` checks the two agree). ``python cli.py`` at the
repository root adds them directly, so a checkout runs them before it is installed.
"""

#: subcommand -> "module:function" (an entry point's value).
COMMANDS = {
    "sweep": "geaet_lab.commands.studies:sweep",
    "attention": "geaet_lab.commands.studies:attention",
    "export-reference": "geaet_lab.commands.interop:export_reference_command",
    "compare": "geaet_lab.commands.interop:compare",
    "benchmark": "geaet_lab.commands.benchmark:benchmark",
}
