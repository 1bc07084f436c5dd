"""The local MPNNs in eval mode on plain tensors: GatedGCN, GIN / GINE, GCN, GAT, GENConv, PNA.

Calling convention: ``(h (N, d), e (E, d'), src (E,), dst (E,), pe_dist (E, 1)) -> (h, e)``; the edge work is
:mod:`.scatter`'s. Each module is built from the trained library layer and reads its weights.
"""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .common import activate, activation_name, affine_of, frozen, sigmoid
from .scatter import segment_max, segment_softmax, segment_sum


class NoMPNN(nn.Module):
    """The absent local branch (never called: the layer's ``has_local`` is False)."""

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return h, e


class ExportGatedGCN(nn.Module):
    """:class:`~geaet_dgl.nn.gated_gcn.GatedGCNLayer` in eval mode (``gated_aggregate`` then its norms):

    .. math::
        \\hat e_{ij} = D x_i + E x_j + C e_{ij}, \\quad \\sigma_{ij} = \\mathrm{sigmoid}(\\hat e_{ij})\\,[\\cdot r_{ij}],
        \\quad x_i' = x_i + \\mathrm{act}(\\mathrm{BN}(A x_i + \\textstyle\\sum_j \\sigma_{ij} B x_j /
        (\\sum_j \\sigma_{ij} + 10^{-6})))
    """

    def __init__(self, layer: nn.Module):
        super().__init__()
        from ..nn.gated_gcn import GATE_EPS

        with torch.no_grad():
            weight, bias = layer.projection()
        self.register_buffer("weight", weight.detach().clone())
        self.register_buffer("bias", bias.detach().clone())
        self.register_buffer("c_weight", layer.C.weight.detach().clone())
        node_scale, node_shift = affine_of(layer.bn_node_x, "GatedGCN's node BatchNorm")
        edge_scale, edge_shift = affine_of(layer.bn_edge_e, "GatedGCN's edge BatchNorm")
        self.register_buffer("node_scale", node_scale.clone())
        self.register_buffer("node_shift", node_shift.clone())
        self.register_buffer("edge_scale", edge_scale.clone())
        self.register_buffer("edge_shift", edge_shift.clone())
        self.out_feats = layer.out_feats
        self.residual = bool(layer.residual)
        self.relu = activation_name(layer.act_x) == "relu"
        self.eps = GATE_EPS
        self.gated = bool(layer.equivstable_pe)
        # the distance MLP without its closing Sigmoid (applied by :func:`sigmoid`)
        self.gate = frozen(nn.Sequential(*list(layer.mlp_r_ij)[:-1])) if self.gated else nn.Identity()

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        d = self.out_feats
        projected = F.linear(h, self.weight, self.bias)
        ax, bx, dx, ex = projected[:, :d], projected[:, d:2 * d], projected[:, 2 * d:3 * d], projected[:, 3 * d:]
        e_hat = ex.index_select(0, src) + dx.index_select(0, dst) + F.linear(e, self.c_weight)
        sigma = sigmoid(e_hat)
        if self.gated:
            sigma = sigma * sigmoid(self.gate(pe_dist))
        num_nodes = h.shape[0]
        numerator = segment_sum(bx.index_select(0, src) * sigma, dst, num_nodes)
        denominator = segment_sum(sigma, dst, num_nodes) + self.eps
        x = activate((ax + numerator / denominator) * self.node_scale + self.node_shift, self.relu)
        e_out = activate(e_hat * self.edge_scale + self.edge_shift, self.relu)
        if self.residual:
            x = h + x
            e_out = e + e_out
        return x, e_out


class ExportGIN(nn.Module):
    """GIN (``edges`` False) or GINE (True) in eval mode: :math:`\\mathrm{MLP}(x_i + \\sum_{j \\to i} m_{ji})`,
    :math:`m_{ji} = x_j` or :math:`\\mathrm{ReLU}(x_j + e_{ji})`; the edges pass through."""

    def __init__(self, layer: nn.Module, edges: bool):
        super().__init__()
        self.mlp = frozen(layer.nn)
        self.edges = edges

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        messages = h.index_select(0, src)
        if self.edges:
            messages = F.relu(messages + e)
        return self.mlp(segment_sum(messages, dst, h.shape[0]) + h), e


