"""GraphSAGE's mean aggregator with the node's own state kept apart (Hamilton et al., NeurIPS 2017).

.. math::
    x_i' = W_{self} x_i + W_{neigh} \\frac{1}{|N(i)|} \\sum_{j \\in N(i)} x_j + b,

with :math:`N(i)` the in-neighbours as the graph stores them (0 for a node without in-edges). The node's own
state and its neighbours' mean go through two matrices, where GCN averages them with one: Platonov et al.'s
"-sep" models and H2GCN keep them apart because on heterophilous graphs a node's neighbours are not like it.
The same function as DGL's ``SAGEConv(d, d, 'mean')`` and PyG's ``SAGEConv(d, d)`` (root weight on).
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn


class SAGELayer(nn.Module):
    """Mean-aggregation GraphSAGE convolution, (N, in_feats) -> (N, out_feats).

    Example
    -------
    >>> conv = SAGELayer(8, 8)
    >>> x, e = conv(dgl.rand_graph(5, 10), torch.randn(5, 8))
    >>> x.shape
    torch.Size([5, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int):
        super().__init__()
        self.lin_self = nn.Linear(in_feats, out_feats)
        self.lin_neigh = nn.Linear(in_feats, out_feats, bias=False)

    def reset_parameters(self) -> None:
        self.lin_self.reset_parameters()
        self.lin_neigh.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats) -> (N, out_feats); edge features pass through unchanged.

        ``layout``, ``pe_dist``, ``edge_output``: the branch calling convention's (:mod:`.branches`), unused.
        The neighbours are averaged after their linear map when that narrows them (fewer floats per edge)."""
        if self.lin_neigh.out_features < self.lin_neigh.in_features:
            neigh = dgl.ops.copy_u_mean(graph, self.lin_neigh(node_feat))
        else:
            neigh = self.lin_neigh(dgl.ops.copy_u_mean(graph, node_feat))
        return self.lin_self(node_feat) + neigh, edge_feat
