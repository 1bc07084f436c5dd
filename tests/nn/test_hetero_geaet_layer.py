"""The heterograph GEAET layer: the view, the per-relation MPNN, typed GEANet, the one-type reduction."""
import dgl
import pytest
import torch

from geaet_dgl.nn.branches import build_attention, build_geanet, build_mpnn
from geaet_dgl.nn.geaet_layer import GEAETLayer
from geaet_dgl.nn.gin import GINLayer
from geaet_dgl.nn.hetero_external_attention import HeteroGEANet
from geaet_dgl.nn.hetero_geaet_layer import HeteroGEAETLayer
from geaet_dgl.nn.hetero_mpnn import RelationMPNN
from geaet_dgl.nn.hetero_view import HeteroView

from ..conftest import random_graph
from .hetero_cases import hetero_cases, paper_graph

D = 8


@pytest.fixture(params=sorted(hetero_cases()))
def batch(request):
    return dgl.batch(hetero_cases()[request.param])


def test_view_orders_nodes_by_graph_then_type_and_keeps_edges(batch):
    view = HeteroView.from_heterograph(batch)
    graphs = dgl.unbatch(batch)
    expected, offset = [], 0  # (graph, type, id) of each view row, by plain loops
    for b, g in enumerate(graphs):
        for t, ntype in enumerate(batch.ntypes):
            expected += [(b, t, i) for i in range(g.num_nodes(ntype))]
    assert view.graph.num_nodes() == len(expected)
    assert view.node_type.tolist() == [t for _, t, _ in expected]
    assert view.graph.batch_num_nodes().tolist() == [g.num_nodes() for g in graphs]
    row_of = {key: row for row, key in enumerate(expected)}
    for t, ntype in enumerate(batch.ntypes):  # node_index maps heterograph order to view rows
        hetero_order = [(b, t, i) for b, g in enumerate(graphs) for i in range(g.num_nodes(ntype))]
        assert view.node_index[t].tolist() == [row_of[k] for k in hetero_order]
    src, dst = view.graph.edges()
    view_edges = sorted(zip(view.edge_type.tolist(), src.tolist(), dst.tolist()))
    plain = []
    for b, g in enumerate(graphs):
        for r, rel in enumerate(batch.canonical_etypes):
            s, d = g.edges(etype=rel)
            plain += [(r, row_of[(b, batch.ntypes.index(rel[0]), int(i))], row_of[(b, batch.ntypes.index(rel[2]),
                                                                                   int(j))]) for i, j in zip(s, d)]
    assert view_edges == sorted(plain)


def _softmax_dnorm(scores, groups):
    """Plain loops: softmax over the rows of each group per (head, slot), then each row over its slots."""
    out = torch.empty_like(scores)
    for rows in groups:
        out[rows] = torch.softmax(scores[rows], dim=0)
    return out / out.sum(-1, keepdim=True)


def _groups(graph_of, type_of, scope, type_scope):
    keys = {}
    for row, (b, t) in enumerate(zip(graph_of, type_of)):
        key = (b if scope == "graph" else 0, t if type_scope == "type" else 0)
        keys.setdefault(key, []).append(row)
    return list(keys.values())


