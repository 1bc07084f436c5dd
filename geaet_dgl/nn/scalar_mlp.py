"""Exact, memory-light evaluation of a ReLU MLP on a scalar input.

The EquivStableLapPE gate of GatedGCN applies ``Linear(1, H) -> ReLU -> Linear(H, 1)``
to one scalar per edge. Evaluated directly this materialises two (E, H) tensors
forward and more backward. As a function of the scalar ``r`` it is piecewise
linear with at most H breakpoints ``-b1_k / w1_k``:

.. math::
    s(r) = b_2 + \\sum_k w_{2,k}\\, \\mathrm{ReLU}(w_{1,k} r + b_{1,k}) = A_p r + C_p + b_2,

where ``p`` is the interval of ``r`` among the sorted breakpoints and ``A_p``,
``C_p`` sum the active units. The backward pass needs only per-interval sums
of the incoming gradient, so nothing of size (E, H) is ever built.
"""
from __future__ import annotations

import torch


def relu_interval_tables(w1: torch.Tensor, b1: torch.Tensor):
    """Where ``relu(w1 * r + b1)`` changes slope as a function of the scalar ``r``.

    Returns the sorted breakpoints (M,) ``-b1_k / w1_k`` and the (M+1, H) 0/1 activity of each
    unit on each of the M+1 intervals they bound (what :func:`torch.searchsorted` indexes).
    """
    nonzero = w1 != 0
    breakpoints = torch.sort(-b1[nonzero] / w1[nonzero]).values
    if breakpoints.numel() == 0:
        probes = breakpoints.new_zeros(1)
    else:
        inner = (breakpoints[1:] + breakpoints[:-1]) / 2
        probes = torch.cat([breakpoints[:1] - 1, inner, breakpoints[-1:] + 1])
    active = (probes[:, None] * w1[None, :] + b1[None, :]) > 0  # (M+1, H)
    return breakpoints, active.to(w1.dtype)


def relu_mlp_pieces(w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor):
    """The pieces of ``r -> w2 . relu(w1 r + b1)``: sorted (M,) breakpoints, (M+1, H) unit activity, and the
    (M+1,) slope and intercept on each interval (the second layer's bias not included)."""
    breakpoints, active = relu_interval_tables(w1, b1)
    return breakpoints, active, active @ (w2 * w1), active @ (w2 * b1)


class _ScalarReluMLP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, r, w1, b1, w2, b2):  # r (E, 1); w1, b1, w2 (H,); b2 (1,)
        breakpoints, active, slope, intercept = relu_mlp_pieces(w1, b1, w2)
        interval = torch.searchsorted(breakpoints, r.reshape(-1).contiguous())  # (E,)
        out = slope[interval].unsqueeze(-1) * r + intercept[interval].unsqueeze(-1) + b2
        ctx.save_for_backward(r, w1, b1, w2, active, slope, interval)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        r, w1, b1, w2, active, slope, interval = ctx.saved_tensors
        g = grad_out.reshape(-1)
        num_intervals = active.shape[0]
        g_sum = torch.zeros(num_intervals, dtype=g.dtype, device=g.device).index_add_(0, interval, g)
        gr_sum = torch.zeros_like(g_sum).index_add_(0, interval, g * r.reshape(-1))
        s0 = active.T @ g_sum  # per unit: sum of g over the edges where it is active
        s1 = active.T @ gr_sum  # per unit: sum of g * r over the same edges
        grad_r = grad_out * slope[interval].unsqueeze(-1)
        return grad_r, w2 * s1, w2 * s0, w1 * s1 + b1 * s0, g.sum().reshape(1)


def scalar_relu_mlp(r: torch.Tensor, first: torch.nn.Linear, second: torch.nn.Linear) -> torch.Tensor:
    """``second(relu(first(r)))`` for ``first = Linear(1, H)``, ``second = Linear(H, 1)``.

    Parameters
    ----------
    r : (E, 1)

    Returns
    -------
    (E, 1), equal (up to float rounding) to the direct evaluation, with the same gradients.
    """
    return _ScalarReluMLP.apply(r, first.weight.reshape(-1), first.bias, second.weight.reshape(-1), second.bias)


class PiecewiseScalarMLP(torch.nn.Module):
    """``second(relu(first(r)))`` on (E, 1) scalars with its pieces computed once: an eval-mode copy, no autograd.

    What :func:`scalar_relu_mlp` computes, for weights that no longer change (the folded inference model):
    the per-interval slopes and intercepts (:func:`relu_mlp_pieces`) are built here, not in every forward.
    """

    def __init__(self, first: torch.nn.Linear, second: torch.nn.Linear):
        super().__init__()
        with torch.no_grad():
            breakpoints, _, slope, intercept = relu_mlp_pieces(first.weight.reshape(-1), first.bias,
                                                               second.weight.reshape(-1))
        self.breakpoints, self.slope = breakpoints.detach(), slope.detach()
        self.intercept = (intercept + second.bias).detach()

    def forward(self, r: torch.Tensor) -> torch.Tensor:
        """(E, 1) -> (E, 1)."""
        flat = r.reshape(-1)
        interval = torch.searchsorted(self.breakpoints, flat)
        return torch.addcmul(self.intercept[interval], self.slope[interval], flat).unsqueeze(-1)
