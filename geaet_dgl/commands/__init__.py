"""The ``geaet-dgl`` subcommands, one module per command group; :mod:`geaet_dgl.cli` registers them.

Each command only parses its options and calls the library: the rules (which
options conflict, what a resumed run may change, default folders, allocator
start-up) live next to what they govern. :mod:`.options` holds the options and
the error handling the commands share. A new command: a function in its group's
module (or a new module here), and one line in ``cli.COMMANDS``. The lab's commands (benchmark,
compare, export-reference, sweep, attention) live in :mod:`geaet_lab.commands`, registered as entry points
of the ``geaet_dgl.commands`` group in ``setup.cfg``.
"""
