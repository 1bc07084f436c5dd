"""The exported GEAET layer and its norms; the branches are :mod:`.mpnns`, :mod:`.attention`, :mod:`.geanet`.

The exported layers are each library layer's eval-mode math on plain tensors, edge work in :mod:`.scatter`.

Each class is built from the trained library module (``from_module``-style constructors taking it), reads
its weights through the same helpers the folded inference path uses (:meth:`GatedGCNLayer.projection`,
:func:`~geaet_dgl.nn.norm.batchnorm_affine`, :func:`~geaet_dgl.nn.external_attention.heads_as_one_linear`,
:attr:`GraphSelfAttention.score_scale`) and computes what the module computes in eval mode, with its
BatchNorms as per-channel affine maps and no dropout. All are TorchScript-compilable and traceable by the
ONNX exporter: no DGL graph, no Python branch on tensor values or sizes.

Calling conventions (N nodes, E edges, B graphs, d channels):

* local MPNN: ``(h (N, d), e (E, d'), src (E,), dst (E,), pe_dist (E, 1)) -> (h, e)`` (:mod:`.mpnns`);
* global attention: ``(h, graph_of_node (N,), node_counts (B,), position (N,)) -> h`` (:mod:`.attention`);
* GEANet: ``(h, e, graph_of_node, graph_of_edge (E,), num_graphs) -> (h, e)`` (:mod:`.geanet`);
* norms: ``(x, graph_of_node, node_counts) -> x``;
* the layer: ``(h, e, index, pe_dist, attn_bias) -> (h, e)``, ``index`` the batch's :class:`GraphIndex`.
"""
from __future__ import annotations

from typing import NamedTuple, Tuple

import torch
import torch.nn.functional as F
from torch import nn

from .common import ExportError, activate, activation_name, affine_of, frozen
from .scatter import segment_sum


class GraphIndex(NamedTuple):
    """The index tensors of a batch that every exported layer reads, made once per batch by the model."""

    src: torch.Tensor  # (E,) int64 source node of each edge
    dst: torch.Tensor  # (E,) int64 destination node of each edge
    graph_of_node: torch.Tensor  # (N,) int64 graph of each node
    graph_of_edge: torch.Tensor  # (E,) int64 graph of each edge
    node_counts: torch.Tensor  # (B,) int64 nodes per graph
    position: torch.Tensor  # (N,) int64 each node's index inside its graph


class ExportNorm(nn.Module):
    """A :class:`~geaet_dgl.nn.norm.BranchNorm` in eval mode: ``kind`` 0 affine (BatchNorm with running
    statistics; ``none`` as the identity), 1 LayerNorm over each node's channels, 2 LayerNorm over each graph."""

    def __init__(self, norm: nn.Module, what: str):
        super().__init__()
        kind = norm.kind
        d = None
        self.eps = 1e-5
        if kind == "batch":
            scale, shift = affine_of(norm.norm, what)
            self.kind = 0
        elif kind == "none":
            scale, shift, self.kind = None, None, 0
        elif kind == "node_layer":
            self.kind, self.eps = 1, float(norm.norm.eps)
            scale, shift = norm.norm.weight.detach(), norm.norm.bias.detach()
        elif kind == "layer":
            self.kind, self.eps = 2, float(norm.norm.eps)
            scale, shift = norm.norm.weight.detach(), norm.norm.bias.detach()
        else:
            raise ExportError(f"cannot export {what}: norm {kind!r} is not exported")
        if scale is None:  # the identity
            d = 1
            scale, shift = torch.ones(d), torch.zeros(d)
        self.register_buffer("scale", scale.detach().clone())
        self.register_buffer("shift", shift.detach().clone())

    def forward(self, x: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor) -> torch.Tensor:
        if self.kind == 1:
            return F.layer_norm(x, [x.shape[1]], self.scale, self.shift, self.eps)
        if self.kind == 2:  # PyG's graph LayerNorm: statistics over all n_G x d entries of each graph
            count = (node_counts.clamp(min=1) * x.shape[1]).to(x.dtype).unsqueeze(1)
            mean = segment_sum(x, graph_of_node, node_counts.shape[0]).sum(1, keepdim=True) / count
            centred = x - mean.index_select(0, graph_of_node)
            var = segment_sum(centred * centred, graph_of_node, node_counts.shape[0]).sum(1, keepdim=True) / count
            out = centred / (var + self.eps).sqrt().index_select(0, graph_of_node)
            return out * self.scale + self.shift
        return x * self.scale + self.shift