@pytest.mark.parametrize("scope", ["graph", "batch"])
@pytest.mark.parametrize("type_scope", ["type", "all"])
def test_hetero_geanet_against_plain_loops(batch, scope, type_scope):
    torch.manual_seed(0)
    view = HeteroView.from_heterograph(batch)
    net = HeteroGEANet(D, 2, 4, len(batch.ntypes), len(batch.canonical_etypes), edge_unit=True, shared_unit=True,
                       scope=scope, type_scope=type_scope).double()
    x = torch.randn(view.num_nodes, D, dtype=torch.float64, requires_grad=True)
    e = torch.randn(view.graph.num_edges(), D, dtype=torch.float64)
    node_out, edge_out = net(view, x, e)

    node_graph = view.layout.node_graph_id.tolist()
    edge_graph = [node_graph[int(s)] for s in view.graph.edges()[0]]
    share = lambda v: v @ net.share_U.weight.t() + net.share_U.bias  # noqa: E731

    def unit(lin, v):  # (S, S) unit on every head of rows (M, H, S)
        return v @ lin.weight.t() + lin.bias

    xs = share(x).view(-1, 2, 4)
    types = view.node_type.tolist()
    scores = torch.stack([unit(net.node_units[t].node_U1, xs[i]) for i, t in enumerate(types)])
    attn = _softmax_dnorm(scores, _groups(node_graph, types, scope, type_scope))
    expected = torch.stack([unit(net.node_units[t].node_U2, attn[i]).reshape(-1) for i, t in enumerate(types)])
    torch.testing.assert_close(node_out, expected)

    es = share(e).view(-1, 4, 2).transpose(1, 2)  # the reference's strided edge heads
    rels = view.edge_type.tolist()
    scores = torch.stack([unit(net.edge_units[r].edge_U1, es[i]) for i, r in enumerate(rels)])
    attn = _softmax_dnorm(scores, _groups(edge_graph, rels, scope, type_scope))
    expected = torch.stack([unit(net.edge_units[r].edge_U2, attn[i]).reshape(-1) for i, r in enumerate(rels)])
    torch.testing.assert_close(edge_out, expected)
    node_out.sum().backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in net.parameters())


def test_relation_mpnn_against_plain_loops(batch):
    torch.manual_seed(1)
    view = HeteroView.from_heterograph(batch)
    rels = batch.canonical_etypes
    mpnn = RelationMPNN([GINLayer(D, D) for _ in rels], batch.ntypes, rels).double()
    x = torch.randn(view.num_nodes, D, dtype=torch.float64)
    out, _ = mpnn(view, x)  # GIN passes the (absent) edge features through
    src, dst = view.graph.edges()
    types = view.node_type.tolist()
    for i in range(view.num_nodes):
        ends_here = [r for r, rel in enumerate(rels) if batch.ntypes.index(rel[2]) == types[i]]
        if not ends_here:
            torch.testing.assert_close(out[i], torch.zeros(D, dtype=torch.float64))
            continue
        parts = []
        for r in ends_here:
            total = x[i].clone()
            for k in range(len(src)):
                if int(dst[k]) == i and int(view.edge_type[k]) == r:
                    total = total + x[int(src[k])]
            parts.append(mpnn.convs[r].nn(total))
        torch.testing.assert_close(out[i], sum(parts) / len(parts))


def _layer(hetero: bool, **options):
    common = dict(mpnn="gatedgcn", attention="transformer", num_heads=2, geanet_heads=2, geanet_unit_size=4,
                  geanet_edge_unit=True, geanet_shared_unit=True, geanet_scope="graph")
    common.update(options)
    if hetero:
        return HeteroGEAETLayer(D, ["node"], [("node", "edge", "node")], **common)
    return GEAETLayer(D, build_mpnn(common["mpnn"], D), build_attention(common["attention"], D, common["num_heads"]),
                      build_geanet("reference", D, 2, 4, edge_unit=True, shared_unit=True, scope=common["geanet_scope"]),
                      norm=common.get("norm", "batch"))


def _hetero_key(key: str) -> str:
    for old, new in (("local_model.", "local_model.convs.0."), ("external_model.node_U", "external_model.node_units.0.node_U"),
                     ("external_model.edge_U", "external_model.edge_units.0.edge_U")):
        if key.startswith(old):
            return new + key[len(old):]
    return key


@pytest.mark.parametrize("options", [dict(), dict(geanet_scope="batch", norm="layer"),
                                     dict(mpnn="gine", geanet_type_scope="all"), dict(mpnn="gcn", attention="none"),
                                     dict(mpnn="gat", attention="performer")])
