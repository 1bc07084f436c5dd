"""Graph files: one-line errors instead of tracebacks (fields that differ, boolean labels, read-only folders,
graphs too large for dense encodings)."""
import json

import dgl
import pytest
import torch
from click.testing import CliRunner

from geaet_dgl import cli
from geaet_dgl.data import DataError, LoadOptions
from geaet_dgl.data.own_files.graph_files import inspect_graph_file, load_graph_file
from geaet_dgl.data.registry import load_with
from tests.own_graph_files import make_graphs, tiny_args, graph_targets


def _train(path, out, *extra):
    return CliRunner().invoke(cli.main, ["train", "--dataset", str(path), "--epochs", "1", "--out", str(out),
                                         "--no-progress"] + tiny_args() + list(extra))


def _one_line_error(result):
    assert result.exit_code != 0 and isinstance(result.exception, (SystemExit, type(None))), result.exception
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:") and "Traceback" not in result.output, result.output
    return lines[0]


def _save(path, graphs, labels):
    for g in graphs:
        g.ndata.pop("label", None)
    dgl.save_graphs(str(path), graphs, {"label": labels})


@pytest.mark.parametrize("where", ["ndata", "edata"])
@pytest.mark.slow
def test_an_extra_field_on_some_graphs_is_refused_before_the_run_directory_exists(tmp_path, where):
    graphs = make_graphs(24)
    frame = graphs[5].ndata if where == "ndata" else graphs[5].edata
    frame["weight"] = torch.ones(graphs[5].num_nodes() if where == "ndata" else graphs[5].num_edges())
    _save(tmp_path / "g.bin", graphs, (graph_targets(graphs) > 0).long())
    line = _one_line_error(_train(tmp_path / "g.bin", tmp_path / "run"))
    assert "graph 5" in line and "'weight'" in line
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


@pytest.mark.slow
def test_a_field_of_another_shape_on_one_graph_is_refused(tmp_path):
    graphs = make_graphs(24)
    for g in graphs:
        g.ndata["pos"] = torch.zeros(g.num_nodes(), 2)
    graphs[7].ndata["pos"] = torch.zeros(graphs[7].num_nodes(), 3)
    _save(tmp_path / "g.bin", graphs, (graph_targets(graphs) > 0).long())
    with pytest.raises(DataError, match=r"graph 7 .*ndata\['pos'\]"):
        inspect_graph_file(tmp_path / "g.bin")


@pytest.mark.slow
def test_boolean_labels_are_two_classes(tmp_path):
    graphs = make_graphs(24)
    _save(tmp_path / "g.bin", graphs, graph_targets(graphs) > 0)  # torch.bool
    info = inspect_graph_file(tmp_path / "g.bin")
    assert info.task == "graph-classification" and info.num_outputs == 2
    splits = load_graph_file(LoadOptions(data_file=tmp_path / "g.bin", progress=False))
    assert splits.train.labels.dtype == torch.int64 and set(splits.train.labels.tolist()) <= {0, 1}


@pytest.mark.slow
def test_a_folder_where_the_cache_cannot_be_written_falls_back_to_the_user_cache(tmp_path, monkeypatch):
    folder = tmp_path / "shared"
    folder.mkdir()
    graphs = make_graphs(24)
    _save(folder / "g.bin", graphs, (graph_targets(graphs) > 0).long())
    (folder / "geaet_cache").write_text("not a folder")  # the cache beside the file cannot be made (root ignores
    #                                                       chmod, so a read-only folder is shown this way)
    monkeypatch.setenv("GEAET_DGL_CACHE", str(tmp_path / "user-cache"))
    splits = load_with("file", LoadOptions(data_file=folder / "g.bin", pe_k=2, progress=False))
    assert "lap_pe" in splits.train.graphs[0].ndata
    assert list((tmp_path / "user-cache").rglob("*.pt"))


@pytest.mark.slow
def test_a_graph_too_large_for_dense_encodings_is_a_one_line_error(tmp_path, monkeypatch):
    from geaet_dgl.data.encodings import pe_cache

    graphs = make_graphs(24)
    _save(tmp_path / "g.bin", graphs, (graph_targets(graphs) > 0).long())
    monkeypatch.setattr(pe_cache, "free_memory_bytes", lambda: 1000)  # as if 1 kB were left
    with pytest.raises(DataError, match=r"graph \d+ has \d+ nodes.*model.pe=none"):
        load_with("file", LoadOptions(data_file=tmp_path / "g.bin", pe_k=2, progress=False))
