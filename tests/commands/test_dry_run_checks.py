"""`train --dry-run` checks what the run would check before training (the public split, a pretrained folder's
checkpoint) and names the folders DGL and GraphGPS's layout hold, still without reading any data."""
import re

import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.nodes.node_sets import raw_folder
from geaet_dgl.interop.reference_checkpoint import MODEL_STATE
from geaet_dgl.interop.reference_names import ours_to_reference
from geaet_dgl.interop.reference_yaml import read_reference_config
from geaet_dgl.models import build_model
from tests.commands.test_train_dry_run import _write
from tests.interop.test_reference_checkpoint import _pretrained_folder


def _dry_run(*args):
    return CliRunner().invoke(cli.main, ["train", *[str(a) for a in args], "--dry-run"])


def _error(result, exit_code=2):
    assert result.exit_code == exit_code, result.output
    errors = [line for line in result.output.splitlines() if line.startswith(("error:", "Error:"))]
    assert len(errors) == 1 and "Traceback" not in result.output
    return errors[0]


def test_split_index_and_splits_are_checked_against_the_published_splits(tmp_path):
    config, data_dir = _write(tmp_path, "webkb-tex-GPS.yaml"), tmp_path / "absent"
    line = _error(_dry_run("--config", config, "--data-dir", data_dir, "--split-index", "12"))
    assert line == ("error: texas has 10 public splits (0..9); --split-index 12 is out of range: pick one of 0..9, "
                    "or train on all of them with --splits all")
    line = _error(_dry_run("--config", config, "--data-dir", data_dir, "--splits", "0", "3", "99"))
    assert line.startswith("error: texas has 10 public splits (0..9); split 99 of --splits is out of range")
    fine = _dry_run("--config", config, "--data-dir", data_dir, "--splits", "0", "1", "--seeds", "0", "1")
    assert fine.exit_code == 0, fine.output
    assert "study: one run per public split [0, 1] and seed [0, 1] (4 runs)" in fine.output
    folder = raw_folder("texas", data_dir)
    assert re.fullmatch(r"texas_[0-9a-f]{8}", folder.name)  # DGL's raw folder, not data_dir/texas
    assert f"files the run would read: {folder}/ (out1_graph_edges.txt" in fine.output
    assert not data_dir.exists()


def test_splits_on_a_set_without_public_splits_is_refused(tmp_path):
    line = _error(_dry_run("--config", _write(tmp_path, "zinc-GPS+RWSE.yaml"), "--splits", "all"))
    assert "--splits trains on the public splits of a named node set" in line


def test_a_pretrained_folder_is_named_by_its_checkpoint_and_checked_against_the_model(tmp_path):
    path, _ = _pretrained_folder(tmp_path)
    fine = _dry_run("--config", path)
    assert fine.exit_code == 0, fine.output
    checkpoint = tmp_path / "pretrained" / "zinc-GPS+RWSE-ckptbest" / "0" / "ckpt" / "41.ckpt"
    assert re.search(r"files the run would read: .*" + re.escape(str(checkpoint)), fine.output)

    model = read_reference_config(path).preset.model  # another model's checkpoint in its place: wider layers
    model.hidden_dim, model.geanet.unit_size = model.hidden_dim * 2, None
    other = build_model(model)
    theirs = ours_to_reference(other.state_dict(), model)
    torch.save({MODEL_STATE: {"model." + k: v for k, v in theirs.items()}}, checkpoint)
    line = _error(_dry_run("--config", path))
    assert line.startswith(f"error: reference checkpoint {checkpoint}: parameter ")
    assert line.endswith("pass the config the checkpoint was trained with")