def gcn_propagate(h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """:math:`\\hat D^{-1/2} (A + I) \\hat D^{-1/2} h` with the graph's self-loops replaced by one per node
    (PyG's ``add_remaining_self_loops``; :mod:`geaet_dgl.nn.gcn`): (N, d) -> (N, d)."""
    keep = (src != dst).to(h.dtype).unsqueeze(1)  # (E, 1): 0 for a self-loop
    degree = segment_sum(keep, dst, h.shape[0]) + 1.0
    norm = degree.rsqrt()
    scaled = h * norm
    return (segment_sum(scaled.index_select(0, src) * keep, dst, h.shape[0]) + scaled) * norm


class ExportGCN(nn.Module):
    """:class:`~geaet_dgl.nn.gcn.GCNLayer` (or the input branch's graph-free copy, ``propagate`` False) in
    eval mode: :math:`\\hat D^{-1/2} (A + I) \\hat D^{-1/2} W x + b`; the edges pass through."""

    def __init__(self, layer: nn.Module, propagate: bool = True):
        super().__init__()
        self.register_buffer("weight", layer.lin.weight.detach().clone())
        self.register_buffer("bias", layer.bias.detach().clone())
        self.propagate = propagate

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        out = F.linear(h, self.weight)
        if self.propagate:
            out = gcn_propagate(out, src, dst)
        return out + self.bias, e


class ExportSAGE(nn.Module):
    """:class:`~geaet_dgl.nn.sage.SAGELayer` in eval mode: :math:`W_{self} x_i + W_{neigh} \mathrm{mean}_{j \in N(i)}
    x_j + b` over the in-edges (0 for a node without any); the edges pass through."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.register_buffer("self_weight", layer.lin_self.weight.detach().clone())
        self.register_buffer("bias", layer.lin_self.bias.detach().clone())
        self.register_buffer("neigh_weight", layer.lin_neigh.weight.detach().clone())

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        num_nodes = h.shape[0]
        total = segment_sum(F.linear(h, self.neigh_weight).index_select(0, src), dst, num_nodes)
        degree = segment_sum(torch.ones_like(dst, dtype=h.dtype).unsqueeze(1), dst, num_nodes)
        return F.linear(h, self.self_weight, self.bias) + total / degree.clamp(min=1.0), e


class ExportGAT(nn.Module):
    """:class:`~geaet_dgl.nn.gat.GATLayer` in eval mode (PyG's ``GATConv`` with edge features): per head,
    :math:`\alpha_{ij} = \mathrm{softmax}_{j \in N(i) \cup \{i\}}(\mathrm{LeakyReLU}(a_s W x_j + a_d W x_i + a_e W_e e_{ji}))`,
    :math:`x_i' = \Vert_h \sum_j \alpha_{ij} W x_j + b`. The graph's self-loops get no weight (their scores are
    masked) and every node gets one whose edge term is the mean of its other incoming edges' terms, as PyG's
    ``add_self_loops(fill_value='mean')``; the edges pass through."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.num_heads, self.head_dim, self.negative_slope = layer.num_heads, layer.head_dim, layer.negative_slope
        self.register_buffer("weight", layer.lin.weight.detach().clone())
        self.register_buffer("att_src", layer.att_src.detach().clone())
        self.register_buffer("att_dst", layer.att_dst.detach().clone())
        self.register_buffer("bias", layer.bias.detach().clone())
        self.edges = layer.lin_edge is not None
        self.register_buffer("edge_weight", layer.lin_edge.weight.detach().clone() if self.edges else torch.zeros(0))
        self.register_buffer("att_edge", layer.att_edge.detach().clone() if self.edges else torch.zeros(0))

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        heads, width, num_nodes = self.num_heads, self.head_dim, h.shape[0]
        projected = F.linear(h, self.weight).reshape(num_nodes, heads, width)
        score_src, score_dst = (projected * self.att_src).sum(-1), (projected * self.att_dst).sum(-1)  # (N, H)
        keep = (src != dst).unsqueeze(1)  # (E, 1): False for the graph's own self-loops
        scores = score_src.index_select(0, src) + score_dst.index_select(0, dst)  # (E, H)
        loop_scores = score_src + score_dst  # (N, H): the self-loop every node gets
        if self.edges:
            edge_score = (F.linear(e, self.edge_weight).reshape(-1, heads, width) * self.att_edge).sum(-1)
            kept = keep.to(h.dtype)
            total = segment_sum(edge_score * kept, dst, num_nodes)
            count = segment_sum(kept, dst, num_nodes).clamp(min=1.0)
            scores = scores + edge_score
            loop_scores = loop_scores + total / count
        scores = F.leaky_relu(scores, self.negative_slope).masked_fill(~keep, -3.4028234663852886e38)
        loops = torch.arange(num_nodes, device=h.device)
        all_src, all_dst = torch.cat([src, loops]), torch.cat([dst, loops])
        alpha = segment_softmax(torch.cat([scores, F.leaky_relu(loop_scores, self.negative_slope)]), all_dst,
                                num_nodes)  # (E + N, H)
        messages = projected.index_select(0, all_src) * alpha.unsqueeze(-1)  # (E + N, H, C)
        out = segment_sum(messages.reshape(-1, heads * width), all_dst, num_nodes)
        return out + self.bias, e


class ExportGENConv(nn.Module):
    """:class:`~geaet_dgl.nn.gen_conv.GENConvLayer` in eval mode: :math:`x_i' = \mathrm{MLP}(x_i + \sum_j
    \mathrm{softmax}_j(m_{ji}) \odot m_{ji})`, :math:`m_{ji} = \mathrm{ReLU}(x_j + e_{ji}) + \epsilon`, the softmax per
    channel over the node's incoming edges (0 without any); the MLP's BatchNorm as its running statistics."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        affine_of(layer.mlp[1], "GENConv's BatchNorm")  # refused without running statistics
        self.mlp = frozen(layer.mlp)
        self.eps = float(layer.eps)

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        messages = h.index_select(0, src)
        if e.shape[1] == messages.shape[1]:  # (no edge states: the messages are the source features)
            messages = messages + e
        messages = F.relu(messages) + self.eps
        weights = segment_softmax(messages, dst, h.shape[0])
        return self.mlp(h + segment_sum(weights * messages, dst, h.shape[0])), e


class ExportPNA(nn.Module):
    """:class:`~geaet_dgl.nn.pna.PNALayer` in eval mode: messages :math:`W_{pre} [x_i \Vert x_j \Vert W_e e_{ji}]`,
    their mean, max and sum over each node's incoming edges (0 without any), concatenated with :math:`x_i`,
    then the post and the last linear map; the edges pass through."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.edge_encoder = frozen(layer.edge_encoder)
        self.pre = frozen(layer.pre_nns[0][0])
        self.post = frozen(layer.post_nns[0])
        self.lin = frozen(layer.lin)

    def forward(self, h: torch.Tensor, e: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                pe_dist: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        num_nodes = h.shape[0]
        pairs = torch.cat([h.index_select(0, dst), h.index_select(0, src), self.edge_encoder(e)], dim=1)
        messages = self.pre(pairs)  # (E, d)
        total = segment_sum(messages, dst, num_nodes)
        degree = segment_sum(torch.ones_like(messages[:, :1]), dst, num_nodes).clamp(min=1.0)
        aggregated = torch.cat([h, total / degree, segment_max(messages, dst, num_nodes), total], dim=1)
        return self.lin(self.post(aggregated)), e
