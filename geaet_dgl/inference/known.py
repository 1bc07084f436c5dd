"""Which modules the folding knows: exactly these classes, with exactly these settings.

A module is folded only when its class is one of ours (not a subclass) and it
carries no public attribute or child module beyond the ones its folded
counterpart was written for. An option added to a layer later (a new variant,
a new switch) therefore makes the folding run that layer's own eval forward
(still exact, maybe slower) instead of silently computing the old math.
"""
from __future__ import annotations

from typing import Iterable

from torch import nn


def is_known(module: nn.Module, cls: type, attributes: Iterable[str], children: Iterable[str]) -> bool:
    """True when ``type(module) is cls`` and its public attributes and children are among the given names."""
    if type(module) is not cls:
        return False
    public = {name for name in vars(module) if not name.startswith("_")} - {"training"}
    return public <= set(attributes) and set(module._modules) <= set(children)
