"""GatedGCN with typed weights on the homogeneous view of a heterograph (the ``typed`` local MPNN).

As :class:`~.gated_gcn.GatedGCNLayer`, on all edges of the view at once, with
the weights of each edge's relation :math:`r` and each node's type :math:`t`:

.. math::
    \\hat e_{ij} = D_r x_i + E_r x_j + C_r e_{ij}, \\qquad \\sigma_{ij} = \\mathrm{sigmoid}(\\hat e_{ij}), \\\\
    \\hat x_i = A_{t(i)} x_i + \\frac{\\sum_{j \\to i} \\sigma_{ij} \\odot B_r x_j}{\\sum_{j \\to i} \\sigma_{ij} + 10^{-6}},

the sums over every incoming edge whatever its relation, then BatchNorm,
activation, dropout and the residual on nodes and edges, as GatedGCN. The
typed products are DGL's ``segment_mm`` on rows sorted by type (what
``TypedLinear`` does): one call per weight for all relations, against
:class:`~.hetero_mpnn.RelationMPNN`'s one GatedGCN per relation. The two are
different functions (here the gate normalises over all incoming edges,
there within each relation, then the relations are averaged); both equal
GatedGCN on one node and one edge type.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .activation import make_activation
from .hetero_view import HeteroView


def _typed(num_types: int, in_feats: int, out_feats: int) -> Tuple[nn.Parameter, nn.Parameter]:
    """(T, in, out) weights initialised as nn.Linear(in, out) each, and (T, out) biases."""
    weight = torch.empty(num_types, in_feats, out_feats)
    bias = torch.empty(num_types, out_feats)
    for t in range(num_types):
        linear = nn.Linear(in_feats, out_feats)
        weight[t], bias[t] = linear.weight.detach().t(), linear.bias.detach()
    return nn.Parameter(weight), nn.Parameter(bias)


def typed_linear(feat: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, index: List[torch.Tensor]
                 ) -> torch.Tensor:
    """(M, in) rows, (T, in, out) weights, row positions of each type -> (M, out): row i times its type's weight."""
    if len(index) == 1:
        return torch.addmm(bias[0], feat, weight[0])
    order = torch.cat(index)
    sizes = torch.tensor([len(i) for i in index])
    out = dgl.ops.segment_mm(feat[order], weight, sizes) + torch.repeat_interleave(bias, sizes.to(bias.device), 0)
    return out.new_empty(out.shape).index_copy(0, order, out)


class TypedGatedGCN(nn.Module):
    """GatedGCN whose weights depend on the node type and the relation.

    Parameters
    ----------
    hidden_dim : int
    num_ntypes, num_etypes : int
    dropout : float
    activation : str

    Example
    -------
    >>> hg = dgl.heterograph({('a', 'r', 'b'): ([0, 1], [0, 0]), ('b', 's', 'a'): ([0], [1])})
    >>> view = HeteroView.from_heterograph(hg)
    >>> x, e = TypedGatedGCN(4, 2, 2)(view, torch.randn(3, 4), torch.randn(3, 4))
    """

    applies_residual = True

    def __init__(self, hidden_dim: int, num_ntypes: int, num_etypes: int, dropout: float = 0.0,
                 activation: str = "relu"):
        super().__init__()
        d = hidden_dim
        self.hidden_dim = d
        self.A_weight, self.A_bias = _typed(num_ntypes, d, d)
        # B and E read the source (one (d, 2d) product per relation), D the destination, C the edge.
        self.BE_weight, self.BE_bias = _typed(max(num_etypes, 1), d, 2 * d)
        self.D_weight, self.D_bias = _typed(max(num_etypes, 1), d, d)
        self.C_weight, self.C_bias = _typed(max(num_etypes, 1), d, d)
        self.bn_node_x = nn.BatchNorm1d(d)
        self.bn_edge_e = nn.BatchNorm1d(d)
        self.act_x = make_activation(activation, inplace=True)
        self.act_e = make_activation(activation, inplace=True)
        self.dropout = dropout

    def forward(self, view: HeteroView, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None, edge_output: bool = True
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) view nodes, (E, d) view edges -> (N, d), (E, d) (edges None when not ``edge_output``)."""
        d = self.hidden_dim
        graph = view.graph
        src, dst = graph.edges()
        if edge_feat is None:
            edge_feat = node_feat.new_zeros(graph.num_edges(), d)
        Ax = typed_linear(node_feat, self.A_weight, self.A_bias, view.node_index)
        # Per edge: B_r x_j, E_r x_j from the source, D_r x_i from the destination, C_r e_ij.
        Bx, Ex = typed_linear(node_feat[src], self.BE_weight, self.BE_bias, view.edge_index).split(d, dim=-1)
        Dx = typed_linear(node_feat[dst], self.D_weight, self.D_bias, view.edge_index)
        e_hat = Ex + Dx + typed_linear(edge_feat, self.C_weight, self.C_bias, view.edge_index)
        sigma = torch.sigmoid(e_hat)
        numerator = dgl.ops.copy_e_sum(graph, sigma * Bx)
        denominator = dgl.ops.copy_e_sum(graph, sigma)
        x = torch.addcdiv(Ax, numerator, denominator + 1e-6)
        x = node_feat + F.dropout(self.act_x(self.bn_node_x(x)), self.dropout, self.training)
        if not edge_output:
            return x, None
        return x, edge_feat + F.dropout(self.act_e(self.bn_edge_e(e_hat)), self.dropout, self.training)
