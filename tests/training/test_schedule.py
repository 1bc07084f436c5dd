"""AdamW + cosine-with-warm-up stepped per epoch: learning rates against the closed form."""
import math

import pytest
import torch

from geaet_dgl.training.schedule import build_optimizer, build_scheduler, clip_gradients


def _closed_form(epoch, warmup, total, base):
    if epoch < warmup:
        return base * max(1e-6, epoch / warmup)
    return base * 0.5 * (1 + math.cos(math.pi * (epoch - warmup) / (total - warmup)))


@pytest.mark.parametrize("warmup,total", [(5, 20), (0, 7), (3, 3)])
def test_learning_rate_per_epoch_matches_closed_form(warmup, total):
    model = torch.nn.Linear(2, 1)
    optimizer = build_optimizer(model.parameters(), lr=1e-3, weight_decay=1e-5)
    scheduler = build_scheduler(optimizer, warmup_epochs=warmup, epochs=total)
    seen = []
    for _ in range(total):
        seen.append(optimizer.param_groups[0]["lr"])  # the rate used during this epoch
        optimizer.step()
        scheduler.step()  # once per epoch, after validation
    expected = [_closed_form(e, warmup, max(total, warmup + 1), 1e-3) for e in range(total)]
    assert seen == pytest.approx(expected, rel=1e-12, abs=1e-18)


@pytest.mark.parametrize("warmup", [0, 3])
def test_constant_schedule_keeps_the_base_rate_after_its_warmup(warmup):
    optimizer = build_optimizer(torch.nn.Linear(2, 1).parameters(), lr=1e-2, weight_decay=0.0)
    scheduler = build_scheduler(optimizer, warmup_epochs=warmup, epochs=8, schedule="constant")
    seen = []
    for _ in range(8):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    expected = [1e-2 * max(1e-6, e / warmup) if e < warmup else 1e-2 for e in range(8)]
    assert seen == pytest.approx(expected, rel=1e-12, abs=1e-18)


def test_first_warmup_epoch_runs_at_one_millionth():
    optimizer = build_optimizer(torch.nn.Linear(2, 1).parameters(), lr=1e-3, weight_decay=0.0)
    build_scheduler(optimizer, warmup_epochs=5, epochs=10)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(1e-9)


def test_optimizer_is_adamw_with_settings():
    optimizer = build_optimizer(torch.nn.Linear(2, 1).parameters(), lr=5e-4, weight_decay=1e-5)
    assert isinstance(optimizer, torch.optim.AdamW)
    assert optimizer.max_grad_norm is None
    assert optimizer.defaults["weight_decay"] == 1e-5 and optimizer.defaults["betas"] == (0.9, 0.999)


def test_clip_gradients_to_unit_norm():
    model = torch.nn.Linear(3, 1)
    (model(torch.full((1, 3), 100.0)).sum()).backward()
    clip_gradients(model.parameters(), 1.0)
    norm = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
    assert norm.item() == pytest.approx(1.0, rel=1e-5)
    before = [p.grad.clone() for p in model.parameters()]
    clip_gradients(model.parameters(), None)
    assert all(torch.equal(a, p.grad) for a, p in zip(before, model.parameters()))
