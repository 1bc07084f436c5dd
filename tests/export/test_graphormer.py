"""Graphormer exported: the degree embeddings and the biased Transformer's attention bias (spatial types and the
edge types along shortest paths) on plain tensors equal the library's; the graph token is refused."""
import dgl
import pytest
import torch

from geaet_dgl.export import ExportedGEAET
from geaet_dgl.export.graphormer import ExportGraphormerBias
from geaet_dgl.export.scatter import graph_index
from geaet_dgl.export.writer import input_widths
from geaet_dgl.nn.batch_layout import BatchLayout
from tests.export.cases import FIRST_BATCH, SECOND_BATCH, exported_inputs, prepared, random_graphs, \
    save_case_checkpoint


def strong_bias(model):
    """The case's model with its Graphormer tables scaled up, so that the bias moves the outputs far (at their
    initial scale, std 0.02, it moves them by ~5e-6: below the parity tolerance)."""
    with torch.no_grad():
        for table in (model.bias_encoder.spatial_encoder, model.bias_encoder.edge_encoder,
                      model.bias_encoder.edge_dis_encoder):
            table.weight.mul_(100.0)
    return model


def test_the_bias_equals_the_librarys_on_every_pair(tmp_path):
    run, model = save_case_checkpoint("zinc-graphormer", tmp_path / "best.pt")
    strong_bias(model)
    for sizes, seed in ((FIRST_BATCH, 0), (SECOND_BATCH, 1)):
        batch = dgl.batch(prepared(run, random_graphs(run.model, sizes, seed=seed)))
        want = model.bias_encoder(batch.ndata["spatial_types"], BatchLayout.from_graph(batch),
                                  batch.ndata["path_types"])
        counts = batch.batch_num_nodes()
        graph_of_node = graph_index(counts, batch.num_nodes())
        position = torch.arange(batch.num_nodes()) - (torch.cumsum(counts, 0) - counts)[graph_of_node]
        got = torch.jit.script(ExportGraphormerBias(model.bias_encoder))(
            batch.ndata["spatial_types"].long(), batch.ndata["path_types"].long(), graph_of_node, counts, position)
        assert got.shape == want.shape and torch.allclose(got, want, atol=1e-5, rtol=1e-6)  # entries up to ~300
        assert want.abs().max() > 1.0  # the scaled bias is far from 0


def test_the_biased_model_matches_and_the_bias_matters(tmp_path):
    run, model = save_case_checkpoint("zinc-graphormer", tmp_path / "best.pt")
    strong_bias(model)
    graphs = prepared(run, random_graphs(run.model, FIRST_BATCH, seed=0))
    inputs = exported_inputs(graphs, input_widths(run))
    exported = ExportedGEAET(model)
    with torch.no_grad():
        want = model(dgl.batch(graphs))
        assert (torch.jit.script(exported)(*inputs) - want).abs().max() <= 1e-5
        exported.bias.spatial.zero_()
        exported.bias.path_table.zero_()
        assert (exported(*inputs) - want).abs().max() > 1e-4  # ten times the tolerance (measured 1.6e-4)


def test_degrees_only_add_the_degree_embeddings(tmp_path):
    """``graphormer.degrees_only``: the degree embeddings without a bias (the plain Transformer), scripted."""
    from geaet_dgl.training import make_run_config
    from geaet_dgl.models import build_model

    run = make_run_config("mnist", preset="mnist", overrides={
        "model.hidden_dim": 16, "model.num_layers": 1, "model.graphormer.enable": True,
        "model.graphormer.degrees_only": True})
    torch.manual_seed(0)
    model = build_model(run.model).eval()
    with torch.no_grad():
        model.degree_encoder.in_degree_encoder.weight.mul_(50.0)
    graphs = prepared(run, random_graphs(run.model, FIRST_BATCH, seed=0))
    inputs = exported_inputs(graphs, input_widths(run))
    assert len(inputs) == 9 and inputs[7].shape == (23, 0)  # the degrees are computed inside: no spatial types
    exported = ExportedGEAET(model)
    with torch.no_grad():
        want = model(dgl.batch(graphs))
        assert (torch.jit.script(exported)(*inputs) - want).abs().max() <= 1e-5
        exported.degrees.in_table.zero_()
        assert (exported(*inputs) - want).abs().max() > 1e-4


