"""Mostly-zero node features read as a sparse matrix: same values and gradients as the dense maps."""
import dataclasses

import dgl
import pytest
import torch

from geaet_dgl.config.presets import get_preset
from geaet_dgl.models import build_model
from geaet_dgl.nn import sparse_input


def _bag_of_words(nodes=60, width=300, share=0.02, seed=0):
    generator = torch.Generator().manual_seed(seed)
    feat = (torch.rand(nodes, width, generator=generator) < share).float()
    return feat / feat.sum(1, keepdim=True).clamp(min=1)


def test_only_wide_mostly_zero_float_features_are_read_sparsely():
    assert sparse_input.sparse_features(_bag_of_words()).is_sparse
    assert not sparse_input.sparse_features(torch.rand(60, 300)).is_sparse  # dense values
    assert not sparse_input.sparse_features(_bag_of_words(width=sparse_input.MIN_WIDTH - 1)).is_sparse  # narrow
    assert not sparse_input.sparse_features((_bag_of_words() > 0).long()).is_sparse  # integer types


def test_the_sparse_copy_is_made_once_and_again_after_an_in_place_change():
    feat = _bag_of_words()
    first = sparse_input.sparse_features(feat)
    assert sparse_input.sparse_features(feat) is first
    feat[0, :5] = 1.0
    second = sparse_input.sparse_features(feat)
    assert second is not first
    torch.testing.assert_close(second.to_dense(), feat)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_the_dense_map_in_values_and_gradients(bias):
    feat = _bag_of_words()
    dense_layer = torch.nn.Linear(300, 16, bias=bias)
    sparse_layer = torch.nn.Linear(300, 16, bias=bias)
    sparse_layer.load_state_dict(dense_layer.state_dict())
    target = torch.randn(60, 16)
    dense_out = dense_layer(feat)
    sparse_out = sparse_input.linear(sparse_layer, sparse_input.sparse_features(feat))
    torch.testing.assert_close(sparse_out, dense_out, atol=1e-6, rtol=1e-5)
    ((dense_out - target) ** 2).sum().backward()
    ((sparse_out - target) ** 2).sum().backward()
    for dense_param, sparse_param in zip(dense_layer.parameters(), sparse_layer.parameters()):
        torch.testing.assert_close(sparse_param.grad, dense_param.grad, atol=1e-5, rtol=1e-5)


def test_dropout_on_the_stored_values_keeps_zeros_and_rescales():
    feat = sparse_input.sparse_features(_bag_of_words(nodes=400, share=0.04))
    module = torch.nn.Dropout(0.5).train()
    dropped = sparse_input.dropout(feat, module).to_dense()
    dense = feat.to_dense()
    assert bool((dropped[dense == 0] == 0).all())
    kept = dropped[dense != 0] != 0
    assert 0.4 < float(kept.float().mean()) < 0.6
    torch.testing.assert_close(dropped[dense != 0][kept], 2 * dense[dense != 0][kept])
    assert sparse_input.dropout(feat, module.eval()) is feat


def _cora_like_graph(seed=0):
    graph = dgl.to_bidirected(_random_graph(seed))
    graph.ndata["feat"] = _bag_of_words(nodes=graph.num_nodes(), width=300, seed=seed)
    return graph


def _random_graph(seed):
    generator = torch.Generator().manual_seed(seed)
    src, dst = torch.randint(0, 80, (2, 300), generator=generator)
    return dgl.graph((src, dst), num_nodes=80)


@pytest.mark.parametrize("preset,branch", [("cora", "gcn"), ("cora", "mlp"), ("texas", "hops")])
def test_a_node_model_reads_sparse_features_as_it_reads_dense_ones(preset, branch, monkeypatch):
    config = dataclasses.replace(get_preset(preset).model, node_in_feats=300, out_feats=5, input_branch=branch,
                                 input_gcn_weight=0.5)
    graph = _cora_like_graph()
    torch.manual_seed(0)
    model = build_model(config).eval()
    target = torch.randn(graph.num_nodes(), 5)

    def output_and_gradients():
        model.zero_grad()
        out = model(graph)
        ((out - target) ** 2).sum().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    sparse_out, sparse_grads = output_and_gradients()
    monkeypatch.setattr(sparse_input, "MAX_DENSITY", 0.0)
    graph.ndata["feat"] = graph.ndata["feat"].clone()  # a new tensor: no cached sparse copy
    dense_out, dense_grads = output_and_gradients()
    torch.testing.assert_close(sparse_out, dense_out, atol=1e-5, rtol=1e-5)
    assert len(sparse_grads) == len(dense_grads) > 0
    for got, want in zip(sparse_grads, dense_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


def test_the_stored_transpose_follows_the_values_through_dropout_and_casts():
    feat = sparse_input.sparse_features(_bag_of_words(nodes=90, share=0.05, seed=3))
    dropped = sparse_input.dropout(feat, torch.nn.Dropout(0.3).train()).to(torch.float64)
    torch.testing.assert_close(dropped.transposed.to_dense(), dropped.to_dense().t())
    assert dropped.dtype == torch.float64
