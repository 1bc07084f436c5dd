"""Shared checks of the reliability tests: one-line CLI errors and no partial files left behind."""
from pathlib import Path
from typing import List

from click.testing import CliRunner

from geaet_dgl import cli


def run_cli(args, **kwargs):
    """Invoke ``geaet-dgl`` in-process (stderr kept apart from stdout)."""
    return CliRunner().invoke(cli.main, [str(a) for a in args], **kwargs)


def one_line_error(result, exit_code: int = 2) -> str:
    """Assert a one-line ``error: ...`` on stderr (no traceback) with ``exit_code``; return the line."""
    assert result.exit_code == exit_code, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.strip().splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    assert lines[0] == result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.output
    return lines[0]


def partial_files(root) -> List[Path]:
    """Temporary files of interrupted atomic writes (``.<name>.<random>.tmp``) anywhere under ``root``."""
    return sorted(p for p in Path(root).rglob(".*.tmp"))


def listing(root) -> dict:
    """``{relative path: (size, mtime_ns)}`` of every file under ``root``."""
    root = Path(root)
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def nothing_written(out) -> bool:
    """A refused run left no run directory behind, or only an empty one."""
    out = Path(out)
    return not out.exists() or not any(out.iterdir())
