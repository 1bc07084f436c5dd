"""Losses against hand computations, including GraphGPS' weighted cross-entropy."""
import math

import pytest
import torch

from geaet_dgl.training.losses import LOSSES, bce, cross_entropy, get_loss, l1, weighted_cross_entropy

t = torch.tensor


def _log_softmax_rows(rows):
    return [[x - math.log(sum(math.exp(v) for v in row)) for x in row] for row in rows]


def test_cross_entropy_multiclass_by_hand():
    logits = [[2.0, 0.0, -1.0], [0.5, 0.5, 0.0]]
    logp = _log_softmax_rows(logits)
    expected = -(logp[0][0] + logp[1][2]) / 2
    assert cross_entropy(t(logits), t([0, 2])).item() == pytest.approx(expected, rel=1e-6)


def test_cross_entropy_single_logit_is_binary():
    z, y = [1.5, -0.5], [1, 0]
    expected = (math.log1p(math.exp(-1.5)) + math.log1p(math.exp(-0.5))) / 2
    assert cross_entropy(t([[z[0]], [z[1]]]), t(y)).item() == pytest.approx(expected, rel=1e-6)


def test_weighted_cross_entropy_multiclass_by_hand_with_absent_class():
    # Targets [0, 0, 1] over 3 classes: V=3, counts [2, 1, 0] -> weights [1/3, 2/3, 0] (class 2 absent).
    logits = [[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
    logp = _log_softmax_rows(logits)
    w = [1 / 3, 2 / 3, 0.0]
    expected = -(w[0] * logp[0][0] + w[0] * logp[1][0] + w[1] * logp[2][1]) / (w[0] + w[0] + w[1])
    assert weighted_cross_entropy(t(logits), t([0, 0, 1])).item() == pytest.approx(expected, rel=1e-6)


def test_weighted_cross_entropy_binary_single_logit_by_hand():
    # PATTERN: one logit. Targets [1, 0, 0, 0]: counts [3, 1] -> w = [1/4, 3/4]; plain mean of weighted BCE.
    z = [0.3, -1.0, 2.0, 0.0]
    y = [1, 0, 0, 0]
    w = [1 / 4, 3 / 4]
    per_item = [math.log1p(math.exp(-zi)) if yi == 1 else math.log1p(math.exp(zi)) for zi, yi in zip(z, y)]
    expected = sum(w[yi] * b for yi, b in zip(y, per_item)) / 4
    assert weighted_cross_entropy(t(z).unsqueeze(1), t(y)).item() == pytest.approx(expected, rel=1e-6)


def test_l1_by_hand():
    assert l1(t([[1.0, 2.0]]), t([[0.0, 4.0]])).item() == pytest.approx(1.5)


def test_bce_ignores_nan_targets():
    nan = float("nan")
    z = t([[0.0, 3.0], [1.0, -2.0]])
    y = t([[1.0, nan], [0.0, nan]])
    expected = (math.log(2.0) + math.log1p(math.exp(1.0))) / 2
    assert bce(z, y).item() == pytest.approx(expected, rel=1e-6)


def test_every_configured_loss_has_a_function():
    from geaet_dgl.config import LOSS_CHOICES

    assert set(LOSSES) == set(LOSS_CHOICES)
    with pytest.raises(ValueError, match="not one of"):
        get_loss("hinge")


@pytest.mark.parametrize("num_logits", [1, 3])
def test_weighted_cross_entropy_follows_the_logits_dtype(num_logits):
    """float64 logits (e.g. gradcheck) give a float64 loss equal to the float32 one."""
    gen = torch.Generator().manual_seed(0)
    target = torch.tensor([0, 1, 1, 0, 1]) if num_logits == 1 else torch.tensor([0, 1, 1, 2, 2])
    logits = torch.randn(5, num_logits, generator=gen, dtype=torch.float64)
    loss64 = weighted_cross_entropy(logits, target)
    assert loss64.dtype == torch.float64
    assert torch.allclose(loss64.float(), weighted_cross_entropy(logits.float(), target), atol=1e-6)
    assert torch.autograd.gradcheck(lambda x: weighted_cross_entropy(x, target), (logits.requires_grad_(),))
