"""The GEAET layer for inference: branch BatchNorms folded, the branch sum and the FFN in few kernels.

With BatchNorm branch norms :math:`\\mathrm{BN}_b(x) = s_b x + t_b`, the layer's branch sum is

.. math::
    \\sum_b s_b (X + Y_b) + t_b = \\big(\\textstyle\\sum_b s_b\\big) X + \\sum_b s_b Y_b + \\sum_b t_b,

where :math:`Y_b` is a branch's output before its residual. A branch that ends in a linear map
(self-attention's ``out_proj``, GEANet's value unit) takes :math:`s_b` into that map's rows; the
others are added with one ``addcmul`` each. The FFN's closing norm goes into its second linear map:
:math:`\\mathrm{BN}(h + W_2 a + b_2) = s h + (s W_2) a + (s b_2 + t)`. A graph LayerNorm (it reads
the batch's statistics) is applied as it is. Dropout is skipped.

Any branch module the folding does not know runs its own eval forward, so the result stays exact.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.activation import activation_
from ..nn.batch_layout import BatchLayout, layout_of
from ..nn.external_attention import GEANet
from ..nn.gated_gcn import GatedGCNLayer
from ..nn.self_attention import GraphSelfAttention
from ..nn.geaet_layer import GEAETLayer
from .affine import batchnorm_affine, scale_rows
from .known import is_known

_LAYER_ATTRIBUTES = ("hidden_dim", "residual", "use_ffn", "local_model", "global_model", "external_model", "local_out_act")  # None-valued
_LAYER_CHILDREN = ("local_model", "global_model", "external_model", "local_out_act", "dropout_local", "norm1_local",
                   "dropout_global", "norm1_global", "dropout_external", "norm1_external", "ff_linear1",
                   "ff_linear2", "act_ff", "ff_dropout1", "ff_dropout2", "norm2")


def _norm_affine(branch_norm: nn.Module):
    """(scale, shift) of a BranchNorm holding a foldable BatchNorm, else None."""
    return batchnorm_affine(branch_norm.norm) if getattr(branch_norm, "kind", None) == "batch" else None


class FoldedGEAETLayer(nn.Module):
    """Eval-mode :class:`~geaet_dgl.nn.geaet_layer.GEAETLayer`: same call, same outputs up to float rounding.

    Build it with :func:`fold_layer`, which returns the layer itself when it does not know the layer.
    """

    def __init__(self, layer: GEAETLayer):
        super().__init__()
        d = layer.hidden_dim
        like = next(layer.parameters())
        self.hidden_dim = d
        self.residual = layer.residual
        # The sum of the folded branch norms: coefficient of the layer input and constant term.
        self.residual_scale = torch.zeros(d, dtype=like.dtype, device=like.device)
        self.shift = torch.zeros(d, dtype=like.dtype, device=like.device)
        self.any_folded = False

        self.local_model = self.local_out_act = None
        self.local_affine = self.local_norm = None
        if layer.local_model is not None:
            folded = layer.local_model.folded() if isinstance(layer.local_model, GatedGCNLayer) else None
            self.local_model = folded or layer.local_model
            self.local_out_act = layer.local_out_act
            self.local_wrapped = not layer.local_model.applies_residual  # the layer adds act / residual around it
            self.local_residual = self.local_wrapped and layer.residual
            self.local_affine = self._fold_norm(layer.norm1_local, residual=self.local_residual)
            self.local_norm = None if self.local_affine is not None else layer.norm1_local

        self.global_model = self.global_norm = None
        if layer.global_model is not None:
            attention = layer.global_model
            if isinstance(attention, GraphSelfAttention) and attention.folded() is not None:
                affine = self._fold_norm(layer.norm1_global, residual=layer.residual)
                self.global_model = attention.folded(affine)
                self.global_norm = None if affine is not None else layer.norm1_global
            else:  # run as it is, its norm too
                self.global_model, self.global_norm = layer.global_model, layer.norm1_global

        self.external_model = self.external_norm = None
        if layer.external_model is not None:
            net = layer.external_model
            if isinstance(net, GEANet) and net.folded() is not None:
                affine = self._fold_norm(layer.norm1_external, residual=layer.residual)
                self.external_model = net.folded(affine)
                self.external_norm = None if affine is not None else layer.norm1_external
            else:
                self.external_model, self.external_norm = layer.external_model, layer.norm1_external

        self.use_ffn = layer.use_ffn
        out_affine = _norm_affine(layer.norm2)
        self.norm2 = None if out_affine is not None else layer.norm2
        self.out_scale = out_affine[0] if out_affine is not None else None
        if self.use_ffn:
            self.ff1 = (layer.ff_linear1.weight.detach(), layer.ff_linear1.bias.detach())
            self.ff2 = scale_rows(layer.ff_linear2.weight, layer.ff_linear2.bias, out_affine)
            self.act_ff = layer.act_ff
        elif out_affine is not None:
            self.out_shift = out_affine[1]

    def _fold_norm(self, branch_norm: nn.Module, residual: bool):
        """Record a foldable branch norm's share of the input coefficient and constant term.

        Returns ``(scale, 0)``, the map the branch's own output still needs (the shift is in
        ``self.shift`` already), or None when the norm cannot be folded."""
        affine = _norm_affine(branch_norm)
        if affine is None:
            return None
        scale, shift = affine
        if residual:
            self.residual_scale += scale
        self.shift += shift
        self.any_folded = True
        return scale, torch.zeros_like(shift)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None,
                pe_dist: Optional[torch.Tensor] = None, layout: Optional[BatchLayout] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """As :meth:`GEAETLayer.forward <geaet_dgl.nn.geaet_layer.GEAETLayer.forward>` in eval mode."""
        layout = layout_of(graph, layout)
        h_in = node_feat
        parts: List[Tuple[torch.Tensor, Optional[torch.Tensor]]] = []  # (tensor, scale or None) to be summed
        if self.local_model is not None:
            h_local, edge_feat = self.local_model(graph, h_in, edge_feat, layout=layout, pe_dist=pe_dist,
                                                  edge_output=edge_output)
            if self.local_wrapped and self.local_out_act is not None:
                h_local = self.local_out_act(h_local)
            if self.local_affine is not None:
                parts.append((h_local, self.local_affine[0]))
            else:
                parts.append((self.local_norm(h_in + h_local if self.local_residual else h_local, layout), None))
        if self.global_model is not None:
            h_global, _ = self.global_model(graph, h_in, layout=layout, edge_output=False)
            parts.append((h_global, None) if self.global_norm is None
                         else (self.global_norm(self._skip(h_in, h_global), layout), None))
        if self.external_model is not None:
            h_ext, edge_feat = self.external_model(graph, h_in, edge_feat if edge_output else None, layout=layout,
                                                   edge_output=edge_output)
            parts.append((h_ext, None) if self.external_norm is None
                         else (self.external_norm(self._skip(h_in, h_ext), layout), None))
        h = self._sum(h_in, parts)
        return self._feed_forward(h, layout), edge_feat if edge_output else None

    def _skip(self, h_in: torch.Tensor, branch_out: torch.Tensor) -> torch.Tensor:
        return h_in + branch_out if self.residual else branch_out

    def _sum(self, h_in: torch.Tensor, parts) -> torch.Tensor:
        """``residual_scale * h_in + shift + sum of the parts``, accumulated in one fresh (N, d) tensor."""
        if self.any_folded:
            h = torch.addcmul(self.shift, h_in, self.residual_scale)
        else:
            (first, scale), parts = parts[0], parts[1:]
            h = first * scale if scale is not None else first.clone()
        for part, scale in parts:
            if scale is None:
                h.add_(part)
            else:
                h.addcmul_(part, scale)
        return h

    def _feed_forward(self, h: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """``Norm2(h + FFN(h))`` (or ``Norm2(h)`` without FFN)."""
        if self.use_ffn:
            hidden = activation_(F.linear(h, *self.ff1), self.act_ff)
            if self.norm2 is None:
                return torch.addmm(self.ff2[1], hidden, self.ff2[0].t()).addcmul_(h, self.out_scale)
            return self.norm2(h.add_(F.linear(hidden, *self.ff2)), layout)
        if self.norm2 is None:
            return torch.addcmul(self.out_shift, h, self.out_scale)
        return self.norm2(h, layout)


def fold_layer(layer: nn.Module) -> nn.Module:
    """A :class:`FoldedGEAETLayer` for a GEAET layer the folding knows, else ``layer`` itself (in eval mode)."""
    if is_known(layer, GEAETLayer, _LAYER_ATTRIBUTES, _LAYER_CHILDREN):
        return FoldedGEAETLayer(layer)
    return layer.eval()
