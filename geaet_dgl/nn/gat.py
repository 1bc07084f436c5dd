"""Graph attention with edge features (Velickovic et al. 2018), as PyG's ``GATConv(d, d // H, H, edge_dim=d)``.

For an edge :math:`j \\to i` and head :math:`h`, with :math:`W x` split into heads of width :math:`C = d / H`:

.. math::
    s_{ij}^h = \\mathrm{LeakyReLU}_{0.2}\\big(a_{src}^h \\cdot (W x_j)^h + a_{dst}^h \\cdot (W x_i)^h
               + a_{edge}^h \\cdot (W_e e_{ji})^h\\big), \\qquad
    \\alpha_{ij}^h = \\mathrm{softmax}_{j \\in N(i) \\cup \\{i\\}}(s_{ij}^h), \\\\
    x_i'^h = \\sum_{j \\in N(i) \\cup \\{i\\}} \\alpha_{ij}^h (W x_j)^h, \\qquad x_i' = \\Vert_h x_i'^h + b.

As PyG (``add_self_loops=True, fill_value='mean'``), self-loops already in the graph are dropped and
every node gets one, whose edge feature is the mean of the node's incoming edge features (zero
without any); :math:`W_e` is linear, so its score term is the mean of the incoming edges' terms.
Scores are one ``gsddmm``, the softmax DGL's ``edge_softmax``, the sum one ``gspmm``.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from dgl.nn.functional import edge_softmax
from torch import nn


def _glorot(param: torch.Tensor) -> None:
    """PyG's ``glorot``: uniform in +-sqrt(6 / (fan_in + fan_out)) over the last two dims."""
    bound = (6.0 / (param.size(-2) + param.size(-1))) ** 0.5
    nn.init.uniform_(param, -bound, bound)


def graph_with_own_self_loops(graph: dgl.DGLGraph) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """The graph without its self-loops and with one self-loop per node appended (edge ids E'..E'+N-1),
    and the (E',) ids in ``graph`` of the kept edges."""
    src, dst = graph.edges()
    kept = torch.nonzero(src != dst, as_tuple=True)[0]
    nodes = torch.arange(graph.num_nodes(), device=src.device)
    looped = dgl.graph((torch.cat([src[kept], nodes]), torch.cat([dst[kept], nodes])), num_nodes=graph.num_nodes())
    return looped, kept


class GATLayer(nn.Module):
    """Multi-head graph attention with edge features in the scores; edges pass through.

    Parameters
    ----------
    in_feats : int, node and edge width ``d``.
    out_feats : int, total output width ``H * C`` (the heads are concatenated).
    num_heads : int, ``H``; must divide ``out_feats``.
    edge_feats : int or None, edge width (None: no edge term).
    negative_slope : float

    Parameter names are PyG's (``lin.weight``, ``att_src``, ``att_dst``, ``lin_edge.weight``,
    ``att_edge``, ``bias``), so weights load one to one.

    Example
    -------
    >>> g = dgl.rand_graph(6, 20)
    >>> conv = GATLayer(8, 8, num_heads=2, edge_feats=8)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8))
    >>> x.shape
    torch.Size([6, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int, num_heads: int = 1, edge_feats: Optional[int] = None,
                 negative_slope: float = 0.2):
        super().__init__()
        if num_heads <= 0 or out_feats % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide out_feats={out_feats}")
        self.num_heads, self.head_dim, self.negative_slope = num_heads, out_feats // num_heads, negative_slope
        self.lin = nn.Linear(in_feats, out_feats, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, num_heads, self.head_dim))
        self.att_dst = nn.Parameter(torch.empty(1, num_heads, self.head_dim))
        self.lin_edge = nn.Linear(edge_feats, out_feats, bias=False) if edge_feats is not None else None
        self.att_edge = nn.Parameter(torch.empty(1, num_heads, self.head_dim)) if edge_feats is not None else None
        self.bias = nn.Parameter(torch.empty(out_feats))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _glorot(self.lin.weight)
        _glorot(self.att_src)
        _glorot(self.att_dst)
        if self.lin_edge is not None:
            _glorot(self.lin_edge.weight)
            _glorot(self.att_edge)
        nn.init.zeros_(self.bias)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats), (E, edge_feats) -> (N, out_feats); ``edge_feat`` passes through.

        ``layout`` (optional) keeps the self-looped graph for the batch's other layers;
        ``pe_dist`` and ``edge_output`` are the branch convention's (:mod:`.branches`), unused.
        """
        heads, width = self.num_heads, self.head_dim
        looped, kept = (layout.cached("gat_self_looped_graph", lambda: graph_with_own_self_loops(graph))
                        if layout is not None else graph_with_own_self_loops(graph))
        h = self.lin(node_feat).view(-1, heads, width)
        score_src = (h * self.att_src).sum(-1)  # (N, H)
        score_dst = (h * self.att_dst).sum(-1)
        num_kept = kept.numel()
        if self.lin_edge is not None:
            if edge_feat is None:
                raise ValueError("GATLayer with edge_feats needs edge features")
            edge_score = (self.lin_edge(edge_feat.index_select(0, kept)).view(-1, heads, width)
                          * self.att_edge).sum(-1)  # (E', H)
            # The self-loop's feature is the mean of the node's incoming features: its score term too (linear).
            dst = looped.edges()[1][:num_kept]
            total = edge_score.new_zeros(graph.num_nodes(), heads).index_add_(0, dst, edge_score)
            count = torch.bincount(dst, minlength=graph.num_nodes()).clamp_(min=1).to(edge_score.dtype)
            edge_score = torch.cat([edge_score, total / count.unsqueeze(-1)], 0)
        else:
            edge_score = None
        scores = dgl.ops.u_add_v(looped, score_src, score_dst)  # (E' + N, H)
        if edge_score is not None:
            scores = scores + edge_score
        alpha = edge_softmax(looped, F.leaky_relu(scores, self.negative_slope))
        out = dgl.ops.u_mul_e_sum(looped, h, alpha.unsqueeze(-1))  # (N, H, C)
        return out.reshape(-1, heads * width) + self.bias, edge_feat
