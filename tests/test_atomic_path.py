"""``atomic_path``: a writer that takes a file name sees a fresh path; the result appears whole or not at all."""
import os

import pytest

from geaet_dgl.atomic import atomic_path


def test_the_written_file_replaces_the_target_only_when_the_block_completes(tmp_path):
    target = tmp_path / "sub" / "cache.pkl"
    with atomic_path(target) as temp:
        assert not temp.exists() and temp.parent == target.parent and temp.name.startswith(".cache.pkl.")
        temp.write_bytes(b"new")
        assert not target.exists()
    assert target.read_bytes() == b"new" and os.listdir(target.parent) == ["cache.pkl"]


def test_a_failed_writer_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "cache.pkl"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as temp:
            temp.write_bytes(b"half")
            raise RuntimeError("killed")
    assert target.read_bytes() == b"old" and os.listdir(tmp_path) == ["cache.pkl"]


def test_a_dead_writers_temp_is_removed_by_the_next(tmp_path):
    target = tmp_path / "cache.pkl"
    stale = tmp_path / ".cache.pkl.999999999-abcd.tmp"  # a pid no process has
    stale.write_bytes(b"half")
    with atomic_path(target) as temp:
        temp.write_bytes(b"new")
    assert sorted(os.listdir(tmp_path)) == ["cache.pkl"]
