"""GEANet: graph external attention on nodes and edges.

For node features :math:`X \\in R^{N \\times d}` split into ``H`` heads of width
``S`` (``d = H S``), each head attends to ``S`` learned external memory slots:

.. math::
    A = \\mathrm{DNorm}(X_h U_k^T + b_k), \\qquad X_h' = A U_v^T + b_v,

with the double normalisation
:math:`\\hat a_{is} = \\exp a_{is} / \\sum_{j} \\exp a_{js}` (softmax over the nodes)
followed by :math:`a_{is} = \\hat a_{is} / \\sum_{t} \\hat a_{it}` (over the slots).
The key/value units :math:`U_k, U_v \\in R^{S \\times S}` are shared by all heads,
as in the reference implementation. Edges get their own pair of units; an
optional shared unit :math:`U_s \\in R^{d \\times d}` is applied to nodes and edges
first.

The node softmax runs over the nodes of each graph (``scope='graph'``, the
paper's equation) or over every node of the mini-batch (``scope='batch'``, what
the reference computes and what produced the paper's numbers).

Key unit, double normalisation and value unit are :func:`external_attention`, which the training
forward and the folded eval-mode copy (:meth:`GEANet.folded`, :class:`FoldedGEANet`: the units as
pre-built matrices, the shared unit composed with the key unit) both call; the units on heads are
:func:`linear_on_heads` or one block-diagonal product (:func:`heads_as_one_linear`).

The paper's equations (``model.geanet.variant='paper'``) are a separate module, :mod:`.paper_geanet`.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .batch_layout import BatchLayout
from .fast_exp import exp_
from .short_rows import along_last_dim, last_dim_sums
from .norm import Affine, scale_rows

SCOPES = ("graph", "batch")


class _BatchDoubleNorm(torch.autograd.Function):
    """Softmax over all rows, then each row normalised over its last dim, with an explicit backward.

    Forward keeps one (M, H, S) buffer (normalised in place) and saves it with
    the (M, H, 1) row sums; backward needs two more buffers. Autograd through the
    same expression would keep four full-size intermediates alive.

    With ``p = softmax_rows(s)`` and ``a = p / r``, ``r_i = sum_t p_it``, the
    gradient ``g = dL/da`` gives ``u = g - sum_t g_it a_it`` (the row
    normalisation's backward, times ``r``) and ``dL/ds = a * (u - r * c)``,
    ``c = sum_i u_i a_i`` (the softmax's backward).
    """

    @staticmethod
    def forward(ctx, scores: torch.Tensor) -> torch.Tensor:
        attn, row_sums = _batch_double_normalize(scores, out=None)
        ctx.save_for_backward(attn, row_sums)
        return attn

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        attn, row_sums = ctx.saved_tensors
        buf = torch.mul(grad, attn)
        u = torch.sub(grad, along_last_dim(last_dim_sums(buf), buf), out=buf)
        column = (u * attn).sum(dim=0, keepdim=True)
        return u.addcmul_(along_last_dim(row_sums, u), column, value=-1.0).mul_(attn)


def _batch_double_normalize(scores: torch.Tensor, out: Optional[torch.Tensor]
                             ) -> Tuple[torch.Tensor, torch.Tensor]:
    """Softmax over all M rows, then each row divided by its sum over the last dim; also those (M, H, 1) sums.

    Written into ``out`` (which may be ``scores`` itself) or a fresh tensor: one (M, H, S) buffer (and, for the
    row division, one more while it runs).
    """
    attn = exp_(torch.sub(scores, scores.amax(dim=0, keepdim=True), out=out))
    attn.div_(attn.sum(dim=0, keepdim=True))
    row_sums = last_dim_sums(attn)  # short_rows: faster on CPU than sum(-1) and a broadcast division
    return attn.mul_(along_last_dim(row_sums.reciprocal(), attn)), row_sums


def double_normalize(scores: torch.Tensor, seglen: Optional[torch.Tensor], in_place: bool = False,
                     column_lse: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Softmax over rows (per segment when ``seglen`` is given), then rows sum to 1 over the last dim.

    Parameters
    ----------
    scores : (M, H, S) tensor, one row per node or edge.
    seglen : (B,) int tensor of segment lengths summing to M, or ``None`` for one
        softmax over all M rows.
    in_place : bool
        Overwrite ``scores`` (contiguous) with the result, without autograd: for the
        inference path (:mod:`geaet_dgl.inference`), which keeps no graph of the forward.
    column_lse : (H, S) tensor, optional
        :math:`\log \sum_j \exp s_{js}` over a larger set of rows that
        ``scores`` is a part of (:func:`column_logsumexp`): the rows are then
        normalised as rows of that set, :math:`a_{is} = \mathrm{softmax}_t(s_{it} -
        \mathrm{lse}_t)` (the softmax over rows only rescales each column, and the
        row normalisation keeps only the columns' ratios). ``seglen`` is ignored.

    Returns
    -------
    (M, H, S) tensor whose entries along the last dim sum to one.
    """
    if scores.shape[0] == 0:
        return scores
    if column_lse is not None:
        return torch.softmax(scores - column_lse, dim=-1)
    if seglen is None or seglen.numel() == 1:
        # One softmax over all M rows (one graph's scope is the batch's: a full-graph node task). torch.softmax(scores, dim=0) reduces along the
        # strided first dimension slowly on CPU; _BatchDoubleNorm also allocates less.
        if in_place:
            return _batch_double_normalize(scores, out=scores)[0]
        return _BatchDoubleNorm.apply(scores.contiguous())
    attn = dgl.ops.segment_softmax(seglen, scores)
    if in_place:
        return attn.div_(attn.sum(dim=-1, keepdim=True))
    return attn / attn.sum(dim=-1, keepdim=True)


def column_logsumexp(chunks) -> torch.Tensor:
    """(H, S) :math:`\log \sum_j \exp s_{js}` over the rows of an iterable of (M_k, H, S) score chunks."""
    total = None
    for scores in chunks:
        if scores.shape[0] == 0:
            continue
        part = torch.logsumexp(scores, dim=0)
        total = part if total is None else torch.logaddexp(total, part)
    if total is None:
        raise ValueError("column_logsumexp needs at least one row")
    return total


def segment_lengths(graph: dgl.DGLGraph, layout: Optional[BatchLayout], scope: str
                    ) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor]]:
    """(B,) nodes and (B,) edges per graph for ``scope='graph'`` (from ``layout`` when given), None for 'batch'."""
    if scope != "graph":
        return None, None
    if layout is not None:
        return layout.num_nodes_per_graph, layout.num_edges_per_graph
    return graph.batch_num_nodes(), graph.batch_num_edges()