class NoNorm(nn.Module):
    """The norm of an absent branch (never called)."""

    def forward(self, x: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor) -> torch.Tensor:
        return x


class ExportLayer(nn.Module):
    """:class:`~geaet_dgl.nn.geaet_layer.GEAETLayer` in eval mode: branches, residuals, norms, sum, FFN.

    The branch modules are built by :func:`geaet_dgl.export.model.export_layer`; an absent branch is a
    ``No*`` module whose ``has_*`` flag is False.
    """

    def __init__(self, layer: nn.Module, local: nn.Module, attention: nn.Module, external: nn.Module):
        super().__init__()
        self.has_local = layer.local_model is not None
        self.has_attention = layer.global_model is not None
        self.has_external = layer.external_model is not None
        self.local, self.attention, self.external = local, attention, external
        self.residual = bool(layer.residual)
        self.wraps_local = bool(layer.wraps_local())
        self.local_out_act = layer.local_out_act is not None
        self.local_out_relu = activation_name(layer.local_out_act) == "relu" if self.local_out_act else True
        identity = NoNorm()
        self.norm_local = ExportNorm(layer.norm1_local, "the local branch's norm") if self.has_local else identity
        self.norm_attention = ExportNorm(layer.norm1_global, "the global branch's norm") if self.has_attention \
            else identity
        self.norm_external = ExportNorm(layer.norm1_external, "GEANet's norm") if self.has_external else identity
        self.norm_out = ExportNorm(layer.norm2, "the layer's closing norm")
        self.use_ffn = bool(layer.use_ffn)
        self.ff1 = frozen(layer.ff_linear1) if self.use_ffn else nn.Identity()
        self.ff2 = frozen(layer.ff_linear2) if self.use_ffn else nn.Identity()
        self.ff_relu = activation_name(layer.act_ff) == "relu" if self.use_ffn else True

    def forward(self, h: torch.Tensor, e: torch.Tensor, index: GraphIndex, pe_dist: torch.Tensor,
                attn_bias: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """(N, d) nodes, (E, d') edges -> the layer's (N, d), (E, d'); ``index``: the batch's
        :class:`GraphIndex`, ``pe_dist`` (E, 1), ``attn_bias`` the Graphormer bias (or an empty tensor)."""
        src, dst, graph_of_node, graph_of_edge = index.src, index.dst, index.graph_of_node, index.graph_of_edge
        node_counts, position = index.node_counts, index.position
        num_graphs = node_counts.shape[0]
        total = torch.zeros_like(h)
        if self.has_local:
            h_local, e = self.local(h, e, src, dst, pe_dist)
            if self.wraps_local:
                if self.local_out_act:
                    h_local = activate(h_local, self.local_out_relu)
                if self.residual:
                    h_local = h + h_local
            total = total + self.norm_local(h_local, graph_of_node, node_counts)
        if self.has_attention:
            h_global = self.attention(h, graph_of_node, node_counts, position, attn_bias)
            if self.residual:
                h_global = h + h_global
            total = total + self.norm_attention(h_global, graph_of_node, node_counts)
        if self.has_external:
            h_ext, e = self.external(h, e, graph_of_node, graph_of_edge, num_graphs)
            if self.residual:
                h_ext = h + h_ext
            total = total + self.norm_external(h_ext, graph_of_node, node_counts)
        if self.use_ffn:
            total = total + self.ff2(activate(self.ff1(total), self.ff_relu))
        return self.norm_out(total, graph_of_node, node_counts), e
