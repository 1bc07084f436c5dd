"""Optimiser, learning-rate schedule and gradient clipping, as the reference trains.

AdamW with the preset's learning rate and weight decay; GraphGPS'
``cosine_with_warmup`` schedule (Hugging Face's, stepped once per EPOCH after
validation, as ``custom_train.py`` does); gradient norm clipped at 1.0
(graphgym's ``clip_grad_norm_value``), inside the optimizer's step
(:class:`~geaet_dgl.training.flat_adamw.FlatAdamW`).

Example
-------
>>> [cosine_with_warmup_factor(e, warmup_epochs=2, epochs=4) for e in range(4)]
[1e-06, 0.5, 1.0, 0.5]
"""
from __future__ import annotations

import math
from typing import Iterable, Optional

import torch
from torch import nn
from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from .flat_adamw import FlatAdamW


def cosine_with_warmup_factor(epoch: int, warmup_epochs: int, epochs: int, num_cycles: float = 0.5) -> float:
    """Learning-rate multiplier for (0-based) ``epoch``.

    .. math::
        f(e) = \\max(10^{-6}, e / W)  \\quad (e < W), \\qquad
        f(e) = \\max(0, \\tfrac12 (1 + \\cos(2 \\pi c \\, \\tfrac{e - W}{\\max(1, T - W)})))  \\quad (e \\ge W)

    with W = ``warmup_epochs``, T = ``epochs`` and c = ``num_cycles``; the
    first epoch therefore runs at 1e-6 times the base rate when W > 0.
    """
    if epoch < warmup_epochs:
        return warmup_factor(epoch, warmup_epochs)
    progress = (epoch - warmup_epochs) / max(1, epochs - warmup_epochs)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * num_cycles * 2.0 * progress)))


def warmup_factor(epoch: int, warmup_epochs: int) -> float:
    """The linear warm-up every schedule shares: :math:`\\max(10^{-6}, e / W)` for epochs ``e < W``."""
    return max(1e-6, epoch / max(1, warmup_epochs))


def linear_with_warmup_factor(epoch: int, warmup_epochs: int, epochs: int) -> float:
    """GraphGPS's ``linear_with_warmup``: the warm-up (:func:`warmup_factor`), then
    :math:`\\max(0, (T - e) / \\max(1, T - W))`."""
    if epoch < warmup_epochs:
        return warmup_factor(epoch, warmup_epochs)
    return max(0.0, (epochs - epoch) / max(1, epochs - warmup_epochs))


def constant_with_warmup_factor(epoch: int, warmup_epochs: int, epochs: int) -> float:
    """The warm-up (:func:`warmup_factor`), then the base rate unchanged (graphgym's ``none``;
    GCN's and GAT's training on citation graphs)."""
    if epoch < warmup_epochs:
        return warmup_factor(epoch, warmup_epochs)
    return 1.0


#: ``train.schedule`` -> the learning-rate factor of an epoch.
SCHEDULES = {"cosine": cosine_with_warmup_factor, "linear": linear_with_warmup_factor,
             "constant": constant_with_warmup_factor}


def build_optimizer(parameters: Iterable[nn.Parameter], lr: float, weight_decay: float,
                    max_grad_norm: Optional[float] = None, kind: str = "adamw") -> FlatAdamW:
    """AdamW with torch's default betas and eps, as graphgym's ``adamW``, clipping at ``max_grad_norm``;
    ``kind='adam'``: Adam's coupled L2 instead of the decoupled decay (graphgym's ``adam``).

    The step clips the global gradient norm (graphgym's ``clip_grad_norm_``)
    and updates the model's ~200 small tensors as one flat buffer
    (:class:`~geaet_dgl.training.flat_adamw.FlatAdamW`): same update, a few
    kernels instead of ~2,000.
    """
    if kind not in ("adamw", "adam"):
        raise ValueError(f"optimizer kind={kind!r} is not adamw or adam")
    return FlatAdamW(parameters, lr=lr, weight_decay=weight_decay, max_grad_norm=max_grad_norm,
                     decoupled=kind == "adamw")


def build_scheduler(optimizer: Optimizer, warmup_epochs: int, epochs: int, schedule: str = "cosine") -> LambdaLR:
    """Cosine (or ``schedule='linear'``) decay after a linear warm-up; call ``step()`` once at the end of every
    epoch."""
    factor = SCHEDULES[schedule]
    return LambdaLR(optimizer, lambda epoch: factor(epoch, warmup_epochs, epochs))


def clip_gradients(parameters: Iterable[nn.Parameter], max_norm: Optional[float]) -> None:
    """Clip the global gradient norm to ``max_norm`` (no-op when None)."""
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_(parameters, max_norm, foreach=True)
