"""GIN and GINE convolutions (Xu et al. 2019; Hu et al. 2020), PyG defaults (eps = 0).

GIN:  :math:`x_i' = \\mathrm{MLP}(x_i + \\sum_{j \\to i} x_j)`.
GINE: :math:`x_i' = \\mathrm{MLP}(x_i + \\sum_{j \\to i} \\mathrm{ReLU}(x_j + e_{ji}))`.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .activation import make_activation


def _mlp(in_feats: int, out_feats: int, activation: str) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_feats, out_feats), make_activation(activation), nn.Linear(out_feats, out_feats))


class GINLayer(nn.Module):
    """GIN convolution with a two-layer MLP; edge features pass through."""

    applies_residual = False

    def __init__(self, in_feats: int, out_feats: int, activation: str = "relu"):
        super().__init__()
        self.nn = _mlp(in_feats, out_feats, activation)

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats) -> (N, out_feats)."""
        return self.nn(node_feat + dgl.ops.copy_u_sum(graph, node_feat)), edge_feat


class GINELayer(nn.Module):
    """GINE convolution: GIN whose messages add the edge features before a ReLU."""

    applies_residual = False

    def __init__(self, in_feats: int, out_feats: int, activation: str = "relu"):
        super().__init__()
        self.nn = _mlp(in_feats, out_feats, activation)

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) -> (N, out_feats); edge features pass through."""
        if edge_feat is None:
            raise ValueError("GINELayer needs edge features")
        messages = F.relu(dgl.ops.u_add_e(graph, node_feat, edge_feat))
        aggregated = dgl.ops.copy_e_sum(graph, messages)
        return self.nn(node_feat + aggregated), edge_feat
