"""Shared by the command tests: one tiny trained run (every test runs on one thread: tests/conftest.py)."""
import json

import pytest
from click.testing import CliRunner

from geaet_dgl import cli
from tests.training.tiny import cli_args, one_thread


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """One epoch of a tiny synthetic run through the CLI: (run_dir, summary)."""
    run_dir = tmp_path_factory.mktemp("cli") / "run"
    with one_thread():
        result = CliRunner().invoke(cli.main, cli_args(1, run_dir))
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
    return run_dir, json.loads((run_dir / "summary.json").read_text())