def heads_as_one_linear(unit: nn.Linear, num_heads: int, input_order: Optional[torch.Tensor] = None
                        ) -> Tuple[torch.Tensor, torch.Tensor]:
    """One (d, d) weight and (d,) bias that apply the (S, S) ``unit`` to every head at once.

    ``F.linear(x, *heads_as_one_linear(unit, H))`` on (M, H*S) features whose
    head ``h`` is channels ``h*S .. h*S+S-1`` equals ``unit`` on
    ``x.reshape(M, H, S)``, reshaped back: the weight is block diagonal.
    ``input_order[j]`` names the block-diagonal column that input channel ``j``
    feeds (the reference's strided edge layout sends channel ``s*H + h`` to slot
    ``s`` of head ``h``); the output is always in contiguous head blocks. One
    (M, d) x (d, d) product is faster on CPU than M*H products with K = S, and
    a strided input needs no transposed copy.
    """
    weight = torch.block_diag(*([unit.weight] * num_heads))
    if input_order is not None:
        weight = weight[:, input_order]
    return weight, unit.bias.repeat(num_heads)


def linear_on_heads(feat: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, num_heads: int,
                    strided: bool = False) -> torch.Tensor:
    """(M, H*S) -> (M, H*S): the (S, S) unit ``(weight, bias)`` applied to each head's S channels, output in
    contiguous head blocks. Input head ``h`` is channels ``h*S .. h*S+S-1``, or with ``strided`` the
    reference's edge layout: channels ``h, h+H, h+2H, ...``."""
    rows, width = feat.shape
    unit_size = width // num_heads
    if strided:
        heads = feat.reshape(rows, unit_size, num_heads).transpose(1, 2)
    else:
        heads = feat.reshape(rows, num_heads, unit_size)
    return F.linear(heads, weight, bias).reshape(rows, width)


