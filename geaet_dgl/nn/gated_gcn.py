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

The math lives in three small pieces that every path shares: :meth:`GatedGCNLayer.projection` (the
four node projections as one matrix), :func:`gated_aggregate` (gate and aggregation, before the
norms) and the layer's norms. The training forward, the folded eval-mode copy
(:meth:`GatedGCNLayer.folded`: the node BatchNorm folded into A and B) and the layer-wise
whole-graph pass (:meth:`GatedGCNLayer.forward_in_chunks`) are compositions of them.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .activation import activation_, make_activation
from .batch_layout import BatchLayout
from .norm import batchnorm_affine
from .scalar_mlp import PiecewiseScalarMLP, scalar_relu_mlp

#: Added to the gate sum of every node (a node without in-edges divides by it).
GATE_EPS = 1e-6


def pe_square_distance(graph: dgl.DGLGraph, pe: torch.Tensor) -> torch.Tensor:
    """:math:`\\lVert p_j - p_i \\rVert^2` for every edge j -> i: (N, P) -> (E, 1)."""
    diff = dgl.ops.gsddmm(graph, "sub", pe, pe, lhs_target="u", rhs_target="v")
    return (diff * diff).sum(-1, keepdim=True)


def gather_add(src_feat: torch.Tensor, dst_feat: torch.Tensor, src: torch.Tensor, dst: torch.Tensor
               ) -> torch.Tensor:
    """(N_src, d), (N_dst, d) -> (E, d) with row e equal to ``src_feat[src[e]] + dst_feat[dst[e]]``.

    What ``dgl.ops.gsddmm(graph, 'add', src_feat, dst_feat, 'u', 'v')`` computes; two row gathers
    and an in-place add run 2-3x faster on CPU than DGL's SDDMM kernel at MNIST batch sizes (no autograd).
    """
    return src_feat.index_select(0, src).add_(dst_feat.index_select(0, dst))


