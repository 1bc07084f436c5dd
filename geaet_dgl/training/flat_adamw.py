"""AdamW, or Adam with coupled L2 (with optional gradient-norm clipping), whose update runs over one flat buffer.

A GEAET model has ~200 small parameter tensors. ``torch.optim.AdamW`` updates
them with ~10 kernels per tensor (its ``foreach`` form loops over the tensors
on CPU), and ``clip_grad_norm_`` adds a norm and a multiply per tensor: ~2,000
kernel calls, 4-5 ms per step on a 2-core CPU whatever the batch size.
:class:`FlatAdamW` keeps the parameters as views into one contiguous buffer
(and its two moment estimates likewise), concatenates the gradients once, and
does the clipping and the update in about ten kernels over that buffer.

The arithmetic is torch's AdamW, element for element (same operations, same
order), so a run's trajectory matches ``AdamW`` followed by
``clip_grad_norm_`` up to the rounding of the global norm. The state dict has
AdamW's layout (per-parameter ``step``, ``exp_avg``, ``exp_avg_sq``), so
checkpoints load into either optimizer.

Whenever the fast path's preconditions fail (several parameter groups,
amsgrad, a closure, parameters on different devices or dtypes, moment
estimates of unequal age) the step falls back to torch's AdamW, which is
always correct.

Example
-------
>>> model = torch.nn.Linear(3, 2)
>>> opt = FlatAdamW(model.parameters(), lr=1e-3, weight_decay=1e-5, max_grad_norm=1.0)
>>> model(torch.randn(4, 3)).sum().backward()
>>> opt.step()
"""
from __future__ import annotations

import math
from typing import Iterable, List, Optional

import torch
from torch import nn
from torch.optim import AdamW


class FlatAdamW(AdamW):
    """``torch.optim.AdamW`` (default betas and eps) plus clipping, updated as one flat tensor.

    Parameters
    ----------
    params : iterable of parameters (one group).
    lr, weight_decay : float
    decoupled : bool
        True (default): AdamW's decoupled weight decay, ``p -= lr * wd * p``.
        False: Adam's coupled L2 penalty, ``g += wd * p`` after clipping and
        before the moments (``torch.optim.Adam(weight_decay=wd)``, as GCN and
        GAT train): the penalty is normalised with the gradient, so weights
        of rarely active inputs (sparse bag-of-words) shrink at about ``lr``
        per step.
    max_grad_norm : float or None
        Clip the global L2 norm of the gradients to this value before the
        update, as ``torch.nn.utils.clip_grad_norm_`` does; None: no clipping.
        The clipping applies to the optimizer's copy of the gradients: the
        parameters' ``.grad`` keep the raw values.

    Attributes
    ----------
    last_grad_norm : 0-dim tensor or None, the global gradient norm before clipping
        (set by every step when ``max_grad_norm`` is given).
    """

    def __init__(self, params: Iterable[nn.Parameter], lr: float, weight_decay: float,
                 max_grad_norm: Optional[float] = None, decoupled: bool = True):
        super().__init__(params, lr=lr, weight_decay=weight_decay, foreach=True)
        self.max_grad_norm = max_grad_norm
        self.decoupled = decoupled
        self.last_grad_norm: Optional[torch.Tensor] = None
        self._flat: Optional[_FlatState] = None

    @torch.no_grad()
    def step(self, closure=None):
        if closure is None and len(self.param_groups) == 1:
            group = self.param_groups[0]
            with_grad = [p for p in group["params"] if p.grad is not None]
            if with_grad and self._ready(group, with_grad):
                self._flat_step(group)
                return None
        if self._flat is not None:  # torch's step increments each parameter's own step tensor
            self._flat.release(self.state)
            self._flat = None
        if self.max_grad_norm is not None:
            params = [p for g in self.param_groups for p in g["params"] if p.grad is not None]
            self.last_grad_norm = torch.nn.utils.clip_grad_norm_(params, self.max_grad_norm, foreach=True)
        if self.decoupled:
            return super().step(closure)
        return self._coupled_step(closure)

    def _coupled_step(self, closure):
        """Adam's step through AdamW's: the L2 term added to each gradient, AdamW's decay set to 0 meanwhile."""
        raw = {}
        decays = [group["weight_decay"] for group in self.param_groups]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and group["weight_decay"] != 0:
                    raw[p] = p.grad
                    p.grad = p.grad.add(p.detach(), alpha=group["weight_decay"])
            group["weight_decay"] = 0.0
        try:
            return super().step(closure)
        finally:
            for group, decay in zip(self.param_groups, decays):
                group["weight_decay"] = decay
            for p, grad in raw.items():
                p.grad = grad

    def state_dict(self):
        """AdamW's state dict; each parameter gets its own ``step`` tensor (ours share one)."""
        state_dict = super().state_dict()
        for param_state in state_dict["state"].values():
            if "step" in param_state:
                param_state["step"] = param_state["step"].clone()
        return state_dict

    def load_state_dict(self, state_dict) -> None:
        super().load_state_dict(state_dict)
        self._flat = None  # loaded moments are fresh tensors: flatten again at the next step

    # -- the flat path -------------------------------------------------------------------------------------------

    def _ready(self, group, with_grad: List[torch.Tensor]) -> bool:
        """Whether the flat path can run for these parameters (flattening them if needed)."""
        if group["amsgrad"] or group["maximize"] or group["capturable"] or group["differentiable"]:
            return False
        if self._flat is not None and self._flat.serves(with_grad, self.state):
            return True
        first = with_grad[0]
        if any(p.is_sparse or p.grad.is_sparse or p.dtype != first.dtype or p.device != first.device
               for p in with_grad):
            return False
        steps = {float(self.state[p]["step"]) if self.state[p] else 0.0 for p in with_grad}
        if len(steps) != 1:
            return False  # moments of different ages need per-tensor bias corrections
        self._flat = _FlatState(with_grad, self.state, steps.pop())
        return True

    def _flat_step(self, group) -> None:
        flat = self._flat
        grad = torch.cat([p.grad.reshape(-1) for p in flat.params])
        if self.max_grad_norm is not None:
            # clip_grad_norm_: coefficient max_norm / (norm + 1e-6), capped at 1.
            self.last_grad_norm = torch.linalg.vector_norm(grad, 2.0)
            grad.mul_(torch.clamp(self.max_grad_norm / (self.last_grad_norm + 1e-6), max=1.0))
        lr, weight_decay, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        # Torch's multi-tensor AdamW (non-capturable), on one tensor; Adam's coupled L2 when not decoupled.
        flat.step.add_(1.0)
        if weight_decay != 0 and self.decoupled:
            flat.param.mul_(1 - lr * weight_decay)
        elif weight_decay != 0:
            grad.add_(flat.param, alpha=weight_decay)
        flat.exp_avg.lerp_(grad, 1 - beta1)
        flat.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        step = flat.step.item()
        step_size = (lr / (1 - beta1 ** step)) * -1
        denom = torch.sqrt(flat.exp_avg_sq).div_(math.sqrt(1 - beta2 ** step)).add_(eps)
        flat.param.addcdiv_(flat.exp_avg, denom, value=step_size)


