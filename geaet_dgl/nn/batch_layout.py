"""Per-batch index tensors shared by every layer of a forward pass.

Attention padding, per-graph softmax, pooling and graph-wise LayerNorm all need
the same small index tensors (which graph a node belongs to, its position in
that graph). :class:`BatchLayout` computes them once per batch; the model passes
it down so no layer recomputes them.
"""
from __future__ import annotations

from dataclasses import dataclass

import dgl
import torch


@dataclass
class BatchLayout:
    """Index tensors of a batched graph.

    Attributes
    ----------
    num_nodes_per_graph : (B,) int64
    num_edges_per_graph : (B,) int64
    node_graph_id : (N,) int64, the graph each node belongs to
    node_position : (N,) int64, the node's index inside its graph
    max_nodes : int, the largest graph's node count
    """

    num_nodes_per_graph: torch.Tensor
    num_edges_per_graph: torch.Tensor
    node_graph_id: torch.Tensor
    node_position: torch.Tensor
    max_nodes: int

    @property
    def batch_size(self) -> int:
        return int(self.num_nodes_per_graph.numel())

    @classmethod
    def from_graph(cls, graph: dgl.DGLGraph) -> "BatchLayout":
        device = graph.device
        nodes = graph.batch_num_nodes().to(device=device, dtype=torch.long)
        edges = graph.batch_num_edges().to(device=device, dtype=torch.long)
        num_graphs = nodes.numel()
        graph_id = torch.repeat_interleave(torch.arange(num_graphs, device=device), nodes)
        offsets = torch.cumsum(nodes, 0) - nodes
        position = torch.arange(graph.num_nodes(), device=device) - offsets[graph_id]
        max_nodes = int(nodes.max()) if num_graphs else 0
        return cls(nodes, edges, graph_id, position, max_nodes)


def layout_of(graph: dgl.DGLGraph, layout: "BatchLayout | None") -> BatchLayout:
    """Return ``layout`` or build it from ``graph``."""
    return layout if layout is not None else BatchLayout.from_graph(graph)
