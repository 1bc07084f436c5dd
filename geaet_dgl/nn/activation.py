"""Activation functions by name."""
import torch
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


def make_activation(name: str, inplace: bool = False) -> nn.Module:
    """Return a fresh activation module for ``name`` ('relu' or 'gelu').

    ``inplace=True`` makes ReLU overwrite its input (for inputs nothing else
    reads, e.g. a BatchNorm output: one tensor less to allocate); GELU has no
    in-place form and ignores it.
    """
    if name not in ACTIVATIONS:
        raise ValueError(f"activation={name!r} is not one of {', '.join(ACTIVATIONS)}")
    return nn.ReLU(inplace=True) if name == "relu" and inplace else ACTIVATIONS[name]()


def activation_(x: torch.Tensor, module: nn.Module) -> torch.Tensor:
    """``module`` (ReLU or GELU) applied to ``x``, in place for ReLU: for tensors nothing else reads
    (the eval-mode fast paths, which keep no autograd graph)."""
    if isinstance(module, nn.ReLU):
        return x.relu_()
    return module(x)
