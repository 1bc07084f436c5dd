"""SAGELayer against DGL's own SAGEConv('mean') with the same weights, and its gradients."""
import dgl
import torch
from dgl.nn import SAGEConv

from geaet_dgl.nn.sage import SAGELayer


def _dgl_twin(layer: SAGELayer) -> SAGEConv:
    twin = SAGEConv(layer.lin_self.in_features, layer.lin_self.out_features, "mean", bias=True)
    with torch.no_grad():
        twin.fc_self.weight.copy_(layer.lin_self.weight)
        twin.fc_neigh.weight.copy_(layer.lin_neigh.weight)
        twin.fc_self.bias.copy_(layer.lin_self.bias)  # 'mean': the bias sits in fc_self
    return twin


def test_equals_dgl_sageconv_mean_with_isolated_nodes_and_narrowing_widths():
    torch.manual_seed(0)
    g = dgl.graph((torch.tensor([0, 1, 2, 2, 3]), torch.tensor([1, 2, 0, 1, 1])), num_nodes=6)  # 4, 5 isolated
    for in_feats, out_feats in ((8, 8), (12, 5)):
        layer = SAGELayer(in_feats, out_feats)
        x = torch.randn(6, in_feats)
        out, edges = layer(g, x, None)
        assert edges is None
        torch.testing.assert_close(out, _dgl_twin(layer)(g, x), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out[4:], layer.lin_self(x[4:]))  # no neighbours: its own state only


def test_gradients_match_dgl_sageconv():
    torch.manual_seed(1)
    g = dgl.rand_graph(20, 60)
    layer = SAGELayer(6, 6)
    twin = _dgl_twin(layer)
    x = torch.randn(20, 6, requires_grad=True)
    x2 = x.detach().clone().requires_grad_(True)
    layer(g, x)[0].square().sum().backward()
    twin(g, x2).square().sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(layer.lin_neigh.weight.grad, twin.fc_neigh.weight.grad, atol=1e-5, rtol=1e-5)
