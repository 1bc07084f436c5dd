"""Edge states that no branch reads or updates cost no (E, d) memory: one pass and layer-wise."""
import dgl
import torch

from geaet_dgl.config import GEANetConfig, ModelConfig
from geaet_dgl.inference import layerwise
from geaet_dgl.models import build_model
from geaet_dgl.nn.batch_layout import BatchLayout


def _gcn_geanet(seed=0, mpnn="gcn", edge_encoder="constant", edge_unit=False):
    torch.manual_seed(seed)
    config = ModelConfig(node_in_feats=3, edge_in_feats=1, out_feats=2, hidden_dim=16, num_layers=3, head="node",
                         pe="none", mpnn=mpnn, attention="none", edge_encoder=edge_encoder,
                         geanet=GEANetConfig(num_heads=4, unit_size=4, edge_unit=edge_unit))
    return build_model(config)


def _graph():
    g = dgl.rand_graph(60, 400)
    g.ndata["feat"] = torch.randn(60, 3)
    g.edata["feat"] = torch.zeros(400, 1)
    return g


def test_no_edge_states_where_no_layer_reads_them():
    g = _graph()
    layout = BatchLayout.from_graph(g)
    assert _gcn_geanet(edge_encoder="linear").encode(g, layout).edges is None  # GCN, GEANet without edge units
    assert _gcn_geanet(mpnn="gin").encode(g, layout).edges is None
    assert _gcn_geanet(edge_unit=True).encode(g, layout).edges.shape == (400, 16)  # GEANet's edge unit reads them
    assert _gcn_geanet(mpnn="gatedgcn").encode(g, layout).edges.shape == (400, 16)


def test_constant_edge_encoding_is_a_view_with_the_gradient_of_a_copy():
    model = _gcn_geanet(mpnn="gatedgcn")
    g = _graph()
    e = model.encode(g, BatchLayout.from_graph(g)).edges
    assert e.shape == (400, 16) and e.stride(0) == 0  # one vector, no (E, d) storage
    torch.testing.assert_close(e, model.edge_encoder.encoder.weight.repeat(400, 1))
    model.edge_encoder.encoder.weight.grad = None
    e.mul(torch.arange(400.0).unsqueeze(1)).sum().backward()
    torch.testing.assert_close(model.edge_encoder.encoder.weight.grad, torch.full((1, 16), 399 * 400 / 2))


def test_layerwise_passes_untouched_edges_through_without_a_copy(monkeypatch):
    model = _gcn_geanet(1).eval()
    g = _graph()
    seen = []
    original = layerwise._layer

    def spy(layer, whole, h, e, *args, **kwargs):
        out = original(layer, whole, h, e, *args, **kwargs)
        seen.append((e, out[1]))
        return out

    monkeypatch.setattr(layerwise, "_layer", spy)
    with torch.no_grad():
        chunked = layerwise.layerwise_forward(model, g, chunk_nodes=7)
        whole = model(g)
    torch.testing.assert_close(chunked, whole, atol=1e-5, rtol=1e-5)
    assert len(seen) == 3 and all(after is before for before, after in seen[:-1])  # GCN, GEANet w/o edge units