class _FlatState:
    """Parameters and their AdamW moments rebound as views into three contiguous buffers.

    ``param``, ``exp_avg``, ``exp_avg_sq`` : (P,) buffers over the ``params``
    in order; ``step`` : one 0-dim tensor that every parameter's state shares.
    """

    def __init__(self, params: List[nn.Parameter], state, step: float):
        self.params = list(params)
        self.param = torch.cat([p.detach().reshape(-1) for p in self.params])
        self.exp_avg = torch.cat([_moment(state[p], "exp_avg", p) for p in self.params])
        self.exp_avg_sq = torch.cat([_moment(state[p], "exp_avg_sq", p) for p in self.params])
        self.step = torch.tensor(step, dtype=torch.float32)
        offset = 0
        for p in self.params:
            n = p.numel()
            p.data = self.param[offset:offset + n].view_as(p)
            state[p]["step"] = self.step
            state[p]["exp_avg"] = self.exp_avg[offset:offset + n].view_as(p)
            state[p]["exp_avg_sq"] = self.exp_avg_sq[offset:offset + n].view_as(p)
            offset += n
        self._pointers = [p.data_ptr() for p in self.params]

    def release(self, state) -> None:
        """Give every parameter its own step counter again (the views stay valid as plain tensors)."""
        for p in self.params:
            if state[p].get("step") is self.step:
                state[p]["step"] = self.step.clone()

    def serves(self, params: List[nn.Parameter], state) -> bool:
        """True while these are exactly our parameters, still in our buffer, with our shared step.

        Moments are only replaced together with the step (``load_state_dict``
        resets the flat state; torch's step gets :meth:`release`), so the
        shared step stands for them.
        """
        if len(params) != len(self.params) or any(a is not b for a, b in zip(params, self.params)):
            return False
        if any(state[p].get("step") is not self.step for p in self.params):
            return False
        return [p.data_ptr() for p in self.params] == self._pointers


def _moment(param_state, key: str, param: torch.Tensor) -> torch.Tensor:
    """A parameter's existing moment estimate, flattened, or zeros before its first step."""
    if key in param_state:
        return param_state[key].detach().reshape(-1).to(param.dtype)
    return torch.zeros(param.numel(), dtype=param.dtype, device=param.device)