def external_attention(feat: torch.Tensor, key: Callable[[torch.Tensor], torch.Tensor],
                       value: Callable[[torch.Tensor], torch.Tensor], num_heads: int,
                       seglen: Optional[torch.Tensor], column_lse: Optional[torch.Tensor] = None,
                       in_place: bool = False) -> Tuple[torch.Tensor, torch.Tensor]:
    """``value(DNorm(key(feat)))`` for (M, d) rows: (M, d) output and the (M, H, S) attention.

    ``key`` and ``value`` map (M, d) to (M, d) (the units on heads, the shared unit composed in);
    ``seglen``, ``column_lse`` and ``in_place`` as :func:`double_normalize`'s.
    """
    scores = key(feat)
    rows, width = scores.shape
    attn = double_normalize(scores.view(rows, num_heads, width // num_heads), seglen, in_place=in_place,
                            column_lse=column_lse)
    return value(attn.reshape(rows, width)), attn


class GEANet(nn.Module):
    """Multi-head graph external attention on nodes and (optionally) edges.

    Parameters
    ----------
    hidden_dim : int
        Width ``d`` of node and edge features.
    num_heads : int
        Number of heads ``H``.
    unit_size : int, optional
        Number of external slots ``S``; the reference requires ``H * S == d``,
        so it defaults to ``d // H``.
    node_unit, edge_unit, shared_unit : bool
        Switches for the paper's ablation. A disabled node or edge unit passes
        its features through unchanged; the shared unit, when enabled, is applied
        to the node features and, if the edge unit is on, to the edge features.
    scope : {'graph', 'batch'}
        Where the softmax over rows runs (see the module docstring).

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(5, 12), dgl.rand_graph(3, 4)])
    >>> net = GEANet(16, num_heads=4, unit_size=4, edge_unit=True)
    >>> x, e = net(g, torch.randn(8, 16), torch.randn(16, 16))
    >>> x.shape, e.shape
    (torch.Size([8, 16]), torch.Size([16, 16]))
    """

    def __init__(
        self,
        hidden_dim: int,
        num_heads: int = 4,
        unit_size: Optional[int] = None,
        node_unit: bool = True,
        edge_unit: bool = False,
        shared_unit: bool = False,
        scope: str = "graph",
    ):
        super().__init__()
        unit_size = hidden_dim // num_heads if unit_size is None else unit_size
        if scope not in SCOPES:
            raise ValueError(f"scope={scope!r} is not one of {', '.join(SCOPES)}")
        if num_heads * unit_size != hidden_dim:
            raise ValueError(
                f"num_heads * unit_size = {num_heads}*{unit_size} must equal hidden_dim={hidden_dim}"
            )
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.unit_size = unit_size
        self.scope = scope
        self.node_unit = node_unit
        self.edge_unit = edge_unit
        self.shared_unit = shared_unit
        # Names follow the reference so that weights transfer one to one.
        if node_unit:
            self.node_U1 = nn.Linear(unit_size, unit_size)
            self.node_U2 = nn.Linear(unit_size, unit_size)
        if edge_unit:
            self.edge_U1 = nn.Linear(unit_size, unit_size)
            self.edge_U2 = nn.Linear(unit_size, unit_size)
        if shared_unit:
            self.share_U = nn.Linear(hidden_dim, hidden_dim)
        # Edge channel s*H + h belongs to slot s of head h (the reference's strided split).
        strided = torch.arange(hidden_dim).reshape(num_heads, unit_size).t().reshape(-1)
        self.register_buffer("_edge_input_order", strided, persistent=False)
        # With few heads the (S, S) units run as one block-diagonal (d, d) product: H times the FLOPs of
        # one product per head, but a (M*H, S) x (S, S) product with K = S <= ~24 is slow on CPU, and a
        # strided input needs no transposed copy. With many heads the H-fold FLOPs cost more (measured:
        # d = 40, 64, 96 at H = 4 faster as one product; d = 224 at H = 8 slower).
        self.one_product = num_heads <= 4
        self.last_node_attention: Optional[torch.Tensor] = None
        self.keep_attention = False

    def reset_parameters(self) -> None:
        for module in self.children():
            module.reset_parameters()

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        *,
        layout: Optional[BatchLayout] = None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
        node_lse: Optional[torch.Tensor] = None,
        edge_lse: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """Apply external attention.

        Parameters
        ----------
        graph : batched DGLGraph with N nodes and E edges.
        node_feat : (N, d)
        edge_feat : (E, d) or None
        layout : the batch's :class:`~.batch_layout.BatchLayout`, for its per-graph sizes (read
            from ``graph`` when None).
        pe_dist : unused (the branch calling convention, :mod:`.branches`).
        edge_output : bool, False to skip the edges (None is returned for them).
        node_lse, edge_lse : optional (H, S) tensors
            Column log-sum-exps of :meth:`scores` over a whole graph these rows are
            part of: layer-wise inference (:mod:`geaet_dgl.inference.layerwise`)
            normalises chunks of a graph as the whole graph (:func:`double_normalize`).

        Returns
        -------
        (N, d) node output and (E, d) edge output (``edge_feat`` itself when
        the edge unit is off).
        """
        if node_feat.shape[-1] != self.hidden_dim:
            raise ValueError(f"node_feat has width {node_feat.shape[-1]}, expected {self.hidden_dim}")
        node_seglen, edge_seglen = segment_lengths(graph, layout, self.scope)
        if not edge_output:
            edge_feat = None

        if self.shared_unit:
            node_feat = self.share_U(node_feat)
        node_out = node_feat
        if self.node_unit:
            node_out, attn = external_attention(node_feat, lambda x: self.unit_on_heads(self.node_U1, x),
                                                lambda a: self.unit_on_heads(self.node_U2, a), self.num_heads,
                                                node_seglen, node_lse)
            if self.keep_attention:
                self.last_node_attention = attn.detach()

        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            if self.shared_unit:
                edge_feat = self.share_U(edge_feat)
            # The reference splits edge channels across heads with a stride
            # (channel s*H + h goes to head h) but writes the output back in
            # contiguous head blocks; reproduced as is for weight parity.
            edge_out, _ = external_attention(edge_feat, lambda x: self.unit_on_heads(self.edge_U1, x, strided=True),
                                             lambda a: self.unit_on_heads(self.edge_U2, a), self.num_heads,
                                             edge_seglen, edge_lse)
        return node_out, edge_out

    def scores(self, feat: torch.Tensor, kind: str = "node") -> torch.Tensor:
        """(M, d) node (``kind='node'``) or edge features -> the (M, H, S) scores the double norm reads."""
        if self.shared_unit:
            feat = self.share_U(feat)
        unit = self.node_U1 if kind == "node" else self.edge_U1
        out = self.unit_on_heads(unit, feat, strided=kind == "edge")
        return out.view(feat.shape[0], self.num_heads, self.unit_size)

    def unit_on_heads(self, unit: nn.Linear, feat: torch.Tensor, strided: bool = False) -> torch.Tensor:
        """(M, d) -> (M, d): ``unit`` applied to each head's S channels; output in contiguous head blocks.

        Input head ``h`` is channels ``h*S .. h*S+S-1``, or with ``strided`` the reference's edge layout:
        channels ``h, h+H, h+2H, ...``.
        """
        if self.one_product:
            order = self._edge_input_order if strided else None
            return F.linear(feat, *heads_as_one_linear(unit, self.num_heads, order))
        return linear_on_heads(feat, unit.weight, unit.bias, self.num_heads, strided)

    def folded(self, out_affine: Optional[Affine] = None) -> Optional["FoldedGEANet"]:
        """``(s * y + t, edge_out)`` for ``out_affine = (s, t)`` as an eval-mode copy (:class:`FoldedGEANet`),
        where this forward returns ``(y, edge_out)``; None for a subclass and while ``keep_attention`` is
        set (the attention is kept by this forward only)."""
        if type(self) is not GEANet or self.keep_attention:
            return None
        return FoldedGEANet(self, out_affine)

    def extra_repr(self) -> str:
        return (
            f"hidden_dim={self.hidden_dim}, num_heads={self.num_heads}, unit_size={self.unit_size}, "
            f"node_unit={self.node_unit}, edge_unit={self.edge_unit}, shared_unit={self.shared_unit}, "
            f"scope={self.scope!r}"
        )


def _compose(outer: Tuple[torch.Tensor, torch.Tensor], inner: Optional[nn.Linear]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(W, b) after ``inner``: the weight and bias of ``x -> W inner(x) + b`` (``inner`` None: (W, b))."""
    weight, bias = outer
    if inner is None:
        return weight.detach(), bias.detach()
    return (weight @ inner.weight).detach(), (weight @ inner.bias + bias).detach()


class _UnitMap:
    """A pre-built (M, d) -> (M, d) map: one dense product (``strided`` None), or one (S, S) unit on each head
    (:func:`linear_on_heads`; ``strided`` True: the reference's edge layout)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor, num_heads: int, strided: Optional[bool] = None):
        self.weight, self.bias, self.num_heads, self.strided = weight.detach(), bias.detach(), num_heads, strided

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.strided is None:
            return F.linear(x, self.weight, self.bias)
        return linear_on_heads(x, self.weight, self.bias, self.num_heads, self.strided)


class FoldedGEANet(nn.Module):
    """Eval-mode :class:`GEANet` with an optional affine map on its node output. Built by :meth:`GEANet.folded`.

    ``forward(graph, node_feat, edge_feat, layout=...)`` returns ``(s * y + t, edge_out)`` for
    ``out_affine = (s, t)``, where GEANet returns ``(y, edge_out)``. ``share_U`` followed by the key unit
    is one linear map (their product), built once per folding; so are the block-diagonal (or strided)
    units that the training module rebuilds every forward. The map is folded into the node value unit
    when that unit is one dense product; with many heads the module applies its (S, S) units per head
    (``one_product`` False: H times fewer FLOPs than the block-diagonal product), which a per-channel
    scale cannot enter, and the map is one ``addcmul`` after it. The double normalisation runs in place.
    """

    def __init__(self, net: GEANet, out_affine: Optional[Affine] = None):
        super().__init__()
        heads = net.num_heads
        self.hidden_dim, self.num_heads, self.scope = net.hidden_dim, heads, net.scope
        self.node_unit, self.edge_unit = net.node_unit, net.edge_unit
        self.out_affine: Optional[Affine] = None  # applied after the node value unit when not folded into it
        shared = net.share_U if net.shared_unit else None

        def unit(linear: nn.Linear, strided: bool = False, inner: Optional[nn.Linear] = None, affine=None) -> _UnitMap:
            if net.one_product or inner is not None:  # one dense product (a composed one with the shared unit)
                order = net._edge_input_order if strided else None
                weight, bias = _compose(heads_as_one_linear(linear, heads, order), inner)
                return _UnitMap(*scale_rows(weight, bias, affine), heads)
            return _UnitMap(linear.weight, linear.bias, heads, strided)

        with torch.no_grad():
            self.node_value = None
            if net.node_unit:
                self.node_key = unit(net.node_U1, inner=shared)
                if net.one_product or out_affine is None:
                    self.node_value = unit(net.node_U2, affine=out_affine)
                else:
                    self.node_value = unit(net.node_U2)
                    self.out_affine = out_affine
            elif shared is not None:
                self.node_value = _UnitMap(*scale_rows(shared.weight, shared.bias, out_affine), heads)
            elif out_affine is not None:
                self.node_value = _UnitMap(torch.diag(out_affine[0]), out_affine[1].clone(), heads)
            if net.edge_unit:
                self.edge_key = unit(net.edge_U1, strided=True, inner=shared)
                self.edge_value = unit(net.edge_U2)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) or None -> (N, d), (E, d) or None, as the module's eval forward."""
        if node_feat.shape[-1] != self.hidden_dim:
            raise ValueError(f"node_feat has width {node_feat.shape[-1]}, expected {self.hidden_dim}")
        node_seglen, edge_seglen = segment_lengths(graph, layout, self.scope)
        if not edge_output:
            edge_feat = None
        if self.node_unit:
            node_out, _ = external_attention(node_feat, self.node_key, self.node_value, self.num_heads, node_seglen,
                                             in_place=True)
            if self.out_affine is not None:
                node_out = torch.addcmul(self.out_affine[1], node_out, self.out_affine[0])
        elif self.node_value is not None:
            node_out = self.node_value(node_feat)
        else:
            node_out = node_feat
        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            edge_out, _ = external_attention(edge_feat, self.edge_key, self.edge_value, self.num_heads, edge_seglen,
                                             in_place=True)
        return node_out, edge_out
