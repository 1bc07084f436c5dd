"""Prediction heads: graph-level (pool then MLP) and node-level (MLP per node)."""
from __future__ import annotations

import dgl
import torch
from torch import nn

from ..nn.activation import make_activation
from ..nn.batch_layout import BatchLayout

POOLINGS = ("mean", "sum", "max")


def mlp(in_feats: int, out_feats: int, num_layers: int, activation: str, dropout: float = 0.0,
        dropout_first: bool = False) -> nn.Sequential:
    """``num_layers - 1`` hidden blocks of width ``in_feats`` then a final Linear.

    With ``dropout_first`` every block is Dropout -> Linear -> act and the final
    Linear is preceded by Dropout (GraphGPS ``mlp_graph``); otherwise the blocks
    are Linear -> act (graphgym's post-MP MLP).
    """
    layers = []
    for _ in range(num_layers - 1):
        if dropout_first:
            layers.append(nn.Dropout(dropout))
        layers += [nn.Linear(in_feats, in_feats), make_activation(activation)]
    if dropout_first:
        layers.append(nn.Dropout(dropout))
    layers.append(nn.Linear(in_feats, out_feats))
    return nn.Sequential(*layers)


def pool_nodes(kind: str, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
    """(N, d) -> (B, d) mean/sum/max over each graph's nodes (segment kernels)."""
    if kind not in POOLINGS:
        raise ValueError(f"pooling={kind!r} is not one of {', '.join(POOLINGS)}")
    return dgl.ops.segment_reduce(layout.num_nodes_per_graph, node_feat, kind)


class GraphHead(nn.Module):
    """Pool the nodes of each graph, then an MLP: (N, d) -> (B, out_feats)."""

    def __init__(self, hidden_dim: int, out_feats: int, num_layers: int = 2, pooling: str = "mean",
                 activation: str = "relu", dropout: float = 0.0, dropout_first: bool = False):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is not one of {', '.join(POOLINGS)}")
        self.pooling = pooling
        self.layer_post_mp = mlp(hidden_dim, out_feats, num_layers, activation, dropout, dropout_first)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        return self.layer_post_mp(pool_nodes(self.pooling, node_feat, layout))


class NodeHead(nn.Module):
    """An MLP on every node: (N, d) -> (N, out_feats)."""

    def __init__(self, hidden_dim: int, out_feats: int, num_layers: int = 2, activation: str = "relu"):
        super().__init__()
        self.layer_post_mp = mlp(hidden_dim, out_feats, num_layers, activation)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        return self.layer_post_mp(node_feat)
