"""``python cli.py ...``: the ``geaet-dgl`` command line from a checkout (:mod:`geaet_dgl.cli`).

The lab's subcommands (:mod:`geaet_lab.commands`) are added here directly: an installed copy finds
them through its entry points, a checkout may not be installed (or installed from an older tree).
"""
from geaet_dgl.cli import COMMANDS, add_commands, console_main, main  # noqa: F401  (the names ``import cli`` gave)
from geaet_lab.commands import COMMANDS as LAB_COMMANDS

add_commands(LAB_COMMANDS)

if __name__ == "__main__":
    main()
