"""Hits@k and MRR of link prediction (PCQM-Contact), against hand computations and GraphGPS's recipe."""
import dgl
import pytest
import torch

from geaet_dgl.data import collate_links
from geaet_dgl.training.metrics import (RANKING_COLUMNS, MetricAccumulator, get_metric, is_improvement,
                                        link_ranking_table, link_table_means, positive_ranks, rank_metrics)


def _batch(sizes, pairs):
    """Link targets of a batch of graphs with ``sizes`` nodes and per-graph ``pairs`` (local ids)."""
    samples = [(dgl.graph(([], []), num_nodes=n), torch.tensor(p, dtype=torch.int64).reshape(-1, 2))
               for n, p in zip(sizes, pairs)]
    return collate_links(samples)[1]


def _columns(row):
    return dict(zip(RANKING_COLUMNS, row.tolist()))


def test_positive_ranks_by_hand():
    scores = torch.tensor([[0.9, 0.5, 0.95, 0.1],   # one higher -> 2
                           [0.5, 0.5, 0.5, 0.1],    # two tied -> 1 + 2/2 = 2
                           [0.2, 0.3, 0.3, 0.3]])   # positive in column 1: one higher, one tied -> 2.5
    positive = torch.tensor([0, 1, 1])
    candidates = torch.ones(3, 4, dtype=torch.bool)
    candidates[2, 3] = False  # column 3 is not a candidate of row 2 (a filtered positive, say)
    assert positive_ranks(scores, positive, candidates).tolist() == [2.0, 2.0, 1.5]
    metrics = rank_metrics(torch.tensor([1.0, 2.5, 3.0, 12.0]))
    assert metrics[:, 0].tolist() == [1, 0, 0, 0] and metrics[:, 1].tolist() == [1, 1, 1, 0]
    assert metrics[:, 2].tolist() == [1, 1, 1, 0] and metrics[:, 3].tolist() == pytest.approx([1, 0.4, 1 / 3, 1 / 12])


def test_link_ranking_table_by_hand():
    # Graph A: scalar embeddings z = [1, 2, 3, -1], so s_ik = z_i z_k; contacts 0-1 and 0-2.
    # Graph B: all embeddings equal (every score ties); contact 0-2. Graph C: no contact.
    target = _batch([4, 3, 2], [[(0, 1), (0, 2), (1, 0), (2, 0)], [(0, 2), (2, 0)], []])
    z = torch.tensor([1.0, 2.0, 3.0, -1.0, 1.0, 1.0, 1.0, 5.0, 6.0]).unsqueeze(1)
    table, positives = link_ranking_table(z, target)
    assert positives.tolist() == [4, 2] and table.shape == (2, 8)  # graph C has nothing to rank
    # A raw: (0,1) ranks 2 (behind (0,2)); (0,2) ranks 1; (1,0) and (2,0) rank 3 (behind (i,i) and the
    # other positive). Filtered: (0,1) no longer ranks behind the positive (0,2): ranks 1, 1, 3, 3.
    a, b = _columns(table[0]), _columns(table[1])
    assert a["hits@1"] == 0.25 and a["hits@3"] == 1.0 and a["hits@10"] == 1.0
    assert a["mrr"] == pytest.approx((1 / 2 + 1 + 1 / 3 + 1 / 3) / 4)
    assert a["hits@1_filtered"] == 0.5 and a["mrr_filtered"] == pytest.approx((1 + 1 + 1 / 3 + 1 / 3) / 4)
    # B: all scores equal, two candidates (the self pair and node 1) tie with the positive: rank 1 + 2/2 = 2.
    assert b == pytest.approx({"hits@1": 0, "hits@3": 1, "hits@10": 1, "mrr": 0.5, "hits@1_filtered": 0,
                               "hits@3_filtered": 1, "hits@10_filtered": 1, "mrr_filtered": 0.5})
    means = link_table_means(table)  # the mean over graphs, not over pairs
    assert means["mrr"] == pytest.approx((a["mrr"] + 0.5) / 2) and means["hits@1"] == pytest.approx(0.125)