@pytest.mark.parametrize("train", [True, False])
def test_one_type_reduces_to_the_homogeneous_layer(options, train):
    torch.manual_seed(2)
    graphs = [random_graph(7, 20, 1), random_graph(3, 5, 2), random_graph(11, 40, 3)]
    homogeneous = _layer(False, **{k: v for k, v in options.items() if k != "geanet_type_scope"})
    hetero = _layer(True, **options)
    state = {_hetero_key(k): v for k, v in homogeneous.state_dict().items()}
    assert set(state) == set(hetero.state_dict())
    hetero.load_state_dict(state)
    homogeneous.train(train), hetero.train(train)
    g = dgl.batch(graphs)
    hg = dgl.batch([dgl.heterograph({("node", "edge", "node"): gi.edges()}, {"node": gi.num_nodes()})
                    for gi in graphs])
    x, e = torch.randn(g.num_nodes(), D), torch.randn(g.num_edges(), D)
    expected = homogeneous(g, x, e)
    got = hetero(HeteroView.from_heterograph(hg), x, e)
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=0)
    torch.testing.assert_close(got[1], expected[1], rtol=0, atol=0)


def _eval_layer(seed=3):
    torch.manual_seed(seed)
    graph = paper_graph(3, 3, 0)
    layer = HeteroGEAETLayer(D, graph.ntypes, graph.canonical_etypes, num_heads=2, geanet_heads=2,
                             geanet_unit_size=4, geanet_edge_unit=True, norm="layer").double()
    return layer.eval()


def test_batched_equals_single_graphs():
    layer = _eval_layer()
    graphs = hetero_cases()["unequal_batch"]
    views = [HeteroView.from_heterograph(g) for g in graphs]
    xs = [torch.randn(v.num_nodes, D, dtype=torch.float64) for v in views]
    es = [torch.randn(v.graph.num_edges(), D, dtype=torch.float64) for v in views]
    singles = [layer(v, x, e) for v, x, e in zip(views, xs, es)]
    batched = layer(HeteroView.from_heterograph(dgl.batch(graphs)), torch.cat(xs), torch.cat(es))
    torch.testing.assert_close(batched[0], torch.cat([s[0] for s in singles]))
    torch.testing.assert_close(batched[1], torch.cat([s[1] for s in singles]))


def test_permuting_nodes_within_a_type_permutes_the_output():
    layer = _eval_layer()
    graph = paper_graph(6, 5, 4)
    perm = torch.randperm(6, generator=torch.Generator().manual_seed(0))  # new paper k is old paper perm[k]
    inverse = torch.argsort(perm)
    data = {}
    for rel in graph.canonical_etypes:
        s, d = graph.edges(etype=rel)
        s = inverse[s] if rel[0] == "paper" else s
        d = inverse[d] if rel[2] == "paper" else d
        data[rel] = (s, d)
    permuted = dgl.heterograph(data, {t: graph.num_nodes(t) for t in graph.ntypes})
    view, pview = HeteroView.from_heterograph(graph), HeteroView.from_heterograph(permuted)
    x = torch.randn(view.num_nodes, D, dtype=torch.float64)
    e = torch.randn(view.graph.num_edges(), D, dtype=torch.float64)
    paper = graph.ntypes.index("paper")
    px = x.clone()
    px[pview.node_index[paper]] = x[view.node_index[paper][perm]]
    out, _ = layer(view, x, e)
    pout, _ = layer(pview, px, e)  # edges keep their ids, only their paper endpoints are renamed
    torch.testing.assert_close(pout[pview.node_index[paper]], out[view.node_index[paper][perm]])
    for t in range(len(graph.ntypes)):
        if t != paper:
            torch.testing.assert_close(pout[pview.node_index[t]], out[view.node_index[t]])


def test_gradients_reach_every_parameter_and_options_are_checked():
    layer = _eval_layer().train()
    graph = dgl.batch(hetero_cases()["unequal_batch"])
    view = HeteroView.from_heterograph(graph)
    x = torch.randn(view.num_nodes, D, dtype=torch.float64)
    e = torch.randn(view.graph.num_edges(), D, dtype=torch.float64)
    h, edges = layer(view, x, e)
    (h.square().sum() + edges.square().sum()).backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    with pytest.raises(ValueError, match="type_scope"):
        HeteroGEANet(D, 2, 4, 1, 1, type_scope="graph")
    with pytest.raises(ValueError, match="local_weights='typed' is a GatedGCN"):
        HeteroGEAETLayer(D, ["a"], [("a", "r", "a")], mpnn="gcn", geanet_heads=2, local_weights="typed")


