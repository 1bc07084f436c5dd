"""``geaet-dgl export``: writes a file that loads and predicts; refuses uncovered models in one line, writing nothing."""
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.export.writer import read_metadata
from tests.export.cases import save_case_checkpoint


def test_export_writes_a_torchscript_file_that_loads(tmp_path):
    save_case_checkpoint("mnist", tmp_path / "best.pt")
    out = tmp_path / "model.pt"
    result = CliRunner().invoke(cli.main, ["export", "--checkpoint", str(tmp_path / "best.pt"), "--format",
                                           "torchscript", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote torchscript model" in result.stdout and "Laplacian eigenvectors" in result.stdout
    assert isinstance(torch.jit.load(str(out)), torch.jit.ScriptModule)
    assert read_metadata(out)["output"] == {"level": "graph", "kind": "classes", "width": 10}
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_an_uncovered_layer_is_one_error_line_and_no_file(tmp_path):
    save_case_checkpoint("mnist", tmp_path / "best.pt", **{"model.pe": "hkdiagse"})
    out = tmp_path / "model.pt"
    result = CliRunner().invoke(cli.main, ["export", "--checkpoint", str(tmp_path / "best.pt"), "--format", "onnx",
                                           "--out", str(out)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot export model.pe=hkdiagse"), result.stderr
    assert not out.exists()


def test_a_missing_checkpoint_is_one_error_line(tmp_path):
    result = CliRunner().invoke(cli.main, ["export", "--checkpoint", str(tmp_path / "none.pt"), "--format",
                                           "torchscript", "--out", str(tmp_path / "m.pt")])
    assert result.exit_code == 2 and result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1


@pytest.mark.slow
def test_an_imported_reference_checkpoint_exports(tmp_path):
    """A reference (PyG) checkpoint brought in with import-reference exports like any run: the MNIST preset at its
    own size, written to the reference's format and imported back, then exported, equals the original model."""
    import dgl

    from geaet_dgl.export.writer import inputs_of_batch, input_widths
    from geaet_dgl.interop.reference_checkpoint import export_reference, import_reference
    from geaet_dgl.scoring import open_trained_run
    from tests.conftest import random_graph, with_features
    from tests.interop.test_reference_checkpoint import _our_run, _yaml

    ours, model = _our_run(tmp_path, "mnist")
    imported = import_reference(export_reference(ours)["path"], _yaml(tmp_path, "mnist"), tmp_path / "run")
    out = tmp_path / "model.pt"
    result = CliRunner().invoke(cli.main, ["export", "--checkpoint", str(imported["checkpoint"]), "--format",
                                           "torchscript", "--out", str(out)])
    assert result.exit_code == 0, result.output
    run, _, _ = open_trained_run(imported["checkpoint"])
    batch = dgl.batch(with_features([random_graph(9, 30, 1), random_graph(6, 14, 2), random_graph(1, 0, 3)], 8))
    with torch.no_grad():
        want = model.eval()(batch)
        got = torch.jit.load(str(out))(*inputs_of_batch(batch, input_widths(run)))
    assert (got - want).abs().max() <= 1e-5
