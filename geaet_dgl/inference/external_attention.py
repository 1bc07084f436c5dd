"""GEANet for inference: the units as pre-built matrices, the shared unit composed with the key unit,
a norm's scale folded into the node value unit, and the batch-wide double normalisation in place.

``share_U`` followed by the key unit is one linear map (their product), built once per folding;
so are the block-diagonal (or strided) units that the training module rebuilds every forward.
With many heads the units run per head, as the module runs them. With ``out_affine`` the node output is ``s * GEANet(x) + t`` (the branch BatchNorm of the
GEAET layer, less its residual term), folded into the value unit's rows.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.batch_layout import BatchLayout
from ..nn.external_attention import GEANet, double_normalize, heads_as_one_linear, segment_lengths
from .affine import Affine, scale_rows
from .known import is_known

_GEANET_ATTRIBUTES = ("hidden_dim", "num_heads", "unit_size", "scope", "node_unit", "edge_unit", "shared_unit",
                      "one_product", "last_node_attention", "keep_attention")
_GEANET_CHILDREN = ("node_U1", "node_U2", "edge_U1", "edge_U2", "share_U")


def _compose(outer: Tuple[torch.Tensor, torch.Tensor], inner: Optional[nn.Linear]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(W, b) after ``inner``: the weight and bias of ``x -> W inner(x) + b`` (``inner`` None: (W, b))."""
    weight, bias = outer
    if inner is None:
        return weight.detach(), bias.detach()
    return (weight @ inner.weight).detach(), (weight @ inner.bias + bias).detach()


class _UnitMap:
    """A pre-built (M, d) -> (M, d) map: one dense product, or one (S, S) unit applied per head.

    ``kind``: 'dense' (``F.linear(x, W, b)``), 'heads' (head ``h`` is channels ``h*S .. h*S+S-1``)
    or 'strided_heads' (the reference's edge layout: head ``h`` is channels ``h, h+H, ...``).
    """

    def __init__(self, kind: str, weight: torch.Tensor, bias: torch.Tensor, num_heads: int, unit_size: int):
        self.kind, self.weight, self.bias = kind, weight.detach(), bias.detach()
        self.num_heads, self.unit_size = num_heads, unit_size

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "dense":
            return F.linear(x, self.weight, self.bias)
        rows = x.shape[0]
        if self.kind == "heads":
            heads = x.view(rows, self.num_heads, self.unit_size)
        else:
            heads = x.view(rows, self.unit_size, self.num_heads).transpose(1, 2)
        return F.linear(heads, self.weight, self.bias).view(rows, self.num_heads * self.unit_size)


class FoldedGEANet(nn.Module):
    """Eval-mode :class:`~geaet_dgl.nn.external_attention.GEANet` with an optional affine map on its node output.

    ``forward(graph, node_feat, edge_feat, layout=...)`` returns
    ``(s * y + t, edge_out)`` for ``out_affine = (s, t)``, where GEANet returns ``(y, edge_out)``.
    The map is folded into the node value unit when that unit is one dense product; with many heads
    the module applies its (S, S) units per head (``one_product`` False: H times fewer FLOPs than
    the block-diagonal product), which a per-channel scale cannot enter, and the map is one
    ``addcmul`` after it.
    """

    def __init__(self, net: GEANet, out_affine: Optional[Affine] = None):
        super().__init__()
        d, heads, size = net.hidden_dim, net.num_heads, net.unit_size
        self.hidden_dim, self.num_heads, self.unit_size, self.scope = d, heads, size, net.scope
        self.node_unit, self.edge_unit = net.node_unit, net.edge_unit
        self.out_affine: Optional[Affine] = None  # applied after the node value unit when not folded into it
        shared = net.share_U if net.shared_unit else None

        def unit(linear: nn.Linear, order=None, inner: Optional[nn.Linear] = None, affine=None) -> _UnitMap:
            if net.one_product or inner is not None:  # one dense product (a composed one with the shared unit)
                weight, bias = _compose(heads_as_one_linear(linear, heads, order), inner)
                return _UnitMap("dense", *scale_rows(weight, bias, affine), heads, size)
            return _UnitMap("heads" if order is None else "strided_heads", linear.weight, linear.bias, heads, size)

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
                self.node_value = _UnitMap("dense", *scale_rows(shared.weight, shared.bias, out_affine), heads, size)
            elif out_affine is not None:
                self.node_value = _UnitMap("dense", torch.diag(out_affine[0]), out_affine[1].clone(), heads, size)
            if net.edge_unit:
                self.edge_key = unit(net.edge_U1, order=net._edge_input_order, inner=shared)
                self.edge_value = unit(net.edge_U2)

    @staticmethod
    def supports(net: nn.Module) -> bool:
        """Whether ``net`` is a GEANet this class folds (kept attention weights need the module itself)."""
        return is_known(net, GEANet, _GEANET_ATTRIBUTES, _GEANET_CHILDREN) and not net.keep_attention \
            and net.scope in ("graph", "batch")

    def _normalize(self, scores: torch.Tensor, seglen: Optional[torch.Tensor]) -> torch.Tensor:
        scores = scores.view(scores.shape[0], self.num_heads, self.unit_size)
        return double_normalize(scores, seglen, in_place=True).view(scores.shape[0], self.hidden_dim)

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
            node_out = self.node_value(self._normalize(self.node_key(node_feat), node_seglen))
            if self.out_affine is not None:
                node_out = torch.addcmul(self.out_affine[1], node_out, self.out_affine[0])
        elif self.node_value is not None:
            node_out = self.node_value(node_feat)
        else:
            node_out = node_feat
        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            edge_out = self.edge_value(self._normalize(self.edge_key(edge_feat), edge_seglen))
        return node_out, edge_out
