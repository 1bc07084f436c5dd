"""GEANet for inference: the units as pre-built matrices, the shared unit composed with the key unit,
a norm's scale folded into the node value unit, and the batch-wide double normalisation in place.

``share_U`` followed by the block-diagonal key unit is one linear map (their product), built once
per folding; so are the block-diagonal (or strided) units that the training module rebuilds every
forward. With ``out_affine`` the node output is ``s * GEANet(x) + t`` (the branch BatchNorm of the
GEAET layer, less its residual term), folded into the value unit's rows.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.external_attention import GEANet, heads_as_one_linear
from .affine import Affine, scale_rows
from .known import is_known

_GEANET_ATTRIBUTES = ("hidden_dim", "num_heads", "unit_size", "scope", "node_unit", "edge_unit", "shared_unit",
                      "one_product", "last_node_attention", "keep_attention")
_GEANET_CHILDREN = ("node_U1", "node_U2", "edge_U1", "edge_U2", "share_U")


def batch_double_normalize_(scores: torch.Tensor) -> torch.Tensor:
    """(M, H, S) -> the same tensor, softmax over all M rows then each row normalised over S, in place."""
    if scores.shape[0] == 0:
        return scores
    scores.sub_(scores.amax(dim=0, keepdim=True)).exp_()
    scores.div_(scores.sum(dim=0, keepdim=True))
    return scores.div_(scores.sum(dim=-1, keepdim=True))


def _compose(outer: Tuple[torch.Tensor, torch.Tensor], inner: Optional[nn.Linear]) -> Tuple[torch.Tensor, torch.Tensor]:
    """(W, b) after ``inner``: the weight and bias of ``x -> W inner(x) + b`` (``inner`` None: (W, b))."""
    weight, bias = outer
    if inner is None:
        return weight.detach(), bias.detach()
    return (weight @ inner.weight).detach(), (weight @ inner.bias + bias).detach()


class FoldedGEANet(nn.Module):
    """Eval-mode :class:`~geaet_dgl.nn.external_attention.GEANet` with an optional affine map on its node output.

    ``forward(graph, node_feat, edge_feat, num_nodes_per_graph, num_edges_per_graph)`` returns
    ``(out_affine(node_out), edge_out)``, where GEANet returns ``(node_out, edge_out)``.
    """

    def __init__(self, net: GEANet, out_affine: Optional[Affine] = None):
        super().__init__()
        d, heads = net.hidden_dim, net.num_heads
        self.hidden_dim, self.num_heads, self.unit_size, self.scope = d, heads, net.unit_size, net.scope
        self.node_unit, self.edge_unit = net.node_unit, net.edge_unit
        shared = net.share_U if net.shared_unit else None
        with torch.no_grad():
            if net.node_unit:
                self.node_key = _compose(heads_as_one_linear(net.node_U1, heads), shared)
                self.node_value = scale_rows(*heads_as_one_linear(net.node_U2, heads), out_affine)
            elif shared is not None:
                self.node_value = scale_rows(shared.weight, shared.bias, out_affine)
            else:
                self.node_value = None if out_affine is None else (torch.diag(out_affine[0]), out_affine[1].clone())
            if net.edge_unit:
                order = net._edge_input_order
                self.edge_key = _compose(heads_as_one_linear(net.edge_U1, heads, order), shared)
                self.edge_value = tuple(t.detach() for t in heads_as_one_linear(net.edge_U2, heads))

    @staticmethod
    def supports(net: nn.Module) -> bool:
        """Whether ``net`` is a GEANet this class folds (kept attention weights need the module itself)."""
        return is_known(net, GEANet, _GEANET_ATTRIBUTES, _GEANET_CHILDREN) and not net.keep_attention \
            and net.scope in ("graph", "batch")

    def _normalize(self, scores: torch.Tensor, seglen: Optional[torch.Tensor]) -> torch.Tensor:
        scores = scores.view(scores.shape[0], self.num_heads, self.unit_size)
        if seglen is None:
            attn = batch_double_normalize_(scores)
        else:
            attn = dgl.ops.segment_softmax(seglen, scores)
            attn = attn.div_(attn.sum(dim=-1, keepdim=True))
        return attn.view(scores.shape[0], self.hidden_dim)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None,
                num_nodes_per_graph: Optional[torch.Tensor] = None,
                num_edges_per_graph: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d), (E, d) or None -> (N, d), (E, d) or None."""
        if node_feat.shape[-1] != self.hidden_dim:
            raise ValueError(f"node_feat has width {node_feat.shape[-1]}, expected {self.hidden_dim}")
        graph_scope = self.scope == "graph"
        node_seglen = edge_seglen = None
        if graph_scope:
            node_seglen = num_nodes_per_graph if num_nodes_per_graph is not None else graph.batch_num_nodes()
            edge_seglen = num_edges_per_graph if num_edges_per_graph is not None else graph.batch_num_edges()
        if self.node_unit:
            attn = self._normalize(F.linear(node_feat, *self.node_key), node_seglen)
            node_out = F.linear(attn, *self.node_value)
        elif self.node_value is not None:
            node_out = F.linear(node_feat, *self.node_value)
        else:
            node_out = node_feat
        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            attn = self._normalize(F.linear(edge_feat, *self.edge_key), edge_seglen)
            edge_out = F.linear(attn, *self.edge_value)
        return node_out, edge_out
