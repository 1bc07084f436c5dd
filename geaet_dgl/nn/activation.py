"""Activation functions by name."""
from torch import nn

ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


def make_activation(name: str) -> nn.Module:
    """Return a fresh activation module for ``name`` ('relu' or 'gelu')."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation={name!r} is not one of {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]()
