"""examples/predict_exported.py, run where neither dgl nor geaet_dgl can be imported, writes ``predict``'s CSV.

The graphs go to ``geaet-dgl predict`` as a DGL graph file and to the example as the npz it reads (node ids
local to each graph); the example computes the encodings itself with NumPy, batches as ``predict`` does and
writes the same columns, with values equal to 1e-5.
"""
import csv
import os
import subprocess
import sys
from pathlib import Path

import dgl
import pytest

from geaet_dgl.export.graphs_npz import write_graphs_npz
from geaet_dgl.export.writer import export_checkpoint
from geaet_dgl.scoring import predict_file
from tests.export.cases import random_graphs, save_case_checkpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "predict_exported.py"
TOLERANCE = 1e-5


def without_dgl(folder: Path) -> dict:
    """An environment whose ``import dgl`` and ``import geaet_dgl`` raise ImportError (a path entry in front)."""
    blocked = folder / "blocked"
    for name in ("dgl", "geaet_dgl"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('{name} is blocked in this test')\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(blocked)
    env["OMP_NUM_THREADS"] = "1"
    return env


def read_rows(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def assert_same_predictions(ours, theirs):
    assert ours[0] == theirs[0] and len(ours) == len(theirs)
    header = ours[0]
    for mine, want in zip(ours[1:], theirs[1:]):
        for column, a, b in zip(header, mine, want):
            if column.startswith(("prob_", "value")):
                assert abs(float(a) - float(b)) <= TOLERANCE, (column, a, b)
            else:
                assert a == b, (column, a, b)


@pytest.mark.parametrize("case, sizes, batch_size", [
    ("mnist", ((6, 14), (1, 0), (4, 0), (9, 20), (3, 3), (7, 12), (2, 2)), 3),
    ("zinc-gine", ((5, 8), (3, 0), (8, 16), (4, 6)), 2),
    ("zinc-graphormer", ((5, 8), (3, 0), (8, 16), (4, 6), (12, 30)), 2),
    ("geaet-node", ((30, 80),), 16),
])
@pytest.mark.slow
def test_the_example_without_dgl_writes_predicts_rows(case, sizes, batch_size, tmp_path):
    # a small batch size: several batches of unequal shapes through one file
    run, model = save_case_checkpoint(case, tmp_path / "best.pt", **{"train.batch_size": batch_size})
    graphs = random_graphs(run.model, sizes, seed=5)
    dgl.save_graphs(str(tmp_path / "graphs.bin"), graphs)
    write_graphs_npz(graphs, tmp_path / "graphs.npz")
    predict_file(tmp_path / "best.pt", tmp_path / "graphs.bin", tmp_path / "theirs.csv", progress=False)
    theirs = read_rows(tmp_path / "theirs.csv")

    formats = ["torchscript"] + (["onnx"] if _has("onnxruntime") else [])
    env = without_dgl(tmp_path)
    for blocked in ("dgl", "geaet_dgl"):
        probe = subprocess.run([sys.executable, "-c", f"import {blocked}"], env=env, capture_output=True, text=True,
                               cwd=tmp_path)
        assert probe.returncode != 0 and f"{blocked} is blocked" in probe.stderr
    for fmt in formats:
        model_file = tmp_path / f"model.{fmt}"
        export_checkpoint(tmp_path / "best.pt", fmt, model_file)
        out = tmp_path / f"ours-{fmt}.csv"
        done = subprocess.run([sys.executable, str(EXAMPLE), str(model_file), str(tmp_path / "graphs.npz"),
                               "--out", str(out)], env=env, capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert_same_predictions(read_rows(out), theirs)


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def test_bad_npz_files_are_one_error_line(tmp_path, capsys):
    """The example refuses an npz without a key, or with node ids that are not local to their graph, in one line."""
    import importlib.util

    import numpy as np

    spec = importlib.util.spec_from_file_location("predict_exported", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    save_case_checkpoint("zinc-gine", tmp_path / "best.pt")
    export_checkpoint(tmp_path / "best.pt", "torchscript", tmp_path / "model.pt")
    good = {"num_nodes": np.array([3, 2]), "num_edges": np.array([2, 1]), "x": np.zeros((5, 1), np.float32),
            "edge_index": np.array([[0, 1, 0], [1, 2, 1]]), "edge_attr": np.zeros((3, 1), np.float32)}
    cases = {"missing": ({k: v for k, v in good.items() if k != "x"}, "has no 'x'"),
             "global ids": ({**good, "edge_index": np.array([[0, 1, 3], [1, 2, 4]])},
                            "graph 1: edge_index holds node ids outside 0..1")}
    for name, (arrays, expected) in cases.items():
        np.savez(tmp_path / f"{name}.npz", **arrays)
        code = example.main([str(tmp_path / "model.pt"), str(tmp_path / f"{name}.npz"), "--out",
                             str(tmp_path / f"{name}.csv")])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and expected in err[0], (name, err)
        assert not (tmp_path / f"{name}.csv").exists()
    np.savez(tmp_path / "good.npz", **good)
    assert example.main([str(tmp_path / "model.pt"), str(tmp_path / "good.npz"), "--out", str(tmp_path / "g.csv")]) == 0
    assert len(read_rows(tmp_path / "g.csv")) == 3  # header and two graphs


def load_example():
    import importlib.util

    spec = importlib.util.spec_from_file_location("predict_exported", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


@pytest.mark.slow
def test_files_of_format_2_still_take_the_degrees_as_their_eighth_input(tmp_path):
    """A file of export_format 2 (ten inputs: Graphormer's degrees eighth) still runs through the example, which
    feeds it the degrees; its predictions equal the format-3 file's (nine inputs, the degrees computed inside).

    The format-2 file is the format-3 model behind the old ten-input forward, which checks that the degrees it is
    given are the simple graph's (a wrong input order fails it)."""
    import torch

    from geaet_dgl.export import ExportedGEAET
    from geaet_dgl.export.graphormer import simple_graph_degrees
    from geaet_dgl.export.writer import export_metadata, torchscript_bytes

    class Format2(torch.nn.Module):
        def __init__(self, inner: ExportedGEAET):
            super().__init__()
            self.inner = inner

        def forward(self, x, edge_index, edge_attr, node_counts, lap_pe, lap_eigval, rwse, degrees: torch.Tensor,
                    spatial_types, path_types):
            want = simple_graph_degrees(edge_index[0], edge_index[1], x.shape[0])
            torch._assert(torch.equal(degrees, want), "the degrees input is not the simple graph's degrees")
            return self.inner(x, edge_index, edge_attr, node_counts, lap_pe, lap_eigval, rwse, spatial_types,
                              path_types)

    example = load_example()
    assert example.inputs_of_format(2) == ("x", "edge_index", "edge_attr", "node_counts", "lap_pe", "lap_eigval",
                                           "rwse", "degrees", "spatial_types", "path_types")
    assert example.inputs_of_format(3) == example.INPUT_NAMES and len(example.INPUT_NAMES) == 9
    assert example.inputs_of_format(1) == example.INPUT_NAMES[:7]
    run, model = save_case_checkpoint("zinc-graphormer", tmp_path / "best.pt", **{"train.batch_size": 2})
    graphs = random_graphs(run.model, ((5, 12), (3, 0), (8, 16), (4, 6)), seed=2)  # duplicates, self-loops
    write_graphs_npz(graphs, tmp_path / "graphs.npz")
    metadata = export_metadata(run)
    assert metadata["export_format"] == 3 and "degrees" not in metadata["inputs"] and metadata["graphormer"]["degrees"]
    old = {**metadata, "export_format": 2, "inputs": list(example.inputs_of_format(2)),
           "input_widths": {**metadata["input_widths"], "degrees": 2}}
    (tmp_path / "old.pt").write_bytes(torchscript_bytes(Format2(ExportedGEAET(model)), old))
    export_checkpoint(tmp_path / "best.pt", "torchscript", tmp_path / "new.pt")
    for name in ("old", "new"):
        assert example.main([str(tmp_path / f"{name}.pt"), str(tmp_path / "graphs.npz"), "--out",
                             str(tmp_path / f"{name}.csv")]) == 0
    old_rows, new_rows = read_rows(tmp_path / "old.csv"), read_rows(tmp_path / "new.csv")
    assert len(new_rows) == 5 and new_rows[0] == ["index", "value"]
    assert_same_predictions(old_rows, new_rows)
