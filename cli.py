"""``python cli.py ...``: the ``geaet-dgl`` command line from a checkout (:mod:`geaet_dgl.cli`)."""
from geaet_dgl.cli import COMMANDS, console_main, main  # noqa: F401  (the names ``import cli`` used to give)

if __name__ == "__main__":
    main()
