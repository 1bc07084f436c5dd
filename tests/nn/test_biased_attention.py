"""BiasedTransformer with Graphormer's spatial bias and degree encoder against float64 loops per graph."""
import dgl
import numpy as np
import pytest
import torch

from geaet_dgl.data.encodings.se_cache import StructuralSpec, attach_structural
from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.nn.biased_attention import BiasedGraphSelfAttention
from geaet_dgl.nn.graphormer_bias import GraphormerBias, GraphormerDegreeEncoder, _group_size
from geaet_dgl.nn.self_attention import GraphSelfAttention
from tests.conftest import graph_cases

D, H, S = 8, 2, 4


def _graphs(case):
    graphs = [g.clone() for g in graph_cases()[case]]
    attach_structural(graphs, StructuralSpec(spatial_types=S, degrees=True))
    return graphs


def _bfs_types(g):
    """Independent: distances by repeated boolean matrix products of the adjacency."""
    n = g.num_nodes()
    reach = torch.eye(n, dtype=torch.bool)
    adj = torch.zeros(n, n, dtype=torch.bool)
    adj[g.edges()[0], g.edges()[1]] = True
    types = torch.full((n, n), S, dtype=torch.long)
    types[reach] = 0
    frontier = reach.clone()
    for step in range(1, n + 1):
        frontier = (frontier.double() @ adj.double()) > 0
        new = frontier & (types == S)
        types[new] = min(step, S - 1)
    return types


def _dense(attn: BiasedGraphSelfAttention, table: torch.Tensor, graphs, feat):
    w_in, b_in = attn.in_proj_weight.double(), attn.in_proj_bias.double()
    w_out, b_out = attn.out_proj.weight.double(), attn.out_proj.bias.double()
    dh = D // H
    out, start = [], 0
    for g in graphs:
        n = g.num_nodes()
        x = feat[start:start + n].double()
        start += n
        q, k, v = (x @ w_in.T + b_in).split(D, dim=1)
        types = _bfs_types(g)
        heads = []
        for h in range(H):
            sl = slice(h * dh, (h + 1) * dh)
            scores = q[:, sl] @ k[:, sl].T / dh ** 0.5 + table.double()[types, h]
            heads.append(torch.softmax(scores, dim=-1) @ v[:, sl])
        out.append(torch.cat(heads, dim=1) @ w_out.T + b_out)
    return torch.cat(out)


@pytest.mark.parametrize("case", sorted(graph_cases()))
def test_biased_attention_matches_dense_loops_and_single_graphs(case):
    torch.manual_seed(0)
    graphs = _graphs(case)
    batch = dgl.batch(graphs)
    layout = BatchLayout.from_graph(batch)
    attn, bias = BiasedGraphSelfAttention(D, H), GraphormerBias(H, S)
    torch.nn.init.normal_(bias.spatial_encoder.weight)  # large enough to matter
    feat = torch.randn(batch.num_nodes(), D, requires_grad=True)
    out, _ = attn(batch, feat, layout=layout, attn_bias=bias(batch.ndata["spatial_types"], layout))
    torch.testing.assert_close(out.double(), _dense(attn, bias.spatial_encoder.weight.detach(), graphs, feat),
                               atol=1e-5, rtol=1e-5)
    start = 0
    for g in graphs:
        lay = BatchLayout.from_graph(g)
        n = g.num_nodes()
        single, _ = attn(g, feat[start:start + n], layout=lay, attn_bias=bias(g.ndata["spatial_types"], lay))
        torch.testing.assert_close(single, out[start:start + n], atol=1e-5, rtol=1e-5)
        start += n
    out.square().sum().backward()
    for module in (attn, bias):
        for name, p in module.named_parameters():
            assert p.grad is not None and torch.isfinite(p.grad).all(), name


def test_permutation_zero_bias_and_shape_check():
    torch.manual_seed(1)
    g = _graphs("single")[0]
    attn, bias = BiasedGraphSelfAttention(D, H), GraphormerBias(H, S)
    torch.nn.init.normal_(bias.spatial_encoder.weight)
    feat = torch.randn(g.num_nodes(), D)
    lay = BatchLayout.from_graph(g)
    out, _ = attn(g, feat, layout=lay, attn_bias=bias(g.ndata["spatial_types"], lay))
    perm = torch.randperm(g.num_nodes())
    pg = dgl.reorder_graph(g, "custom", permute_config={"nodes_perm": perm}, store_ids=False)
    del pg.ndata["spatial_types"]
    attach_structural([pg], StructuralSpec(spatial_types=S))
    play = BatchLayout.from_graph(pg)
    permuted, _ = attn(pg, feat[perm], layout=play, attn_bias=bias(pg.ndata["spatial_types"], play))
    torch.testing.assert_close(permuted, out[perm], atol=1e-5, rtol=1e-5)
    plain = GraphSelfAttention(D, H)
    plain.load_state_dict(attn.state_dict())
    w = lay.dense_width
    torch.testing.assert_close(attn(g, feat, layout=lay, attn_bias=torch.zeros(H, w, w))[0],
                               plain(g, feat, layout=lay)[0])
    with pytest.raises(ValueError, match="attn_bias has shape"):
        attn(g, feat, layout=lay, attn_bias=torch.zeros(H, w + 1, w))
    with pytest.raises(ValueError, match="needs the batch's attention bias"):
        attn(g, feat, layout=BatchLayout.from_graph(g))


