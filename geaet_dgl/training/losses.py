"""Training losses, as graphgym's ``compute_loss`` and the reference's custom losses.

Every loss takes the model output and the targets and returns a scalar. As in
graphgym, a trailing dimension of size 1 is squeezed from both first, so a
single-logit binary head (N, 1) is read as (N,).

Example
-------
>>> import torch
>>> logits, target = torch.tensor([[2.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 1])
>>> round(cross_entropy(logits, target).item(), 4)
0.1269
"""
from __future__ import annotations

from typing import Callable, Dict

import torch
import torch.nn.functional as F


def _squeeze(output: torch.Tensor, target: torch.Tensor):
    output = output.squeeze(-1) if output.ndim > 1 else output
    target = target.squeeze(-1) if target.ndim > 1 else target
    return output, target


def cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Softmax cross-entropy for (N, C) logits and (N,) int labels;
    binary cross-entropy with logits for a single logit (N,) and (N,) {0, 1}."""
    output, target = _squeeze(output, target)
    if output.ndim > 1 and target.ndim == 1:
        return F.nll_loss(F.log_softmax(output, dim=-1), target)
    return F.binary_cross_entropy_with_logits(output, target.float())


def weighted_cross_entropy(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy with class weights from the batch's label counts (GraphGPS).

    With V targets of which n_c have class c, class c weighs
    :math:`w_c = (V - n_c) / V` (0 for a class absent from the batch). For
    (N, C) logits this is ``nll_loss(log_softmax, weight=w)`` (a mean
    normalised by the summed weights); for a single logit (N,) it is
    ``binary_cross_entropy_with_logits(weight=w[target])`` (a plain mean).

    Parameters
    ----------
    output : (N, C) or (N,) / (N, 1) float logits
    target : (N,) int64 labels
    """
    output, target = _squeeze(output, target)
    num_classes = output.shape[1] if output.ndim > 1 else 2
    total = target.shape[0]
    counts = torch.bincount(target, minlength=num_classes)
    weight = (total - counts).float() / total * (counts > 0).float()
    if output.ndim > 1:
        return F.nll_loss(F.log_softmax(output, dim=-1), target, weight=weight)
    return F.binary_cross_entropy_with_logits(output, target.float(), weight=weight[target])


def l1(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean absolute error: (N, T) and (N, T) -> scalar (Peptides-Struct, ZINC)."""
    output, target = _squeeze(output, target)
    return F.l1_loss(output, target.to(output.dtype))


def bce(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Multi-label binary cross-entropy with logits, NaN targets left out (Peptides-Func).

    Parameters
    ----------
    output : (N, T) float logits
    target : (N, T) float in {0, 1}, NaN where unlabelled
    """
    output, target = _squeeze(output, target)
    labelled = ~torch.isnan(target)
    return F.binary_cross_entropy_with_logits(output[labelled], target[labelled].float())


LOSSES: Dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "cross_entropy": cross_entropy,
    "weighted_cross_entropy": weighted_cross_entropy,
    "l1": l1,
    "bce": bce,
}


def get_loss(name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    if name not in LOSSES:
        raise ValueError(f"loss={name!r} is not one of {', '.join(LOSSES)}")
    return LOSSES[name]
