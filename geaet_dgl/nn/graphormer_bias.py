"""Graphormer's encodings (the reference's ``GraphormerBias`` node encoder): degrees and the attention bias.

The graphs carry ``ndata['spatial_types']`` (N, W_data) uint8 capped shortest-path
lengths and ``ndata['in_degree']`` / ``ndata['out_degree']`` (N,) int64,
precomputed by :mod:`geaet_dgl.data.encodings.se_cache`.
"""
from __future__ import annotations

import torch
from torch import nn

from .batch_layout import BatchLayout


def _check_range(name: str, values: torch.Tensor, size: int, setting: str) -> None:
    if values.numel() and int(values.max()) >= size:
        raise ValueError(f"a graph has {name} {int(values.max())}, but the encoder has {size} entries; "
                         f"set {setting} to at least {int(values.max()) + 1}")


class GraphormerDegreeEncoder(nn.Module):
    """Add learned in- and out-degree embeddings to the node features, then dropout.

    .. math:: h_i' = \\mathrm{Dropout}(h_i + z^-_{\\deg^-(i)} + z^+_{\\deg^+(i)})

    Parameters
    ----------
    hidden_dim : int, width of ``h``.
    num_in_degrees, num_out_degrees : int, embedding table sizes (degrees 0 .. size - 1).
    input_dropout : float

    Shapes: ``node_feat`` (N, d), ``in_degree`` / ``out_degree`` (N,) int -> (N, d).

    Example
    -------
    >>> enc = GraphormerDegreeEncoder(8, 4, 4)
    >>> enc(torch.zeros(3, 8), torch.tensor([0, 1, 2]), torch.tensor([1, 1, 0])).shape
    torch.Size([3, 8])
    """

    def __init__(self, hidden_dim: int, num_in_degrees: int, num_out_degrees: int, input_dropout: float = 0.0):
        super().__init__()
        self.in_degree_encoder = nn.Embedding(num_in_degrees, hidden_dim)
        self.out_degree_encoder = nn.Embedding(num_out_degrees, hidden_dim)
        self.input_dropout = nn.Dropout(input_dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.normal_(self.in_degree_encoder.weight, std=0.02)
        nn.init.normal_(self.out_degree_encoder.weight, std=0.02)

    def forward(self, node_feat: torch.Tensor, in_degree: torch.Tensor, out_degree: torch.Tensor) -> torch.Tensor:
        _check_range("in-degree", in_degree, self.in_degree_encoder.num_embeddings, "model.graphormer.num_in_degrees")
        _check_range("out-degree", out_degree, self.out_degree_encoder.num_embeddings,
                     "model.graphormer.num_out_degrees")
        h = node_feat + self.in_degree_encoder(in_degree.long()) + self.out_degree_encoder(out_degree.long())
        return self.input_dropout(h)


def _to_width(types: torch.Tensor, width: int) -> torch.Tensor:
    """(N, W_data, ...) -> (N, width, ...): cut, or padded with 0."""
    if types.shape[1] < width:
        pad = [0, 0] * (types.dim() - 2) + [0, width - types.shape[1]]
        types = torch.nn.functional.pad(types, pad, value=0)
    return types[:, :width]


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]``: (T, H), (...) int64 -> (..., H)."""
    return table.index_select(0, index.reshape(-1)).view(*index.shape, table.shape[1])


class GraphormerBias(nn.Module):
    """Graphormer's attention bias: one learned scalar per head and spatial type, plus, with edge types,
    the mean of learned edge-type encodings along a shortest path.

    .. math::
        B_h[i, j] = b_{h, \\phi(i, j)} + \\frac{1}{\\max(\\phi(i, j), 1)}
                    \\sum_{k < S} (z_{t_k(i, j)} W_k)_h

    with :math:`\\phi(i, j)` the capped shortest-path length from ``i`` to ``j``
    (``num_spatial_types`` for unreachable pairs), for the nodes ``i, j`` of one graph;
    :math:`t_k(i, j)` the type of the path's ``k``-th edge (0 past its end, as the reference pads),
    :math:`z_t \\in R^H` and :math:`W_k \\in R^{H \\times H}` learned (``num_edge_types > 0`` only).

    Parameters
    ----------
    num_heads : int
    num_spatial_types : int, ``S``; the table has ``S + 1`` rows.
    num_edge_types : int, edge-type vocabulary of the path encoding; 0: no path encoding.

    Shapes: ``spatial_types`` (N, W_data) uint8 (row ``i``: types to the nodes
    of its graph, padded), ``path_types`` (N, W_data, S) uint8 -> (B * H, W, W)
    float, W = ``layout.dense_width``, zero outside each graph's nodes; row
    ``b * H + h`` as ``torch.nn.MultiheadAttention``'s ``attn_mask``.

    Example
    -------
    >>> import dgl
    >>> g = dgl.graph(([0, 1], [1, 2]))
    >>> types = torch.tensor([[0, 1, 2], [3, 0, 1], [3, 3, 0]], dtype=torch.uint8)
    >>> GraphormerBias(2, 3)(types, BatchLayout.from_graph(g)).shape
    torch.Size([2, 3, 3])
    """

    def __init__(self, num_heads: int, num_spatial_types: int, num_edge_types: int = 0):
        super().__init__()
        self.num_heads = num_heads
        self.spatial_encoder = nn.Embedding(num_spatial_types + 1, num_heads)
        self.edge_encoder = nn.Embedding(num_edge_types, num_heads) if num_edge_types else None
        # the reference's names and layout: row k * H * H + a * H + b is W_k[a, b]
        self.edge_dis_encoder = nn.Embedding(num_spatial_types * num_heads * num_heads, 1) if num_edge_types else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for table in (self.spatial_encoder, self.edge_encoder, self.edge_dis_encoder):
            if table is not None:
                nn.init.normal_(table.weight, std=0.02)

    def forward(self, spatial_types: torch.Tensor, layout: BatchLayout,
                path_types: "torch.Tensor | None" = None) -> torch.Tensor:
        width, heads, batch = layout.dense_width, self.num_heads, layout.batch_size
        types = _to_width(spatial_types.long(), width)
        own = torch.arange(width, device=types.device)[None, :] < \
            layout.num_nodes_per_graph[layout.node_graph_id][:, None]  # (N, W): key j is in i's graph
        _check_range("spatial type", types[own], self.spatial_encoder.num_embeddings, "model.graphormer.spatial_types")
        # Lookups as index_select, whose backward is one index_add_ (nn.Embedding's sorts the indices first).
        rows = _lookup(self.spatial_encoder.weight, types.masked_fill(~own, 0))  # (N, W, H)
        if self.edge_encoder is not None:
            if path_types is None:
                raise ValueError("the path encoding needs graph.ndata['path_types']; load the data with "
                                 "model.graphormer.num_edge_types set")
            paths = _to_width(path_types.long(), width).masked_fill(~own[..., None], 0)  # (N, W, S)
            _check_range("edge type", paths, self.edge_encoder.num_embeddings, "model.graphormer.num_edge_types")
            steps = self.edge_dis_encoder.weight.view(-1, heads, heads)  # (S, H, H)
            # sum_k z_{t_k} W_k as one lookup per step into the (S * T, H) table of every z_t W_k
            types_count = self.edge_encoder.num_embeddings
            table = torch.einsum("ta,sab->stb", self.edge_encoder.weight, steps).reshape(-1, heads)
            step_offset = torch.arange(paths.shape[-1], device=paths.device) * types_count
            encoded = _lookup(table, paths + step_offset).sum(-2)  # (N, W, H)
            rows = rows + encoded / types.clamp(min=1).unsqueeze(-1).to(encoded.dtype)
        rows = rows * own[..., None]
        dense = rows.new_zeros(batch * width, width, heads).index_copy(0, layout.dense_index, rows)
        return dense.view(batch, width, width, heads).permute(0, 3, 1, 2).reshape(batch * heads, width, width)
