"""GENConv (Li et al. 2020, DeeperGCN) as PyG's ``GENConv(d, d)`` with its defaults.

.. math::
    m_{ji} = \\mathrm{ReLU}(x_j + e_{ji}) + \\epsilon, \\qquad
    a_i = \\sum_{j \\to i} \\mathrm{softmax}_{j \\to i}(m_{ji}) \\odot m_{ji}, \\qquad
    x_i' = \\mathrm{MLP}(x_i + a_i),

with the softmax per channel over the node's incoming edges (``aggr='softmax'``, ``t = 1``),
:math:`\\epsilon = 10^{-7}` and the MLP ``Linear(d, 2d) -> BatchNorm -> ReLU -> Linear(2d, d)``
without biases. A node without incoming edges aggregates zero. The softmax and the weighted sum run
as one normalised sum, ``sum_j w_ji m_ji / sum_j w_ji`` with ``w_ji = exp(m_ji - max_j m_ji)``: two ``gspmm``
sums (numerator and denominator) on DGL's kernels and one division per node, instead of ``edge_softmax`` (whose CPU path costs about twice as much
for (E, d) scores) and a division per edge. The layer runs it as :class:`SoftmaxAggregate` (messages
gathered by ``index_select`` and made in place, a written-out backward) and, without autograd, as
:func:`gen_conv_aggregate_inference` (the same with edge buffers kept per batch); :class:`FoldedGENConv` is
its eval-mode copy with the BatchNorm folded.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn

from .batch_layout import BatchLayout
from .fast_exp import LOG2E, exp_, exp_scaled_, uses_exp2
from .norm import batchnorm_affine


#: Largest message for which :func:`softmax_weights` takes ``exp(m)`` unshifted: its sums stay far from
#: overflow (``exp(40) = 2.4e17`` per edge) and, the messages being ReLU outputs (>= 0), nothing underflows.
SHIFT_FREE_MAX = 40.0


def softmax_weights(graph: dgl.DGLGraph, messages: torch.Tensor, dst: torch.Tensor,
                    out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Unnormalised per-channel softmax weights of non-negative messages, (E, d) -> (E, d), written into ``out``
    where given: ``exp(m - max_j m)`` per destination node, or, on CPU where no message exceeds
    :data:`SHIFT_FREE_MAX`, ``exp(m)``: the softmax does not see a per-node shift, so both give the same
    normalised weights up to float rounding, and the unshifted form skips the per-node maximum
    (``copy_e_max``, 2x a sum on DGL's CPU kernel), its gather and a subtraction: one reduction instead.
    ``exp`` is :mod:`.fast_exp`'s choice of kernel for this CPU (``exp2`` of ``m log2 e`` on AMD's)."""
    if messages.device.type == "cpu" and messages.numel() and float(messages.max()) <= SHIFT_FREE_MAX:
        if not uses_exp2(messages):
            return torch.exp(messages, out=out) if out is not None else messages.exp()
        scaled = torch.mul(messages, LOG2E, out=out) if out is not None else messages * LOG2E
        return exp_scaled_(scaled)  # exp2(m log2 e): 2.1-2.4x faster than exp on an AMD EPYC at (9k-36k, 40)
    top = dgl.ops.copy_e_max(graph, messages)  # (N, d)
    weights = torch.index_select(top, 0, dst, out=out) if out is not None else top.index_select(0, dst)
    return exp_(torch.sub(messages, weights, out=weights))  # in (0, 1]


