"""Heterograph files: one-line errors before anything is written."""

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data.generated.hetero import author_paper_graphs
from tests.commands.test_train_hetero import TINY, _args
from tests.training.tiny import one_thread
from tests.fixtures import FIXTURES

CHECKPOINT = FIXTURES / "run-before-format-2" / "last.pt"  # a homogeneous model


def _cli(*args):
    with one_thread():
        return CliRunner().invoke(cli.main, [str(a) for a in args])


def _error(result):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def _graph_labelled(count=12):
    graphs, labels = author_paper_graphs(count)
    return graphs, {"label": torch.tensor([int(y[0]) for y in labels])}


@pytest.mark.slow
@pytest.mark.parametrize("masks", [False, True], ids=["graphs", "one-graph-with-masks"])
def test_predict_with_a_homogeneous_checkpoint_on_heterographs(tmp_path, masks):
    """Was AttributeError: 'dict' object has no attribute 'ndim'."""
    graphs, labels = _graph_labelled()
    if masks:
        graphs = [dgl.batch(graphs)]
        for name in ("train_mask", "val_mask", "test_mask"):
            graphs[0].nodes["paper"].data[name] = torch.zeros(graphs[0].num_nodes("paper"), dtype=torch.bool)
    path = tmp_path / "hetero.bin"
    dgl.save_graphs(str(path), graphs)
    line = _error(_cli("predict", "--checkpoint", CHECKPOINT, "--graphs", path, "--out", tmp_path / "p.csv"))
    assert "graph 0 is a heterograph (node types author, paper" in line and "one node and one edge type" in line
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("field, words", [("train_mask", "node masks split the nodes of one graph"),
                                          ("weight", "on every graph or on none")])
@pytest.mark.slow
def test_a_field_on_some_heterographs_only_is_refused_before_the_run(tmp_path, field, words):
    """Masks (or any field) on graph 3 only: was a DGLError about schemas mid-run, leaving a run folder."""
    graphs, labels = _graph_labelled()
    values = torch.ones(graphs[3].num_nodes("paper"))
    graphs[3].nodes["paper"].data[field] = values.bool() if field.endswith("_mask") else values
    path = tmp_path / "hetero.bin"
    dgl.save_graphs(str(path), graphs, labels)
    line = _error(_cli("train", "--dataset", path, "--epochs", 1, "--out", tmp_path / "run", "--no-progress",
                       *_args()))
    assert f"graph 3 has nodes['paper'].data['{field}'] but graph 0 has not" in line and words in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_field_of_another_shape_on_one_heterograph(tmp_path):
    graphs, labels = _graph_labelled()
    for index, g in enumerate(graphs):
        g.edges["cites"].data["w"] = torch.ones(g.num_edges("cites"), 2 if index == 5 else 1)
    path = tmp_path / "hetero.bin"
    dgl.save_graphs(str(path), graphs, labels)
    line = _error(_cli("train", "--dataset", path, "--epochs", 1, "--out", tmp_path / "run", "--no-progress",
                       *_args()))
    assert "graph 5 has edges['paper:cites:paper'].data['w'] of row shape (2,)" in line, line
