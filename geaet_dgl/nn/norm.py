"""Normalisation layers used around every branch of the GEAET layer, and eval-mode BatchNorms as affine maps.

In eval mode a BatchNorm with running statistics is the per-channel affine map

.. math::
    \\mathrm{BN}(x) = s \\odot x + t, \\qquad
    s = \\frac{\\gamma}{\\sqrt{\\sigma^2_{run} + \\epsilon}}, \\quad t = \\beta - s \\odot \\mu_{run},

so a BatchNorm after a linear map ``W x + b`` is the linear map ``(s W) x + (s b + t)``
(:func:`scale_rows`), and one before it, ``W (s x + t) + b``, is ``(W s) x + (W t + b)``
(:func:`scale_columns`). The layers' eval-mode fast paths (their ``folded()`` methods) fold their
BatchNorms with these; exact up to float rounding.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn

from .batch_layout import BatchLayout

NORMS = ("batch", "layer", "node_layer", "none")

Affine = Tuple[torch.Tensor, torch.Tensor]


def batchnorm_affine(norm: nn.Module) -> Optional[Affine]:
    """``(scale, shift)``, each (C,), of a BatchNorm's eval-mode map; None when it has no running statistics.

    Accepts ``nn.BatchNorm1d`` and ``nn.SyncBatchNorm`` (the distributed trainer's); anything else,
    or a BatchNorm without running statistics (it would normalise with the batch's), gives None.
    """
    if not isinstance(norm, (nn.BatchNorm1d, nn.SyncBatchNorm)) or norm.running_mean is None \
            or norm.running_var is None:
        return None
    with torch.no_grad():
        scale = torch.rsqrt(norm.running_var + norm.eps)
        if norm.weight is not None:
            scale = scale * norm.weight
        shift = -norm.running_mean * scale
        if norm.bias is not None:
            shift = shift + norm.bias
    return scale.detach(), shift.detach()


def scale_rows(weight: torch.Tensor, bias: Optional[torch.Tensor], affine: Optional[Affine]
               ) -> Tuple[torch.Tensor, torch.Tensor]:
    """``affine`` applied after ``x -> W x + b``: (out, in) weight and (out,) bias of ``s (W x + b) + t``.

    With ``affine`` None the map itself (a zero bias when ``bias`` is None). Fresh tensors, never views of the
    parameters, without autograd history.
    """
    with torch.no_grad():
        bias = bias if bias is not None else weight.new_zeros(weight.shape[0])
        if affine is None:
            return weight.detach().clone(), bias.detach().clone()
        scale, shift = affine
        return (weight * scale[:, None]).detach(), (bias * scale + shift).detach()


def scale_columns(weight: torch.Tensor, bias: Optional[torch.Tensor], affine: Affine
                  ) -> Tuple[torch.Tensor, torch.Tensor]:
    """``affine`` applied before ``x -> W x + b``: weight and bias of ``W (s x + t) + b``."""
    with torch.no_grad():
        scale, shift = affine
        bias = bias if bias is not None else weight.new_zeros(weight.shape[0])
        return (weight * scale[None, :]).detach(), (bias + weight @ shift).detach()


class GraphLayerNorm(nn.Module):
    """Layer normalisation over all nodes and channels of each graph.

    This is PyG's ``torch_geometric.nn.norm.LayerNorm`` in its default
    ``mode='graph'``, which the reference uses: for graph :math:`G` with
    :math:`n_G` nodes, mean and variance run over the :math:`n_G \\times d`
    entries, then a per-channel affine map is applied.

    Parameters
    ----------
    hidden_dim : int
    eps : float
    """

    def __init__(self, hidden_dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_dim))
        self.bias = nn.Parameter(torch.zeros(hidden_dim))

    def reset_parameters(self) -> None:
        nn.init.ones_(self.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """(N, d) -> (N, d)."""
        seglen = layout.num_nodes_per_graph
        count = (seglen.clamp(min=1) * x.shape[-1]).to(x.dtype).unsqueeze(-1)
        mean = dgl.ops.segment_reduce(seglen, x, "sum").sum(-1, keepdim=True) / count
        centred = x - mean[layout.node_graph_id]
        var = dgl.ops.segment_reduce(seglen, centred * centred, "sum").sum(-1, keepdim=True) / count
        out = centred / (var + self.eps).sqrt()[layout.node_graph_id]
        return out * self.weight + self.bias


class BranchNorm(nn.Module):
    """The norm after each branch of the GEAET layer, by name.

    ``batch``: BatchNorm1d over the nodes of the batch (running statistics at
    eval time); ``layer``: :class:`GraphLayerNorm` (statistics over all nodes and
    channels of each graph); ``node_layer``: ``torch.nn.LayerNorm`` over each
    node's d channels (no batch or graph statistics: a node's output does not
    depend on the other nodes, in training and at inference alike); ``none``: the
    identity (GraphGPS's layer with ``gt.batch_norm`` and ``gt.layer_norm`` both off).

    On one big graph trained full-batch, BatchNorm's running statistics get one
    update per epoch, so they lag far behind the batch statistics the training
    step uses (docs/node-classification.md); ``node_layer`` and ``none`` have no
    such train/eval gap.
    """

    def __init__(self, kind: str, hidden_dim: int):
        super().__init__()
        if kind not in NORMS:
            raise ValueError(f"norm={kind!r} is not one of {', '.join(NORMS)}")
        self.kind = kind
        if kind == "batch":
            self.norm = nn.BatchNorm1d(hidden_dim)
        elif kind == "layer":
            self.norm = GraphLayerNorm(hidden_dim)
        elif kind == "node_layer":
            self.norm = nn.LayerNorm(hidden_dim)
        else:
            self.norm = nn.Identity()

    def affine(self) -> Optional[Affine]:
        """``(scale, shift)`` of this norm in eval mode when it is a per-channel affine map (a BatchNorm with
        running statistics), else None (a LayerNorm reads each node's or graph's own statistics)."""
        return batchnorm_affine(self.norm) if self.kind == "batch" else None

    def forward(self, x: torch.Tensor, layout: Optional[BatchLayout]) -> torch.Tensor:
        """(N, d) -> (N, d); ``layout`` is read by the graph LayerNorm only."""
        if self.kind == "layer":
            return self.norm(x, layout)
        return self.norm(x)