@torch.no_grad()
def softmax_aggregate_inference(graph: dgl.DGLGraph, messages: torch.Tensor, dst: torch.Tensor, eps: float = 0.0,
                                weights: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The softmax aggregation (module docstring) of ``messages + eps`` without autograd, up to float rounding: (E, d) -> (N, d);
    ``dst`` (E,) the edges' destinations; ``weights`` an (E, d) buffer to use (else a fresh one).

    The softmax does not see a constant shift, so ``eps`` enters the (N, d) sums
    (``sum_j w_ji (m_ji + eps) = sum_j w_ji m_ji + eps sum_j w_ji``) instead of an (E, d) pass, and a node
    without incoming edges still gets 0. The shift is gathered by ``index_select``, which runs 2-3x faster
    than DGL's SDDMM on CPU (as :func:`geaet_dgl.nn.gated_gcn.gather_add`); everything on the (E, d)
    tensors is in place."""
    weights = softmax_weights(graph, messages, dst, weights)
    total = dgl.ops.copy_e_sum(graph, weights)  # > 0 where a node has incoming edges, else 0
    weighted = dgl.ops.copy_e_sum(graph, weights.mul_(messages))
    if eps:
        weighted.add_(total, alpha=eps)
    return weighted.div_(total.clamp_min_(torch.finfo(total.dtype).tiny))


@torch.no_grad()
def gen_conv_aggregate_inference(graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor],
                                 eps: float, layout: Optional[BatchLayout] = None) -> torch.Tensor:
    """the softmax aggregation of ``relu(x_src + e) + eps`` without autograd: (N, d), (E, d) or None -> (N, d).

    The messages are gathered by ``index_select`` and made in place. With a ``layout`` the two (E, d) tensors
    are buffers kept with it, shared by every GENConv layer of the batch's forward: on CPU a fresh tensor of
    that size costs page faults comparable to the arithmetic on it.
    """
    src, dst = layout.edge_endpoints(graph) if layout is not None else graph.edges()
    shape = (src.shape[0], node_feat.shape[1])
    if layout is not None:
        messages, weights = layout.cached(("gen_conv_edge_buffers", shape, node_feat.dtype, node_feat.device),
                                          lambda: (node_feat.new_empty(shape), node_feat.new_empty(shape)))
        torch.index_select(node_feat, 0, src, out=messages)
    else:
        messages, weights = node_feat.index_select(0, src), None
    if edge_feat is not None:
        messages.add_(edge_feat)
    return softmax_aggregate_inference(graph, messages.relu_(), dst, eps, weights)


class SoftmaxAggregate(torch.autograd.Function):
    """GENConv's aggregation with a written-out backward: node (N, d) and edge (E, d) features (or None)
    -> the softmax aggregation of ``relu(x_src + e) + eps`` (N, d).

    The forward is :func:`softmax_aggregate_inference` on messages gathered by ``index_select`` (2-3x
    faster than DGL's SDDMM on CPU) and made in place. With ``m = relu(x_j + e_ji)``, ``s_j = w_j / S_i``
    the softmax weight of edge j -> i and ``a_i`` node i's aggregate less eps, the gradient of
    ``a_i = sum_j s_j m_j`` in ``m_j`` is ``s_j (1 + m_j - a_i)`` per channel: the backward gathers
    ``a`` and ``g / S`` to the edges, takes four in-place passes over (E, d) and ``relu``'s mask in place,
    and sums the result over each edge's source for the nodes. Autograd's chain through ``exp``, the two
    products, the two sums and the division allocated twice as many (E, d) tensors, and on CPU each
    fresh (E, d) tensor costs page faults comparable to the arithmetic. Saves ``m``, ``w`` (E, d) and
    ``S``, ``a`` (N, d).
    """

    @staticmethod
    def forward(ctx, graph, node_feat, edge_feat, src, dst, eps):
        messages = node_feat.index_select(0, src)  # (E, d)
        if edge_feat is not None:
            messages.add_(edge_feat)
        messages.relu_()
        weights = softmax_weights(graph, messages, dst)
        total = dgl.ops.copy_e_sum(graph, weights)  # > 0 where a node has incoming edges, else 0
        total = total.clamp_min_(torch.finfo(total.dtype).tiny)
        aggregate = dgl.ops.copy_e_sum(graph, weights * messages).div_(total)  # (N, d), less eps
        ctx.save_for_backward(messages, weights, total, aggregate, src, dst)
        ctx.has_edges = edge_feat is not None
        return aggregate + eps * (total > torch.finfo(total.dtype).tiny).to(aggregate.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        messages, weights, total, aggregate, src, dst = ctx.saved_tensors
        grad = aggregate.index_select(0, dst)  # (E, d)
        torch.sub(messages, grad, out=grad).add_(1.0).mul_(weights).mul_((grad_out / total).index_select(0, dst))
        torch.ops.aten.threshold_backward.grad_input(grad, messages, 0.0, grad_input=grad)  # relu's mask
        grad_nodes = grad_out.new_zeros(grad_out.shape).index_add_(0, src, grad)
        return None, grad_nodes, grad if ctx.has_edges else None, None, None, None


class GENConvLayer(nn.Module):
    """Generalised graph convolution with softmax aggregation; edges pass through.

    Parameters
    ----------
    feats : int, node and edge width ``d`` (PyG's default layout: no input projections).
    expansion : int, the MLP's hidden width is ``expansion * d``.
    eps : float, added to every message.

    Parameter names are PyG's (``mlp.0``, ``mlp.1`` the BatchNorm, ``mlp.4``).

    Example
    -------
    >>> g = dgl.rand_graph(6, 20)
    >>> conv = GENConvLayer(8)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8))
    >>> x.shape
    torch.Size([6, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, feats: int, expansion: int = 2, eps: float = 1e-7):
        super().__init__()
        self.eps = eps
        hidden = expansion * feats
        self.mlp = nn.Sequential(nn.Linear(feats, hidden, bias=False), nn.BatchNorm1d(hidden), nn.ReLU(),
                                 nn.Dropout(0.0), nn.Linear(hidden, feats, bias=False))

    def reset_parameters(self) -> None:
        for module in self.mlp:
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) or None -> (N, d); ``edge_feat`` passes through (other keywords unused)."""
        if not torch.is_grad_enabled():
            aggregate = gen_conv_aggregate_inference(graph, node_feat, edge_feat, self.eps, layout)
            return self.mlp(aggregate.add_(node_feat)), edge_feat
        src, dst = layout.edge_endpoints(graph) if layout is not None else graph.edges()
        return self.mlp(node_feat + SoftmaxAggregate.apply(graph, node_feat, edge_feat, src, dst, self.eps)), edge_feat

    def folded(self) -> Optional["FoldedGENConv"]:
        """An eval-mode copy with the MLP's BatchNorm folded into its first linear map (:class:`FoldedGENConv`),
        or None where the BatchNorm has no running statistics or for a subclass."""
        affine = batchnorm_affine(self.mlp[1])
        if type(self) is not GENConvLayer or affine is None:
            return None
        return FoldedGENConv(self, affine)


class FoldedGENConv(nn.Module):
    """:class:`GENConvLayer` in eval mode: same call, same outputs up to float rounding, without autograd.

    ``MLP(h) = W_2 relu(BN(W_1 h))`` with the eval BatchNorm ``s z + t`` becomes
    ``W_2 relu((s W_1) h + t)``: one ``addmm``, an in-place ``relu`` and one ``mm``; the aggregation is
    :func:`gen_conv_aggregate_inference` (edge buffers kept with the batch's layout). Built by
    :meth:`GENConvLayer.folded`.
    """

    applies_residual = False

    def __init__(self, layer: GENConvLayer, affine):
        super().__init__()
        scale, shift = affine
        self.eps = layer.eps
        with torch.no_grad():
            self.register_buffer("weight1_t", (layer.mlp[0].weight * scale.unsqueeze(1)).t().contiguous())
            self.register_buffer("bias1", shift.clone())
            self.register_buffer("weight2_t", layer.mlp[4].weight.detach().t().contiguous())

    @torch.no_grad()
    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """As :meth:`GENConvLayer.forward` in eval mode."""
        h = gen_conv_aggregate_inference(graph, node_feat, edge_feat, self.eps, layout).add_(node_feat)
        return torch.addmm(self.bias1, h, self.weight1_t).relu_().mm(self.weight2_t), edge_feat
