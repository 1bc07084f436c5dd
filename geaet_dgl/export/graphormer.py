"""Graphormer's encodings in eval mode on plain tensors: the degree embeddings and the attention bias.

The degrees are computed here from ``edge_index`` (:func:`simple_graph_degrees`: the in- and out-degree of every
node in its directed simple graph, as :func:`geaet_dgl.data.encodings.structural_encoding.graphormer_degrees`).
The pair encodings are inputs (computed by the caller, as ``geaet-dgl`` computes them:
:mod:`geaet_dgl.data.encodings.structural_encoding`):

=================  ============  ================================================================================
``spatial_types``  (N, W')       int64 row i: the capped shortest-path lengths from node i to the nodes of its graph
                                 in order (W' at least the batch's largest graph; entries past the graph ignored)
``path_types``     (N, W', S')   int64 edge types along the shortest path from i to each node (0 past its end)
=================  ============  ================================================================================

:class:`ExportGraphormerBias` builds the (B * H, W, W) bias the biased self-attention adds to its scores (W the
batch's largest graph, a tensor: any width), with ``index_select`` and one ``scatter``.
"""
from __future__ import annotations

import torch
from torch import nn

from ..nn.graphormer_bias import GraphormerBias, GraphormerDegreeEncoder, check_table_range


def simple_graph_degrees(src: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """(E,) int64 sources and destinations -> (N, 2) int64 in- and out-degree of every node in the directed simple
    graph: an edge stored twice counts once, a self-loop once in each column (as ``graphormer_degrees``).

    The edges are sorted by the key ``src * N + dst`` and the first of each run of equal keys is counted
    (``scatter_add``), with no branch on the values or sizes: one exported file serves any graph.
    """
    keys, order = torch.sort(src * num_nodes + dst)
    previous = torch.cat([keys[:1] - 1, keys[:-1]])  # the first key's predecessor differs from it; (0,) for no edges
    first = (keys != previous).to(torch.long)
    degrees = torch.zeros(num_nodes, 2, dtype=torch.long, device=src.device)
    ends = torch.stack([dst.index_select(0, order), src.index_select(0, order)], 1)  # (E, 2): in-, out-degree node
    return degrees.scatter_add(0, ends, first.unsqueeze(1).expand(-1, 2))


class ExportDegrees(nn.Module):
    """:class:`~geaet_dgl.nn.graphormer_bias.GraphormerDegreeEncoder` in eval mode:
    h + z_in[deg_in] + z_out[deg_out], the degrees computed from the edges (:func:`simple_graph_degrees`)."""

    def __init__(self, encoder: GraphormerDegreeEncoder):
        super().__init__()
        self.register_buffer("in_table", encoder.in_degree_encoder.weight.detach().clone())
        self.register_buffer("out_table", encoder.out_degree_encoder.weight.detach().clone())

    def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        degrees = simple_graph_degrees(src, dst, h.shape[0])
        if not torch.jit.is_tracing():  # the library's check; the ONNX exporter traces: no branch on values there
            check_table_range("in-degree", degrees[:, 0], self.in_table.shape[0], "model.graphormer.num_in_degrees")
            check_table_range("out-degree", degrees[:, 1], self.out_table.shape[0],
                              "model.graphormer.num_out_degrees")
        return h + self.in_table.index_select(0, degrees[:, 0]) + self.out_table.index_select(0, degrees[:, 1])


class NoDegrees(nn.Module):
    """No degree embeddings."""

    def forward(self, h: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        return h


class ExportGraphormerBias(nn.Module):
    """:class:`~geaet_dgl.nn.graphormer_bias.GraphormerBias` in eval mode: (B * H, W, W), row ``b * H + h``.

    .. math:: B_h[i, j] = b_{h, \\phi(i, j)} + \\frac{1}{\\max(\\phi(i, j), 1)} \\sum_{k < S'} (z_{t_k(i, j)} W_k)_h

    for the nodes i, j of one graph, 0 elsewhere. The path term's table :math:`z_t W_k` (S, T, H) is computed once
    here from the trained weights; a pair's S' steps are S' rows of it.
    """

    def __init__(self, bias: GraphormerBias):
        super().__init__()
        self.num_heads = int(bias.num_heads)
        self.register_buffer("spatial", bias.spatial_encoder.weight.detach().clone())  # (S + 1, H)
        self.paths = bias.edge_encoder is not None
        self.num_edge_types = int(bias.edge_encoder.num_embeddings) if self.paths else 0
        table = torch.zeros(0, 0, self.num_heads)
        if self.paths:
            heads = self.num_heads
            steps = bias.edge_dis_encoder.weight.detach().view(-1, heads, heads)  # (S, H, H)
            table = torch.einsum("ta,sab->stb", bias.edge_encoder.weight.detach(), steps)  # (S, T, H)
        self.register_buffer("path_table", table.contiguous().clone())

    def forward(self, spatial_types: torch.Tensor, path_types: torch.Tensor, graph_of_node: torch.Tensor,
                node_counts: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        heads = self.num_heads
        num_nodes, num_graphs = spatial_types.shape[0], node_counts.shape[0]
        width = node_counts.max()  # a tensor: the exported file reads it from the input
        keys = torch.arange(width, device=spatial_types.device)
        own = keys.unsqueeze(0) < node_counts.index_select(0, graph_of_node).unsqueeze(1)  # (N, W): j in i's graph
        types = spatial_types.index_select(1, keys).to(torch.long)
        types = torch.where(own, types, torch.zeros_like(types))
        rows = self.spatial.index_select(0, types.reshape(-1)).reshape(num_nodes, -1, heads)  # (N, W, H)
        if self.paths:
            steps = path_types.shape[2]
            paths = path_types.index_select(1, keys).to(torch.long)  # (N, W, S')
            paths = torch.where(own.unsqueeze(-1), paths, torch.zeros_like(paths))
            codes = paths + torch.arange(steps, device=paths.device) * self.num_edge_types  # row k * T + t
            table = self.path_table.reshape(-1, heads)
            sums = table.index_select(0, codes.reshape(-1)).reshape(num_nodes, -1, steps, heads).sum(2)
            rows = rows + sums / types.clamp(min=1).unsqueeze(-1).to(rows.dtype)
        rows = rows * own.unsqueeze(-1).to(rows.dtype)
        slots = graph_of_node * width + position  # (N,) row of every node in the (B * W) layout
        flat = rows.reshape(num_nodes, -1)  # (N, W * H)
        dense = torch.zeros_like(torch.arange(num_graphs * width, device=rows.device), dtype=rows.dtype)
        dense = dense.unsqueeze(1).expand(-1, flat.shape[1])
        dense = dense.scatter(0, slots.unsqueeze(1).expand(-1, flat.shape[1]), flat)
        return dense.reshape(num_graphs, width, width, heads).permute(0, 3, 1, 2).reshape(num_graphs * heads, width,
                                                                                          width)


class NoGraphormerBias(nn.Module):
    """No attention bias: an empty (0, 0, 0) tensor."""

    def forward(self, spatial_types: torch.Tensor, path_types: torch.Tensor, graph_of_node: torch.Tensor,
                node_counts: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return torch.zeros(0, 0, 0, dtype=torch.float32, device=spatial_types.device)
