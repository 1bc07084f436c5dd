"""The global attentions in eval mode on plain tensors: the dense Transformer and the Performer, within each graph.

Calling convention: ``(h (N, d), graph_of_node (N,), node_counts (B,), position (N,), attn_bias) -> h``, with
``attn_bias`` the (B * H, W, W) Graphormer bias of the biased Transformer (:mod:`.graphormer`), else (0, 0, 0).
Both pad the graphs to the largest graph of the batch, a width computed from ``node_counts`` as a tensor (any
width, one file).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .scatter import segment_max


class NoAttention(nn.Module):
    """The absent global branch (never called)."""

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        return h


class ExportSelfAttention(nn.Module):
    """:class:`~geaet_dgl.nn.self_attention.GraphSelfAttention` in eval mode: every node attends to the nodes
    of its graph, :math:`\\mathrm{softmax}(Q K^T / \\sqrt{d/H} + B) V W_o` (``B`` the biased Transformer's
    Graphormer bias, else none).

    The nodes are scattered into a (B, W, 3d) padded tensor, W the largest graph's node count computed from
    ``node_counts`` as a tensor (so the exported file follows any W); padding keys are masked.
    """

    def __init__(self, attention: nn.Module):
        super().__init__()
        d, heads = attention.hidden_dim, attention.num_heads
        scale = torch.ones(3 * d)
        scale[:d] = attention.score_scale  # softmax((s q) k^T) = softmax(s q k^T)
        self.register_buffer("in_weight", (attention.in_proj_weight.detach() * scale[:, None]).clone())
        self.register_buffer("in_bias", (attention.in_proj_bias.detach() * scale).clone())
        self.register_buffer("out_weight", attention.out_proj.weight.detach().clone())
        self.register_buffer("out_bias", attention.out_proj.bias.detach().clone())
        self.hidden_dim, self.num_heads = d, heads

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        d, heads = self.hidden_dim, self.num_heads
        head_dim = d // heads
        num_graphs = node_counts.shape[0]
        width = node_counts.max()  # a tensor: the exported file reads it from the input
        rows = graph_of_node * width + position  # (N,) row of every node in the (B * W) layout
        qkv = F.linear(h, self.in_weight, self.in_bias)  # (N, 3d)
        slots = torch.arange(num_graphs * width, device=h.device)
        dense = torch.zeros_like(slots, dtype=h.dtype).unsqueeze(1).expand(-1, 3 * d)
        dense = dense.scatter(0, rows.unsqueeze(1).expand(-1, 3 * d), qkv)
        dense = dense.reshape(num_graphs, -1, 3, heads, head_dim).permute(2, 0, 3, 1, 4)  # (3, B, H, W, d/H)
        query = dense[0].reshape(num_graphs * heads, -1, head_dim)
        key = dense[1].reshape(num_graphs * heads, -1, head_dim)
        value = dense[2].reshape(num_graphs * heads, -1, head_dim)
        valid = torch.arange(width, device=h.device).unsqueeze(0) < node_counts.unsqueeze(1)  # (B, W)
        valid = valid.unsqueeze(1).expand(-1, heads, -1).reshape(num_graphs * heads, 1, -1)
        scores = torch.bmm(query, key.transpose(1, 2))
        if attn_bias.numel() > 0:  # the biased Transformer: softmax(Q K^T / sqrt(d/H) + B)
            scores = scores + attn_bias
        scores = scores.masked_fill(~valid, -3.4028234663852886e38)
        out = torch.bmm(torch.softmax(scores, -1), value)  # (B*H, W, d/H)
        out = out.reshape(num_graphs, heads, -1, head_dim).transpose(1, 2).reshape(-1, d)
        return F.linear(out.index_select(0, rows), self.out_weight, self.out_bias)


def row_max(x: torch.Tensor) -> torch.Tensor:
    """Maximum over the last dimension, keeping it (``topk``: torch 2.2 writes ``amax`` / ``max(dim)`` into ONNX
    opset 18 as a ``ReduceMax`` node with an attribute the checker rejects)."""
    return x.topk(1, dim=-1).values


def to_dense(per_node: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor, num_graphs: int) -> torch.Tensor:
    """(N, H, F) per-node rows -> (B * H, W, F) per graph and head, padding rows 0; ``rows`` (N,) is each node's
    row ``graph * W + position`` of the (B * W) layout, ``slots`` the (B * W,) ``arange`` of that layout."""
    num_nodes, heads, width = per_node.shape[0], per_node.shape[1], per_node.shape[2]
    flat = per_node.reshape(num_nodes, heads * width)
    out = torch.zeros_like(slots, dtype=per_node.dtype).unsqueeze(1).expand(-1, heads * width)
    out = out.scatter(0, rows.unsqueeze(1).expand(-1, heads * width), flat)
    return out.reshape(num_graphs, -1, heads, width).transpose(1, 2).reshape(num_graphs * heads, -1, width)


class ExportPerformer(nn.Module):
    """:class:`~geaet_dgl.nn.performer.PerformerAttention` in eval mode (FAVOR+ within each graph): per head, with
    :math:`\phi(u) = M^{-1/2}(\exp(c P u - c^2 \lVert u \rVert^2 / 2 - s) + 10^{-4})`,
    :math:`x_i' = W_o \Vert_h \phi(q_i)^T \sum_j \phi(k_j) v_j^T / \phi(q_i)^T \sum_j \phi(k_j) + b_o`, the sums
    over the nodes of node i's graph; the stabiliser :math:`s` is each query's largest logit and, for keys,
    the largest logit over the graph's keys. The sums are one batched product on the graphs padded to the
    largest (padding rows are zero and carry no key); with ``pad_keys`` (the reference's configurations) the
    padding keys' features enter the denominator as in the reference.
    """

    def __init__(self, attention: nn.Module):
        super().__init__()
        from ..nn.performer import EXP_FLOOR, KERNEL_EPS

        phi = attention.fast_attention
        self.num_heads, self.head_dim, self.num_features = attention.num_heads, attention.head_dim, phi.num_features
        self.pad_keys = bool(attention.pad_keys)
        self.scale = float(self.head_dim ** -0.25)
        self.exp_floor, self.log_features = float(EXP_FLOOR), float(0.5 * torch.log(torch.tensor(
            float(self.num_features), dtype=torch.float64)))
        self.eps = float(KERNEL_EPS * self.num_features ** -0.5)
        self.register_buffer("projection", phi.projection_matrix.detach().clone())  # (M, C)
        self.register_buffer("qkv_weight", torch.cat([attention.to_q.weight, attention.to_k.weight,
                                                      attention.to_v.weight]).detach().clone())
        self.register_buffer("out_weight", attention.to_out.weight.detach().clone())
        self.register_buffer("out_bias", attention.to_out.bias.detach().clone())

    def _features(self, logits: torch.Tensor, half_norm: torch.Tensor, stabiliser: torch.Tensor) -> torch.Tensor:
        exponent = (logits - (half_norm + stabiliser + self.log_features)).clamp(min=self.exp_floor)
        return torch.exp(exponent) + self.eps

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor,
                position: torch.Tensor, attn_bias: torch.Tensor) -> torch.Tensor:
        heads, width, features = self.num_heads, self.head_dim, self.num_features
        num_nodes, num_graphs = h.shape[0], node_counts.shape[0]
        qkv = F.linear(h, self.qkv_weight).reshape(num_nodes, 3, heads, width)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]  # (N, H, C)
        q_logits = F.linear(q * self.scale, self.projection)  # (N, H, M)
        k_logits = F.linear(k * self.scale, self.projection)
        q_half = (q * q).sum(-1, keepdim=True) * (self.scale * self.scale / 2.0)
        k_half = (k * k).sum(-1, keepdim=True) * (self.scale * self.scale / 2.0)
        q_feat = self._features(q_logits, q_half, row_max(q_logits))
        k_max = segment_max(row_max(k_logits).reshape(num_nodes, heads), graph_of_node, num_graphs)  # (B, H)
        dense_width = node_counts.max()
        padding = (dense_width - node_counts).to(h.dtype).unsqueeze(1)  # (B, 1): padding keys per graph
        if self.pad_keys:  # the reference's stabiliser also sees the padding keys' logits, 0
            k_max = torch.where(padding > 0, k_max.clamp(min=0.0), k_max)
        k_feat = self._features(k_logits, k_half, k_max.index_select(0, graph_of_node).unsqueeze(-1))
        values = torch.cat([v, torch.ones_like(v[..., :1])], dim=-1)  # (N, H, C + 1): [v, 1]

        rows = graph_of_node * dense_width + position  # (N,) row in the (B * W) layout
        slots = torch.arange(num_graphs * dense_width, device=h.device)
        context = torch.bmm(to_dense(k_feat, rows, slots, num_graphs).transpose(1, 2),
                            to_dense(values, rows, slots, num_graphs))  # (B*H, M, C + 1)
        if self.pad_keys:  # each padding key: logits and norm 0, phi = exp(-s) / sqrt(M) + eps, value 0, one 1
            pad_feat = torch.exp((-(k_max + self.log_features)).clamp(min=self.exp_floor)) + self.eps  # (B, H)
            extra = (padding * pad_feat).reshape(num_graphs * heads, 1, 1)
            context = torch.cat([context[..., :width], context[..., width:] + extra], dim=-1)
        result = torch.bmm(to_dense(q_feat, rows, slots, num_graphs), context)  # (B*H, W, C + 1)
        result = result.reshape(num_graphs, heads, -1, width + 1).transpose(1, 2).reshape(-1, heads, width + 1)
        result = result.index_select(0, rows)  # (N, H, C + 1)
        out = result[..., :width] / result[..., width:].clamp(min=1.1754943508222875e-38)
        return F.linear(out.reshape(num_nodes, heads * width), self.out_weight, self.out_bias)
