"""GENConv (Li et al. 2020, DeeperGCN) as PyG's ``GENConv(d, d)`` with its defaults.

.. math::
    m_{ji} = \\mathrm{ReLU}(x_j + e_{ji}) + \\epsilon, \\qquad
    a_i = \\sum_{j \\to i} \\mathrm{softmax}_{j \\to i}(m_{ji}) \\odot m_{ji}, \\qquad
    x_i' = \\mathrm{MLP}(x_i + a_i),

with the softmax per channel over the node's incoming edges (``aggr='softmax'``, ``t = 1``),
:math:`\\epsilon = 10^{-7}` and the MLP ``Linear(d, 2d) -> BatchNorm -> ReLU -> Linear(2d, d)``
without biases. A node without incoming edges aggregates zero. The softmax is DGL's
``edge_softmax``, the sum one ``gspmm``.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from dgl.nn.functional import edge_softmax
from torch import nn


class GENConvLayer(nn.Module):
    """Generalised graph convolution with softmax aggregation; edges pass through.

    Parameters
    ----------
    feats : int, node and edge width ``d`` (PyG's default layout: no input projections).
    expansion : int, the MLP's hidden width is ``expansion * d``.
    eps : float, added to every message.

    Parameter names are PyG's (``mlp.0``, ``mlp.1`` the BatchNorm, ``mlp.4``).

    Example
    -------
    >>> g = dgl.rand_graph(6, 20)
    >>> conv = GENConvLayer(8)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8))
    >>> x.shape
    torch.Size([6, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, feats: int, expansion: int = 2, eps: float = 1e-7):
        super().__init__()
        self.eps = eps
        hidden = expansion * feats
        self.mlp = nn.Sequential(nn.Linear(feats, hidden, bias=False), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Dropout(0.0), nn.Linear(hidden, feats, bias=False))

    def reset_parameters(self) -> None:
        for module in self.mlp:
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) or None -> (N, d); ``edge_feat`` passes through (other keywords unused)."""
        if edge_feat is None:
            messages = dgl.ops.copy_u(graph, node_feat)
        else:
            messages = dgl.ops.u_add_e(graph, node_feat, edge_feat)
        messages = F.relu(messages) + self.eps  # (E, d)
        weights = edge_softmax(graph, messages)
        aggregated = dgl.ops.copy_e_sum(graph, messages * weights)
        return self.mlp(node_feat + aggregated), edge_feat
