"""Graphormer-style biased self-attention (the reference's ``BiasedTransformer``)."""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch

from .batch_layout import BatchLayout, layout_of
from .self_attention import GraphSelfAttention

#: Key of the batch's (B * H, W, W) attention bias in :meth:`BatchLayout.cached`: the model computes it
#: once per forward (:class:`~.graphormer_bias.GraphormerBias`) and every biased layer reads it.
ATTENTION_BIAS = "graphormer_attention_bias"


def _no_bias() -> torch.Tensor:
    raise ValueError("attention=biased_transformer needs the batch's attention bias: pass attn_bias, or let the "
                     "model compute it (model.graphormer.enable=true with degrees_only=false)")


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

    Shapes: ``node_feat`` (N, d) -> (N, d); the bias (B * H, W, W) with
    W = ``layout.dense_width`` (row ``b * H + h``; entries past a graph's nodes
    are ignored), given as ``attn_bias`` or kept in the layout under
    :data:`ATTENTION_BIAS` (what the model does). ``edge_feat`` passes through
    (the branch calling convention of :mod:`.branches`).

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(4, 6), dgl.rand_graph(2, 2)])
    >>> layout = BatchLayout.from_graph(g)
    >>> w = layout.dense_width
    >>> out, _ = BiasedGraphSelfAttention(8, 2)(g, torch.randn(6, 8), layout=layout, attn_bias=torch.zeros(4, w, w))
    >>> out.shape
    torch.Size([6, 8])
    """

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        *,
        layout: Optional[BatchLayout] = None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
        attn_bias: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        layout = layout_of(graph, layout)
        if attn_bias is None:
            attn_bias = layout.cached(ATTENTION_BIAS, _no_bias)
        expected = (layout.batch_size * self.num_heads, layout.dense_width, layout.dense_width)
        if tuple(attn_bias.shape) != expected:
            raise ValueError(f"attn_bias has shape {tuple(attn_bias.shape)}, expected {expected} "
                             "(B * num_heads, W, W with W = layout.dense_width)")
        return super().forward(graph, node_feat, edge_feat, layout=layout, attn_bias=attn_bias)
