"""GatedGCN for inference: its node BatchNorm folded into the A and B projections.

In eval mode the node update :math:`\\mathrm{BN}(A x_i + \\sum_j \\sigma_{ij} B x_j / (\\sum_j \\sigma_{ij} + \\epsilon))`
is linear in :math:`A x` and :math:`B x`, so the BatchNorm's scale goes into the rows of A and B (and its
shift into A's bias). The edge BatchNorm cannot move (the gate reads :math:`\\hat e` before it) and
becomes one ``addcmul``; activations run in place, dropout is skipped, and the four node projections
are one pre-concatenated matrix, built once per folding instead of once per forward. The edge gate's
input is two row gathers instead of DGL's SDDMM kernel (faster on CPU), and the edge projection is
accumulated onto it in place.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout
from ..nn.gated_gcn import GatedGCNLayer
from ..nn.scalar_mlp import relu_interval_tables
from .affine import batchnorm_affine
from .edges import edge_endpoints, gather_add
from .known import is_known

_GATED_GCN_ATTRIBUTES = ("equivstable_pe", "dropout", "residual", "applies_residual", "out_feats")
_GATED_GCN_CHILDREN = ("A", "B", "C", "D", "E", "mlp_r_ij", "bn_node_x", "bn_edge_e", "act_x", "act_e")


def activation_(x: torch.Tensor, module: nn.Module) -> torch.Tensor:
    """``module`` (ReLU or GELU) applied to ``x``, in place for ReLU."""
    if isinstance(module, nn.ReLU):
        return x.relu_()
    return module(x)


class FoldedDistanceGate(nn.Module):
    """sigmoid(MLP(r)) of the EquivStableLapPE gate, (E, 1) -> (E, 1), with the ReLU MLP's tables built once.

    ``Linear(1, H) -> ReLU -> Linear(H, 1)`` on a scalar is piecewise linear
    (:mod:`geaet_dgl.nn.scalar_mlp`): the per-interval slopes and intercepts are
    computed here once instead of in every forward. Another activation runs the MLP as it is.
    """

    def __init__(self, mlp: nn.Sequential):
        super().__init__()
        first, act, second, _ = mlp
        self.mlp = None
        if isinstance(act, nn.ReLU):
            with torch.no_grad():
                w1, b1 = first.weight.reshape(-1), first.bias
                w2 = second.weight.reshape(-1)
                breakpoints, active = relu_interval_tables(w1, b1)
                self.breakpoints = breakpoints.detach()
                self.slope = (active @ (w2 * w1)).detach()
                self.intercept = (active @ (w2 * b1) + second.bias).detach()
        else:
            self.mlp = mlp

    def forward(self, pe_dist: torch.Tensor) -> torch.Tensor:
        if self.mlp is not None:
            return self.mlp(pe_dist)
        interval = torch.searchsorted(self.breakpoints, pe_dist.reshape(-1))
        return torch.addcmul(self.intercept[interval], self.slope[interval], pe_dist.reshape(-1)) \
            .sigmoid_().unsqueeze(-1)


class FoldedGatedGCN(nn.Module):
    """Eval-mode :class:`~geaet_dgl.nn.gated_gcn.GatedGCNLayer`: same inputs and outputs.

    Build it with :meth:`fold`, which returns None for a layer it does not know (a BatchNorm
    without running statistics, a subclass, an unknown option).
    """

    def __init__(self, layer: GatedGCNLayer, node_affine, edge_affine):
        super().__init__()
        d = layer.out_feats
        self.out_feats = d
        self.residual = self.applies_residual = layer.residual
        self.act_x, self.act_e = layer.act_x, layer.act_e
        node_scale, node_shift = node_affine
        with torch.no_grad():
            self.weight = torch.cat([layer.A.weight * node_scale[:, None], layer.B.weight * node_scale[:, None],
                                     layer.D.weight, layer.E.weight], 0).detach()
            self.bias = torch.cat([layer.A.bias * node_scale + node_shift, layer.B.bias * node_scale,
                                   layer.D.bias + layer.C.bias, layer.E.bias], 0).detach()
            self.edge_weight_t = layer.C.weight.detach().t()
        self.edge_scale, self.edge_shift = edge_affine
        self.gate = FoldedDistanceGate(layer.mlp_r_ij) if layer.equivstable_pe else None

    @classmethod
    def fold(cls, layer: nn.Module) -> Optional["FoldedGatedGCN"]:
        if not is_known(layer, GatedGCNLayer, _GATED_GCN_ATTRIBUTES, _GATED_GCN_CHILDREN):
            return None
        node_affine, edge_affine = batchnorm_affine(layer.bn_node_x), batchnorm_affine(layer.bn_edge_e)
        if node_affine is None or edge_affine is None:
            return None
        return cls(layer, node_affine, edge_affine)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: torch.Tensor, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) -> (N, d) nodes, (E, d) edges (None unless ``edge_output``), as the layer's eval forward."""
        d = self.out_feats
        src, dst = edge_endpoints(graph, layout) if layout is not None else graph.edges()
        Ax, Bx, Dx, Ex = F.linear(node_feat, self.weight, self.bias).split(d, dim=-1)
        e_hat = gather_add(Ex, Dx, src, dst).addmm_(edge_feat, self.edge_weight_t)  # E x_j + D x_i + C e_ij
        sigma = torch.sigmoid(e_hat)
        if self.gate is not None:
            if pe_dist is None:
                raise ValueError("equivstable_pe=True needs the positional-encoding distances `pe_dist`")
            sigma.mul_(self.gate(pe_dist))
        numerator = dgl.ops.u_mul_e_sum(graph, Bx, sigma)
        denominator = dgl.ops.copy_e_sum(graph, sigma).add_(1e-6)
        x = activation_(torch.addcdiv(Ax, numerator, denominator), self.act_x)  # = act(BN(A x + num / den))
        if self.residual:
            x = x.add_(node_feat)
        if not edge_output:
            return x, None
        e = activation_(torch.addcmul(self.edge_shift, e_hat, self.edge_scale, out=e_hat), self.act_e)
        if self.residual:
            e = e.add_(edge_feat)
        return x, e
