"""Property tests (hypothesis): random small graphs and batches through small GEAET models (eval mode).

* both GEANet scopes ('graph' and 'batch') give finite outputs on any batch;
* in 'graph' scope each graph's output does not depend on its batch-mates;
* in 'graph' scope permuting a graph's nodes permutes its node-level outputs the same way and leaves its
  graph-level output unchanged.

Graphs are drawn with 1-8 nodes and any edge list (self-loops, duplicate edges, isolated nodes and edgeless
graphs included). Features: ndata['feat'] (N, 3), edata['feat'] (E, 1), ndata['lap_pe'] (N, 8).
"""
import dgl
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from geaet_dgl.config import GEANetConfig, ModelConfig
from geaet_dgl.models import build_model

SETTINGS = settings(max_examples=30, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
ATOL = 1e-5


def _model(scope: str, head: str = "graph"):
    torch.manual_seed(0)
    config = ModelConfig(hidden_dim=8, num_layers=2, num_heads=2, head=head, out_feats=3,
                         geanet=GEANetConfig(num_heads=2, unit_size=4, edge_unit=True, scope=scope))
    model = build_model(config).eval()
    # Non-trivial BatchNorm statistics, so normalisation is exercised (eval mode uses them).
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm1d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    return model


MODELS = {(scope, head): _model(scope, head) for scope in ("graph", "batch") for head in ("graph", "node")}


@st.composite
def graphs(draw, max_nodes: int = 8):
    """One random graph with features."""
    n = draw(st.integers(1, max_nodes))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n))
    src = torch.tensor([e[0] for e in edges], dtype=torch.int64)
    dst = torch.tensor([e[1] for e in edges], dtype=torch.int64)
    g = dgl.graph((src, dst), num_nodes=n)
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    g.ndata["feat"] = torch.rand(n, 3, generator=gen)
    g.edata["feat"] = torch.rand(len(edges), 1, generator=gen)
    g.ndata["lap_pe"] = torch.randn(n, 8, generator=gen)
    return g


batches = st.lists(graphs(), min_size=1, max_size=4)


def permuted(g: dgl.DGLGraph, perm: torch.Tensor) -> dgl.DGLGraph:
    """``g`` with node ``i`` of the result = node ``perm[i]`` of ``g`` (edges and their data kept in order)."""
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(len(perm))
    src, dst = g.edges()
    out = dgl.graph((inverse[src], inverse[dst]), num_nodes=g.num_nodes())
    for key, value in g.ndata.items():
        out.ndata[key] = value[perm]
    for key, value in g.edata.items():
        out.edata[key] = value
    return out


@pytest.mark.slow
@pytest.mark.parametrize("scope", ["graph", "batch"])
@SETTINGS
@given(batch=batches)
def test_outputs_are_finite(scope, batch):
    with torch.no_grad():
        for head in ("graph", "node"):
            out = MODELS[scope, head](dgl.batch(batch))
            rows = len(batch) if head == "graph" else sum(g.num_nodes() for g in batch)
            assert out.shape == (rows, 3)
            assert torch.isfinite(out).all()


@SETTINGS
@given(batch=batches)
@pytest.mark.slow
def test_graph_scope_output_does_not_depend_on_batch_mates(batch):
    with torch.no_grad():
        for head in ("graph", "node"):
            model = MODELS["graph", head]
            together = model(dgl.batch(batch))
            alone = torch.cat([model(g) for g in batch])
            torch.testing.assert_close(together, alone, atol=ATOL, rtol=1e-4)


@SETTINGS
@given(batch=batches, index=st.integers(0, 3), data=st.data())
@pytest.mark.slow
def test_graph_scope_is_node_permutation_equivariant(batch, index, data):
    index = index % len(batch)
    g = batch[index]
    perm = torch.tensor(data.draw(st.permutations(range(g.num_nodes()))), dtype=torch.int64)
    other = list(batch)
    other[index] = permuted(g, perm)
    with torch.no_grad():
        graph_out = MODELS["graph", "graph"](dgl.batch(batch))
        graph_out_perm = MODELS["graph", "graph"](dgl.batch(other))
        torch.testing.assert_close(graph_out_perm, graph_out, atol=ATOL, rtol=1e-4)  # invariant

        node_out = MODELS["graph", "node"](dgl.batch(batch))
        node_out_perm = MODELS["graph", "node"](dgl.batch(other))
    start = sum(h.num_nodes() for h in batch[:index])
    rows = slice(start, start + g.num_nodes())
    torch.testing.assert_close(node_out_perm[rows], node_out[rows][perm], atol=ATOL, rtol=1e-4)  # equivariant
    outside = torch.ones(node_out.shape[0], dtype=torch.bool)
    outside[rows] = False
    torch.testing.assert_close(node_out_perm[outside], node_out[outside], atol=ATOL, rtol=1e-4)
