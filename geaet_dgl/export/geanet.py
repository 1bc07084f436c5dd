"""GEANet (the reference's variant and the paper's) in eval mode on plain tensors.

Calling convention: ``(h (N, d), e (E, d), graph_of_node (N,), graph_of_edge (E,), num_graphs) -> (h, e)``.
"""
from __future__ import annotations

from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn

from ..nn.external_attention import heads_as_one_linear
from .scatter import segment_max, segment_sum


class NoGEANet(nn.Module):
    """The absent external branch (never called)."""

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        return h, e


def double_normalize(scores: torch.Tensor, num_heads: int, segments: torch.Tensor, num_graphs: int,
                     per_graph: bool) -> torch.Tensor:
    """GEANet's double normalisation of (M, H*S) scores: softmax over the rows (of each graph with
    ``per_graph``, else of the whole batch), then each head's S slots divided by their sum.

    Computed as the library's layer-wise path computes it (:func:`~geaet_dgl.nn.external_attention.double_normalize`
    with ``column_lse``): the softmax over rows only rescales each column, so the result is
    :math:`\mathrm{softmax}_t(s_{it} - \mathrm{lse}_t)` with :math:`\mathrm{lse}_t = \log \sum_j \exp s_{jt}` over the
    rows of the node's graph (or batch). Rows whose column weights are all tiny are then never divided by their
    tiny sum; on the full-width presets the result is as close to a float64 computation as the training
    forward's (within 2e-7, docs/export.md).
    """
    rows = scores.shape[0]
    if not per_graph:  # one segment: the whole batch
        segments, num_graphs = torch.zeros(rows, dtype=torch.long, device=scores.device), 1
    top = segment_max(scores, segments, num_graphs)  # (B, H*S); no amax: torch 2.2 writes it badly for opset 18
    total = segment_sum(torch.exp(scores - top.index_select(0, segments)), segments, num_graphs)
    lse = top + torch.log(total)  # -inf for a graph without rows, which no row reads
    logits = (scores - lse.index_select(0, segments)).reshape(rows, num_heads, -1)
    return torch.softmax(logits, dim=-1).reshape(rows, -1)


class ExportGEANet(nn.Module):
    """:class:`~geaet_dgl.nn.external_attention.GEANet` (the reference's variant) in eval mode.

    The (S, S) units act on every head at once as block-diagonal (d, d) maps
    (:func:`~geaet_dgl.nn.external_attention.heads_as_one_linear`, the edges' strided channel order included),
    the shared unit composed into the key maps.
    """

    def __init__(self, net: nn.Module):
        super().__init__()
        heads = net.num_heads
        self.num_heads, self.per_graph = heads, net.scope == "graph"
        self.node_unit, self.edge_unit, self.shared_unit = bool(net.node_unit), bool(net.edge_unit), \
            bool(net.shared_unit)
        d = net.hidden_dim
        with torch.no_grad():
            shared = (net.share_U.weight.detach(), net.share_U.bias.detach()) if net.shared_unit else \
                (torch.eye(d), torch.zeros(d))

            def composed(unit: nn.Linear, order=None) -> Tuple[torch.Tensor, torch.Tensor]:
                weight, bias = heads_as_one_linear(unit, heads, order)
                return (weight @ shared[0]).detach().clone(), (weight @ shared[1] + bias).detach().clone()

            def plain(unit: nn.Linear) -> Tuple[torch.Tensor, torch.Tensor]:
                weight, bias = heads_as_one_linear(unit, heads)
                return weight.detach().clone(), bias.detach().clone()

            empty = (torch.zeros(0, d), torch.zeros(0))
            node_key = composed(net.node_U1) if net.node_unit else empty
            node_value = plain(net.node_U2) if net.node_unit else empty
            edge_key = composed(net.edge_U1, net._edge_input_order) if net.edge_unit else empty
            edge_value = plain(net.edge_U2) if net.edge_unit else empty
        for name, (weight, bias) in (("node_key", node_key), ("node_value", node_value), ("edge_key", edge_key),
                                     ("edge_value", edge_value), ("shared", shared)):
            self.register_buffer(f"{name}_weight", weight.detach().clone())
            self.register_buffer(f"{name}_bias", bias.detach().clone())

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.node_unit:
            attn = double_normalize(F.linear(h, self.node_key_weight, self.node_key_bias), self.num_heads,
                                    graph_of_node, num_graphs, self.per_graph)
            h_out = F.linear(attn, self.node_value_weight, self.node_value_bias)
        elif self.shared_unit:
            h_out = F.linear(h, self.shared_weight, self.shared_bias)
        else:
            h_out = h
        e_out = e
        if self.edge_unit:
            attn = double_normalize(F.linear(e, self.edge_key_weight, self.edge_key_bias), self.num_heads,
                                    graph_of_edge, num_graphs, self.per_graph)
            e_out = F.linear(attn, self.edge_value_weight, self.edge_value_bias)
        return h_out, e_out


class ExportPaperGEANet(nn.Module):
    """:class:`~geaet_dgl.nn.external_attention.PaperGEANet` in eval mode:
    :math:`\\mathrm{Concat}_i(\\mathrm{DNorm}(X'_i U_k^T) U_v) W_o` with :math:`X' = X U_s`, no biases."""

    def __init__(self, net: nn.Module):
        super().__init__()
        d = net.hidden_dim
        self.num_heads, self.head_dim, self.per_graph = net.num_heads, net.head_dim, net.scope == "graph"
        self.node_unit, self.edge_unit = bool(net.node_unit), bool(net.edge_unit)
        empty_units = torch.zeros(0, net.head_dim)
        self.register_buffer("shared", net.shared.weight.detach().clone() if net.shared_unit else torch.eye(d))
        for kind in ("node", "edge"):
            on = getattr(net, f"{kind}_unit")
            self.register_buffer(f"{kind}_key", getattr(net, f"{kind}_key").detach().clone() if on else empty_units)
            self.register_buffer(f"{kind}_value", getattr(net, f"{kind}_value").detach().clone() if on
                                 else empty_units)
            self.register_buffer(f"{kind}_out", getattr(net, f"{kind}_out").weight.detach().clone() if on
                                 else torch.zeros(0, d))

    def _attend(self, feat: torch.Tensor, key: torch.Tensor, value: torch.Tensor, out: torch.Tensor,
                segments: torch.Tensor, num_graphs: int) -> torch.Tensor:
        rows = feat.shape[0]
        heads = F.linear(feat, self.shared).reshape(rows, self.num_heads, self.head_dim)
        scores = F.linear(heads, key).reshape(rows, -1)  # (M, H*S)
        attn = double_normalize(scores, self.num_heads, segments, num_graphs, self.per_graph)
        mixed = torch.matmul(attn.reshape(rows, self.num_heads, -1), value)  # (M, H, d_h)
        return F.linear(mixed.reshape(rows, -1), out)

    def forward(self, h: torch.Tensor, e: torch.Tensor, graph_of_node: torch.Tensor, graph_of_edge: torch.Tensor,
                num_graphs: int) -> Tuple[torch.Tensor, torch.Tensor]:
        h_out, e_out = h, e
        if self.node_unit:
            h_out = self._attend(h, self.node_key, self.node_value, self.node_out, graph_of_node, num_graphs)
        if self.edge_unit:
            e_out = self._attend(e, self.edge_key, self.edge_value, self.edge_out, graph_of_edge, num_graphs)
        return h_out, e_out
