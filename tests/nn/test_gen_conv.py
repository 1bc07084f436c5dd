"""GENConvLayer against a per-node float64 loop (PyG GENConv's definition), train and eval, and the layer checks."""
import dgl
import pytest
import torch

from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.nn.gen_conv import FoldedGENConv, GENConvLayer, SoftmaxAggregate
from tests.conftest import random_graph, with_features
from tests.nn.layer_checks import (assert_batched_equals_single, assert_gradients, assert_permutation_equivariant,
                                   assert_save_load)

D = 8


def softmax_aggregate(graph: dgl.DGLGraph, messages: torch.Tensor) -> torch.Tensor:
    """The aggregation as written on DGL's kernels, for autograd to differentiate: per channel,
    ``a_i = sum_j softmax_j(m_ji) m_ji`` over node i's incoming edges, (E, d) -> (N, d); 0 without in-edges."""
    with torch.no_grad():
        top = dgl.ops.copy_e_max(graph, messages)  # (N, d)
    weights = dgl.ops.e_sub_v(graph, messages, top).exp_()  # (E, d), in (0, 1]
    total = dgl.ops.copy_e_sum(graph, weights)
    return dgl.ops.copy_e_sum(graph, weights * messages) / total.clamp_min(torch.finfo(total.dtype).tiny)


def loop_aggregate(g, x, e):
    src, dst = g.edges()
    agg = torch.zeros_like(x)
    for i in range(g.num_nodes()):
        incoming = [k for k in range(g.num_edges()) if dst[k] == i]
        if incoming:
            m = torch.stack([torch.relu(x[src[k]] + e[k]) + 1e-7 for k in incoming])  # (deg, d)
            agg[i] = (torch.softmax(m, dim=0) * m).sum(0)
    return agg


@pytest.mark.parametrize("train", [False, True])
def test_matches_node_loop(graph_case, train):
    _, graphs = graph_case
    g = dgl.batch(with_features(graphs, D))
    torch.manual_seed(0)
    conv = GENConvLayer(D).double().train(train)
    bn = conv.mlp[1]
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    x, e = g.ndata["h"].double(), g.edata["h"].double()
    expected = conv.mlp(x + loop_aggregate(g, x, e)) if train else None
    if not train:
        hidden = (x + loop_aggregate(g, x, e)) @ conv.mlp[0].weight.T
        hidden = (hidden - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
        expected = torch.relu(hidden) @ conv.mlp[4].weight.T
    conv.train(train)  # the train-mode expectation above moved the running statistics: same for both sides
    if train:
        bn.reset_running_stats()
    out, _ = conv(g, x, e)
    torch.testing.assert_close(out, expected)


def test_gradients_save_load_permutation_and_batching():
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=2)], D)
    bg = dgl.batch(graphs)
    torch.manual_seed(0)
    conv = GENConvLayer(D).train()
    assert_gradients(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_save_load(conv, GENConvLayer(D), bg, bg.ndata["h"], bg.edata["h"])
    assert_permutation_equivariant(conv, bg, bg.ndata["h"], bg.edata["h"])
    assert_batched_equals_single(conv, graphs, D)


@pytest.mark.parametrize("scale", [1.0, 100.0])  # messages below SHIFT_FREE_MAX (exp unshifted), and above
@pytest.mark.parametrize("with_edges", [False, True])
def test_the_forward_without_gradients_matches_the_node_loop(with_edges, scale):
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=2)], D)
    g = dgl.batch(graphs)  # two nodes without incoming edges aggregate 0, not eps
    torch.manual_seed(0)
    conv = GENConvLayer(D).double().eval()
    x = scale * g.ndata["h"].double()
    e = scale * g.edata["h"].double() if with_edges else None
    with_grad, _ = conv(g, x, e)
    with torch.no_grad():
        out, edges_out = conv(g, x, e)
    assert edges_out is e
    torch.testing.assert_close(out, with_grad)
    expected = conv.mlp(x + loop_aggregate(g, x, e if with_edges else torch.zeros(g.num_edges(), D).double()))
    torch.testing.assert_close(out, expected)


@pytest.mark.parametrize("scale", [1.0, 100.0])  # messages below SHIFT_FREE_MAX (exp unshifted), and above
@pytest.mark.parametrize("with_edges", [False, True])
def test_the_written_out_backward_matches_autograd_and_finite_differences(with_edges, scale):
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=2)], D)
    g = dgl.batch(graphs)
    src, dst = g.edges()
    torch.manual_seed(0)
    x = (scale * g.ndata["h"].double()).requires_grad_()
    e = (scale * g.edata["h"].double()).requires_grad_() if with_edges else None
    weights = torch.randn(g.num_nodes(), D, dtype=torch.float64)

    def autograd_chain(x, e):  # the formulation on DGL's kernels, differentiated by autograd
        raw = dgl.ops.u_add_e(g, x, e) if e is not None else dgl.ops.copy_u(g, x)
        return softmax_aggregate(g, torch.relu(raw) + 1e-7)

    inputs = (x, e) if with_edges else (x,)
    out = SoftmaxAggregate.apply(g, x, e, src, dst, 1e-7)
    expected = autograd_chain(x, e)
    torch.testing.assert_close(out, expected)
    got = torch.autograd.grad((out * weights).sum(), inputs)
    want = torch.autograd.grad((expected * weights).sum(), inputs)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b)
    assert float(out.abs().max()) > (10.0 if scale > 1 else 0.1)
    if scale == 1.0:
        assert torch.autograd.gradcheck(
            lambda *args: SoftmaxAggregate.apply(g, args[0], args[1] if with_edges else None, src, dst, 1e-7), inputs)


def test_folded_copy_matches_eval_mode_and_reuses_the_layouts_edge_buffers():
    graphs = with_features([random_graph(7, 20, 1), random_graph(4, 6, 2), dgl.graph(([], []), num_nodes=2)], D)
    g = dgl.batch(graphs)
    torch.manual_seed(0)
    conv = GENConvLayer(D).double()
    bn = conv.mlp[1]
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    with torch.no_grad():
        bn.weight.uniform_(-1.0, 1.0)
        bn.bias.uniform_(-0.5, 0.5)
    conv.eval()
    folded = conv.folded()
    assert isinstance(folded, FoldedGENConv)
    layout = BatchLayout.from_graph(g)
    x, e = g.ndata["h"].double(), g.edata["h"].double()
    expected = conv.mlp(x + loop_aggregate(g, x, e))
    for edges in (e, None):
        first, _ = folded(g, x, edges, layout=layout)
        second, _ = folded(g, 2.0 * x, edges, layout=layout)  # the same edge buffers again
        again, _ = folded(g, x, edges)  # no layout: fresh tensors
        torch.testing.assert_close(again, first)
        if edges is e:
            torch.testing.assert_close(first, expected)
        torch.testing.assert_close(second, conv(g, 2.0 * x, edges)[0])
    bn.running_var = None  # a BatchNorm with batch statistics does not fold
    assert conv.folded() is None