def test_degree_encoder_adds_embeddings_and_checks_range():
    enc = GraphormerDegreeEncoder(D, 5, 3)
    h = torch.randn(4, D)
    ind, outd = torch.tensor([0, 4, 2, 1]), torch.tensor([2, 0, 1, 1])
    expected = h + enc.in_degree_encoder.weight[ind] + enc.out_degree_encoder.weight[outd]
    torch.testing.assert_close(enc(h, ind, outd), expected)
    with pytest.raises(ValueError, match="num_out_degrees to at least 4"):
        enc(h, ind, torch.tensor([3, 0, 0, 0]))
    assert np.isfinite(enc(h, ind, outd).detach().numpy()).all()


def test_path_encoding_matches_loops_and_follows_shortest_paths():
    """The edge-type part of the bias: sum_k z[t_k] W_k / max(phi, 1), per pair, in float64 loops."""
    torch.manual_seed(2)
    g = dgl.graph(([0, 1, 2, 3, 1, 2, 3, 4, 0, 4], [1, 2, 3, 4, 0, 1, 2, 3, 4, 0]), num_nodes=6)  # ring + isolated
    g.edata["feat"] = torch.tensor([1, 2, 3, 1, 1, 2, 3, 1, 2, 2]).view(-1, 1)
    attach_structural([g], StructuralSpec(spatial_types=S, path_types=True))
    types, paths = g.ndata["spatial_types"].long(), g.ndata["path_types"].long()
    for i in range(6):
        for j in range(6):
            used = int((paths[i, j] > 0).sum())  # edge types are >= 1: the non-zero entries are the path's edges
            assert used == (0 if types[i, j] == S else min(int(types[i, j]), S - 1))
    bias = GraphormerBias(H, S, num_edge_types=4)
    for table in (bias.spatial_encoder, bias.edge_encoder, bias.edge_dis_encoder):
        torch.nn.init.normal_(table.weight)
    lay = BatchLayout.from_graph(g)
    got = bias(g.ndata["spatial_types"], lay, g.ndata["path_types"]).view(H, lay.dense_width, -1)[:, :6, :6]
    z = bias.edge_encoder.weight.double()
    steps = bias.edge_dis_encoder.weight.double().view(S, H, H)
    for i in range(6):
        for j in range(6):
            edge_part = sum(z[paths[i, j, k]] @ steps[k] for k in range(S)) / max(int(types[i, j]), 1)
            expected = bias.spatial_encoder.weight.double()[types[i, j]] + edge_part
            torch.testing.assert_close(got[:, i, j].double(), expected, atol=1e-5, rtol=1e-5)


def _bias_loops(bias: GraphormerBias, types: torch.Tensor, paths: torch.Tensor, sizes) -> list:
    """Float64 loops: per graph (H, n, n), b_{phi} + sum_k z[t_k] W_k / max(phi, 1) on every pair."""
    z = bias.edge_encoder.weight.double()
    steps = bias.edge_dis_encoder.weight.double().view(-1, H, H)
    spatial = bias.spatial_encoder.weight.double()
    out, start = [], 0
    for n in sizes:
        block = torch.zeros(H, n, n, dtype=torch.float64)
        for i in range(n):
            for j in range(n):
                phi = int(types[start + i, j])
                path = sum(z[int(paths[start + i, j, k])] @ steps[k] for k in range(paths.shape[-1]))
                block[:, i, j] = spatial[phi] + path / max(phi, 1)
        out.append(block)
        start += n
    return out