def test_the_examples_encodings_equal_geaet_dgls():
    """examples/predict_exported.py computes degrees, spatial types and path edge types as the library does, on
    graphs with duplicate edges, self-loops, isolated nodes and unreachable pairs (paths longer than S cut)."""
    import importlib.util

    import numpy as np

    from geaet_dgl.data.encodings.structural_encoding import (graphormer_degrees, path_edge_types_from_edges,
                                                              spatial_types_from_edges)
    from tests.export.test_example import EXAMPLE

    spec = importlib.util.spec_from_file_location("predict_exported", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    rng = np.random.default_rng(0)
    graphs = [(np.array([0, 1, 2, 3, 4, 5]), np.array([1, 2, 3, 4, 5, 6]), 8)]  # a long path, an isolated node
    graphs += [(rng.integers(0, n, m), rng.integers(0, n, m), n) for n, m in ((1, 0), (6, 14), (12, 30), (9, 3))]
    graphs += [(np.array([0, 0, 1, 1]), np.array([1, 1, 1, 0]), 2)]  # a duplicate edge and a self-loop
    for src, dst, n in graphs:
        edge_types = rng.integers(0, 4, len(src))
        degrees, types, paths = example.graphormer_encodings(src, dst, n, 5, edge_types)
        in_degree, out_degree = graphormer_degrees(src, dst, n)
        assert np.array_equal(degrees, np.stack([in_degree, out_degree], 1))
        assert np.array_equal(types, spatial_types_from_edges(src, dst, n, 5))
        assert np.array_equal(paths, path_edge_types_from_edges(src, dst, edge_types, n, 5))
    long_path = example.graphormer_encodings(*graphs[0], 5, np.zeros(6, np.int64))[1]
    assert long_path[0, 6] == 4 and long_path[0, 7] == 5  # cut at S - 1; unreachable: S


def test_the_example_refuses_degrees_and_edge_types_beyond_the_models_tables(tmp_path):
    """A degree or an edge type the model's embedding tables do not have is one error line naming the setting."""
    import importlib.util

    import numpy as np
    import pytest

    from tests.export.test_example import EXAMPLE

    spec = importlib.util.spec_from_file_location("predict_exported", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    graphormer = {"degrees": True, "num_in_degrees": 3, "num_out_degrees": 8, "spatial_types": 5,
                  "path_types": True, "num_edge_types": 4}
    settings = {"input_widths": {"x": 1, "edge_attr": 1}, "graphormer": graphormer,
                "encodings": {"lap_pe_k": 0, "rwse_k": 0, "lap_eigval": False, "laplacian_norm": "sym"}}
    star = {"num_nodes": np.array([4]), "num_edges": np.array([3]), "x": np.zeros((4, 1), np.float32),
            "edge_index": np.array([[1, 2, 3], [0, 0, 0]]), "edge_attr": np.array([[0.0], [1.0], [2.0]])}
    np.savez(tmp_path / "star.npz", **star)
    with pytest.raises(example.ExampleError, match="graph 0 has in-degree 3, .* 3 entries .*num_in_degrees"):
        example.read_graphs(str(tmp_path / "star.npz"), settings)
    np.savez(tmp_path / "types.npz", **{**star, "edge_attr": np.array([[0.0], [7.0], [2.0]])})
    with pytest.raises(example.ExampleError, match="edge type 7, .*num_edge_types"):
        example.read_graphs(str(tmp_path / "types.npz"), settings)
    graphormer["num_in_degrees"] = 4
    (graph,) = example.read_graphs(str(tmp_path / "star.npz"), settings)
    assert graph["degrees"][:, 0].tolist() == [3, 0, 0, 0] and graph["path_types"].shape == (4, 4, 5)


def degree_graphs():
    """(src, dst, N) graphs with duplicate edges, self-loops (one stored twice) and nodes without edges."""
    import numpy as np

    rng = np.random.default_rng(3)
    graphs = [(np.array([0, 0, 1, 1, 2, 2, 0]), np.array([1, 1, 1, 1, 0, 0, 2]), 5),  # nodes 3, 4 without edges
              (np.zeros(0, np.int64), np.zeros(0, np.int64), 3), (np.zeros(0, np.int64), np.zeros(0, np.int64), 0)]
    return graphs + [(rng.integers(0, n, m), rng.integers(0, n, m), n) for n, m in ((1, 4), (7, 25), (15, 60))]


def test_the_models_degrees_equal_geaet_dgls_on_duplicates_self_loops_and_isolated_nodes():
    """Format 3 computes Graphormer's degrees inside the model (scripted here) from the edges as stored; they equal
    the library's ``graphormer_degrees`` (the directed simple graph: duplicates once, a self-loop once each way)."""
    import numpy as np

    from geaet_dgl.data.encodings.structural_encoding import graphormer_degrees
    from geaet_dgl.export.graphormer import simple_graph_degrees

    scripted = torch.jit.script(simple_graph_degrees)
    for src, dst, n in degree_graphs():
        in_degree, out_degree = graphormer_degrees(src, dst, n)
        got = scripted(torch.from_numpy(src).long(), torch.from_numpy(dst).long(), n)
        assert got.dtype == torch.long and np.array_equal(got.numpy(), np.stack([in_degree, out_degree], 1))
    first = scripted(torch.tensor([0, 0, 1, 1, 2, 2, 0]), torch.tensor([1, 1, 1, 1, 0, 0, 2]), 5)
    assert first.tolist() == [[1, 2], [2, 1], [1, 1], [0, 0], [0, 0]]  # by hand: node 1's self-loop once each way


def test_the_models_degrees_through_onnxruntime_any_edge_count(tmp_path):
    """The ONNX form of the degrees (sort, first keys, scatter_add) is traced once and serves other edge counts,
    none included."""
    ort = pytest.importorskip("onnxruntime")
    import numpy as np

    from geaet_dgl.data.encodings.structural_encoding import graphormer_degrees
    from geaet_dgl.export.graphormer import simple_graph_degrees

    class Degrees(torch.nn.Module):
        def forward(self, x, edge_index):
            return simple_graph_degrees(edge_index[0], edge_index[1], x.shape[0])

    torch.onnx.export(Degrees(), (torch.zeros(4, 1), torch.tensor([[0, 1, 1, 3], [1, 2, 2, 3]])),
                      str(tmp_path / "degrees.onnx"), input_names=["x", "edge_index"], output_names=["degrees"],
                      dynamic_axes={"x": {0: "nodes"}, "edge_index": {1: "edges"}}, opset_version=18)
    session = ort.InferenceSession(str(tmp_path / "degrees.onnx"), providers=["CPUExecutionProvider"])
    for src, dst, n in degree_graphs():
        (got,) = session.run(None, {"x": np.zeros((n, 1), np.float32),
                                    "edge_index": np.stack([src, dst]).astype(np.int64)})
        assert np.array_equal(got, np.stack(graphormer_degrees(src, dst, n), 1))


def test_a_degree_beyond_the_table_is_refused_naming_the_setting():
    """A node whose in-degree has no row in the scripted model's table raises as the library's encoder does."""
    from geaet_dgl.export.graphormer import ExportDegrees
    from geaet_dgl.nn.graphormer_bias import GraphormerDegreeEncoder

    encoder = GraphormerDegreeEncoder(4, 3, 5).eval()
    star_src, star_dst = torch.tensor([1, 2, 2, 3]), torch.tensor([0, 0, 0, 0])  # in-degree 3 (one edge twice)
    with pytest.raises(ValueError, match="in-degree 3, but the encoder has 3 entries; set "
                                         "model.graphormer.num_in_degrees to at least 4"):
        encoder(torch.zeros(4, 4), torch.tensor([3, 0, 0, 0]), torch.tensor([0, 1, 1, 1]))
    scripted = torch.jit.script(ExportDegrees(encoder))
    with pytest.raises(torch.jit.Error, match="in-degree 3, but the encoder has 3 entries; set "
                                              "model.graphormer.num_in_degrees to at least 4"):
        scripted(torch.zeros(4, 4), star_src, star_dst)
    h = torch.randn(4, 4)
    want = encoder(h, torch.tensor([2, 0, 0, 0]), torch.tensor([0, 1, 1, 0]))
    assert torch.allclose(scripted(h, star_src[:3], star_dst[:3]), want)  # 2 -> 0 twice: in-degree 2, in the table
