"""ROC-AUC (minesweeper, tolokers, questions) against a pairwise count, computed independently here."""
import math

import pytest
import torch

from geaet_dgl.training.metrics import MetricAccumulator, roc_auc


def _pairwise_auc(scores, target):
    """P(score of a positive > score of a negative), ties counted half: every pair, counted one by one."""
    pos = [s for s, t in zip(scores.tolist(), target.tolist()) if t == 1]
    neg = [s for s, t in zip(scores.tolist(), target.tolist()) if t == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def test_roc_auc_equals_the_pairwise_count_with_ties():
    gen = torch.Generator().manual_seed(0)
    scores = torch.randint(0, 6, (200,), generator=gen).float()  # many ties
    target = torch.randint(0, 2, (200,), generator=gen)
    assert roc_auc(scores, target) == pytest.approx(_pairwise_auc(scores, target), abs=1e-12)


def test_roc_auc_reads_two_logits_as_their_difference():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(50, 2, generator=gen)
    target = torch.randint(0, 2, (50,), generator=gen)
    probability = torch.softmax(logits, dim=1)[:, 1]
    assert roc_auc(logits, target) == pytest.approx(_pairwise_auc(probability, target), abs=1e-12)
    assert roc_auc(logits[:, 1:] - logits[:, :1], target) == pytest.approx(roc_auc(logits, target))


def test_roc_auc_extremes_and_undefined():
    target = torch.tensor([0, 0, 1, 1])
    assert roc_auc(torch.tensor([0.1, 0.2, 0.8, 0.9]), target) == 1.0
    assert roc_auc(torch.tensor([0.9, 0.8, 0.2, 0.1]), target) == 0.0
    assert math.isnan(roc_auc(torch.tensor([0.1, 0.2]), torch.tensor([1, 1])))
    with pytest.raises(ValueError, match="binary"):
        roc_auc(torch.randn(4, 3), target)


def test_accumulated_batches_give_the_whole_split_auc():
    gen = torch.Generator().manual_seed(2)
    logits, target = torch.randn(30, 2, generator=gen), torch.randint(0, 2, (30,), generator=gen)
    acc = MetricAccumulator("roc_auc")
    for part in range(3):
        acc.update(logits[part * 10:(part + 1) * 10], target[part * 10:(part + 1) * 10], 0.0, 1)
    assert acc.compute()["metric"] == pytest.approx(roc_auc(logits, target))
