"""Per-graph self-attention against torch.nn.MultiheadAttention run on each graph alone."""
import dgl
import pytest
import torch

from geaet_dgl.nn import GraphSelfAttention
from tests.conftest import with_features

D, H = 8, 2


def test_matches_multihead_attention_per_graph(graph_case):
    _, graphs = graph_case
    graphs = with_features(graphs, D)
    attn = GraphSelfAttention(D, H).eval()
    torch.nn.init.normal_(attn.in_proj_bias)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    mha.load_state_dict(attn.state_dict())
    bg = dgl.batch(graphs)
    out, _ = attn(bg, bg.ndata["h"])
    expected = torch.cat([mha(g.ndata["h"][None], g.ndata["h"][None], g.ndata["h"][None],
                              need_weights=False)[0][0] for g in graphs])
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_permutation_equivariant_and_gradients():
    g = with_features([dgl.rand_graph(9, 20)], D)[0]
    attn = GraphSelfAttention(D, H)
    perm = torch.randperm(9)
    x = g.ndata["h"].requires_grad_()
    out, _ = attn(g, x)
    torch.testing.assert_close(attn(g, x[perm])[0], out[perm], atol=1e-5, rtol=1e-5)
    out.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in attn.parameters())


def test_weights_match_multihead_attention_and_padding_keys_get_none():
    """Graphs of 3, 20 and 7 nodes: the dense layout is padded to width 32, the weights come back (B, H, 20, 20)."""
    graphs = with_features([dgl.rand_graph(3, 6), dgl.rand_graph(20, 60), dgl.rand_graph(7, 14)], D)
    attn = GraphSelfAttention(D, H).eval()
    torch.nn.init.normal_(attn.in_proj_bias)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    mha.load_state_dict(attn.state_dict())
    bg = dgl.batch(graphs)
    attn.keep_attention = True
    attn(bg, bg.ndata["h"])
    weights = attn.last_attention
    assert weights.shape == (3, H, 20, 20)
    for b, g in enumerate(graphs):
        x = g.ndata["h"][None]
        _, expected = mha(x, x, x, need_weights=True, average_attn_weights=False)
        n = g.num_nodes()
        torch.testing.assert_close(weights[b, :, :n, :n], expected[0], atol=1e-6, rtol=1e-5)
        assert torch.all(weights[b, :, :n, n:] == 0)  # padding keys


def test_dense_width_aligns_only_when_padding_is_cheap():
    from geaet_dgl.nn.batch_layout import BatchLayout

    def width(max_nodes):
        return BatchLayout.from_graph(dgl.batch([dgl.rand_graph(max_nodes, 0), dgl.rand_graph(1, 0)])).dense_width

    assert [width(n) for n in (75, 80, 190, 38, 23, 1)] == [80, 80, 192, 38, 23, 1]


@pytest.mark.parametrize("width", [37, 48, 5])
def test_in_place_softmax_matches_torch_with_padding_keys(width):
    """softmax_ (whole-tensor ops with a floor before exp where the width is not a multiple of 16, PyTorch's
    kernel where it is) against torch.softmax, with padding keys at the dtype's minimum and a row far below."""
    from geaet_dgl.nn.self_attention import softmax_

    torch.manual_seed(5)
    scores = torch.randn(6, 4, width) * 4
    scores[:, :, width // 2 + 1:] = torch.finfo(torch.float32).min
    scores[0, 0, 1] = scores[0, 0, 0] - 200.0  # a real key whose weight underflows
    expected = torch.softmax(scores, -1)
    got = softmax_(scores.clone())
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-7)
    assert float(got[:, :, width // 2 + 1:].max()) < 1e-30
    torch.testing.assert_close(got.sum(-1), torch.ones(6, 4))


def test_in_place_softmax_gradient_matches_torch():
    """The attention's differentiable in-place softmax (width 37: whole-tensor ops) has torch.softmax's gradient."""
    from geaet_dgl.nn.self_attention import _InPlaceSoftmax

    torch.manual_seed(6)
    scores = torch.randn(3, 5, 37, requires_grad=True)
    weights = torch.randn(3, 5, 37)
    expected, = torch.autograd.grad((torch.softmax(scores, -1) * weights).sum(), scores)
    got, = torch.autograd.grad((_InPlaceSoftmax.apply(scores * 1.0) * weights).sum(), scores)
    torch.testing.assert_close(got, expected)
