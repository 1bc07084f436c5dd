"""Small truths (overwrite clears TensorBoard files, graph_check judges eigenvectors, the
reference's epoch numbering survives a round trip, help texts, the Pythons that work)."""
import configparser
import os
from pathlib import Path

import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_lab.interop.graph_check import compare_split
from geaet_dgl.interop.reference_checkpoint import export_reference, import_reference
from geaet_dgl.training import load_checkpoint
from geaet_dgl.training.run_dir import prepare_new_run_dir
from tests.interop.test_reference_checkpoint import _our_run, _yaml

REPO = Path(__file__).resolve().parents[2]


def test_overwrite_removes_the_old_tensorboard_event_files(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "events.out.tfevents.1700000000.host.123.0").write_bytes(b"old curves")
    (run_dir / "notes.txt").write_text("mine")
    prepare_new_run_dir(run_dir, overwrite=True)
    assert sorted(p.name for p in run_dir.iterdir()) == ["notes.txt"]  # the user's own file stays


def _split(eigvals, eigvecs):
    n = eigvecs.shape[0]
    return {"y": torch.zeros(1), "num_nodes": torch.tensor([n]), "num_edges": torch.tensor([0]),
            "edge_index": torch.zeros(2, 0, dtype=torch.long), "x": torch.zeros(n, 1), "edge_attr": torch.zeros(0, 1),
            "eigvals": eigvals.expand(n, -1).clone(), "eigvecs": eigvecs}


def test_graph_check_fails_on_an_eigenvector_of_a_simple_eigenvalue_that_differs():
    vals = torch.tensor([[0.0, 1.0, 3.0]])  # all simple
    vecs = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(0)))[0]
    ours = _split(vals, vecs)
    assert compare_split(ours, _split(vals, vecs * torch.tensor([1.0, -1.0, 1.0])))["equal"]  # sign: free
    other = vecs.clone()
    other[:, 2] = vecs[:, 1]
    assert not compare_split(ours, _split(vals, other))["equal"]


def test_graph_check_counts_but_does_not_require_eigenvectors_of_a_repeated_eigenvalue():
    vals = torch.tensor([[0.0, 2.0, 2.0]])  # a repeated eigenvalue: any basis of its space is right
    vecs = torch.linalg.qr(torch.randn(3, 3, generator=torch.Generator().manual_seed(1)))[0]
    rotated = vecs.clone()
    c, s = 0.6, 0.8
    rotated[:, 1], rotated[:, 2] = c * vecs[:, 1] + s * vecs[:, 2], -s * vecs[:, 1] + c * vecs[:, 2]
    report = compare_split(_split(vals, vecs), _split(vals, rotated))
    assert report["equal"] and report["eigvec_columns_matched"] == 1


def test_a_reference_checkpoint_round_trip_keeps_its_epoch_number(tmp_path):
    ours, _ = _our_run(tmp_path, "mnist")  # 4 epochs finished -> the reference's 3.ckpt
    exported = export_reference(ours)
    assert exported["path"].endswith(os.path.join("ckpt", "3.ckpt"))
    imported = import_reference(exported["path"], _yaml(tmp_path, "mnist"), tmp_path / "imported")
    assert load_checkpoint(imported["checkpoint"])["epoch"] == 4  # epoch 3 (0-based) done = 4 finished epochs
    again = export_reference(imported["checkpoint"], out=tmp_path / "again" / "x.ckpt")
    assert again["epoch"] == 3


def test_study_help_texts_name_every_dataset():
    for command in ("sweep", "attention"):
        text = CliRunner().invoke(cli.main, [command, "--help"]).output
        assert "mnist or synthetic" not in text and "mnist and synthetic" not in text
        assert "geaet-dgl datasets" in " ".join(text.split())


def test_setup_states_the_pythons_dgl_has_wheels_for():
    parser = configparser.ConfigParser()
    parser.read(REPO / "setup.cfg")
    assert parser["options"]["python_requires"].replace(" ", "") == ">=3.11,<3.13"
    assert "Python 3.11 or 3.12" in (REPO / "README.md").read_text()