def _typed_from_homogeneous(homogeneous):
    """The typed GatedGCN weights of one node type and one relation, from a GatedGCNLayer's."""
    state = {}
    for key, value in homogeneous.state_dict().items():
        if key.startswith("local_model."):
            name = key.split(".")[1]
            if name in "AC" or name == "D":
                state[f"local_model.{name}_{'weight' if key.endswith('weight') else 'bias'}"] = (
                    value.t().unsqueeze(0) if key.endswith("weight") else value.unsqueeze(0))
            elif name in "BE":
                continue
            else:
                state[key] = value
        else:
            state[_hetero_key(key)] = value
    conv = homogeneous.local_model
    state["local_model.BE_weight"] = torch.cat([conv.B.weight, conv.E.weight]).t().unsqueeze(0)
    state["local_model.BE_bias"] = torch.cat([conv.B.bias, conv.E.bias]).unsqueeze(0)
    return state


@pytest.mark.parametrize("train", [True, False])
def test_typed_weights_reduce_to_the_homogeneous_layer_on_one_type(train):
    torch.manual_seed(5)
    graphs = [random_graph(7, 20, 1), random_graph(3, 5, 2), random_graph(11, 40, 3)]
    homogeneous, hetero = _layer(False), _layer(True, local_weights="typed")
    state = _typed_from_homogeneous(homogeneous)
    assert set(state) == set(hetero.state_dict())
    hetero.load_state_dict(state)
    homogeneous.train(train), hetero.train(train)
    hg = dgl.batch([dgl.heterograph({("node", "edge", "node"): gi.edges()}, {"node": gi.num_nodes()})
                    for gi in graphs])
    g = dgl.batch(graphs)
    x, e = torch.randn(g.num_nodes(), D), torch.randn(g.num_edges(), D)
    expected = homogeneous(g, x, e)
    got = hetero(HeteroView.from_heterograph(hg), x, e)
    torch.testing.assert_close(got[0], expected[0], rtol=0, atol=1e-5)  # typed products: other summation order
    torch.testing.assert_close(got[1], expected[1], rtol=0, atol=1e-5)


def test_typed_gated_gcn_against_plain_loops(batch):
    from geaet_dgl.nn.typed_gated_gcn import TypedGatedGCN

    torch.manual_seed(6)
    view = HeteroView.from_heterograph(batch)
    conv = TypedGatedGCN(D, len(batch.ntypes), len(batch.canonical_etypes)).double().eval()
    x = torch.randn(view.num_nodes, D, dtype=torch.float64)
    e = torch.randn(view.graph.num_edges(), D, dtype=torch.float64)
    out, edges = conv(view, x, e)
    src, dst = view.graph.edges()
    bn = conv.bn_node_x
    lin = lambda w, b, v: v @ w + b  # noqa: E731
    for i in range(view.num_nodes):
        t = int(view.node_type[i])
        num, den = torch.zeros(D, dtype=torch.float64), torch.zeros(D, dtype=torch.float64)
        for k in range(len(src)):
            if int(dst[k]) != i:
                continue
            r, j = int(view.edge_type[k]), int(src[k])
            b_x, e_x = lin(conv.BE_weight[r], conv.BE_bias[r], x[j]).split(D)
            gate = torch.sigmoid(e_x + lin(conv.D_weight[r], conv.D_bias[r], x[i]) + lin(conv.C_weight[r], conv.C_bias[r], e[k]))
            num, den = num + gate * b_x, den + gate
        h = lin(conv.A_weight[t], conv.A_bias[t], x[i]) + num / (den + 1e-6)
        h = (h - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
        torch.testing.assert_close(out[i], x[i] + torch.relu(h))
    assert edges.shape == e.shape
