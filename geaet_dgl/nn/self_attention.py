"""Multi-head self-attention among the nodes of each graph of a batch.

Nodes are scattered into a padded (B, W, d) tensor, W the largest graph's node
count, rounded up to a multiple of 16 when that adds little
(:attr:`BatchLayout.dense_width`: CPU softmax runs fully vectorised on such widths). The
scores and the key-padding bias come from one batched GEMM (``baddbmm``; the
bias is built once per batch, :meth:`BatchLayout.key_bias`), then softmax,
dropout and a second GEMM; the result is gathered back to (N, d). This is
``scaled_dot_product_attention``'s math without its mask conversion and copies:
1.3-1.7x faster on CPU at MNIST's sizes.
Parameters carry the names of ``torch.nn.MultiheadAttention`` (``in_proj_weight``,
``in_proj_bias``, ``out_proj``) so weights load from the reference unchanged.

The eval-mode fast paths sit beside the layer: :meth:`GraphSelfAttention.folded` (the score scale in the
query projection, a following norm's scale in the output projection, :class:`FoldedSelfAttention`) and
:meth:`GraphSelfAttention.attend_in_chunks` (one whole graph, its queries in chunks, for layer-wise
inference). All read the layer's projections and :attr:`GraphSelfAttention.score_scale`.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .batch_layout import BatchLayout, layout_of
from .fast_exp import LOG2E, exp_
from .narrow_products import attention_scores, weighted_values
from .norm import Affine, scale_rows

#: The most nodes one graph of a batch may have: the dense (W x W) scores per head grow with its square
#: (4 heads at 8,192 nodes: 1.07 GB per layer, three such buffers in training). GraphGPS's node files
#: (Actor: 7,600 nodes, squirrel: 5,201) attend over their whole graph; the training step's memory is
#: checked against what the machine has before the run (``training.node_task.check_batches_fit``).
MAX_DENSE_NODES = 8192


class GraphSelfAttention(nn.Module):
    """Full self-attention within each graph.

    .. math::
        \\mathrm{Attn}(X) = \\mathrm{softmax}\\big(Q K^T / \\sqrt{d/H}\\big) V W_o

    computed per graph and per head, with ``Q, K, V = X W_Q, X W_K, X W_V``.

    Parameters
    ----------
    hidden_dim : int
    num_heads : int, must divide ``hidden_dim``.
    attn_dropout : float, dropout on the attention weights.

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(4, 6), dgl.rand_graph(2, 2)])
    >>> x, _ = GraphSelfAttention(8, 2)(g, torch.randn(6, 8))
    >>> x.shape
    torch.Size([6, 8])
    """

    def __init__(self, hidden_dim: int, num_heads: int, attn_dropout: float = 0.0):
        super().__init__()
        if hidden_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide hidden_dim={hidden_dim}")
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.attn_dropout = attn_dropout
        self.in_proj_weight = nn.Parameter(torch.empty(3 * hidden_dim, hidden_dim))
        self.in_proj_bias = nn.Parameter(torch.empty(3 * hidden_dim))
        self.out_proj = nn.Linear(hidden_dim, hidden_dim)
        # Set ``keep_attention`` to keep each forward's (B, H, N_max, N_max) weights in
        # ``last_attention`` (for inspection, e.g. ``geaet-dgl attention``); off by default.
        self.keep_attention = False
        self.last_attention: Optional[torch.Tensor] = None
        self.reset_parameters()

    @property
    def score_scale(self) -> float:
        """The factor of the scores :math:`q k^T`: :math:`1 / \\sqrt{d / H}`."""
        return (self.hidden_dim // self.num_heads) ** -0.5

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)
        self.out_proj.reset_parameters()
        nn.init.zeros_(self.out_proj.bias)

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
        """(N, d) -> (N, d): each node attends to every node of its own graph; ``edge_feat`` passes through.

        With ``keep_attention`` set the attention weights are kept in
        ``last_attention``: a (B, H, N_max, N_max) tensor, ``[b, h, q, k]`` the
        weight query node q puts on key node k of graph b (positions in
        ``layout.node_position``; rows of padding queries are meaningless,
        padding keys get 0), before attention dropout. ``pe_dist`` and
        ``edge_output`` are the branch calling convention's (:mod:`.branches`), unused.
        ``attn_bias`` (B * H, W, W), W = ``layout.dense_width``, is added to the
        scaled scores (:class:`~.biased_attention.BiasedGraphSelfAttention`).
        """
        layout = layout_of(graph, layout)
        if layout.max_nodes > MAX_DENSE_NODES:
            raise ValueError(f"dense self-attention takes graphs of at most {MAX_DENSE_NODES:,} nodes, got one of "
                             f"{layout.max_nodes:,}; cut the graph into smaller batches (--sampler cluster) or set "
                             "model.attention=none")
        num_graphs, width = layout.batch_size, layout.dense_width
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        rows = layout.dense_index  # node -> row of the (B * W) dense layout

        qkv = F.linear(node_feat, self.in_proj_weight, self.in_proj_bias)  # (N, 3d)
        dense = qkv.new_zeros(num_graphs * width, 3 * self.hidden_dim).index_copy(0, rows, qkv)
        dense = dense.view(num_graphs, width, 3, heads, head_dim).permute(2, 0, 3, 1, 4)
        query, key, value = (t.reshape(num_graphs * heads, width, head_dim) for t in dense)  # (B*H, W, d/H)
        # Scores with the key padding bias in one batched GEMM, then softmax over the keys.
        bias = self.scores_bias(layout, qkv.dtype, attn_bias)
        scores = attention_scores(bias, query, key, self.score_scale)
        weights = _InPlaceSoftmax.apply(scores)  # (B*H, W, W); scores is a fresh buffer nothing else reads
        out = weighted_values(F.dropout(weights, self.attn_dropout, self.training), value)  # (B*H, W, d/H)
        out = out.view(num_graphs, heads, width, head_dim).transpose(1, 2).reshape(num_graphs * width, -1)
        out = self.out_proj(out.index_select(0, rows))
        if self.keep_attention:
            n = layout.max_nodes
            self.last_attention = weights.view(num_graphs, heads, width, width)[:, :, :n, :n].detach()
        return out, edge_feat

    def scores_bias(self, layout: BatchLayout, dtype: torch.dtype, attn_bias: Optional[torch.Tensor] = None
                    ) -> torch.Tensor:
        """What the forward adds to the scaled scores: the key padding bias (B * H, 1, W), plus ``attn_bias``
        (B * H, W, W) where given."""
        bias = layout.key_bias(self.num_heads, dtype)
        return bias if attn_bias is None else bias + attn_bias

    def folded(self, out_affine: Optional[Affine] = None) -> Optional["FoldedSelfAttention"]:
        """``out_affine(self(x))`` as an eval-mode copy (:class:`FoldedSelfAttention`), or None for a subclass
        (its forward differs) and while ``keep_attention`` is set (the weights are kept by this forward only)."""
        if type(self) is not GraphSelfAttention or self.keep_attention:
            return None
        return FoldedSelfAttention(self, out_affine)

    @torch.no_grad()
    def attend_in_chunks(self, node_feat: torch.Tensor, chunks: List[Tuple[int, int]]) -> torch.Tensor:
        """Eval-mode self-attention among all (N, d) nodes of one graph, ``(start, stop)`` query chunks at a time.

        Exact: each chunk's queries against every key, ``(H, chunk, N)`` scores alive at a time; for one graph
        too large for the dense ``(H, N, N)`` scores (layer-wise inference). Returns (N, d).
        """
        d, heads = self.hidden_dim, self.num_heads
        weight, bias = self.in_proj_weight, self.in_proj_bias
        num_nodes = node_feat.shape[0]
        key = F.linear(node_feat, weight[d:2 * d], bias[d:2 * d]).view(num_nodes, heads, -1).transpose(0, 1)
        value = F.linear(node_feat, weight[2 * d:], bias[2 * d:]).view(num_nodes, heads, -1).transpose(0, 1)
        parts = []
        for start, stop in chunks:
            query = F.linear(node_feat[start:stop], weight[:d], bias[:d]).view(stop - start, heads, -1).transpose(0, 1)
            out = F.scaled_dot_product_attention(query, key, value, scale=self.score_scale)  # (H, n, d/H)
            parts.append(self.out_proj(out.transpose(0, 1).reshape(stop - start, d)))
        return torch.cat(parts)


class FoldedSelfAttention(nn.Module):
    """``out_affine(GraphSelfAttention(x))`` in eval mode: (N, d) -> (N, d). Built by :meth:`GraphSelfAttention.folded`.

    The score scale is folded into the query projection, ``out_affine`` (a following BatchNorm's
    ``(scale, shift)``) into ``out_proj``; no attention dropout. The nodes' queries, keys and values are
    scattered with one ``index_copy_`` straight into a per-batch (head, graph, position) buffer that every
    layer reuses (:func:`attention_workspace`). The key padding bias rides in an extra channel of the
    queries (1) and keys (the bias), so the scores come from one plain ``bmm`` instead of a ``baddbmm``
    that first copies the bias into every score row; the softmax runs in place.
    """

    def __init__(self, attention: GraphSelfAttention, out_affine: Optional[Affine] = None):
        super().__init__()
        d, heads = attention.hidden_dim, attention.num_heads
        self.hidden_dim, self.num_heads = d, heads
        with torch.no_grad():
            scale = torch.ones(3 * d, dtype=attention.in_proj_weight.dtype, device=attention.in_proj_weight.device)
            scale[:d] = attention.score_scale  # softmax(s q k^T) = softmax((s q) k^T)
            self.in_weight = (attention.in_proj_weight * scale[:, None]).detach()
            self.in_bias = (attention.in_proj_bias * scale).detach()
        self.out_weight, self.out_bias = scale_rows(attention.out_proj.weight, attention.out_proj.bias, out_affine)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) -> (N, d) as the layer's eval forward; ``edge_feat`` passes through."""
        layout = layout_of(graph, layout)
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        workspace = self.scattered_qkv(layout, node_feat)
        query, key = (t.view(heads * layout.batch_size, layout.dense_width, head_dim + 1) for t in workspace[:2])
        scores = torch.bmm(query, key.transpose(1, 2), out=scores_buffer(layout, heads, query.dtype))  # q k^T + bias
        weights = softmax_(scores)  # in place: nothing else reads scores
        return self.attend(weights, workspace, layout), edge_feat

    def scattered_qkv(self, layout: BatchLayout, node_feat: torch.Tensor) -> torch.Tensor:
        """The nodes' (N, d) features projected to q, k, v and scattered with one ``index_copy_`` into their
        (head, graph, position) slots of the batch's workspace (:func:`attention_workspace`), padding rows 0:
        (3, H, B * W, d/H + 1)."""
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        qkv = F.linear(node_feat, self.in_weight, self.in_bias)  # (N, 3d)
        workspace = attention_workspace(layout, heads, head_dim, qkv.dtype)
        workspace.view(3 * heads, layout.batch_size * layout.dense_width, head_dim + 1)[:, :, :head_dim].index_copy_(
            1, layout.dense_index, qkv.view(node_feat.shape[0], 3 * heads, head_dim).transpose(0, 1))
        return workspace

    def attend(self, weights: torch.Tensor, workspace: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(H * B, W, W) attention ``weights`` times the workspace's values, back to the nodes' rows and through
        the folded ``out_proj``: (N, d)."""
        heads, head_dim = self.num_heads, self.hidden_dim // self.num_heads
        rows = layout.dense_index  # node -> row of the (B * W) dense layout
        graphs, width = layout.batch_size, layout.dense_width
        value = workspace[2, :, :, :head_dim].view(heads * graphs, width, head_dim)
        out = weighted_values(weights, value)  # (H*B, W, d/H): a view of (H*B, d/H, W), see narrow_products
        out = out.transpose(1, 2).reshape(heads, graphs, head_dim, width).transpose(1, 2)  # (H, d/H, B, W)
        out = out.reshape(self.hidden_dim, graphs * width).index_select(1, rows)  # (d, N), channel h * d/H + c
        return F.linear(out.t(), self.out_weight, self.out_bias)


#: Widths whose rows CPU softmax runs in whole vectors (16 float32 lanes of AVX-512; 8 of AVX2 divide them too).
SOFTMAX_VECTOR_WIDTH = 16
#: Floor of the max-shifted scores before ``exp`` in :func:`softmax_`: :math:`e^{-80}` is still a normal float32.
EXP_FLOOR = -80.0
# above exp(EXP_FLOOR)'s float32 rounding, by either kernel of fast_exp
_EXP_FLOOR_VALUE = max(float(torch.tensor(EXP_FLOOR).exp()), float(torch.tensor(EXP_FLOOR * LOG2E).exp2())) * (1 + 1e-6)


def softmax_(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension, in place (nothing may read ``scores`` afterwards; no autograd).

    Where the rows' width is not a multiple of :data:`SOFTMAX_VECTOR_WIDTH`, PyTorch's CPU softmax kernel
    runs each row's tail element by element (at ZINC's 37 keys it takes longer than at 48); the same
    ``exp(x - max) / sum`` as whole-tensor ops (row max, subtract, exp in place, row sum, divide) is 1.8x
    faster there (``exp`` by :func:`~.fast_exp.exp_`: on AMD CPUs ``exp2`` of the scores times ``log2 e``).
    The shifted scores are clamped at :data:`EXP_FLOOR` first: ``exp_`` of the padding's
    -3.4e38 (or of anything below about -87, where the result is denormal) takes a slow path, 30-50x slower
    than the whole exp. The floored entries (weights below :math:`e^{-80} \\approx 2 \\cdot 10^{-35}`: the padding
    keys, and keys that far below the row's best) are then set to exactly 0, as PyTorch's kernel leaves
    them: tiny weights would make denormal products in the backward (4x slower multiplies). Multiples of
    the vector width keep the one fused kernel.
    """
    if scores.shape[-1] % SOFTMAX_VECTOR_WIDTH == 0 or scores.device.type != "cpu":
        return torch.ops.aten._softmax.out(scores, -1, False, out=scores)
    top = scores.amax(-1, keepdim=True)
    exp_(scores.sub_(top).clamp_(min=EXP_FLOOR))
    torch.threshold_(scores, _EXP_FLOOR_VALUE, 0.0)  # the floored entries (padding keys) back to exactly 0
    return scores.div_(scores.sum(-1, keepdim=True))


class _InPlaceSoftmax(torch.autograd.Function):
    """:func:`softmax_` on a fresh (.., W) buffer, differentiable: backward is PyTorch's softmax backward, from
    the saved output alone (as ``torch.softmax``'s)."""

    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        ctx.mark_dirty(scores)
        weights = softmax_(scores)
        ctx.save_for_backward(weights)
        return weights

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        weights, = ctx.saved_tensors
        return torch._softmax_backward_data(grad, weights, -1, weights.dtype)


def scores_buffer(layout: BatchLayout, heads: int, dtype: torch.dtype) -> torch.Tensor:
    """The batch's (H * B, W, W) scores buffer, allocated once and overwritten by every layer's scores (each
    layer is done with its weights before the next one starts): one allocation of B W^2 H floats a batch
    instead of one a layer, each of which the allocator may serve with freshly mapped pages."""
    rows = heads * layout.batch_size
    return layout.cached(("inference_attention_scores", heads, dtype), lambda: torch.empty(
        rows, layout.dense_width, layout.dense_width, dtype=dtype, device=layout.node_graph_id.device))


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
