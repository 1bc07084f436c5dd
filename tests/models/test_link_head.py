"""The link head (GraphGPS inductive_edge, dot decoding) and its loss with structured negative sampling."""
import dgl
import pytest
import torch
import torch.nn.functional as F

from geaet_dgl.config import ConfigError
from geaet_dgl.data import collate_links
from geaet_dgl.models import build_model
from geaet_dgl.models.heads import LinkHead, pair_scores
from geaet_dgl.nn.batch_layout import BatchLayout
from geaet_dgl.config.presets import get_preset
from geaet_dgl.training.losses import link_cross_entropy, structured_negatives


def _molecule(n: int, seed: int) -> dgl.DGLGraph:
    gen = torch.Generator().manual_seed(seed)
    src = torch.arange(n - 1)
    g = dgl.graph((torch.cat([src, src + 1]), torch.cat([src + 1, src])), num_nodes=n)
    vocab = torch.tensor([119, 5, 12, 12, 10, 6, 6, 2, 2])
    g.ndata["feat"] = (torch.rand(n, 9, generator=gen) * vocab).long()
    g.edata["feat"] = torch.zeros(g.num_edges(), 3, dtype=torch.int64)
    g.ndata["lap_pe"] = torch.randn(n, 10, generator=gen)
    g.ndata["lap_eigval"] = torch.rand(n, 10, generator=gen)
    return g


def _batch():
    samples = [(_molecule(6, 0), torch.tensor([[0, 4], [4, 0]])),
               (_molecule(9, 1), torch.tensor([[0, 8], [1, 5], [5, 1], [8, 0]]))]
    return collate_links(samples)


def test_pair_scores_and_head_shape():
    z = torch.tensor([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]])
    assert pair_scores(z, torch.tensor([0, 1, 2]), torch.tensor([1, 1, 0])).tolist() == [1.0, 10.0, 1.5]
    head = LinkHead(4, num_layers=1)
    x = torch.randn(5, 4)
    out = head(x, None)
    assert out.shape == (5, 4)
    torch.testing.assert_close(out, head.layer_post_mp.final(x))  # one post-MP layer: Linear(d, d)


def test_preset_model_trains_through_the_link_loss():
    model_config = get_preset("pcqm-contact").model
    model_config.hidden_dim, model_config.num_layers, model_config.geanet.unit_size = 16, 1, 4
    model_config.pe_dim = 4
    model = build_model(model_config)
    graph, target = _batch()
    torch.manual_seed(0)
    output = model(graph, BatchLayout.from_graph(graph))
    assert output.shape == (graph.num_nodes(), 16)
    loss = link_cross_entropy(output, target)
    loss.backward()
    assert torch.isfinite(loss)
    missing = sorted(n for n, p in model.named_parameters() if p.grad is None)
    assert missing == ["layers.0.local_model.bn_edge_e.bias", "layers.0.local_model.bn_edge_e.weight"]  # unused
    for name, param in model.named_parameters():
        assert param.grad is None or torch.isfinite(param.grad).all(), name
    assert model.head.layer_post_mp.final.weight.grad.abs().sum() > 0


def test_link_head_needs_one_output():
    config = get_preset("pcqm-contact").model
    config.out_feats = 2
    with pytest.raises(ConfigError, match="out_feats must be 1"):
        config.validate()


def test_structured_negatives_stay_in_the_graph_and_avoid_positives():
    _, target = _batch()
    torch.manual_seed(3)
    src, dst = structured_negatives(target)
    first, count = target[:, 2], target[:, 3]
    assert torch.equal(src, target[:, 0].repeat_interleave(2))  # two per positive, from its head
    graph_of = {int(s): (int(f), int(c)) for s, f, c in zip(target[:, 0], first, count)}
    positives = {(int(a), int(b)) for a, b in target[:, :2]}
    pairs = list(zip(src.tolist(), dst.tolist()))
    for a, b in pairs:
        low, size = graph_of[a]
        assert low <= b < low + size and (a, b) not in positives
    assert len(set(pairs)) == len(pairs)
    torch.manual_seed(3)
    again = structured_negatives(target)
    assert torch.equal(again[0], src) and torch.equal(again[1], dst)  # the global RNG decides


def test_structured_negatives_drop_what_cannot_be_drawn():
    # Two nodes, contact 0-1: row 0 has one non-positive node (itself), so one of its two draws is dropped.
    target = collate_links([(dgl.graph(([], []), num_nodes=2), torch.tensor([[0, 1], [1, 0]]))])[1]
    torch.manual_seed(0)
    src, dst = structured_negatives(target)
    assert sorted(zip(src.tolist(), dst.tolist())) == [(0, 0), (1, 1)]


def test_link_cross_entropy_is_bce_of_positives_and_sampled_negatives():
    _, target = _batch()
    z = torch.randn(15, 4, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(7)
    loss = link_cross_entropy(z, target)
    torch.manual_seed(7)
    neg_src, neg_dst = structured_negatives(target)
    pos = (z[target[:, 0]] * z[target[:, 1]]).sum(-1)
    neg = (z[neg_src] * z[neg_dst]).sum(-1)
    expected = F.binary_cross_entropy_with_logits(torch.cat([pos, neg]),
                                                  torch.cat([torch.ones(len(pos)), torch.zeros(len(neg))]))
    torch.testing.assert_close(loss, expected)
    assert len(neg) == 2 * len(pos)  # graphs of 6 and 9 nodes leave room for two negatives per positive
