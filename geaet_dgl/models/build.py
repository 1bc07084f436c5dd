"""``build_model``: the network a :class:`~geaet_dgl.config.ModelConfig` describes."""
from __future__ import annotations

from torch import nn

from ..config import ModelConfig
from .geaet import GEAET
from .hetero_geaet import HeteroGEAET


def build_model(config: ModelConfig) -> nn.Module:
    """A :class:`~.geaet.GEAET`, or a :class:`~.hetero_geaet.HeteroGEAET` when ``config.hetero`` names node types."""
    return HeteroGEAET(config) if config.hetero.ntypes else GEAET(config)
