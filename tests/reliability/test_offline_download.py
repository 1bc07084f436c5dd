"""A failed (offline) first download of a named node set leaves no empty --data-dir behind (it left one)."""
import dgl.data
import pytest
from click.testing import CliRunner

from geaet_dgl import cli


def test_a_failed_download_leaves_no_empty_data_dir(tmp_path, monkeypatch):
    def download(url, path=None, **kwargs):
        raise ConnectionError(f"no network for {url}")

    for module in (dgl.data.dgl_dataset, dgl.data.heterophilous_graphs):
        monkeypatch.setattr(module, "download", download)
    existing = tmp_path / "existing"
    existing.mkdir()
    for data_dir in (tmp_path / "new" / "sets", existing):
        result = CliRunner().invoke(cli.main, ["train", "--dataset", "cora", "--data-dir", str(data_dir), "--out",
                                               str(tmp_path / "run"), "--epochs", "1"])
        assert result.exit_code == 2 and "could not download" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing"]  # no new/sets, no run folder
    assert list(existing.iterdir()) == []  # a folder the user had stays
