"""What the exported modules share: the one error type, activations by name, frozen copies, BatchNorm maps."""
from __future__ import annotations

import copy
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from ..nn.activation import ACTIVATIONS
from ..nn.norm import batchnorm_affine


class ExportError(ConfigError):
    """A part of the trained model that the exporter does not cover: one line naming the part and the reason
    (the command line prints it as ``error: ...``)."""


def activation_name(module: nn.Module) -> str:
    """'relu' or 'gelu' for the library's activation modules."""
    for name, cls in ACTIVATIONS.items():
        if type(module) is cls:
            return name
    raise ExportError(f"cannot export the activation {type(module).__name__}: only relu and gelu are exported")


def activate(x: torch.Tensor, relu: bool) -> torch.Tensor:
    """ReLU or GELU (exact, as ``nn.GELU()``)."""
    return F.relu(x) if relu else F.gelu(x)


def sigmoid(x: torch.Tensor) -> torch.Tensor:
    """:math:`1 / (1 + e^{-x})` written out. onnxruntime's ``Sigmoid`` kernel is an approximation whose absolute
    error (~1e-7) is all there is of a gate far below 0.5; GatedGCN divides sums of such gates by their sum
    plus 1e-6, which turned that error into differences of order 1 in the node update (measured on the MNIST
    preset). ``Exp`` keeps its relative precision down to the smallest gates."""
    return torch.reciprocal(1.0 + torch.exp(-x))


def frozen(module: nn.Module) -> nn.Module:
    """An eval-mode copy of ``module`` with its parameters as fixed tensors (no autograd)."""
    clone = copy.deepcopy(module).eval()
    for parameter in clone.parameters():
        parameter.requires_grad_(False)
    return clone


def affine_of(norm: nn.Module, what: str) -> Tuple[torch.Tensor, torch.Tensor]:
    """A BatchNorm's eval-mode ``(scale, shift)``, refused where it has no running statistics."""
    affine = batchnorm_affine(norm)
    if affine is None:
        raise ExportError(f"cannot export {what}: a BatchNorm without running statistics normalises with each batch's "
                                "statistics; the exporter folds running statistics only")
    return affine
