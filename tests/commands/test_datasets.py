"""`geaet-dgl datasets`: the table of datasets and whether their files are here."""
import json

from click.testing import CliRunner

from geaet_dgl import cli
from tests.data.fixtures_dgl import write_zinc_fixture


def test_datasets_table(tmp_path):
    write_zinc_fixture(tmp_path)
    result = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {"mnist", "pattern", "cluster", "zinc", "tree"} <= set(rows)
    assert rows["zinc"]["present"] is True and rows["pattern"]["present"] is False
    assert rows["tree"]["present"] is None
    assert rows["pattern"]["metric"] == "balanced_accuracy" and rows["zinc"]["metric"] == "mae"
    text = CliRunner().invoke(cli.main, ["datasets", "--data-dir", str(tmp_path)])
    assert text.exit_code == 0 and "zinc" in text.stdout

