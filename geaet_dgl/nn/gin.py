"""GIN and GINE convolutions (Xu et al. 2019; Hu et al. 2020), PyG defaults (eps = 0).

GIN:  :math:`x_i' = \\mathrm{MLP}(x_i + \\sum_{j \\to i} x_j)`.
GINE: :math:`x_i' = \\mathrm{MLP}(x_i + \\sum_{j \\to i} \\mathrm{ReLU}(x_j + e_{ji}))`.

The MLP is ``Linear -> activation -> Linear``, as the reference builds it.
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
    """GIN convolution with a two-layer MLP; edge features pass through.

    Parameters
    ----------
    in_feats, out_feats : int
    activation : {'relu', 'gelu'}, between the MLP's two linear maps.

    Example
    -------
    >>> conv = GINLayer(8, 8)
    >>> x, e = conv(dgl.rand_graph(5, 10), torch.randn(5, 8))
    >>> x.shape
    torch.Size([5, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int, activation: str = "relu"):
        super().__init__()
        self.nn = _mlp(in_feats, out_feats, activation)

    def reset_parameters(self) -> None:
        for module in self.nn:
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        *,
        layout=None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats) -> (N, out_feats); the keywords as :mod:`.branches`, unused."""
        return self.nn(node_feat + dgl.ops.copy_u_sum(graph, node_feat)), edge_feat


class GINELayer(nn.Module):
    """GINE convolution: GIN whose messages add the edge features before a ReLU.

    Parameters
    ----------
    in_feats, out_feats : int
        ``in_feats`` is also the edge feature width (messages are ``x_j + e_ji``).
    activation : {'relu', 'gelu'}, between the MLP's two linear maps.

    Example
    -------
    >>> g = dgl.rand_graph(5, 10)
    >>> conv = GINELayer(8, 8)
    >>> x, e = conv(g, torch.randn(5, 8), torch.randn(10, 8))
    >>> x.shape
    torch.Size([5, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int, activation: str = "relu"):
        super().__init__()
        self.nn = _mlp(in_feats, out_feats, activation)

    reset_parameters = GINLayer.reset_parameters

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        *,
        layout=None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) -> (N, out_feats); edge features pass through."""
        if edge_feat is None:
            raise ValueError("GINELayer needs edge features")
        messages = F.relu(dgl.ops.u_add_e(graph, node_feat, edge_feat))
        aggregated = dgl.ops.copy_e_sum(graph, messages)
        return self.nn(node_feat + aggregated), edge_feat
