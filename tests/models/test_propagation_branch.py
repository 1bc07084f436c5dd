"""APPNP's propagation branch against a dense computation: the MLP's output smoothed by K personalised-PageRank
steps over GCN's normalised adjacency (one self-loop per node, self-loops in the graph replaced)."""
import dgl
import pytest
import torch

from geaet_dgl.models.input_gcn import TELEPORT, PropagationBranch


def _dense_appnp(branch: PropagationBranch, graph: dgl.DGLGraph, x: torch.Tensor) -> torch.Tensor:
    n = graph.num_nodes()
    src, dst = graph.edges()
    adjacency = torch.zeros(n, n, dtype=torch.float64)
    keep = src != dst
    adjacency.index_put_((dst[keep], src[keep]), torch.ones(int(keep.sum()), dtype=torch.float64), accumulate=True)
    adjacency += torch.eye(n, dtype=torch.float64)
    norm = adjacency.sum(dim=1).rsqrt()
    propagation = norm[:, None] * adjacency * norm[None, :]
    first, second = branch.first.double(), branch.second.double()
    start = second(torch.relu(first(x.double())))
    z = start
    for _ in range(branch.hops):
        z = (1 - TELEPORT) * propagation @ z + TELEPORT * start
    branch.float()
    return z


@pytest.mark.parametrize("hops", [1, 4, 10])
def test_propagation_equals_the_dense_personalised_pagerank(hops):
    torch.manual_seed(hops)
    src = torch.tensor([0, 1, 2, 3, 3, 4, 5, 5, 6])
    dst = torch.tensor([1, 2, 0, 4, 3, 3, 6, 6, 5])  # a self-loop (3, 3), a doubled edge (5, 6), node 7 alone
    graph = dgl.graph((src, dst), num_nodes=8)
    x = torch.randn(8, 6)
    branch = PropagationBranch(6, 5, dropout=0.0, hops=hops, out_feats=3).eval()
    out = branch(graph, x)
    assert out.shape == (8, 3)
    torch.testing.assert_close(out.double(), _dense_appnp(branch, graph, x), rtol=1e-5, atol=1e-6)


def test_gradients_reach_both_layers_and_match_the_dense_computation():
    torch.manual_seed(0)
    graph = dgl.rand_graph(12, 40)
    x = torch.randn(12, 4)
    branch = PropagationBranch(4, 6, dropout=0.0, hops=3, out_feats=2)
    branch(graph, x).square().sum().backward()
    ours = [p.grad.clone() for p in branch.parameters()]
    branch.zero_grad()
    dense = branch.double()
    start = dense.second(torch.relu(dense.first(x.double())))
    n = graph.num_nodes()
    src, dst = graph.edges()
    keep = src != dst
    adjacency = torch.zeros(n, n, dtype=torch.float64).index_put_((dst[keep], src[keep]),
                                                                  torch.ones(int(keep.sum()), dtype=torch.float64),
                                                                  accumulate=True) + torch.eye(n, dtype=torch.float64)
    norm = adjacency.sum(dim=1).rsqrt()
    z = start
    for _ in range(3):
        z = (1 - TELEPORT) * (norm[:, None] * adjacency * norm[None, :]) @ z + TELEPORT * start
    z.square().sum().backward()
    for mine, reference in zip(ours, (p.grad for p in dense.parameters())):
        assert mine.abs().sum() > 0
        torch.testing.assert_close(mine.double(), reference, rtol=1e-4, atol=1e-5)


def test_the_branch_is_built_from_the_model_settings():
    from geaet_dgl.config.node_recipes import node_recipe
    from geaet_dgl.models.input_gcn import build_input_branch

    config = node_recipe("homophilous", node_in_feats=9, out_feats=4)
    config.input_branch, config.input_branch_hops = "appnp", 7
    branch = build_input_branch(config)
    assert isinstance(branch, PropagationBranch) and branch.hops == 7
    assert branch.second.out_features == 4  # mixed with the logits: maps to the classes
    with pytest.raises(ValueError, match="hops=0"):
        PropagationBranch(3, 4, 0.5, hops=0)


def test_the_propagation_recipe_is_the_homophilous_one_with_appnps_branch():
    import dataclasses

    from geaet_dgl.config.node_recipes import PROPAGATION_HOPS, PROPAGATION_PATIENCE, node_recipe
    from geaet_dgl.config.presets import get_preset

    homophilous = dataclasses.asdict(node_recipe("homophilous", 9, 4))
    propagation = dataclasses.asdict(node_recipe("propagation", 9, 4))
    differing = {key: (homophilous[key], propagation[key]) for key in homophilous if homophilous[key] != propagation[key]}
    assert differing == {"input_branch": ("gcn", "appnp"), "input_branch_hops": (1, PROPAGATION_HOPS)}
    assert (homophilous["norm"], homophilous["residual"], homophilous["use_ffn"], homophilous["jk"]) == \
        ("none", False, False, "none")
    assert get_preset("cora").model.input_branch == "appnp" and get_preset("chameleon").model.input_branch == "gcn"
    assert get_preset("cora").data == {"feature_norm": "row"}
    assert get_preset("cora").train.patience == PROPAGATION_PATIENCE > 0 and get_preset("chameleon").train.patience == 0
