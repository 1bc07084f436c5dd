"""PerformerAttention against a dense per-graph float64 FAVOR+ computation, and the layer checks."""
import dgl
import pytest
import torch

from geaet_dgl.nn.performer import FavorAttention, PerformerAttention, orthogonal_gaussian_projection
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

D, H = 8, 2


def dense_favor(att, x, pad_to=None):
    """One graph's (n, d) nodes, dense, padded with ``pad_to - n`` zero rows whose values are masked (pad_keys)."""
    n = x.shape[0]
    if pad_to is not None:
        x = torch.cat([x, x.new_zeros(pad_to - n, x.shape[1])])
    C, P = att.head_dim, att.fast_attention.projection_matrix.double()
    M, c = P.shape[0], C ** -0.25
    q, k, v = (lin(x).view(-1, H, C).transpose(0, 1) for lin in (att.to_q, att.to_k, att.to_v))  # (H, n', C)
    v = v.clone()
    v[:, n:] = 0.0

    def phi(u, per_row):
        logits = (c * u) @ P.T
        half = (u * u).sum(-1, keepdim=True) * c * c / 2
        stab = logits.amax(-1, keepdim=True) if per_row else logits.amax(dim=(-1, -2), keepdim=True)
        return (torch.exp(logits - half - stab) + 1e-4) / M ** 0.5

    qf, kf = phi(q, True), phi(k, False)
    out = (qf @ (kf.transpose(1, 2) @ v)) / (qf @ kf.sum(1).unsqueeze(-1))
    return att.to_out(out.transpose(0, 1).reshape(-1, H * C))[:n]


@pytest.mark.parametrize("pad_keys", [False, True])
def test_matches_dense_per_graph(graph_case, pad_keys):
    _, graphs = graph_case
    graphs = with_features(graphs, D)
    torch.manual_seed(0)
    att = PerformerAttention(D, H, head_dim=4, pad_keys=pad_keys).double()
    bg = dgl.batch(graphs)
    out, _ = att(bg, bg.ndata["h"].double())
    width = max(g.num_nodes() for g in graphs) if pad_keys else None
    expected = torch.cat([dense_favor(att, g.ndata["h"].double(), width) for g in graphs])
    torch.testing.assert_close(out, expected)


def test_reference_defaults_and_projection_buffer():
    att = PerformerAttention(16, 4)
    assert att.to_q.weight.shape == (256, 16) and att.to_q.bias is None  # heads of width 64 whatever d
    assert att.fast_attention.projection_matrix.shape == (266, 64)  # int(64 ln 64) features
    assert "fast_attention.projection_matrix" in att.state_dict()
    before = att.fast_attention.projection_matrix.clone()
    att.train()
    att(dgl.rand_graph(5, 10), torch.randn(5, 16))
    assert torch.equal(before, att.fast_attention.projection_matrix)  # never redrawn by itself, as the reference
    att.fast_attention.redraw_projection()
    assert not torch.equal(before, att.fast_attention.projection_matrix)
    block = orthogonal_gaussian_projection(8, 8, torch.Generator().manual_seed(0))
    gram = block @ block.T
    torch.testing.assert_close(gram - torch.diag(torch.diag(gram)), torch.zeros(8, 8), atol=1e-5, rtol=0)


def test_gradients_save_load_permutation_and_batching():
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=1)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    att = PerformerAttention(D, H, head_dim=4)
    assert_gradients(att, bg, bg.ndata["h"], bg.edata["h"])
    assert_save_load(att, PerformerAttention(D, H, head_dim=4), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(att, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(att, graphs, D)


@pytest.mark.parametrize("pad_keys", [False, True])
def test_the_forward_without_gradients_runs_in_chunks_with_the_same_values(pad_keys):
    graphs = with_features([random_graph(23, 60, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=0),
                            random_graph(9, 20, 3)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    att = PerformerAttention(D, H, head_dim=4, pad_keys=pad_keys).double().eval()
    x = bg.ndata["h"].double()
    with_grad, _ = att(bg, x)
    att.chunk_rows = 5  # several chunks per graph, one graph shorter than a chunk
    with torch.no_grad():
        chunked, _ = att(bg, x)
    torch.testing.assert_close(chunked, with_grad)


@pytest.mark.parametrize("pad_keys", [False, True])
@pytest.mark.parametrize("group_rows", [1, 50, 10_000])
def test_the_forward_without_gradients_on_the_dense_layout_has_the_same_values(pad_keys, group_rows):
    graphs = with_features([random_graph(23, 60, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=0),
                            random_graph(9, 20, 3), random_graph(23, 40, 4)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    att = PerformerAttention(D, H, head_dim=4, pad_keys=pad_keys).double().eval()
    x = bg.ndata["h"].double()
    with_grad, _ = att(bg, x)
    att.group_rows = group_rows  # one graph per group, two (W = 23), all in one
    with torch.no_grad():
        dense, _ = att(bg, x)
    torch.testing.assert_close(dense, with_grad)
    width = max(g.num_nodes() for g in graphs) if pad_keys else None
    expected = torch.cat([dense_favor(att, g.ndata["h"].double(), width) for g in graphs if g.num_nodes()])
    torch.testing.assert_close(dense, expected)


@pytest.mark.parametrize("pad_keys", [False, True])
def test_the_dense_backward_matches_autograd_through_the_per_graph_products(pad_keys):
    graphs = with_features([random_graph(23, 60, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=0),
                            random_graph(9, 20, 3), random_graph(17, 40, 4)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    att = PerformerAttention(D, H, head_dim=4, pad_keys=pad_keys).double()
    x = bg.ndata["h"].double()
    weights = torch.randn(x.shape[0], D, dtype=torch.float64)

    def grads(chunk_rows, group_rows):
        att.chunk_rows, att.group_rows = chunk_rows, group_rows
        att.zero_grad(set_to_none=True)
        inp = x.clone().requires_grad_()
        out, _ = att(bg, inp)
        (out * weights).sum().backward()
        return [out, inp.grad] + [p.grad for p in att.parameters()]

    loop = grads(1, 320)  # graphs larger than a chunk: autograd through a product per graph
    for group_rows in (1, 50, 10_000):  # dense, one graph per group, two, all
        for got, expected in zip(grads(16384, group_rows), loop):
            torch.testing.assert_close(got, expected)


def test_favor_attention_gradcheck_in_the_value_weights():
    """In ``to_v``'s weights (the stabiliser depends on queries and keys and has no gradient, so finite
    differences in those see it move: their gradients are checked against autograd above)."""
    torch.manual_seed(0)
    graphs, width, heads, head_dim, d = 3, 5, 2, 4, 6
    dense_x = torch.randn(graphs * width, d, dtype=torch.float64)
    qk_weight = torch.randn(2 * heads * head_dim, d, dtype=torch.float64) / 3
    v_weight = torch.randn(heads * head_dim, d, dtype=torch.float64, requires_grad=True)
    projection = torch.randn(head_dim, 7, dtype=torch.float64)
    valid = torch.tensor([[1.0] * 5, [1.0] * 3 + [0.0] * 2, [1.0] * 4 + [0.0]], dtype=torch.float64).view(3, 1, 5)
    for mask in (None, valid):
        assert torch.autograd.gradcheck(lambda w: FavorAttention.apply(
            dense_x, torch.cat([qk_weight, w]), projection, mask, graphs, heads, 2), (v_weight,))