def gated_aggregate(graph: dgl.DGLGraph, ax: torch.Tensor, bx: torch.Tensor, dx: torch.Tensor, ex: torch.Tensor,
                    edge_feat: torch.Tensor, c_weight: torch.Tensor, gate: Optional[torch.Tensor] = None,
                    endpoints: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
                    ) -> Tuple[torch.Tensor, torch.Tensor]:
    """GatedGCN's gate and aggregation, before its norms: the one place this math is written.

    .. math::
        \\hat e_{ij} = D x_i + E x_j + C e_{ij}, \\quad \\sigma_{ij} = \\mathrm{sigmoid}(\\hat e_{ij})\\,[\\cdot r_{ij}],
        \\quad \\hat x_i = A x_i + \\frac{\\sum_j \\sigma_{ij} B x_j}{\\sum_j \\sigma_{ij} + \\epsilon}

    Parameters
    ----------
    graph : a graph, or a block whose sources are all nodes and destinations some of them.
    ax, dx : (N_dst, d) ``A x + b_A`` and ``D x + b_D + b_C`` of the destination nodes.
    bx, ex : (N_src, d) ``B x + b_B`` and ``E x + b_E`` of the source nodes.
    edge_feat : (E, d_in) edge features; ``c_weight`` (d, d_in) is C's weight (its bias rides on ``dx``).
    gate : (E, 1) EquivStableLapPE gate :math:`r_{ij}` or None.
    endpoints : (E,) source and (E,) destination rows, or None: given, the pair sum is two row gathers
        (:func:`gather_add`, faster without autograd) instead of DGL's SDDMM.

    Returns
    -------
    (N_dst, d) :math:`\\hat x` and (E, d) :math:`\\hat e`. Without autograd recording the temporaries are
    updated in place (the same values).
    """
    in_place = not torch.is_grad_enabled()
    if endpoints is None:
        pair = dgl.ops.gsddmm(graph, "add", ex, dx, lhs_target="u", rhs_target="v")
    else:
        pair = gather_add(ex, dx, *endpoints)
    # e_hat = (E x_j + D x_i) + C e_ij, the edge product accumulated onto the pair sum in one addmm.
    e_hat = pair.addmm_(edge_feat, c_weight.t()) if in_place else torch.addmm(pair, edge_feat, c_weight.t())
    sigma = torch.sigmoid(e_hat)
    if gate is not None:
        sigma = sigma.mul_(gate) if in_place else sigma * gate
    numerator = dgl.ops.u_mul_e_sum(graph, bx, sigma)
    denominator = dgl.ops.copy_e_sum(graph, sigma)
    denominator = denominator.add_(GATE_EPS) if in_place else denominator + GATE_EPS
    return torch.addcdiv(ax, numerator, denominator), e_hat


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
        weight, bias = self.projection()
        Ax, Bx, Dx, Ex = F.linear(node_feat, weight, bias).split(self.out_feats, dim=-1)
        x, e_hat = gated_aggregate(graph, Ax, Bx, Dx, Ex, edge_feat, self.C.weight, self._gate(pe_dist))
        return self.finish(x, e_hat, node_feat, edge_feat, edge_output)

    def projection(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """(4 d, d_in) weight and (4 d,) bias of the four node projections A, B, D, E as one matrix.

        C's bias rides on D's: every edge receives exactly one ``D x_i``, so adding it there adds it
        to every edge (:func:`gated_aggregate` then applies C without a bias).
        """
        weight = torch.cat([self.A.weight, self.B.weight, self.D.weight, self.E.weight], 0)
        bias = torch.cat([self.A.bias, self.B.bias, self.D.bias + self.C.bias, self.E.bias], 0)
        return weight, bias

    def _gate(self, pe_dist: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        if not self.equivstable_pe:
            return None
        if pe_dist is None:
            raise ValueError("equivstable_pe=True needs the positional-encoding distances `pe_dist`")
        return self.distance_gate(pe_dist)

    def finish(self, x: torch.Tensor, e_hat: torch.Tensor, node_feat: torch.Tensor, edge_feat: torch.Tensor,
               edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """BatchNorm, activation, dropout and the residual on :func:`gated_aggregate`'s ``(x_hat, e_hat)``."""
        x = F.dropout(self.act_x(self.bn_node_x(x)), self.dropout, self.training)
        if self.residual:
            x = node_feat + x
        if not edge_output:
            return x, None
        e = F.dropout(self.act_e(self.bn_edge_e(e_hat)), self.dropout, self.training)
        if self.residual:
            e = edge_feat + e
        return x, e

    @torch.no_grad()
    def forward_in_chunks(self, graph: dgl.DGLGraph, h: torch.Tensor, e: torch.Tensor, pe_dist: Optional[torch.Tensor],
                          chunks: List[Tuple[int, int]], edge_output: bool, edges_in_place: bool = False
                          ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The eval-mode forward on one whole graph, its edges in chunks of destination nodes.

        For layer-wise inference of graphs too large for one pass: ``B x`` and ``E x`` are computed once
        for all N nodes, then for each chunk of destination nodes the edges into it are one block
        (sources: all nodes) for :func:`gated_aggregate` and :meth:`finish`. A layer costs
        ``O(N d^2 + E d)``; the temporaries are bounded by the chunk.

        Parameters
        ----------
        h : (N, d) node states; e : (E, d) edge states; pe_dist : (E, 1) ESLapPE distances or None.
        chunks : (start, stop) ranges of destination nodes covering ``0..N-1``.
        edge_output : bool, False to skip the edge update (None returned).
        edges_in_place : bool
            ``e`` may be overwritten with the edge output (each edge is read and written by its own
            destination's chunk only): no second ``(E, d)`` tensor.

        Returns
        -------
        (N, d) nodes and (E, d) edges (or None), as ``self(graph, h, e, pe_dist=...)`` in eval mode.
        """
        d = self.out_feats
        weight, bias = self.projection()
        source = F.linear(h, torch.cat([weight[d:2 * d], weight[3 * d:]]), torch.cat([bias[d:2 * d], bias[3 * d:]]))
        bx, ex = source[:, :d], source[:, d:]
        own_weight, own_bias = torch.cat([weight[:d], weight[2 * d:3 * d]]), torch.cat([bias[:d], bias[2 * d:3 * d]])
        gate = self._gate(pe_dist)
        e_out = (e if edges_in_place else e.new_empty(graph.num_edges(), d)) if edge_output else None
        parts = []
        for start, stop in chunks:
            src, dst, eids = graph.in_edges(torch.arange(start, stop, device=h.device), form="all")
            dst = dst - start
            block = dgl.create_block((src, dst), num_src_nodes=h.shape[0], num_dst_nodes=stop - start,
                                     device=h.device)
            ax, dx = F.linear(h[start:stop], own_weight, own_bias).split(d, dim=-1)
            edges_in = e[eids]
            x, e_hat = gated_aggregate(block, ax, bx, dx, ex, edges_in, self.C.weight,
                                       gate[eids] if gate is not None else None, endpoints=(src, dst))
            x, new_e = self.finish(x, e_hat, h[start:stop], edges_in, e_out is not None)
            parts.append(x)
            if e_out is not None:
                e_out[eids] = new_e
        return torch.cat(parts), e_out

    def folded(self) -> Optional["FoldedGatedGCN"]:
        """An eval-mode copy with the node BatchNorm folded into A and B (:class:`FoldedGatedGCN`), or None
        where a BatchNorm has no running statistics (it normalises with the batch's) or for a subclass."""
        if type(self) is not GatedGCNLayer:
            return None
        node_affine, edge_affine = batchnorm_affine(self.bn_node_x), batchnorm_affine(self.bn_edge_e)
        if node_affine is None or edge_affine is None:
            return None
        return FoldedGatedGCN(self, node_affine, edge_affine)


class FoldedGatedGCN(nn.Module):
    """:class:`GatedGCNLayer` in eval mode with its node BatchNorm folded in: same call, same outputs.

    The node update :math:`\\mathrm{BN}(A x_i + \\sum_j \\sigma_{ij} B x_j / (\\sum_j \\sigma_{ij} + \\epsilon))` is
    linear in :math:`A x` and :math:`B x`, so the BatchNorm's scale goes into the rows of A and B (and its shift
    into A's bias) of :meth:`GatedGCNLayer.projection`. The edge BatchNorm cannot move (the gate reads
    :math:`\\hat e` before it) and becomes one ``addcmul``. The rest is :func:`gated_aggregate`, with the pair
    sum from row gathers; activations run in place, dropout is skipped, and the projection matrix is built
    once per folding instead of once per forward. Built by :meth:`GatedGCNLayer.folded`.
    """

    def __init__(self, layer: GatedGCNLayer, node_affine, edge_affine):
        super().__init__()
        d = layer.out_feats
        self.out_feats = d
        self.residual = self.applies_residual = layer.residual
        self.act_x, self.act_e = layer.act_x, layer.act_e
        (node_scale, node_shift), ones = node_affine, torch.ones_like(node_affine[0])
        with torch.no_grad():
            weight, bias = layer.projection()
            row_scale = torch.cat([node_scale, node_scale, ones, ones])  # BN(A x + sum s B x / ...) in A, B
            row_shift = torch.cat([node_shift, torch.zeros(3 * d, dtype=bias.dtype, device=bias.device)])
            self.weight = (weight * row_scale[:, None]).detach()
            self.bias = (bias * row_scale + row_shift).detach()
            self.c_weight = layer.C.weight.detach()
        self.edge_scale, self.edge_shift = edge_affine
        self.gate = None
        if layer.equivstable_pe:
            first, act, second, _ = layer.mlp_r_ij
            self.gate = PiecewiseScalarMLP(first, second) if isinstance(act, nn.ReLU) else layer.mlp_r_ij

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: torch.Tensor, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) -> (N, d) nodes, (E, d) edges (None unless ``edge_output``), as the layer's eval forward."""
        endpoints = layout.edge_endpoints(graph) if layout is not None else graph.edges()
        Ax, Bx, Dx, Ex = F.linear(node_feat, self.weight, self.bias).split(self.out_feats, dim=-1)
        gate = None
        if self.gate is not None:
            if pe_dist is None:
                raise ValueError("equivstable_pe=True needs the positional-encoding distances `pe_dist`")
            gate = self.gate(pe_dist)
            gate = gate.sigmoid_() if isinstance(self.gate, PiecewiseScalarMLP) else gate
        x, e_hat = gated_aggregate(graph, Ax, Bx, Dx, Ex, edge_feat, self.c_weight, gate, endpoints)
        x = activation_(x, self.act_x)  # = act(BN(A x + num / den)): the BN is in the weights
        if self.residual:
            x = x.add_(node_feat)
        if not edge_output:
            return x, None
        e = activation_(torch.addcmul(self.edge_shift, e_hat, self.edge_scale, out=e_hat), self.act_e)
        if self.residual:
            e = e.add_(edge_feat)
        return x, e
