"""GraphGPS options: two encodings at once (``<Base>+LapPE+RWSE``), the graph token, no norm,
no edge encoder, the pre-MP node layer and the code2 sequence head, each against an independent computation."""
import dgl
import pytest
import torch

from geaet_dgl.config import ConfigError, GraphormerConfig, ModelConfig, apply_overrides
from geaet_dgl.data.encodings.positional_encoding import laplacian_pe, random_walk_se
from geaet_dgl.data.encodings.se_cache import StructuralSpec, attach_structural
from geaet_dgl.models import build_model
from geaet_dgl.models.heads import pool_nodes
from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.config.presets import get_preset


def _zinc_like(sizes=(5, 7, 4), seed=0, k=4, rwse_k=6, graphormer=False):
    torch.manual_seed(seed)
    graphs = []
    for n in sizes:
        src = torch.arange(n - 1)
        g = dgl.graph((torch.cat([src, src + 1]), torch.cat([src + 1, src])), num_nodes=n)  # a path, both ways
        g.ndata["feat"] = torch.randint(0, 28, (n, 1))
        g.edata["feat"] = torch.randint(0, 4, (g.num_edges(), 1))
        g.ndata["lap_pe"], g.ndata["lap_eigval"] = laplacian_pe(g, k, norm="none")
        g.ndata["rwse"] = random_walk_se(g, rwse_k)
        graphs.append(g)
    if graphormer:
        attach_structural(graphs, StructuralSpec(spatial_types=20, degrees=True, path_types=True), None, False)
    return graphs


def _zinc_model(**changes) -> ModelConfig:
    config = ModelConfig(node_in_feats=1, edge_in_feats=1, out_feats=1, node_encoder="typedict",
                         node_vocab_sizes=[28], edge_encoder="typedict", edge_vocab_sizes=[4], pe="lappe", pe_k=4,
                         pe_dim=8, pe_layers=2, hidden_dim=32, num_layers=2, mpnn="gine", attention="transformer",
                         external=False, head="san_graph", pooling="sum")
    for key, value in changes.items():
        setattr(config, key, value)
    return config.validate()


def test_lappe_then_rwse_are_concatenated_after_the_base_encoder():
    config = _zinc_model(se="rwse", se_k=6, se_dim=5, se_raw_norm=True)
    model = build_model(config).eval()
    graph = dgl.batch(_zinc_like())
    layout = BatchLayout.from_graph(graph)
    h = model.encode(graph, layout).nodes
    base = model.node_encoder.encoder.weight[graph.ndata["feat"][:, 0]]  # TypeDictNode: width 32 - 8 - 5
    lap = model.pe_encoder(graph.ndata["lap_pe"], graph.ndata["lap_eigval"], layout)
    rw = graph.ndata["rwse"]
    norm = model.se_encoder.raw_norm
    rw = (rw - norm.running_mean) / torch.sqrt(norm.running_var + norm.eps) * norm.weight + norm.bias
    rw = rw @ model.se_encoder.pe_encoder.weight.T + model.se_encoder.pe_encoder.bias
    assert base.shape[1] == 19 and h.shape == (graph.num_nodes(), 32)
    torch.testing.assert_close(h, torch.cat([base, lap, rw], dim=1))
    # parameters: the base table shrinks by pe_dim + se_dim columns, the RWSE encoder is added
    alone = build_model(_zinc_model())
    extra = (6 * 2) + (6 * 5 + 5)  # BatchNorm(6) affine + Linear(6, 5)
    assert model.num_parameters == alone.num_parameters - 28 * 5 + extra


def test_second_encoding_from_set_and_its_data():
    from geaet_dgl.data.run_splits import data_pe_sizes

    preset = apply_overrides(get_preset("zinc"), {"model.pe": "lappe+rwse", "model.pe_k": 4, "model.pe_dim": 8,
                                                  "model.se_k": 12, "model.se_dim": 8})
    assert (preset.model.pe, preset.model.se) == ("lappe", "rwse")
    assert data_pe_sizes(preset.model) == (4, 12)
    with pytest.raises(ConfigError, match="a second encoding after"):
        apply_overrides(get_preset("zinc"), {"model.pe": "lappe+eslappe"})
    with pytest.raises(ConfigError, match="smaller than hidden_dim"):
        apply_overrides(get_preset("zinc"), {"model.pe": "lappe+rwse", "model.pe_dim": 40, "model.se_dim": 24})


def _token_model(graph_token=True) -> ModelConfig:
    graphormer = GraphormerConfig(enable=True, spatial_types=20, num_edge_types=4, num_in_degrees=8,
                                  num_out_degrees=8, graph_token=graph_token)
    return _zinc_model(pe="none", attention="biased_transformer", graphormer=graphormer,
                       pooling="first" if graph_token else "sum")


