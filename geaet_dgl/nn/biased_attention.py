"""Graphormer-style biased self-attention (the reference's ``BiasedTransformer``)."""
from __future__ import annotations

from typing import Optional

import dgl
import torch

from .batch_layout import BatchLayout, layout_of
from .self_attention import GraphSelfAttention


class BiasedGraphSelfAttention(GraphSelfAttention):
    """Self-attention within each graph with an additive bias on the scores.

    .. math::
        \\mathrm{Attn}(X)_h = \\mathrm{softmax}\\big(Q_h K_h^T / \\sqrt{d/H} + B_h\\big) V_h,
        \\qquad \\mathrm{out} = [\\mathrm{Attn}_1, \\dots, \\mathrm{Attn}_H] W_o

    per graph, ``B_h[i, j]`` the bias of head ``h`` for query node ``i`` and key
    node ``j`` of the same graph (Graphormer's spatial encoding,
    :class:`~.graphormer_bias.GraphormerBias`). The reference builds it from
    ``torch.nn.MultiheadAttention`` with ``attn_mask = B``; the parameters keep
    that module's names.

    Parameters
    ----------
    hidden_dim, num_heads, attn_dropout : as :class:`~.self_attention.GraphSelfAttention`.

    Shapes: ``node_feat`` (N, d), ``attn_bias`` (B * H, W, W) with
    W = ``layout.dense_width`` (row ``b * H + h``; entries past a graph's nodes
    are ignored) -> (N, d).

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(4, 6), dgl.rand_graph(2, 2)])
    >>> layout = BatchLayout.from_graph(g)
    >>> w = layout.dense_width
    >>> BiasedGraphSelfAttention(8, 2)(g, torch.randn(6, 8), torch.zeros(4, w, w), layout).shape
    torch.Size([6, 8])
    """

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, attn_bias: torch.Tensor,
                layout: Optional[BatchLayout] = None, return_weights: bool = False):
        layout = layout_of(graph, layout)
        expected = (layout.batch_size * self.num_heads, layout.dense_width, layout.dense_width)
        if tuple(attn_bias.shape) != expected:
            raise ValueError(f"attn_bias has shape {tuple(attn_bias.shape)}, expected {expected} "
                             "(B * num_heads, W, W with W = layout.dense_width)")
        return super().forward(graph, node_feat, layout, return_weights=return_weights, attn_bias=attn_bias)
