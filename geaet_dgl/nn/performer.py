"""Performer self-attention (FAVOR+, Choromanski et al. 2021) within each graph, linear in the nodes.

The function of ``performer_pytorch.SelfAttention(dim, heads, dropout, causal=False)`` as the
reference builds it (heads of width ``head_dim = 64`` whatever ``dim``, ``M = int(64 ln 64) = 266``
random features, no q/k/v biases). Per head, with :math:`P \\in R^{M \\times C}` the random
projection and :math:`c = C^{-1/4}`:

.. math::
    \\phi(u) = M^{-1/2}\\big(\\exp(c\\,P u - \\tfrac{c^2}{2}\\lVert u \\rVert^2 - s) + 10^{-4}\\big), \\\\
    x_i' = W_o \\Big\\Vert_h \\frac{\\phi(q_i)^T \\sum_{j \\in G} \\phi(k_j) v_j^T}
                                  {\\phi(q_i)^T \\sum_{j \\in G} \\phi(k_j)} + b_o,

the sums over the nodes of node i's graph G: per graph, one (H, M, n) x (H, n, C + 1) product gives
:math:`\\sum_j \\phi(k_j) [v_j^T, 1]` (the context and the key sum together) and one
(H, n, M) x (H, M, C + 1) product reads it back for the graph's queries; the graphs are
contiguous slices of the batch, so nothing is padded and the cost is linear in the nodes. The stabiliser
:math:`s` is, as in performer_pytorch, the row maximum of :math:`c P q_i` for queries and the
maximum over the graph's keys and features of :math:`c P k_j` for keys (without gradient).

``pad_keys=True`` reproduces one more detail of the reference: it runs on graphs padded to the
batch's largest graph and masks the padded values but not the padded keys, whose features
:math:`\\phi(0)` enter the denominator (and the stabiliser). That makes a graph's output depend
on its batch-mates, so it is off by default and on for reference configurations.

The projection is a buffer (``fast_attention.projection_matrix``, the reference's name): saved with
the weights. performer_pytorch redraws it only through its ``Performer`` wrapper's
``ProjectionUpdater``, which the reference's layer does not use: there it stays as drawn at
construction, and so here (:meth:`redraw_projection` draws a new one on request).
"""
from __future__ import annotations

import math
from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .batch_layout import BatchLayout, layout_of
from .fast_exp import exp_scaled_, logit_scale

KERNEL_EPS = 1e-4
#: Floor of the exponent in :meth:`FeatureMap.features`. ``exp`` of an argument below about -87 lands in
#: float32's subnormal range, which the CPU computes 100-1000x slower per element (measured: 20 ms instead of
#: 20 us for 75k elements); the features of far-from-maximum logits get there. Below -30 the term
#: ``exp(a) / sqrt(M)`` is already less than half an ulp of the ``KERNEL_EPS / sqrt(M)`` it is added to, so
#: flooring the argument at -60 leaves every feature bit for bit as it was (and their gradients below 1e-26).
EXP_FLOOR = -60.0


def orthogonal_gaussian_projection(num_features: int, dim: int, generator: Optional[torch.Tensor] = None
                                   ) -> torch.Tensor:
    """(num_features, dim): stacked random orthogonal blocks, row ``r`` scaled to the norm of a Gaussian vector.

    The FAVOR+ projection (performer_pytorch's ``gaussian_orthogonal_random_matrix``, scaling 0):
    blocks are ``Q^T`` of the QR decomposition of a (dim, dim) Gaussian matrix.
    """
    blocks, rows = [], 0
    while rows < num_features:
        q, _ = torch.linalg.qr(torch.randn(dim, dim, generator=generator), mode="reduced")
        take = min(dim, num_features - rows)
        blocks.append(q.t()[:take])
        rows += take
    norms = torch.randn(num_features, dim, generator=generator).norm(dim=1)
    return norms.unsqueeze(-1) * torch.cat(blocks)


