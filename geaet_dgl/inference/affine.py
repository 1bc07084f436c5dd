"""Eval-mode normalisations as per-channel affine maps, and their folding into linear maps.

In eval mode a BatchNorm with running statistics is the affine map

.. math::
    \\mathrm{BN}(x) = s \\odot x + t, \\qquad
    s = \\frac{\\gamma}{\\sqrt{\\sigma^2_{run} + \\epsilon}}, \\quad t = \\beta - s \\odot \\mu_{run},

so a BatchNorm after a linear map ``W x + b`` is the linear map ``(s W) x + (s b + t)``,
and one before it, ``W (s x + t) + b``, is ``(W s) x + (W t + b)``. Exact up to float rounding.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import nn

Affine = Tuple[torch.Tensor, torch.Tensor]


def batchnorm_affine(norm: nn.Module) -> Optional[Affine]:
    """``(scale, shift)``, each (C,), of a BatchNorm's eval-mode map; None when it has no running statistics.

    Accepts ``nn.BatchNorm1d`` and ``nn.SyncBatchNorm`` (the distributed trainer's); anything else,
    or a BatchNorm without running statistics (it would normalise with the batch's), gives None.
    """
    if not isinstance(norm, nn.modules.batchnorm._BatchNorm) or norm.running_mean is None \
            or norm.running_var is None:
        return None
    with torch.no_grad():
        scale = torch.rsqrt(norm.running_var + norm.eps)
        if norm.weight is not None:
            scale = scale * norm.weight
        shift = -norm.running_mean * scale
        if norm.bias is not None:
            shift = shift + norm.bias
    return scale.detach(), shift.detach()


def scale_rows(weight: torch.Tensor, bias: Optional[torch.Tensor], affine: Optional[Affine]
               ) -> Tuple[torch.Tensor, torch.Tensor]:
    """``affine`` applied after ``x -> W x + b``: (out, in) weight and (out,) bias of ``s (W x + b) + t``.

    With ``affine`` None the map itself (a zero bias when ``bias`` is None). Fresh tensors, never views of the
    parameters, without autograd history.
    """
    with torch.no_grad():
        bias = bias if bias is not None else weight.new_zeros(weight.shape[0])
        if affine is None:
            return weight.detach().clone(), bias.detach().clone()
        scale, shift = affine
        return (weight * scale[:, None]).detach(), (bias * scale + shift).detach()


def scale_columns(weight: torch.Tensor, bias: Optional[torch.Tensor], affine: Affine
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    """``affine`` applied before ``x -> W x + b``: weight and bias of ``W (s x + t) + b``."""
    with torch.no_grad():
        scale, shift = affine
        bias = bias if bias is not None else weight.new_zeros(weight.shape[0])
        return (weight * scale[None, :]).detach(), (bias + weight @ shift).detach()
