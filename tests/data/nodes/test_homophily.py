"""Adjusted homophily (Platonov et al.) against a plain loop over the edges, and its fixed points."""
import dgl
import numpy as np
import pytest
import torch

from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_dgl.data.nodes.homophily import adjusted_homophily, edge_homophily


def _loop_adjusted(src, dst, label, known):
    """The definition written out edge by edge in numpy: h_edge and the degree-weighted class shares."""
    pairs = [(int(u), int(v)) for u, v in zip(src, dst) if known[u] and known[v] and u != v]
    same = np.mean([label[u] == label[v] for u, v in pairs])
    ends = [label[u] for u, _ in pairs] + [label[v] for _, v in pairs]
    shares = np.bincount(ends) / len(ends)
    chance = float((shares ** 2).sum())
    return same, (same - chance) / (1 - chance)


def test_matches_an_edge_by_edge_computation_on_a_random_graph():
    g = dgl.rand_graph(60, 400, )
    gen = torch.Generator().manual_seed(1)
    label = torch.randint(0, 4, (60,), generator=gen)
    known = torch.rand(60, generator=gen) < 0.7
    src, dst = g.edges()
    same, adjusted = _loop_adjusted(src.numpy(), dst.numpy(), label.numpy(), known.numpy())
    assert edge_homophily(g, label, known) == pytest.approx(same)
    assert adjusted_homophily(g, label, known) == pytest.approx(adjusted)


def test_fixed_points_inside_classes_across_classes_and_nothing_to_measure():
    src, dst = torch.tensor([0, 1, 2, 3]), torch.tensor([1, 0, 3, 2])
    g, everyone = dgl.graph((src, dst)), torch.ones(4, dtype=torch.bool)
    assert adjusted_homophily(g, torch.tensor([0, 0, 1, 1]), everyone) == pytest.approx(1.0)
    assert adjusted_homophily(g, torch.tensor([0, 1, 0, 1]), everyone) == pytest.approx(-1.0)  # all across
    assert adjusted_homophily(g, torch.tensor([0, 0, 0, 0]), everyone) is None  # one class: undefined
    assert adjusted_homophily(g, torch.tensor([0, 0, 1, 1]), torch.tensor([True, False, True, False])) is None


def test_unlabelled_ends_and_self_loops_are_not_read():
    g = dgl.graph((torch.tensor([0, 0, 1, 2, 2]), torch.tensor([1, 0, 0, 3, 2])))
    label = torch.tensor([0, 0, 1, 1])
    known = torch.tensor([True, True, True, False])
    # only 0->1 and 1->0 remain (self-loops out, node 3 unknown): same class, one class -> undefined
    assert edge_homophily(g, label, known) == pytest.approx(1.0)
    assert adjusted_homophily(g, label, known) is None


def test_planted_partitions_rank_by_their_mixing():
    inside = planted_partition(400, 3, 0.05, 0.002, seed=0)
    mixed = planted_partition(400, 3, 0.01, 0.02, seed=0)
    known = torch.ones(400, dtype=torch.bool)
    high = adjusted_homophily(inside, inside.ndata["label"], known)
    low = adjusted_homophily(mixed, mixed.ndata["label"], known)
    assert high > 0.8 and low < 0.0
