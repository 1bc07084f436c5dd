"""Graphormer-style biased self-attention (the reference's ``BiasedTransformer``)."""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch

from .batch_layout import BatchLayout, layout_of
from .norm import Affine
from .self_attention import FoldedSelfAttention, GraphSelfAttention, softmax_

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
        return super().forward(graph, node_feat, edge_feat, layout=layout,
                               attn_bias=_checked_bias(layout, self.num_heads, attn_bias))

    def scores_bias(self, layout: BatchLayout, dtype: torch.dtype, attn_bias: Optional[torch.Tensor] = None
                    ) -> torch.Tensor:
        """The key padding bias plus ``attn_bias``, (B * H, W, W); for the batch's own bias (the layout's
        :data:`ATTENTION_BIAS`) summed once per batch and shared by every layer."""
        if attn_bias is not None and layout.holds(ATTENTION_BIAS, attn_bias):
            return layout.cached(("attention_bias_with_padding", self.num_heads, dtype),
                                 lambda: super(BiasedGraphSelfAttention, self).scores_bias(layout, dtype, attn_bias))
        return super().scores_bias(layout, dtype, attn_bias)

    def folded(self, out_affine: Optional[Affine] = None) -> Optional["FoldedBiasedSelfAttention"]:
        """``out_affine(self(x))`` as an eval-mode copy (:class:`FoldedBiasedSelfAttention`), or None while
        ``keep_attention`` is set."""
        if type(self) is not BiasedGraphSelfAttention or self.keep_attention:
            return None
        return FoldedBiasedSelfAttention(self, out_affine)


def _checked_bias(layout: BatchLayout, heads: int, attn_bias: Optional[torch.Tensor]) -> torch.Tensor:
    """``attn_bias``, or the layout's :data:`ATTENTION_BIAS` where None, checked to be (B * H, W, W)."""
    if attn_bias is None:
        attn_bias = layout.cached(ATTENTION_BIAS, _no_bias)
    expected = (layout.batch_size * heads, layout.dense_width, layout.dense_width)
    if tuple(attn_bias.shape) != expected:
        raise ValueError(f"attn_bias has shape {tuple(attn_bias.shape)}, expected {expected} "
                         "(B * num_heads, W, W with W = layout.dense_width)")
    return attn_bias


class FoldedBiasedSelfAttention(FoldedSelfAttention):
    """``out_affine(BiasedGraphSelfAttention(x))`` in eval mode: (N, d) -> (N, d). Built by
    :meth:`BiasedGraphSelfAttention.folded`.

    As :class:`~.self_attention.FoldedSelfAttention` (score scale in the query projection, ``out_affine`` in
    ``out_proj``, the nodes scattered once into the batch's shared (head, graph, position) workspace,
    softmax in place), with the scores' bias a full (H * B, W, W) tensor: the Graphormer bias plus the key
    padding bias, reordered head-major and summed once per batch, added by the scores' ``baddbmm``.
    """

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True, attn_bias: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) -> (N, d) as the layer's eval forward; ``edge_feat`` passes through."""
        layout = layout_of(graph, layout)
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        workspace = self.scattered_qkv(layout, node_feat)  # (3, H, B * W, d/H + 1)
        bias = self._head_major_bias(layout, attn_bias, workspace.dtype)  # (H * B, W, W)
        # q and k without the workspace's padding channel (the padding is in ``bias``)
        query, key = (workspace[i, :, :, :head_dim].view(heads * layout.batch_size, layout.dense_width, head_dim)
                      for i in range(2))
        scores = torch.baddbmm(bias, query, key.transpose(1, 2))  # (H*B, W, W)
        return self.attend(softmax_(scores), workspace, layout), edge_feat

    def _head_major_bias(self, layout: BatchLayout, attn_bias: Optional[torch.Tensor], dtype: torch.dtype
                         ) -> torch.Tensor:
        """(B * H, W, W) ``attn_bias`` + key padding bias -> (H * B, W, W); the layout's own bias once per batch."""
        def build(bias: torch.Tensor) -> torch.Tensor:
            heads, num_graphs, width = self.num_heads, layout.batch_size, layout.dense_width
            padding = layout.key_bias(heads, dtype).view(num_graphs, heads, 1, width)
            full = bias.view(num_graphs, heads, width, width) + padding
            return full.transpose(0, 1).reshape(heads * num_graphs, width, width)

        checked = _checked_bias(layout, self.num_heads, attn_bias)
        if attn_bias is None:
            return layout.cached(("head_major_attention_bias", self.num_heads, dtype), lambda: build(checked))
        return build(checked)
