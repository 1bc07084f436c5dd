"""Self-attention for inference: the score scale folded into the query projection, a norm's scale into
the output projection.

Same dense per-batch layout as :class:`~geaet_dgl.nn.self_attention.GraphSelfAttention` (the batch's
:class:`~geaet_dgl.nn.batch_layout.BatchLayout` and its cached key bias); no attention dropout. The
key padding bias rides in an extra channel of the queries (1) and keys (the bias), so the scores
come from one plain ``bmm`` instead of a ``baddbmm`` that first copies the bias into every score
row; the softmax runs in place.
"""
from __future__ import annotations

from typing import Optional

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout
from ..nn.self_attention import GraphSelfAttention
from .affine import Affine, scale_rows
from .known import is_known

_ATTENTION_ATTRIBUTES = ("hidden_dim", "num_heads", "attn_dropout", "keep_attention", "last_attention")
_ATTENTION_CHILDREN = ("out_proj",)


class FoldedSelfAttention(nn.Module):
    """``out_affine(GraphSelfAttention(x))`` in eval mode: (N, d) -> (N, d).

    Parameters
    ----------
    attention : the trained layer.
    out_affine : optional (scale, shift) applied to the output, folded into ``out_proj``.
    """

    def __init__(self, attention: GraphSelfAttention, out_affine: Optional[Affine] = None):
        super().__init__()
        d, heads = attention.hidden_dim, attention.num_heads
        self.hidden_dim, self.num_heads = d, heads
        with torch.no_grad():
            scale = torch.ones(3 * d, dtype=attention.in_proj_weight.dtype, device=attention.in_proj_weight.device)
            scale[:d] = (d // heads) ** -0.5  # softmax(q k^T / sqrt(d/H)) = softmax((q / sqrt(d/H)) k^T)
            self.in_weight = (attention.in_proj_weight * scale[:, None]).detach()
            self.in_bias = (attention.in_proj_bias * scale).detach()
        self.out_weight, self.out_bias = scale_rows(attention.out_proj.weight, attention.out_proj.bias, out_affine)

    @staticmethod
    def supports(attention: nn.Module) -> bool:
        """Whether ``attention`` is a layer this class folds (kept attention weights need the layer itself)."""
        return is_known(attention, GraphSelfAttention, _ATTENTION_ATTRIBUTES, _ATTENTION_CHILDREN) \
            and not attention.keep_attention

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        num_graphs, width = layout.batch_size, layout.dense_width
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        rows = layout.dense_index
        qkv = F.linear(node_feat, self.in_weight, self.in_bias)  # (N, 3d)
        dense = qkv.new_zeros(num_graphs * width, 3 * self.hidden_dim).index_copy_(0, rows, qkv)
        # Queries, keys and values per (graph, head) with one extra channel: 1 for queries, the key
        # padding bias for keys, so that one bmm gives q k^T + bias (no (B*H, W, W) bias copy).
        ext = qkv.new_empty(3, num_graphs, heads, width, head_dim + 1)
        ext[..., :head_dim].copy_(dense.view(num_graphs, width, 3, heads, head_dim).permute(2, 0, 3, 1, 4))
        ext[0, ..., head_dim] = 1.0
        ext[1, ..., head_dim] = layout.key_bias(heads, qkv.dtype).view(num_graphs, heads, width)
        query, key = (t.view(num_graphs * heads, width, head_dim + 1) for t in ext[:2])
        value = ext[2, ..., :head_dim].view(num_graphs * heads, width, head_dim)
        scores = torch.bmm(query, key.transpose(1, 2))  # (B*H, W, W)
        weights = torch.ops.aten._softmax.out(scores, -1, False, out=scores)  # in place: nothing else reads scores
        out = torch.bmm(weights, value).view(num_graphs, heads, width, head_dim).transpose(1, 2)
        out = out.reshape(num_graphs * width, self.hidden_dim).index_select(0, rows)
        return F.linear(out, self.out_weight, self.out_bias)