@pytest.mark.parametrize("num_edge_types,path_steps", [(4, 6), (7, 5), (2, 3), (2, 7)])
def test_grouped_path_lookup_matches_loops_in_a_padded_batch(num_edge_types, path_steps):
    """The bias built from grouped path-step lookups (G = ceil(S / g) rows per pair, the last group filled with
    zero steps where g does not divide S) equals per-pair float64 loops over every step, on a batch of graphs
    of different sizes whose stored rows are wider than the batch (cut) and whose padding holds junk; the
    table gradients equal those of the loops."""
    torch.manual_seed(3)
    sizes, data_width = [5, 2, 4], 7
    num = sum(sizes)
    types = torch.full((num, data_width), 255, dtype=torch.uint8)  # 255: se_cache's padding
    paths = torch.randint(0, 250, (num, data_width, path_steps), dtype=torch.uint8)  # junk outside the graphs
    start = 0
    for n in sizes:
        types[start:start + n, :n] = torch.randint(0, path_steps + 1, (n, n), dtype=torch.uint8)
        paths[start:start + n, :n] = torch.randint(0, num_edge_types, (n, n, path_steps), dtype=torch.uint8)
        start += n
    g = dgl.batch([dgl.rand_graph(n, 0) for n in sizes])
    bias = GraphormerBias(H, path_steps, num_edge_types=num_edge_types).double()
    for table in (bias.spatial_encoder, bias.edge_encoder, bias.edge_dis_encoder):
        torch.nn.init.normal_(table.weight)
    lay = BatchLayout.from_graph(g)
    group = _group_size(num_edge_types, path_steps, num * lay.dense_width)
    assert (num_edge_types, path_steps) != (2, 7) or path_steps % group  # one case fills its last group
    got = bias(types, lay, paths).view(len(sizes), H, lay.dense_width, lay.dense_width)
    expected = _bias_loops(bias, types, paths, sizes)
    for b, n in enumerate(sizes):
        torch.testing.assert_close(got[b, :, :n, :n], expected[b])
        assert not got[b, :, n:].any() and not got[b, :, :, n:].any()  # zero outside the graph
    weights = [torch.randn(H, n, n, dtype=torch.float64) for n in sizes]
    grads = torch.autograd.grad(sum((got[b, :, :n, :n] * w).sum() for b, (n, w) in enumerate(zip(sizes, weights))),
                                list(bias.parameters()))
    expected_grads = torch.autograd.grad(sum((e * w).sum() for e, w in zip(expected, weights)), list(bias.parameters()))
    for a, e in zip(grads, expected_grads):
        torch.testing.assert_close(a, e)
    paths[0, 1, 0] = num_edge_types  # an edge type past the table, inside a graph
    with pytest.raises(ValueError, match="num_edge_types to at least"):
        bias(types, lay, paths)


def test_folded_biased_attention_matches_the_layer_and_shares_the_batch_bias():
    """Eval-mode copy (score scale in the queries, a norm's scale in out_proj, head-major bias summed once per
    batch) against the layer's own forward, with the bias given and taken from the layout; the training
    forward's per-batch sum of the layout's bias and padding keeps the bias's gradient."""
    torch.manual_seed(4)
    graphs = [dgl.rand_graph(n, 2 * n) for n in (7, 3, 5)]
    g = dgl.batch(graphs)
    attn = BiasedGraphSelfAttention(D, H, attn_dropout=0.0)
    torch.nn.init.normal_(attn.in_proj_bias)
    lay = BatchLayout.from_graph(g)
    w = lay.dense_width
    bias = torch.randn(len(graphs) * H, w, w, requires_grad=True)
    x = torch.randn(g.num_nodes(), D)
    scale = torch.rand(D) + 0.5
    attn.eval()
    with torch.no_grad():
        expected = attn(g, x, layout=lay, attn_bias=bias)[0]
    folded = attn.folded((scale, torch.zeros(D)))
    torch.testing.assert_close(folded(g, x, layout=BatchLayout.from_graph(g), attn_bias=bias)[0], expected * scale)
    own = BatchLayout.from_graph(g)
    own.cached("graphormer_attention_bias", lambda: bias)
    torch.testing.assert_close(folded(g, x, layout=own)[0], expected * scale)
    torch.testing.assert_close(folded(g, x, layout=own)[0], expected * scale)  # the cached head-major bias
    attn.train()
    given = attn(g, x, layout=BatchLayout.from_graph(g), attn_bias=bias)[0]
    grad_given, = torch.autograd.grad(given.square().sum(), bias)
    shared = BatchLayout.from_graph(g)
    shared.cached("graphormer_attention_bias", lambda: bias)
    out = attn(g, x, layout=shared)[0] + attn(g, x, layout=shared)[0]  # two layers, one summed bias
    torch.testing.assert_close(out, 2 * given)
    grad_shared, = torch.autograd.grad(out.square().sum(), bias)
    torch.testing.assert_close(grad_shared, 4 * grad_given)
