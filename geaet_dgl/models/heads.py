"""Prediction heads: graph-level (pool then MLP), node-level (MLP per node) and link-level.

The heads of the reference: graphgym ``default`` (:class:`GraphHead`, style
'graphgym'), GraphGPS ``mlp_graph`` (:class:`GraphHead`, style 'dropout_mlp') and
``san_graph`` (style 'san'),
``inductive_node`` (:class:`NodeHead`) and ``inductive_edge`` with dot-product
decoding (:class:`LinkHead`).
"""
from __future__ import annotations

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from ..nn.activation import make_activation
from ..nn.batch_layout import BatchLayout

POOLINGS = ("mean", "sum", "max", "first")


class PostMPMLP(nn.Module):
    """graphgym's post-message-passing MLP, as the reference's ``default`` and
    ``inductive_node`` heads build it.

    ``num_layers - 1`` hidden blocks Linear(d, d) -> ReLU -> row-wise L2
    normalisation, then Linear(d, out_feats). graphgym builds the hidden blocks
    from a fresh ``LayerConfig``, so they always use ReLU, no dropout and no
    BatchNorm, and L2-normalise their output, whatever the model's settings.
    """

    def __init__(self, in_feats: int, out_feats: int, num_layers: int):
        super().__init__()
        self.hidden = nn.ModuleList(nn.Linear(in_feats, in_feats) for _ in range(num_layers - 1))
        self.final = nn.Linear(in_feats, out_feats)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for linear in self.hidden:
            x = F.normalize(F.relu(linear(x)), p=2.0, dim=-1)
        return self.final(x)


def dropout_mlp(in_feats: int, out_feats: int, num_layers: int, activation: str, dropout: float) -> nn.Sequential:
    """GraphGPS ``mlp_graph``: (Dropout -> Linear(d, d) -> act) x (L-1), then Dropout -> Linear(d, out)."""
    layers = []
    for _ in range(num_layers - 1):
        layers += [nn.Dropout(dropout), nn.Linear(in_feats, in_feats), make_activation(activation)]
    layers += [nn.Dropout(dropout), nn.Linear(in_feats, out_feats)]
    return nn.Sequential(*layers)


