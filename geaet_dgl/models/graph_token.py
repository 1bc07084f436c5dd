"""Graphormer's graph token (``model.graphormer.graph_token``): one virtual node per graph, part of the encoder
stage (:class:`~.encoder_stage.EncoderStage`)."""
from __future__ import annotations

import dgl
import torch
from torch import nn

from ..nn.batch_layout import BatchLayout


class GraphToken(nn.Module):
    """Graphormer's graph token as GraphGPS adds it (``graphormer.use_graph_token``).

    One learned (d,) vector is put in front of every graph's nodes (after the degree embeddings, then the
    input dropout), and one learned bias per head stands for every attention score to or from it.
    GraphGPS adds the token to the node features and the batch vector only: the edge list keeps its
    node numbers, which now count the tokens too, so the local MPNN reads the node that sits at the old
    number in the new order. That is reproduced: the returned graph has N + B nodes and the same
    (src, dst) numbers. The new order is GraphGPS's too: tokens and nodes sorted by graph with
    ``torch.sort``, which is not stable, so within a graph the token is not always first (the bias still
    gives row and column 0 the token's bias, and the graph-token pooling reads row 0, as in GraphGPS).

    Shapes: ``graph`` (N nodes, B graphs), ``node_feat`` (N, d) -> a graph of N + B nodes, (N + B, d),
    its layout; :meth:`pad_bias` (B * H, W, W) -> (B * H, W', W') for the new layout's width W'.
    """

    def __init__(self, hidden_dim: int, num_heads: int, input_dropout: float = 0.0):
        super().__init__()
        self.num_heads = num_heads
        self.node_token = nn.Parameter(torch.zeros(1, hidden_dim))
        self.bias_token = nn.Parameter(torch.zeros(1, num_heads, 1))
        self.input_dropout = nn.Dropout(input_dropout)
        nn.init.normal_(self.node_token, std=0.02)
        nn.init.normal_(self.bias_token, std=0.02)

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, layout: BatchLayout):
        sizes = layout.num_nodes_per_graph
        batch = sizes.shape[0]
        graph_ids = torch.arange(batch, device=node_feat.device)
        # GraphGPS's add_graph_token: the B tokens, then the nodes, reordered by torch.sort of their graph ids,
        # which is not stable: within a graph the token and the nodes come out in the order the sort leaves
        # them (not token first), and the graph-token pooling reads whichever row is first. Reproduced with the
        # same call on the same ids.
        _, order = torch.sort(torch.cat([graph_ids, torch.repeat_interleave(graph_ids, sizes)]))
        h = torch.cat([self.input_dropout(self.node_token.expand(batch, -1)), node_feat])[order]
        src, dst = graph.edges()
        tokened = dgl.graph((src, dst), num_nodes=h.shape[0], idtype=graph.idtype, device=graph.device)
        tokened.set_batch_num_nodes(sizes + 1)
        tokened.set_batch_num_edges(graph.batch_num_edges())
        return tokened, h, BatchLayout.from_graph(tokened)

    def pad_bias(self, bias: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """Row and column 0 of every graph's (H, W, W) bias become the token's per-head bias."""
        heads, width = self.num_heads, layout.dense_width
        old = bias.view(-1, heads, bias.shape[-2], bias.shape[-1])
        padded = old.new_zeros(old.shape[0], heads, width, width)
        size = min(old.shape[-1], width - 1)
        padded[:, :, 1:1 + size, 1:1 + size] = old[:, :, :size, :size]
        token = self.bias_token.to(old.dtype)  # (1, H, 1)
        padded[:, :, 1:, 0] = token
        padded[:, :, 0, :] = token
        return padded.reshape(-1, width, width)
