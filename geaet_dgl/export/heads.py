"""The prediction heads in eval mode on plain tensors: pooled graph heads (graphgym, mlp_graph, san_graph MLPs),
node, root and sequence heads."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..models.heads import PostMPMLP, SANMLP
from .common import activate, activation_name, frozen
from .scatter import segment_max, segment_mean, segment_sum


class ExportPostMP(nn.Module):
    """graphgym's post-message-passing MLP (:class:`~geaet_dgl.models.heads.PostMPMLP`): hidden blocks
    Linear -> ReLU -> row-wise L2 normalisation, then the last linear map. The normalisation is written out,
    :math:`x / \max(\lVert x \rVert_2, 10^{-12})` as ``F.normalize``: torch 2.2 writes ``F.normalize`` into ONNX
    opset 18 as a ``ReduceL2`` node that the ONNX checker rejects."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.hidden = nn.ModuleList(frozen(linear) for linear in mlp.hidden)
        self.final = frozen(mlp.final)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for linear in self.hidden:
            x = F.relu(linear(x))
            x = x / x.square().sum(-1, keepdim=True).sqrt().clamp(min=1e-12)
        return self.final(x)


class ExportSANMLP(nn.Module):
    """GraphGPS's ``san_graph`` MLP (:class:`~geaet_dgl.models.heads.SANMLP`): (Linear -> act) blocks, then the last
    linear map (its ModuleList slice does not compile with TorchScript)."""

    def __init__(self, mlp: nn.Module):
        super().__init__()
        self.hidden = nn.ModuleList(frozen(linear) for linear in list(mlp.FC_layers)[:-1])
        self.final = frozen(mlp.FC_layers[-1])
        self.relu = activation_name(mlp.activation) == "relu"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for linear in self.hidden:
            x = activate(linear(x), self.relu)
        return self.final(x)


class ExportHead(nn.Module):
    """The prediction head: ``kind`` 0 pool each graph (``pooling``) then the MLP, 1 the MLP on every node,
    2 the MLP on each graph's first node (the root head), 3 pool then one linear map per sequence position
    (the sequence head; its maps concatenated into one)."""

    def __init__(self, head: nn.Module, kind: str):
        super().__init__()
        self.kind = {"graph": 0, "node": 1, "root": 2, "sequence": 3}[kind]
        self.pooling = {"mean": 0, "sum": 1, "max": 2, "first": 3}[getattr(head, "pooling", "mean")]
        if kind == "sequence":  # one linear map per position, concatenated: GraphGPS's ogb_code_graph head
            linears = list(head.graph_pred_linear_list)
            merged = nn.Linear(linears[0].in_features, sum(linear.out_features for linear in linears))
            with torch.no_grad():
                merged.weight.copy_(torch.cat([linear.weight for linear in linears]))
                merged.bias.copy_(torch.cat([linear.bias for linear in linears]))
            self.mlp = frozen(merged)
            return
        mlp = head.layer_post_mp
        if type(mlp) is PostMPMLP:
            self.mlp = ExportPostMP(mlp)
        elif type(mlp) is SANMLP:
            self.mlp = ExportSANMLP(mlp)
        else:  # GraphGPS's mlp_graph: an nn.Sequential of Dropout (the identity in eval mode), Linear, activations
            self.mlp = frozen(mlp)

    def forward(self, h: torch.Tensor, graph_of_node: torch.Tensor, node_counts: torch.Tensor) -> torch.Tensor:
        if self.kind == 1:
            return self.mlp(h)
        num_graphs = node_counts.shape[0]
        if self.kind == 2 or self.pooling == 3:
            pooled = h.index_select(0, torch.cumsum(node_counts, 0) - node_counts)
        elif self.pooling == 0:
            pooled = segment_mean(h, graph_of_node, node_counts)
        elif self.pooling == 1:
            pooled = segment_sum(h, graph_of_node, num_graphs)
        else:
            pooled = segment_max(h, graph_of_node, num_graphs)
        return self.mlp(pooled)