class SANMLP(nn.Module):
    """GraphGPS ``san_graph``: (Linear(d/2^l, d/2^(l+1)) -> act) for l < L = num_layers - 1, then Linear(d/2^L, out)."""

    def __init__(self, in_feats: int, out_feats: int, num_layers: int, activation: str):
        super().__init__()
        depth = num_layers - 1
        widths = [in_feats // 2 ** level for level in range(depth + 1)] + [out_feats]
        self.FC_layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths[:-1], widths[1:]))  # the reference's name
        self.activation = make_activation(activation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for linear in self.FC_layers[:-1]:
            x = self.activation(linear(x))
        return self.FC_layers[-1](x)


def pool_nodes(kind: str, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
    """(N, d) -> (B, d) mean/sum/max over each graph's nodes (segment kernels), or each graph's first node
    (``first``: GraphGPS's ``graph_token`` pooling, the graph token's row)."""
    if kind not in POOLINGS:
        raise ValueError(f"pooling={kind!r} is not one of {', '.join(POOLINGS)}")
    if kind == "first":
        return node_feat[torch.cumsum(layout.num_nodes_per_graph, 0) - layout.num_nodes_per_graph]
    return dgl.ops.segment_reduce(layout.num_nodes_per_graph, node_feat, kind)


class GraphHead(nn.Module):
    """Pool the nodes of each graph, then an MLP: (N, d) -> (B, out_feats)."""

    def __init__(self, hidden_dim: int, out_feats: int, num_layers: int = 2, pooling: str = "mean",
                 style: str = "graphgym", activation: str = "relu", dropout: float = 0.0):
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is not one of {', '.join(POOLINGS)}")
        if style not in ("graphgym", "dropout_mlp", "san"):
            raise ValueError(f"style={style!r} is not one of graphgym, dropout_mlp, san")
        self.pooling = pooling
        if style == "graphgym":
            self.layer_post_mp = PostMPMLP(hidden_dim, out_feats, num_layers)
        elif style == "san":
            self.layer_post_mp = SANMLP(hidden_dim, out_feats, num_layers, activation)
        else:
            self.layer_post_mp = dropout_mlp(hidden_dim, out_feats, num_layers, activation, dropout)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        return self.layer_post_mp(pool_nodes(self.pooling, node_feat, layout))


class RootHead(nn.Module):
    """Read out node 0 of every graph (the root of a TreeNeighbourMatch tree), then an MLP:
    (N, d) -> (B, out_feats)."""

    def __init__(self, hidden_dim: int, out_feats: int, num_layers: int = 2):
        super().__init__()
        self.layer_post_mp = PostMPMLP(hidden_dim, out_feats, num_layers)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        first = torch.cumsum(layout.num_nodes_per_graph, 0) - layout.num_nodes_per_graph
        return self.layer_post_mp(node_feat[first])


class NodeHead(nn.Module):
    """An MLP on every node: (N, d) -> (N, out_feats)."""

    def __init__(self, hidden_dim: int, out_feats: int, num_layers: int = 2):
        super().__init__()
        self.layer_post_mp = PostMPMLP(hidden_dim, out_feats, num_layers)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        return self.layer_post_mp(node_feat)


class LinkHead(nn.Module):
    """GraphGPS's ``inductive_edge`` head with ``edge_decoding: dot``: (N, d) -> (N, d) pair embeddings.

    The head maps every node with the post-MP MLP (``Linear(d, d)`` for one
    layer); the score (logit) of a node pair is the dot product of the two
    embeddings, :math:`s_{ij} = z_i^\\top z_j` (:func:`pair_scores`), computed by
    the loss and the ranking metrics for the pairs they need.
    """

    def __init__(self, hidden_dim: int, num_layers: int = 1):
        super().__init__()
        self.layer_post_mp = PostMPMLP(hidden_dim, hidden_dim, num_layers)

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        return self.layer_post_mp(node_feat)


#: Subtokens a :class:`SequenceHead` predicts (GraphGPS's ``max_seq_len`` for ogbg-code2).
MAX_SEQ_LEN = 5


class SequenceHead(nn.Module):
    """GraphGPS's ``ogb_code_graph`` head (ogbg-code2): pool each graph, then one ``Linear(d, V)`` per position.

    (N, d) -> (B, MAX_SEQ_LEN * V): the logits of position ``p`` over the
    vocabulary of V subtokens are columns ``p * V .. (p + 1) * V - 1`` (read
    them as ``output.view(B, MAX_SEQ_LEN, V)``). GraphGPS refuses more than one
    layer; so does this.
    """

    def __init__(self, hidden_dim: int, vocab_size: int, num_layers: int = 1, pooling: str = "mean",
                 max_seq_len: int = MAX_SEQ_LEN):
        super().__init__()
        if num_layers != 1:
            raise ValueError(f"head='sequence' has one linear layer per position (GraphGPS's ogb_code_graph), "
                             f"got head_layers={num_layers}; set model.head_layers=1")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling={pooling!r} is not one of {', '.join(POOLINGS)}")
        self.pooling = pooling
        self.graph_pred_linear_list = nn.ModuleList(nn.Linear(hidden_dim, vocab_size) for _ in range(max_seq_len))

    def forward(self, node_feat: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        pooled = pool_nodes(self.pooling, node_feat, layout)
        return torch.cat([linear(pooled) for linear in self.graph_pred_linear_list], dim=1)


def pair_scores(pair_feat: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
    """Dot-product logits of node pairs: (N, d), (M,), (M,) -> (M,) with ``s_m = z[src_m] . z[dst_m]``."""
    return (pair_feat[src] * pair_feat[dst]).sum(dim=-1)
