"""FlatAdamW against torch's AdamW + clip_grad_norm_: same trajectory, state dicts interchangeable."""
import copy
import io

import pytest
import torch
from torch import nn

from geaet_dgl.training.flat_adamw import FlatAdamW


class _Net(nn.Module):
    """Parameters of several shapes, one (``unused``) that never gets a gradient."""

    def __init__(self):
        super().__init__()
        # No bias before the BatchNorm: its true gradient is zero, so its computed gradient is rounding
        # noise, and Adam turns one-ulp differences in that noise into lr-sized steps.
        self.first = nn.Linear(5, 7, bias=False)
        self.norm = nn.BatchNorm1d(7)
        self.second = nn.Linear(7, 3)
        self.scale = nn.Parameter(torch.randn(3))
        self.unused = nn.Linear(2, 2)

    def forward(self, x):
        return self.second(torch.relu(self.norm(self.first(x)))) * self.scale


def _pair(seed=0):
    torch.manual_seed(seed)
    ours = _Net()
    ref = _Net()
    ref.load_state_dict(ours.state_dict())
    return ours, ref


def _batches(n, scale, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(16, 5, generator=g) * scale, torch.randn(16, 3, generator=g)) for _ in range(n)]


def _train(model, optimizer, batches, clip=None):
    for x, y in batches:
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()


def _assert_same_parameters(a, b, rtol=1e-5, atol=1e-7):
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=rtol, atol=atol, msg=name)


@pytest.mark.parametrize("input_scale,max_norm", [(1.0, None), (50.0, 1.0), (0.01, 1.0)])
def test_matches_torch_adamw_and_clipping(input_scale, max_norm):
    ours, ref = _pair()
    batches = _batches(6, input_scale)
    _train(ours, FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=1e-2, max_grad_norm=max_norm), batches)
    _train(ref, torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=1e-2), batches, clip=max_norm)
    _assert_same_parameters(ours, ref)
    start = _pair()[0]
    assert not torch.allclose(ours.first.weight, start.first.weight)  # it trained


def test_flat_path_runs_and_reports_the_norm():
    ours, _ = _pair()
    opt = FlatAdamW(ours.parameters(), lr=1e-3, weight_decay=0.0, max_grad_norm=1e-3)
    (x, y), = _batches(1, 10.0)
    ((ours(x) - y) ** 2).mean().backward()
    expected = torch.linalg.vector_norm(torch.cat([p.grad.reshape(-1) for p in ours.parameters()
                                                   if p.grad is not None]))
    opt.step()
    assert opt._flat is not None
    assert opt.last_grad_norm.item() == pytest.approx(expected.item(), rel=1e-6)
    # Every trained parameter now lives in one buffer; the unused one is untouched and stateless.
    flat = opt._flat.param
    assert all(p.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr()
               for p in ours.parameters() if p.grad is not None)
    assert ours.unused.weight.grad is None and len(opt.state[ours.unused.weight]) == 0


def test_state_dict_round_trip_and_interchangeable_with_torch():
    ours, ref = _pair()
    batches = _batches(8, 5.0)
    opt = FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=1e-3, max_grad_norm=1.0)
    _train(ours, opt, batches[:4])
    buffer = io.BytesIO()
    torch.save({"model": ours.state_dict(), "optimizer": opt.state_dict()}, buffer)
    _train(ours, opt, batches[4:])  # the uninterrupted run

    for kind in ("flat", "torch"):
        buffer.seek(0)
        saved = torch.load(buffer)
        resumed, _ = _pair(seed=5)
        resumed.load_state_dict(saved["model"])
        if kind == "flat":
            resumed_opt = FlatAdamW(resumed.parameters(), lr=1e-2, weight_decay=1e-3, max_grad_norm=1.0)
            resumed_opt.load_state_dict(saved["optimizer"])
            _train(resumed, resumed_opt, batches[4:])
        else:
            resumed_opt = torch.optim.AdamW(resumed.parameters(), lr=1e-2, weight_decay=1e-3)
            resumed_opt.load_state_dict(saved["optimizer"])
            _train(resumed, resumed_opt, batches[4:], clip=1.0)
        _assert_same_parameters(resumed, ours)

    # And torch's AdamW state loads into FlatAdamW.
    ours, ref = _pair()
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=1e-3)
    _train(ref, ref_opt, batches[:4], clip=1.0)
    ours.load_state_dict(ref.state_dict())
    opt = FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=1e-3, max_grad_norm=1.0)
    opt.load_state_dict(copy.deepcopy(ref_opt.state_dict()))
    _train(ours, opt, batches[4:])
    _train(ref, ref_opt, batches[4:], clip=1.0)
    _assert_same_parameters(ours, ref)
    assert opt._flat is not None


def test_moments_of_different_ages_fall_back_to_torch():
    """A parameter that first gets a gradient late has a younger step count: the update stays exact."""
    ours, ref = _pair()
    batches = _batches(5, 1.0)
    opts = (FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=1e-2, max_grad_norm=1.0),
            torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=1e-2))
    for i, (x, y) in enumerate(batches):
        for model, opt in zip((ours, ref), opts):
            opt.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            if i >= 2:
                loss = loss + model.unused(x[:, :2]).pow(2).mean()
            loss.backward()
            if opt is opts[1]:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
    _assert_same_parameters(ours, ref)


def test_in_place_model_load_keeps_the_flat_buffer():
    ours, ref = _pair()
    opt = FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=0.0)
    batches = _batches(4, 1.0)
    _train(ours, opt, batches[:1])
    ref.load_state_dict(ours.state_dict())
    ours.load_state_dict(_pair(seed=3)[0].state_dict())  # copies into the views
    assert opt._flat.serves([p for p in ours.parameters() if p.grad is not None], opt.state)
    ours.load_state_dict(ref.state_dict())
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)
    ref_opt.load_state_dict(copy.deepcopy(opt.state_dict()))  # as a checkpoint would
    _train(ours, opt, batches[1:])
    _train(ref, ref_opt, batches[1:])
    _assert_same_parameters(ours, ref)


@pytest.mark.parametrize("max_norm", [None, 1.0])
def test_coupled_mode_matches_torch_adam_on_both_paths(max_norm):
    """decoupled=False is torch's Adam with L2 weight decay, on the flat path and on the torch fallback."""
    batches = _batches(6, 1.0)
    ours, ref = _pair()
    _train(ours, FlatAdamW(ours.parameters(), lr=1e-2, weight_decay=0.1, max_grad_norm=max_norm, decoupled=False),
           batches)
    _train(ref, torch.optim.Adam(ref.parameters(), lr=1e-2, weight_decay=0.1), batches, clip=max_norm)
    _assert_same_parameters(ours, ref)
    decoupled, _ = _pair()
    _train(decoupled, FlatAdamW(decoupled.parameters(), lr=1e-2, weight_decay=0.1, max_grad_norm=max_norm), batches)
    assert not torch.allclose(decoupled.first.weight, ours.first.weight, atol=1e-4)  # the two modes differ
    # The fallback (two parameter groups) takes the same coupled step and leaves .grad as computed.
    fallback, ref2 = _pair()
    groups = [{"params": [fallback.first.weight]}, {"params": [p for n, p in fallback.named_parameters()
                                                             if n != "first.weight"]}]
    opt = FlatAdamW(groups, lr=1e-2, weight_decay=0.1, max_grad_norm=max_norm, decoupled=False)
    _train(fallback, opt, batches)
    _assert_same_parameters(fallback, ours)
    grad_before = fallback.first.weight.grad.clone()
    opt.step()
    torch.testing.assert_close(fallback.first.weight.grad, grad_before)
