"""Residual gated graph convolution (GatedGCN, Bresson & Laurent 2017) on DGL kernels.

For an edge :math:`j \\to i` with features :math:`e_{ij}`:

.. math::
    \\hat e_{ij} = D x_i + E x_j + C e_{ij}, \\qquad
    \\sigma_{ij} = \\mathrm{sigmoid}(\\hat e_{ij}) \\; [\\cdot r_{ij}], \\\\
    \\hat x_i = A x_i + \\frac{\\sum_{j \\to i} \\sigma_{ij} \\odot B x_j}
                          {\\sum_{j \\to i} \\sigma_{ij} + 10^{-6}},

then BatchNorm, activation, dropout and the residual on both
:math:`\\hat x` and :math:`\\hat e`. With ``equivstable_pe`` the gate is multiplied
by :math:`r_{ij} = \\mathrm{MLP}(\\lVert p_i - p_j \\rVert^2)` (EquivStableLapPE). The
squared distances are the same for every layer of a model, so the caller
computes them once with :func:`pe_square_distance` and passes them in.

The per-edge gate is one ``gsddmm`` (``E x_src + D x_dst``) and both sums are
``gspmm`` calls, so no (E, d) message tensor is gathered in Python.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .activation import make_activation
from .scalar_mlp import scalar_relu_mlp


def pe_square_distance(graph: dgl.DGLGraph, pe: torch.Tensor) -> torch.Tensor:
    """:math:`\\lVert p_j - p_i \\rVert^2` for every edge j -> i: (N, P) -> (E, 1)."""
    diff = dgl.ops.gsddmm(graph, "sub", pe, pe, lhs_target="u", rhs_target="v")
    return (diff * diff).sum(-1, keepdim=True)


class GatedGCNLayer(nn.Module):
    """GatedGCN with edge update, as the reference's ``CustomGatedGCN``.

    Parameters
    ----------
    in_feats, out_feats : int
        Input and output widths (equal when ``residual``).
    dropout : float
        Dropout on the node and edge outputs.
    residual : bool
        Add the input to the output (nodes and edges).
    activation : str
        'relu' or 'gelu'.
    equivstable_pe : bool
        Gate the messages with the EquivStableLapPE distance MLP.

    Example
    -------
    >>> g = dgl.rand_graph(6, 20)
    >>> conv = GatedGCNLayer(8, 8)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8))
    >>> conv = GatedGCNLayer(8, 8, equivstable_pe=True)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8), pe_dist=pe_square_distance(g, torch.randn(6, 8)))
    """

    def __init__(
        self,
        in_feats: int,
        out_feats: int,
        dropout: float = 0.0,
        residual: bool = True,
        activation: str = "relu",
        equivstable_pe: bool = False,
    ):
        super().__init__()
        if residual and in_feats != out_feats:
            raise ValueError(f"residual needs in_feats == out_feats, got {in_feats} and {out_feats}")
        self.A = nn.Linear(in_feats, out_feats)
        self.B = nn.Linear(in_feats, out_feats)
        self.C = nn.Linear(in_feats, out_feats)
        self.D = nn.Linear(in_feats, out_feats)
        self.E = nn.Linear(in_feats, out_feats)
        self.equivstable_pe = equivstable_pe
        if equivstable_pe:
            self.mlp_r_ij = nn.Sequential(
                nn.Linear(1, out_feats), make_activation(activation), nn.Linear(out_feats, 1), nn.Sigmoid()
            )
        self.bn_node_x = nn.BatchNorm1d(out_feats)
        self.bn_edge_e = nn.BatchNorm1d(out_feats)
        # In place: they act on BatchNorm outputs, which BatchNorm's backward does not read.
        self.act_x = make_activation(activation, inplace=True)
        self.act_e = make_activation(activation, inplace=True)
        self.dropout = dropout
        self.residual = residual
        # With its residual on, the GEAET layer adds no second residual, dropout or activation around it.
        self.applies_residual = residual
        self.out_feats = out_feats

    def reset_parameters(self) -> None:
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def distance_gate(self, pe_dist: torch.Tensor) -> torch.Tensor:
        """(E, 1) -> (E, 1): sigmoid(MLP(||p_i - p_j||^2)); for ReLU without (E, d) intermediates."""
        first, act, second, sigmoid = self.mlp_r_ij
        if isinstance(act, nn.ReLU):
            return sigmoid(scalar_relu_mlp(pe_dist, first, second))
        return self.mlp_r_ij(pe_dist)

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: torch.Tensor,
        *,
        layout=None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """
        Parameters
        ----------
        graph : DGLGraph with N nodes, E edges.
        node_feat : (N, in_feats)
        edge_feat : (E, in_feats)
        layout : unused (the branch calling convention, :mod:`.branches`).
        pe_dist : (E, 1) squared positional-encoding distances from
            :func:`pe_square_distance`, required when ``equivstable_pe``.
        edge_output : bool
            When False the edge update is skipped and None returned (for a
            last layer whose edge features feed nothing).

        Returns
        -------
        (N, out_feats) nodes and (E, out_feats) edges (or None).
        """
        d = self.out_feats
        # One matmul for the four node projections (A, B, D, E). C's bias rides on D's: every edge
        # receives exactly one D x_i, so adding it there adds it to every edge.
        weight = torch.cat([self.A.weight, self.B.weight, self.D.weight, self.E.weight], 0)
        bias = torch.cat([self.A.bias, self.B.bias, self.D.bias + self.C.bias, self.E.bias], 0)
        Ax, Bx, Dx, Ex = F.linear(node_feat, weight, bias).split(d, dim=-1)

        # e_hat = (E x_j + D x_i) + C e_ij, the edge product accumulated onto the gsddmm output in one addmm.
        e_hat = torch.addmm(dgl.ops.gsddmm(graph, "add", Ex, Dx, lhs_target="u", rhs_target="v"),
                            edge_feat, self.C.weight.t())
        sigma = torch.sigmoid(e_hat)
        if self.equivstable_pe:
            if pe_dist is None:
                raise ValueError("equivstable_pe=True needs the positional-encoding distances `pe_dist`")
            sigma = sigma * self.distance_gate(pe_dist)
        numerator = dgl.ops.u_mul_e_sum(graph, Bx, sigma)
        denominator = dgl.ops.copy_e_sum(graph, sigma)
        x = torch.addcdiv(Ax, numerator, denominator + 1e-6)

        x = F.dropout(self.act_x(self.bn_node_x(x)), self.dropout, self.training)
        if self.residual:
            x = node_feat + x
        if not edge_output:
            return x, None
        e = F.dropout(self.act_e(self.bn_edge_e(e_hat)), self.dropout, self.training)
        if self.residual:
            e = edge_feat + e
        return x, e
