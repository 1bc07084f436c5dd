"""Full-graph inference on one graph: layer by layer in node chunks equals one pass; GEANet's global normalisation.

The model computes in float32 (its encoders cast the input), so layer-wise and one-pass outputs agree to
float32 rounding; the normalisation identity is checked in float64.
"""
import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError, GEANetConfig, ModelConfig
from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_dgl.data.nodes.node_graph import NodeGraph
from geaet_dgl.inference.layerwise import chunk_graph, full_graph_forward, layerwise_forward
from geaet_dgl.models import build_model
from geaet_dgl.nn.external_attention import column_logsumexp, double_normalize
from geaet_dgl.nn.self_attention import MAX_DENSE_NODES, GraphSelfAttention
from geaet_dgl.training.node_batches import make_node_sampler
from geaet_dgl.training.node_task import check_batches_fit
from tests.inference.layer_menu import MENU, menu_graphs, menu_model

# Beside the whole layer menu (test_layerwise_inference_matches_the_model_for_the_menu): three layers on a graph
# with self-loops, chunks from one node to all but one.
CASES = [  # mpnn, attention, norm, GEANet edge unit, GEANet variant, positional encoding
    ("gatedgcn", "none", "batch", True, "reference", "none"),
    ("gcn", "transformer", "layer", False, "paper", "lappe"),  # self-loops: GCN replaces them, degrees must match
    ("gatedgcn", "performer", "layer", False, "paper", "eslappe"),  # the distance gate, edges overwritten in place
]


def _graph(n=57, e=330, seed=0):
    torch.manual_seed(seed)
    g = dgl.rand_graph(n, e)
    g = dgl.add_edges(g, [3, 5], [3, 5])  # self-loops: GCN replaces them, its degrees must still match
    g.ndata["feat"] = torch.randn(n, 3)
    g.edata["feat"] = torch.randn(g.num_edges(), 1)
    for key in ("lap_pe", "lap_eigval", "rwse"):
        g.ndata[key] = torch.rand(n, 4)
    return g


def _model(mpnn, attention, norm, edge_unit, variant, pe):
    config = ModelConfig(node_in_feats=3, edge_in_feats=1, out_feats=3, hidden_dim=16, num_layers=3, head="node",
                         pe=pe, pe_k=4, pe_dim=4, mpnn=mpnn, attention=attention, norm=norm,
                         geanet=GEANetConfig(num_heads=4, unit_size=4, edge_unit=edge_unit, shared_unit=True,
                                             variant=variant))
    model = build_model(config)
    model.train()
    with torch.no_grad():
        for seed in range(2):  # BatchNorm running statistics away from their initial values
            model(_graph(seed=seed + 1))
    return model.eval()


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_layerwise_equals_one_pass(case):
    model, g = _model(*case), _graph()
    with torch.no_grad():
        whole = model(g)
    for chunk in (1, 10, 56):
        assert torch.allclose(layerwise_forward(model, g, chunk), whole, atol=2e-5, rtol=0), chunk


@pytest.mark.parametrize("name", [name for name, changes in MENU.items()
                                  if not changes.get("graphormer", {}).get("graph_token")])  # a graph-level token
def test_layerwise_inference_matches_the_model_for_the_menu(name):
    """Layer by layer in chunks of 4 nodes on one graph, every entry with a node head (what layer-wise inference serves)."""
    model = menu_model({**MENU[name], "head": "node", "pooling": "mean"})
    graph = menu_graphs(sizes=(23,), seed=1)[0]
    with torch.no_grad():
        expected = model(graph)
    torch.testing.assert_close(layerwise_forward(model, graph, chunk_nodes=4), expected, rtol=0, atol=2e-5)


def test_full_graph_forward_goes_layerwise_when_one_pass_does_not_fit(monkeypatch):
    model, g = _model(*CASES[0]), _graph()
    calls = []
    monkeypatch.setattr("geaet_dgl.inference.layerwise.layerwise_forward",
                        lambda m, graph, chunk: calls.append(chunk) or layerwise_forward(m, graph, chunk))
    with torch.no_grad():
        whole = model(g)
    assert torch.allclose(full_graph_forward(model, g, budget=10 ** 12), whole, atol=2e-5) and calls == []
    small = full_graph_forward(model, g, budget=20_000)
    assert calls and 1 <= calls[0] < g.num_nodes() and torch.allclose(small, whole, atol=2e-5)


def test_chunk_graph_holds_every_in_edge_of_its_nodes():
    g = _graph()
    sub, nodes, eids = chunk_graph(g, 10, 20)
    assert torch.equal(nodes[:10], torch.arange(10, 20))
    assert sorted(eids.tolist()) == sorted(g.in_edges(torch.arange(10, 20), form="eid").tolist())
    src, dst = sub.edges()
    gs, gd = g.find_edges(eids)
    assert torch.equal(nodes[src], gs) and torch.equal(nodes[dst], gd)


def test_double_normalize_with_the_whole_sets_column_lse_equals_the_whole_set():
    scores = torch.randn(30, 2, 5, dtype=torch.float64)
    whole = double_normalize(scores, None)
    lse = column_logsumexp(scores[i:i + 7] for i in range(0, 30, 7))
    assert torch.allclose(lse, torch.logsumexp(scores, 0))
    assert torch.allclose(double_normalize(scores[7:14], None, column_lse=lse), whole[7:14], atol=1e-14)


def test_dense_attention_refuses_graphs_above_its_size():
    big = dgl.graph(([0], [1]), num_nodes=MAX_DENSE_NODES + 1)
    with pytest.raises(ValueError, match=f"at most {MAX_DENSE_NODES:,} nodes, got one of {MAX_DENSE_NODES + 1:,}"):
        GraphSelfAttention(8, 2)(big, torch.zeros(MAX_DENSE_NODES + 1, 8))


def test_runs_whose_batches_do_not_fit_are_refused_before_training():
    data = NodeGraph(planted_partition(300, 3, 0.05, 0.005, seed=0), "node-classification", 3, "sbm")
    config = ModelConfig(node_in_feats=8, out_feats=3, hidden_dim=16, head="node", pe="none")
    with pytest.raises(ConfigError, match="needs about .* GiB, but 0.0 GiB are free; train on sampled batches: "
                                          "--sampler cluster"):
        check_batches_fit(config, make_node_sampler(data, "full"), 1, torch.device("cpu"), budget=1000)
    check_batches_fit(config, make_node_sampler(data, "full"), 1, torch.device("cpu"), budget=10 ** 12)
    monkey = make_node_sampler(data, "random", num_parts=2)
    monkey.max_batch_nodes = lambda batch_size: MAX_DENSE_NODES + 1
    with pytest.raises(ConfigError, match=f"at most {MAX_DENSE_NODES:,} nodes, but random batches of this graph "
                                          f"hold up to {MAX_DENSE_NODES + 1:,}"):
        check_batches_fit(config, monkey, 1, torch.device("cpu"))