class FeatureMap(nn.Module):
    """The positive random features :math:`\\phi` of FAVOR+; holds the (M, C) projection buffer."""

    def __init__(self, head_dim: int, num_features: Optional[int] = None):
        super().__init__()
        self.head_dim = head_dim
        self.num_features = num_features if num_features is not None else int(head_dim * math.log(head_dim))
        self.register_buffer("projection_matrix", orthogonal_gaussian_projection(self.num_features, head_dim))

    @torch.no_grad()
    def redraw_projection(self) -> None:
        self.projection_matrix.copy_(orthogonal_gaussian_projection(self.num_features, self.head_dim))

    def logits(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(..., C) -> ``c P x`` (..., M) and ``c^2 |x|^2 / 2`` (..., 1)."""
        scale = self.head_dim ** -0.25
        projected = F.linear(x * scale, self.projection_matrix.to(x.dtype))
        return projected, (x * x).sum(-1, keepdim=True) * (scale * scale / 2.0)

    def features(self, projected: torch.Tensor, half_norm: torch.Tensor, stabiliser: torch.Tensor) -> torch.Tensor:
        """``M^-1/2 (exp(projected - half_norm - stabiliser) + eps)`` in four passes over the (..., M) tensor:
        the scale enters the exponent as ``-log sqrt(M)``, the small (..., 1) terms are summed first, and the
        exponent is floored at :data:`EXP_FLOOR` without autograd (no subnormal results: same values, much faster
        ``exp``)."""
        shift = half_norm + stabiliser + 0.5 * math.log(self.num_features)
        exponent = torch.sub(projected, shift)
        if not (torch.is_grad_enabled() and exponent.requires_grad):  # with autograd the floor's mask costs more
            exponent.clamp_min_(EXP_FLOOR)
        return exponent.exp_().add(KERNEL_EPS * self.num_features ** -0.5)


def favor_group(qk: torch.Tensor, values: torch.Tensor, projection: torch.Tensor,
                valid: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """FAVOR+ for a group of g graphs on the dense head-major layout, without autograd.

    ``qk`` (2, g, H, W, C): queries and keys; ``values`` (g, H, W, C + 1): ``[v, 1]`` (the ones column
    0 at keys to skip); ``projection`` (C, M): ``c P^T`` times :func:`~.fast_exp.logit_scale` (``log2 e``
    where ``exp`` is taken as ``exp2``); ``valid`` (g, 1, W) or None: 0 at keys that the stabiliser skips. Returns the features less their eps,
    ``exp(c P u - c^2 |u|^2 / 2 - s) / sqrt(M)`` (2, g, H, W, M), the context ``sum_j phi(k_j) [v_j, 1]``
    (g H, M, C + 1) and ``phi(q_i)^T context`` (g H, W, C + 1).

    One GEMM gives the logits of queries and keys (times the logit scale); the features take four in-place
    passes (the stabiliser, the shift, the floor of :meth:`FeatureMap.features`, ``exp``), on a tensor small enough
    to stay in the L2 cache at MNIST's sizes; their ``+ eps`` enters as the beta term of the two batched
    products (``(e + eps)^T V = e^T V + eps 1^T V``), not as a pass over the features.
    """
    _, graphs, heads, width, head_dim = qk.shape
    features = projection.shape[1]
    eps = KERNEL_EPS * features ** -0.5
    logits = torch.mm(qk.reshape(-1, head_dim), projection).view(2, graphs, heads, width, features)
    scale = logit_scale(qk)
    shift = (qk * qk).sum(-1, keepdim=True).mul_(head_dim ** -0.5 / 2.0 * scale).add_(
        0.5 * math.log(features) * scale)
    row_max = logits.amax(-1, keepdim=True)  # (2, g, H, W, 1)
    key_max = row_max[1]
    if valid is not None:
        key_max = key_max.masked_fill(valid.view(graphs, 1, width, 1) == 0, float("-inf"))
    key_max = key_max.amax(2, keepdim=True)
    if valid is not None:  # a graph without keys (only padding): any finite stabiliser
        key_max = torch.nan_to_num(key_max, neginf=0.0)
    shift[0] += row_max[0]
    shift[1] += key_max
    exps = exp_scaled_(logits.sub_(shift).clamp_min_(EXP_FLOOR * scale))
    q_exp, k_exp = exps[0].view(graphs * heads, width, features), exps[1].view(graphs * heads, width, features)
    values = values.reshape(graphs * heads, width, -1)
    context = torch.baddbmm((values.sum(1, keepdim=True) * eps).expand(-1, features, -1), k_exp.transpose(1, 2),
                            values)
    res = torch.baddbmm((context.sum(1, keepdim=True) * eps).expand(-1, width, -1), q_exp, context)
    return exps, context, res


def favor_ratio(res: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """(g H, W, C + 1) numerators and denominators -> their ratio, written into ``out`` (g, H, W, C); a row
    whose denominator is 0 (a query of a graph without keys, padding) gets 0."""
    columns = res.shape[-1]
    res = res.view(out.shape[:-1] + (columns,))
    return torch.div(res[..., :-1], res[..., -1:].clamp_min(torch.finfo(res.dtype).tiny), out=out)


def project_group(rows: torch.Tensor, weight: torch.Tensor, graphs: int, heads: int,
                  valid: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """A group's dense rows (g W, d) and the stacked ``to_q``, ``to_k``, ``to_v`` weights (3 H C, d) -> the
    group's queries and keys, head-major (2, g, H, W, C), and ``[v, 1]`` (g, H, W, C + 1), whose ones column
    is ``valid`` (g, 1, W) where given. One GEMM; the head-major copies are the size of a group (in the cache),
    not of the batch."""
    width, head_dim = rows.shape[0] // max(graphs, 1), weight.shape[0] // (3 * heads)
    qkv = torch.mm(rows, weight.t()).view(graphs, width, 3, heads, head_dim)
    qk = qkv[:, :, :2].permute(2, 0, 3, 1, 4).contiguous()
    values = rows.new_empty(graphs, heads, width, head_dim + 1)
    values[..., :head_dim] = qkv[:, :, 2].transpose(1, 2)
    values[..., head_dim] = 1.0 if valid is None else valid
    return qk, values


class FavorAttention(torch.autograd.Function):
    """The attention of :meth:`PerformerAttention._attend_dense` before ``to_out``, with a written-out backward:
    dense rows (B W, d) and the stacked ``to_q``, ``to_k``, ``to_v`` weights (3 H C, d) -> (B, W, H, C).

    Per group of graphs the forward projects the group's rows (one GEMM, the head-major copies the size of
    a group), runs :func:`favor_group` and :func:`favor_ratio`, and keeps the group's features, context
    and products. The backward, per group, is ``dR = [dA / den, -(dA . num) / den^2]``,
    ``d context = phi(q)^T dR``, ``d phi(q) = dR context^T``, ``d phi(k) = V d context^T``,
    ``dV = phi(k) d context``, then through ``exp`` (``d logits = d phi * e``) to
    ``du = d logits (c P) - (sum_m d logits) c^2 u`` (the stabiliser without gradient, as the reference's; the
    floor's mask is left out: below it ``e < 1e-26``) and back through the projection GEMM. The eps of the
    features enters the products as their beta term, as in the forward.
    """

    @staticmethod
    def forward(ctx, dense_x, weight, projection, valid, graphs, heads, group):
        width = dense_x.shape[0] // max(graphs, 1)
        head_dim = weight.shape[0] // (3 * heads)
        out = dense_x.new_empty(graphs, width, heads, head_dim)
        projection2 = projection * logit_scale(projection)  # favor_group's logit scale
        parts = []
        for start in range(0, graphs, group):
            stop = min(graphs, start + group)
            group_valid = None if valid is None else valid[start:stop]
            qk, values = project_group(dense_x[start * width:stop * width], weight, stop - start, heads, group_valid)
            exps, context, res = favor_group(qk, values, projection2, group_valid)
            favor_ratio(res, out[start:stop].permute(0, 2, 1, 3))
            parts.append((start, stop, qk, values, exps, context, res))
        ctx.parts, ctx.shape = parts, (graphs, width, heads, head_dim)
        ctx.save_for_backward(dense_x, weight, projection)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        dense_x, weight, projection = ctx.saved_tensors
        graphs, width, heads, head_dim = ctx.shape
        features = projection.shape[1]
        eps = KERNEL_EPS * features ** -0.5
        grad_x, grad_weight = torch.empty_like(dense_x), torch.zeros_like(weight)
        for start, stop, qk, values, exps, context, res in ctx.parts:
            count = stop - start
            batch = count * heads
            den = res[..., head_dim:].clamp_min(torch.finfo(res.dtype).tiny)  # (gH, W, 1)
            d_res = res.new_empty(batch, width, head_dim + 1)
            torch.div(grad_out[start:stop].permute(0, 2, 1, 3).reshape(batch, width, head_dim), den,
                      out=d_res[..., :head_dim])
            d_res[..., head_dim:] = -(d_res[..., :head_dim] * res[..., :head_dim]).sum(-1, keepdim=True) / den
            q_exp, k_exp = exps[0].view(batch, width, features), exps[1].view(batch, width, features)
            v = values.view(batch, width, head_dim + 1)
            d_context = torch.baddbmm((d_res.sum(1, keepdim=True) * eps).expand(-1, features, -1),
                                      q_exp.transpose(1, 2), d_res)  # (gH, M, C + 1)
            d_feat = res.new_empty(2, batch, width, features)
            torch.bmm(d_res, context.transpose(1, 2), out=d_feat[0])
            torch.bmm(v, d_context.transpose(1, 2), out=d_feat[1])
            d_values = torch.baddbmm((d_context.sum(1, keepdim=True) * eps).expand(-1, width, -1), k_exp, d_context)
            d_logits = d_feat.mul_(exps.view(2, batch, width, features))
            d_half = d_logits.sum(-1, keepdim=True).mul_(-head_dim ** -0.5)  # d(c^2 |u|^2 / 2) / du = c^2 u
            d_qk = torch.mm(d_logits.view(-1, features), projection.t()).view(qk.shape)
            d_qk.addcmul_(qk, d_half.view(qk.shape[:-1] + (1,)))
            # Back through the group's projection GEMM: (g W, 3 H C) in the layout of its output.
            d_qkv = res.new_empty(count, width, 3, heads, head_dim)
            d_qkv[:, :, :2] = d_qk.permute(1, 3, 0, 2, 4)
            d_qkv[:, :, 2] = d_values.view(count, heads, width, head_dim + 1)[..., :head_dim].transpose(1, 2)
            d_qkv = d_qkv.view(count * width, -1)
            rows = dense_x[start * width:stop * width]
            torch.mm(d_qkv, weight, out=grad_x[start * width:stop * width])
            grad_weight.addmm_(d_qkv.t(), rows)
        return grad_x, grad_weight, None, None, None, None, None


class PerformerAttention(nn.Module):
    """FAVOR+ linear attention among the nodes of each graph: (N, d) -> (N, d).

    Parameters
    ----------
    hidden_dim : int, ``d``.
    num_heads : int, ``H``.
    dropout : float, dropout on the output (performer_pytorch's ``dropout``).
    head_dim : int, ``C``; 64 as performer_pytorch's default (the reference's), whatever ``d``.
    num_features : int, ``M``; ``int(C ln C)`` when None.
    pad_keys : bool, count the reference's padding keys (module docstring).

    The layer runs on the reference's dense (B, W) layout, ``group_rows // W`` graphs at a time
    (:meth:`_attend_dense`; with autograd through :class:`FavorAttention`), measured 1.5-1.8x faster without
    gradients and 1.15-1.25x with them than the per-node layout at MNIST batch 16-64. A batch with a graph of more
    than ``chunk_rows`` nodes (or so uneven that padding would more than quadruple the rows) runs graph by
    graph: without gradients on ``chunk_rows`` nodes at a time, never holding an (N, H, M) tensor, with
    them as one product per graph.

    Parameter names are performer_pytorch's (``to_q``, ``to_k``, ``to_v``, ``to_out``,
    ``fast_attention.projection_matrix``).

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(5, 10), dgl.rand_graph(3, 4)])
    >>> x, _ = PerformerAttention(16, 4)(g, torch.randn(8, 16))
    >>> x.shape
    torch.Size([8, 16])
    """

    def __init__(self, hidden_dim: int, num_heads: int, dropout: float = 0.0, head_dim: int = 64,
                 num_features: Optional[int] = None, pad_keys: bool = False):
        super().__init__()
        if hidden_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide hidden_dim={hidden_dim}")
        self.num_heads, self.head_dim, self.dropout, self.pad_keys = num_heads, head_dim, dropout, pad_keys
        inner = num_heads * head_dim
        self.fast_attention = FeatureMap(head_dim, num_features)
        self.to_q = nn.Linear(hidden_dim, inner, bias=False)
        self.to_k = nn.Linear(hidden_dim, inner, bias=False)
        self.to_v = nn.Linear(hidden_dim, inner, bias=False)
        self.to_out = nn.Linear(inner, hidden_dim)
        self.chunk_rows = 16384  # a graph larger than this runs on its own (in chunks of it without gradients)
        self.group_rows = 320  # dense rows (graphs x W) per step of the dense layout: a group's features in L2

    def reset_parameters(self) -> None:
        for linear in (self.to_q, self.to_k, self.to_v, self.to_out):
            linear.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) -> (N, d); ``edge_feat`` passes through (``pe_dist``, ``edge_output`` unused)."""
        layout = layout_of(graph, layout)
        rows, heads, width = node_feat.shape[0], self.num_heads, self.head_dim
        sizes = layout.cached("num_nodes_list", layout.num_nodes_per_graph.tolist)
        if rows and layout.max_nodes <= self.chunk_rows and layout.batch_size * layout.max_nodes <= 4 * rows:
            return F.dropout(self._attend_dense(node_feat, layout), self.dropout, self.training), edge_feat
        if not torch.is_grad_enabled() and rows:  # a graph larger than a chunk, or very uneven padding
            out = self.to_out(self._attend_in_chunks(node_feat, layout, sizes))
            return F.dropout(out, self.dropout, self.training), edge_feat
        q, k, v = (lin(node_feat).view(rows, heads, width) for lin in (self.to_q, self.to_k, self.to_v))
        phi = self.fast_attention
        q_logits, q_norm = phi.logits(q)
        q_feat = phi.features(q_logits, q_norm, q_logits.amax(-1, keepdim=True).detach())  # (N, H, M)
        k_logits, k_norm = phi.logits(k)
        seglen = layout.num_nodes_per_graph
        k_max = dgl.ops.segment_reduce(seglen, k_logits.amax(-1).detach(), "max")  # (B, H)
        padded = None
        if self.pad_keys:
            padded = (layout.max_nodes - seglen).to(k_logits.dtype)  # padding keys per graph
            k_max = torch.where(padded.unsqueeze(-1) > 0, k_max.clamp(min=0.0), k_max)
        k_feat = phi.features(k_logits, k_norm, k_max.index_select(0, layout.node_graph_id).unsqueeze(-1))
        # Values with a column of ones: phi(k)^T [v, 1] holds the context and the key sum of a graph together.
        values = torch.cat([v, v.new_ones(rows, heads, 1)], dim=-1).transpose(0, 1)  # (H, N, C + 1)
        keys, queries = k_feat.permute(1, 2, 0), q_feat.transpose(0, 1)  # (H, M, N), (H, N, M)
        pad_feat = None
        if padded is not None:  # each padding key has logits 0 and norm 0: phi = (exp(-s) + eps) / sqrt(M)
            zeros = torch.zeros_like(k_max)
            pad_feat = padded.unsqueeze(-1) * phi.features(zeros, zeros, k_max)  # (B, H): their sum, per feature
        parts = []
        for b, (key, value, query) in enumerate(zip(keys.split(sizes, 2), values.split(sizes, 1),
                                                    queries.split(sizes, 1))):
            context = torch.bmm(key, value)  # (H, M, C + 1): sum_j phi(k_j) [v_j, 1]
            if pad_feat is not None:
                context = torch.cat([context[..., :width], context[..., width:] + pad_feat[b].view(heads, 1, 1)], -1)
            parts.append(torch.bmm(query, context))  # (H, n_b, C + 1)
        out = torch.cat(parts, dim=1) if parts else values.new_zeros(heads, 0, width + 1)
        out = (out[..., :width] / out[..., width:]).transpose(0, 1).reshape(rows, heads * width)
        return F.dropout(self.to_out(out), self.dropout, self.training), edge_feat

    def _attend_dense(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """The whole layer before dropout, (N, d) -> (N, d), on the (B, W) dense layout of the reference's padded
        batch (``W`` = the largest graph's nodes), ``group_rows // W`` graphs at a time (:func:`project_group`,
        :func:`favor_group`).

        A padding row has input 0, so its key logits and value are 0, as the reference's. With ``pad_keys``
        a padding key's feature enters the key sum (the ones column is 1 there), otherwise the ones column
        is 0 there and the stabiliser skips it. With autograd the group loop runs in :class:`FavorAttention`,
        whose backward is written out."""
        graphs, width = layout.batch_size, layout.max_nodes
        heads, head_dim, phi = self.num_heads, self.head_dim, self.fast_attention
        index = layout.cached("performer_dense_index", lambda: layout.node_graph_id * width + layout.node_position)
        dense_x = node_feat.new_zeros(graphs * width, node_feat.shape[1]).index_copy(0, index, node_feat)
        valid = None
        if not self.pad_keys:
            valid = layout.cached(("performer_valid", node_feat.dtype), lambda: node_feat.new_zeros(
                graphs * width).index_fill_(0, index, 1.0).view(graphs, 1, width))  # (B, 1, W)
        weight = torch.cat([self.to_q.weight, self.to_k.weight, self.to_v.weight])  # (3 H C, d)
        projection = (phi.projection_matrix.to(node_feat.dtype) * head_dim ** -0.25).t()  # (C, M): c P^T
        group = max(1, self.group_rows // max(width, 1))
        if torch.is_grad_enabled():
            attended = FavorAttention.apply(dense_x, weight, projection, valid, graphs, heads, group)
        else:
            attended = node_feat.new_empty(graphs, width, heads, head_dim)
            projection = projection * logit_scale(projection)  # favor_group's logit scale
            for start in range(0, graphs, group):
                stop = min(graphs, start + group)
                group_valid = None if valid is None else valid[start:stop]
                qk, values = project_group(dense_x[start * width:stop * width], weight, stop - start, heads,
                                           group_valid)
                _, _, res = favor_group(qk, values, projection, group_valid)
                favor_ratio(res, attended[start:stop].permute(0, 2, 1, 3))
        return self.to_out(attended.view(graphs * width, heads * head_dim)).index_select(0, index)

    def _attend_in_chunks(self, node_feat: torch.Tensor, layout: BatchLayout, sizes) -> torch.Tensor:
        """The attention before ``to_out``, (N, H C), without autograd: graph by graph, ``chunk_rows`` nodes at
        a time, so that no (N, H, M) tensor exists (memory O(N d + chunk H M)). Same values as the forward
        with gradients up to the order of the sums: two passes over each graph's keys (their stabiliser,
        then their features), one over its queries."""
        heads, width, phi = self.num_heads, self.head_dim, self.fast_attention
        out = node_feat.new_empty(node_feat.shape[0], heads * width)
        pad_counts = (layout.max_nodes - layout.num_nodes_per_graph).tolist() if self.pad_keys else None
        start = 0
        for b, n in enumerate(sizes):
            chunks = [(s, min(s + self.chunk_rows, start + n)) for s in range(start, start + n, self.chunk_rows)]
            start += n
            if not chunks:
                continue

            def key_logits(s: int, e: int):
                return phi.logits(self.to_k(node_feat[s:e]).view(-1, heads, width))

            k_max = torch.stack([key_logits(s, e)[0].amax(dim=(0, 2)) for s, e in chunks]).amax(0)  # (H,)
            if pad_counts is not None and pad_counts[b] > 0:
                k_max = k_max.clamp(min=0.0)
            context = node_feat.new_zeros(heads, phi.num_features, width + 1)
            for s, e in chunks:
                logits, norm = key_logits(s, e)
                k_feat = phi.features(logits, norm, k_max.view(1, heads, 1))
                v = self.to_v(node_feat[s:e]).view(-1, heads, width)
                values = torch.cat([v, v.new_ones(e - s, heads, 1)], dim=-1).transpose(0, 1)
                context.baddbmm_(k_feat.permute(1, 2, 0), values)
            if pad_counts is not None and pad_counts[b] > 0:
                zeros = torch.zeros_like(k_max)
                context[..., width:] += pad_counts[b] * phi.features(zeros, zeros, k_max).view(heads, 1, 1)
            for s, e in chunks:
                logits, norm = phi.logits(self.to_q(node_feat[s:e]).view(-1, heads, width))
                q_feat = phi.features(logits, norm, logits.amax(-1, keepdim=True))
                res = torch.bmm(q_feat.transpose(0, 1), context)  # (H, rows, C + 1)
                out[s:e] = (res[..., :width] / res[..., width:]).transpose(0, 1).reshape(e - s, heads * width)
        return out

