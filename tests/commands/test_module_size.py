"""The command-line modules stay thin: each under 300 lines (the work lives in the library packages)."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 300


def test_every_command_line_module_is_under_300_lines():
    modules = [REPO / "cli.py", REPO / "geaet_dgl" / "cli.py", *sorted((REPO / "geaet_dgl" / "commands").glob("*.py")),
               *sorted((REPO / "geaet_lab" / "commands").glob("*.py"))]
    assert len(modules) > 5
    long = {path.name: n for path in modules if (n := len(path.read_text().splitlines())) >= LIMIT}
    assert not long, f"command-line modules of {LIMIT}+ lines: {long}"
