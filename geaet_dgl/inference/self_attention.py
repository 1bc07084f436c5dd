"""Self-attention for inference: the score scale folded into the query projection, a norm's scale into
the output projection.

Same dense per-batch layout as :class:`~geaet_dgl.nn.self_attention.GraphSelfAttention` (the batch's
:class:`~geaet_dgl.nn.batch_layout.BatchLayout` and its cached key bias); no attention dropout. The
nodes' queries, keys and values are scattered with one ``index_copy_`` straight into a per-batch
(head, graph, position) buffer that every layer reuses (:func:`attention_workspace`). The key
padding bias rides in an extra channel of the queries (1) and keys (the bias), so the scores come
from one plain ``bmm`` instead of a ``baddbmm`` that first copies the bias into every score row;
the softmax runs in place.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout, layout_of
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

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) -> (N, d) as the layer's eval forward; ``edge_feat`` passes through."""
        layout = layout_of(graph, layout)
        num_graphs, width = layout.batch_size, layout.dense_width
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        rows = layout.dense_index  # node -> row of the (B * W) dense layout
        num_nodes = node_feat.shape[0]
        qkv = F.linear(node_feat, self.in_weight, self.in_bias)  # (N, 3d)
        workspace = attention_workspace(layout, heads, head_dim, qkv.dtype)  # (3, H, B * W, d/H + 1)
        # One scatter of the nodes' q, k, v rows into their (head, graph, position) slots; padding stays 0.
        workspace.view(3 * heads, num_graphs * width, head_dim + 1)[:, :, :head_dim].index_copy_(
            1, rows, qkv.view(num_nodes, 3 * heads, head_dim).transpose(0, 1))
        query, key = (t.view(heads * num_graphs, width, head_dim + 1) for t in workspace[:2])
        value = workspace[2, :, :, :head_dim].view(heads * num_graphs, width, head_dim)
        scores = torch.bmm(query, key.transpose(1, 2))  # (H*B, W, W): q k^T + key padding bias
        weights = torch.ops.aten._softmax.out(scores, -1, False, out=scores)  # in place: nothing else reads scores
        out = torch.bmm(weights, value).view(heads, num_graphs * width, head_dim).index_select(1, rows)
        return F.linear(out.transpose(0, 1).reshape(num_nodes, self.hidden_dim), self.out_weight,
                        self.out_bias), edge_feat


def attention_workspace(layout: BatchLayout, heads: int, head_dim: int, dtype: torch.dtype) -> torch.Tensor:
    """The batch's (3, H, B * W, d/H + 1) query/key/value buffer, built once and shared by every layer.

    Row ``graph * W + position`` of head ``h`` holds a node's query, key or value channels; padding
    rows stay zero. The extra last channel is 1 for queries and the key padding bias
    (:meth:`BatchLayout.key_bias`) for keys, so ``q_ext k_ext^T = q k^T + bias``. Each layer
    overwrites only the real rows' first ``d/H`` channels, after the previous layer is done with them.
    """
    def build() -> torch.Tensor:
        rows = layout.batch_size * layout.dense_width
        workspace = torch.zeros(3, heads, rows, head_dim + 1, dtype=dtype, device=layout.node_graph_id.device)
        workspace[0, :, :, head_dim] = 1.0
        bias = layout.key_bias(heads, dtype).view(layout.batch_size, heads, layout.dense_width)
        workspace[1, :, :, head_dim] = bias.transpose(0, 1).reshape(heads, rows)
        return workspace

    return layout.cached(("inference_attention_workspace", heads, head_dim, dtype), build)