def test_k_larger_than_the_candidates_and_all_equal_scores():
    target = _batch([2, 5], [[(0, 1), (1, 0)], [(0, 4), (4, 0)]])
    z = torch.tensor([[-3.0], [4.0]] + [[0.0]] * 5)  # graph 1: every score 0
    table, _ = link_ranking_table(z, target)
    small, flat = _columns(table[0]), _columns(table[1])
    # Two nodes: a positive has one other candidate (the self pair), so its rank is at most 2 <= 3 <= 10.
    assert small["hits@3"] == small["hits@10"] == 1.0 and small["hits@1"] == 0.0 and small["mrr"] == 0.5
    # Five nodes, all tied: four raw candidates tie with the positive -> rank 1 + 4/2 = 3.
    assert flat["mrr"] == pytest.approx(1 / 3) and flat["hits@1"] == 0 and flat["hits@3"] == 1
    assert flat["mrr_filtered"] == pytest.approx(1 / 3)  # the positive's own reverse pair is not in its row


def _graphgps_ranks(z, pairs, filtered):
    """GraphGPS's inductive_edge ``compute_mrr`` for one graph, in our words: argsort position of the positive."""
    pred = z @ z.T
    ranks = []
    for i, j in pairs.tolist():
        if filtered:
            row = pred[i].clone()
            for a, b in pairs.tolist():
                if a == i:
                    row[b] = float("-inf")
            candidates = row
        else:
            candidates = torch.cat([pred[i, :j], pred[i, j + 1:]])
        order = torch.argsort(torch.cat([pred[i, j].view(1), candidates]), descending=True)
        ranks.append(int((order == 0).nonzero()) + 1)
    return torch.tensor(ranks, dtype=torch.float64)


def test_matches_graphgps_recipe_on_distinct_scores():
    gen = torch.Generator().manual_seed(0)
    sizes = [5, 9, 3, 12]
    pairs = []
    for n in sizes:
        chosen = torch.randperm(n * n, generator=gen)[: max(1, n // 2)]
        undirected = {(int(c) // n, int(c) % n) for c in chosen if int(c) // n != int(c) % n} or {(0, 1)}
        pairs.append(sorted(undirected | {(b, a) for a, b in undirected}))
    target = _batch(sizes, pairs)
    z = torch.randn(sum(sizes), 6, generator=gen, dtype=torch.float64)
    table, _ = link_ranking_table(z, target)
    first = 0
    for g, (n, p) in enumerate(zip(sizes, pairs)):
        zg, pg = z[first:first + n], torch.tensor(p)
        for offset, filtered in ((0, False), (4, True)):
            expected = rank_metrics(_graphgps_ranks(zg, pg, filtered)).mean(dim=0)
            torch.testing.assert_close(table[g, offset:offset + 4], expected)
        first += n


def test_accumulator_averages_graphs_over_batches_and_merges():
    z = torch.tensor([1.0, 2.0, 3.0, -1.0, 1.0, 1.0, 1.0]).unsqueeze(1)
    first = _batch([4], [[(0, 1), (0, 2), (1, 0), (2, 0)]])
    second = _batch([3], [[(0, 2), (2, 0)]])
    acc = MetricAccumulator("mrr")
    acc.update(z[:4], first, loss=1.0, num_graphs=1)
    acc.update(z[4:], second, loss=4.0, num_graphs=1)
    result = acc.compute()
    hand = ((1 / 2 + 1 + 1 / 3 + 1 / 3) / 4 + 0.5) / 2
    assert result["metric"] == pytest.approx(hand) and "mrr" not in result
    assert result["hits@1"] == pytest.approx(0.125) and result["hits@3"] == 1.0 and "mrr_filtered" in result
    assert result["loss"] == pytest.approx((1.0 * 4 + 4.0 * 2) / 6)  # weighted by positive pairs
    merged = MetricAccumulator("mrr")
    for part, target in ((z[:4], first), (z[4:], second)):
        piece = MetricAccumulator("mrr")
        piece.update(part, target, loss=1.0, num_graphs=1)
        merged.merge_state_dict(piece.state_dict())
    assert merged.compute()["metric"] == pytest.approx(hand)
    assert get_metric("mrr").higher_is_better and is_improvement("mrr", 0.36, 0.35)
    assert not is_improvement("mrr", 0.35, 0.35)


def test_nothing_to_rank_is_an_error():
    with pytest.raises(ValueError, match="no graph has a positive pair"):
        link_table_means(torch.zeros(0, 8, dtype=torch.float64))
