"""A named node set in a read-only --data-dir on its first use: one short line naming the fix (a writable copy),
not DGL's 1.9 kB C++ stack trace with advice to replace intact files. The folder is made read-only with
`chattr +i` (immutable: even root cannot write in it); where that is not possible the test is skipped."""
import shutil
import subprocess

import pytest

from geaet_dgl.data.nodes.node_sets import raw_folder
from tests.data.fixtures_node_sets import write_node_set_fixture
from tests.training.tiny import one_thread

from .helpers import one_line_error, run_cli

TINY = ["--epochs", "1", "--threads", "1", "--no-progress", "--set", "model.hidden_dim=8", "--set",
        "model.num_layers=1", "--set", "model.geanet.unit_size=2"]


@pytest.fixture
def read_only_citeseer(tmp_path):
    write_node_set_fixture("citeseer", tmp_path / "sets")
    folder = raw_folder("citeseer", tmp_path / "sets")
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)],
                                                         capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield tmp_path / "sets", folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_first_use_of_a_read_only_folder_names_the_writable_copy(read_only_citeseer, tmp_path):
    data_dir, folder = read_only_citeseer
    with one_thread():
        line = one_line_error(run_cli(["train", "--dataset", "citeseer", "--data-dir", data_dir, "--out",
                                       tmp_path / "run", *TINY]), exit_code=2)
    assert line == (f"error: citeseer: DGL's CiteseerGraphDataset writes its processed files (citeseer_dgl_graph.bin "
                    f"and citeseer_dgl_graph.pkl) into {folder} on the first read, but that folder is read-only; "
                    f"copy {data_dir} to a writable place (e.g. cp -r {data_dir} /tmp/dgl-data) and pass that as "
                    "--data-dir")
    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy)  # the fix the line names
    with one_thread():
        result = run_cli(["train", "--dataset", "citeseer", "--data-dir", copy, "--out", tmp_path / "run", *TINY])
    assert result.exit_code == 0, result.output