def test_graph_token_adds_one_node_per_graph_as_graphgps_does():
    torch.manual_seed(0)
    model = build_model(_token_model()).eval()
    graphs = _zinc_like(graphormer=True)
    graph = dgl.batch(graphs)
    layout = BatchLayout.from_graph(graph)
    h = model.encoder.encode_features(graph, layout).nodes  # before the graph token
    h = torch.randn_like(h)  # rows told apart by value (atoms of one type and degree encode alike)
    tokened, h2, layout2 = model.graph_token(graph, h, layout)
    sizes = [g.num_nodes() for g in graphs]
    assert tokened.batch_num_nodes().tolist() == [n + 1 for n in sizes]
    starts = [sum(sizes[:i]) + i for i in range(len(sizes))]
    for i, start in enumerate(starts):  # each graph's block: its token and its nodes, in torch.sort's order
        block, nodes = h2[start:start + sizes[i] + 1], h[sum(sizes[:i]):sum(sizes[:i + 1])]
        rows = torch.cat([model.graph_token.node_token, nodes])
        match = (block[:, None, :] == rows[None, :, :]).all(-1)  # (n + 1, n + 1): block row r is rows[c]
        assert torch.equal(match.sum(0), torch.ones(sizes[i] + 1, dtype=torch.long))  # a permutation
        ids = torch.cat([torch.arange(len(sizes)), torch.repeat_interleave(torch.arange(len(sizes)),
                                                                            torch.tensor(sizes))])
        order = torch.sort(ids).indices[start:start + sizes[i] + 1]  # GraphGPS's add_graph_token
        expected = torch.where(order < len(sizes), 0, order - len(sizes) - sum(sizes[:i]) + 1)
        assert torch.equal(match.float().argmax(1), expected)
    # GraphGPS leaves edge_index alone: the edges keep their numbers in the new order
    assert torch.equal(tokened.edges()[0], graph.edges()[0]) and torch.equal(tokened.edges()[1], graph.edges()[1])
    # the bias: row and column 0 of every graph the token's per-head value, the rest shifted by one
    bias = model.encoder.attention_bias(graph, layout)
    padded = model.graph_token.pad_bias(bias, layout2)
    heads, width = model.config.num_heads, layout2.dense_width
    padded = padded.view(len(sizes), heads, width, width)
    old = bias.view(len(sizes), heads, bias.shape[-1], bias.shape[-1])
    token = model.graph_token.bias_token[0, :, 0]
    for i, n in enumerate(sizes):
        torch.testing.assert_close(padded[i, :, 0, :n + 1], token[:, None].expand(heads, n + 1))
        torch.testing.assert_close(padded[i, :, 1:n + 1, 0], token[:, None].expand(heads, n))
        torch.testing.assert_close(padded[i, :, 1:n + 1, 1:n + 1], old[i, :, :n, :n])
    # graph_token pooling reads each graph's first row (the token where the sort leaves it first)
    out = torch.randn(tokened.num_nodes(), 3)
    torch.testing.assert_close(pool_nodes("first", out, layout2), out[starts])


def test_graph_token_model_trains_and_counts_its_two_parameters():
    torch.manual_seed(0)
    config = _token_model()
    model = build_model(config)
    plain = build_model(_token_model(graph_token=False))
    assert model.num_parameters == plain.num_parameters + 32 + config.num_heads  # (1, d) token, (1, H, 1) bias
    graph = dgl.batch(_zinc_like(graphormer=True))
    target = torch.randn(3, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = (model(graph) - target).abs().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert model.graph_token.node_token.grad is not None and model.graph_token.bias_token.grad is not None
    assert losses[-1] < 0.5 * losses[0]


def test_no_norm_and_no_edge_encoder_hold_no_parameters():
    config = _zinc_model(norm="none", edge_encoder="none", mpnn="gcn")
    model = build_model(config)
    assert model.edge_encoder is None
    assert not any("norm1" in name or "norm2" in name for name, _ in model.named_parameters())
    out = model(dgl.batch(_zinc_like()))
    assert out.shape == (3, 1) and torch.isfinite(out).all()


def test_premp_encoder_is_linear_without_bias_then_batchnorm_then_relu_then_l2_norm():
    """graphgym's GNNPreMP: its GeneralLayer scales each row to unit L2 norm after the activation (gnn.l2norm)."""
    from geaet_dgl.models.encoders import build_encoder

    torch.manual_seed(0)
    enc = build_encoder("premp", 5, 8).train()
    x = torch.randn(20, 5)
    z = x @ enc.linear.weight.T
    expected = torch.relu((z - z.mean(0)) / torch.sqrt(z.var(0, unbiased=False) + 1e-5))
    expected = expected / expected.norm(dim=1, keepdim=True).clamp_min(1e-12)
    torch.testing.assert_close(enc(x), expected)
    assert sum(p.numel() for p in enc.parameters()) == 5 * 8 + 2 * 8


def test_sequence_head_and_its_loss():
    from geaet_dgl.training.losses import subtoken_cross_entropy

    config = _zinc_model(head="sequence", head_layers=1, out_feats=11, seq_len=5, pooling="mean")
    model = build_model(config)
    graph = dgl.batch(_zinc_like())
    out = model(graph)
    assert out.shape == (3, 5 * 11)
    target = torch.cat([torch.randint(0, 11, (3, 5)).double(), torch.full((3, 2), float("nan"))], dim=1)
    logits = out.view(3, 5, 11)
    expected = sum(torch.nn.functional.cross_entropy(logits[:, i], target[:, i].long()) for i in range(5)) / 5
    torch.testing.assert_close(subtoken_cross_entropy(out, target), expected)
