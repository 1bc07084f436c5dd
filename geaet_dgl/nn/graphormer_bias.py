"""Graphormer's encodings (the reference's ``GraphormerBias`` node encoder): degrees and the attention bias.

The graphs carry ``ndata['spatial_types']`` (N, W_data) uint8 capped shortest-path
lengths and ``ndata['in_degree']`` / ``ndata['out_degree']`` (N,) int64,
precomputed by :mod:`geaet_dgl.data.encodings.se_cache`.
"""
from __future__ import annotations

from typing import Tuple

import torch
from torch import nn

from .batch_layout import BatchLayout


def check_table_range(name: str, values: torch.Tensor, size: int, setting: str) -> None:
    """Refuse, naming ``setting``, a value of ``values`` with no row in an embedding table of ``size`` rows
    (TorchScript compiles it too: the exported model raises the same message)."""
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
        check_table_range("in-degree", in_degree, self.in_degree_encoder.num_embeddings, "model.graphormer.num_in_degrees")
        check_table_range("out-degree", out_degree, self.out_degree_encoder.num_embeddings,
                     "model.graphormer.num_out_degrees")
        h = node_feat + self.in_degree_encoder(in_degree.long()) + self.out_degree_encoder(out_degree.long())
        return self.input_dropout(h)


def _to_width(types: torch.Tensor, width: int) -> torch.Tensor:
    """(N, W_data, ...) -> (N, width, ...): cut, or padded with 0."""
    if types.shape[1] < width:
        pad = [0, 0] * (types.dim() - 2) + [0, width - types.shape[1]]
        types = torch.nn.functional.pad(types, pad, value=0)
    return types[:, :width]


#: The most rows of one table of summed path steps (:meth:`GraphormerBias._path_sums`).
GROUP_TABLE_ROWS = 1024


def _group_size(types_count: int, path_steps: int, pairs: int) -> int:
    """How many path steps one lookup covers, for ``pairs`` (node, key) pairs: the ``g`` that minimises
    ``ceil(S / g) * (T^g + pairs)`` (building the G tables of :math:`T^g` rows and looking up G rows per pair,
    counted alike), with :math:`T^g` at most :data:`GROUP_TABLE_ROWS` (larger tables cost more than this count
    says: measured on ZINC batches of 16 and 64 graphs). ZINC's 4 bond types and 20 steps: 5 steps a lookup."""
    best, best_cost = 1, None
    for group in range(1, path_steps + 1):
        rows = types_count ** group
        if rows > GROUP_TABLE_ROWS and group > 1:
            break
        cost = -(-path_steps // group) * (rows + pairs)
        if best_cost is None or cost < best_cost:
            best, best_cost = group, cost
    return best


def _lookup(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]``: (T, H), (...) int64 -> (..., H)."""
    return table.index_select(0, index.reshape(-1)).view(*index.shape, table.shape[1])


class _WeightedLookup(torch.autograd.Function):
    """``(table[codes] * weight[..., None]).sum(1)``: (R, H), (M, K) int, (M, K) -> (M, H), differentiable in ``table``.

    Forward: one ``embedding_bag`` (the K lookups and their weighted sum in one kernel, no (M, K, H)
    temporary). Backward: one ``index_add_`` into the table's gradient (``embedding_bag``'s own backward
    sorts the M * K indices first: several times slower on CPU).
    """

    @staticmethod
    def forward(ctx, table: torch.Tensor, codes: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(codes, weight)
        ctx.num_rows = table.shape[0]
        return torch.nn.functional.embedding_bag(codes, table, mode="sum", per_sample_weights=weight)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        codes, weight = ctx.saved_tensors
        spread = (grad.unsqueeze(1) * weight.unsqueeze(-1)).view(-1, grad.shape[-1])  # (M * K, H)
        grad_table = grad.new_zeros(ctx.num_rows, grad.shape[-1]).index_add_(0, codes.reshape(-1), spread)
        return grad_table, None, None


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

    def _path_sums(self, path_types: torch.Tensor, own: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The path encoding as lookups: ``(codes, sums)``, ``codes`` (N, W, G) int64 rows of the
        (G * T^g, H) table ``sums``, whose rows summed over G give :math:`\\sum_{k < S} z_{t_k} W_k` of
        each pair (``own`` (N, W): key ``j`` is in node ``i``'s graph; only those pairs are checked).

        The steps are looked up ``g`` at a time (:func:`_group_size`): with :math:`T` edge types, the
        :math:`T^g` sums :math:`\\sum_{r < g} z_{t_r} W_{k + r}` of a group of ``g`` steps form one table, each
        pair's ``g`` types one index into it, so G = S / g rows per pair are gathered instead of S: 4
        instead of 20 with ZINC's 4 bond types and 20 steps.
        """
        heads, types_count = self.num_heads, self.edge_encoder.num_embeddings
        steps = self.edge_dis_encoder.weight.view(-1, heads, heads)  # (S, H, H)
        path_steps = path_types.shape[-1]
        if path_steps > steps.shape[0]:
            raise ValueError(f"the graphs' shortest paths have {path_steps} steps, but the encoder has "
                             f"{steps.shape[0]}; set model.graphormer.spatial_types to at least {path_steps}")
        paths = _to_width(path_types, own.shape[1])  # (N, W, S) uint8
        if paths.numel() and int(paths.max()) >= types_count:  # padding may hold anything: check own pairs only
            check_table_range("edge type", paths.masked_fill(~own[..., None], 0), types_count,
                         "model.graphormer.num_edge_types")
        table = torch.einsum("ta,sab->stb", self.edge_encoder.weight, steps[:path_steps])  # (S, T, H): z_t W_k
        group = _group_size(types_count, path_steps, own.numel())
        groups = -(-path_steps // group)
        extra = groups * group - path_steps  # steps of type 0 and zero encoding, to fill the last group
        if extra:
            table = torch.cat([table, table.new_zeros(extra, types_count, heads)])
            paths = torch.nn.functional.pad(paths, (0, extra))
        table = table.view(groups, group, types_count, heads)
        sums = table[:, group - 1]  # (G, T, H); then (G, T^2, H), ..., (G, T^g, H): row sum_r t_r T^r
        for r in range(group - 2, -1, -1):
            sums = (sums.unsqueeze(2) + table[:, r].unsqueeze(1)).reshape(groups, -1, heads)
        digits = paths.reshape(*own.shape, groups, group)
        codes = digits[..., group - 1].to(torch.int32)  # (N, W, G)
        for r in range(group - 2, -1, -1):
            codes.mul_(types_count).add_(digits[..., r])
        codes.masked_fill_(~own.unsqueeze(-1), 0)  # padding may hold anything
        return codes + torch.arange(groups, device=paths.device) * sums.shape[1], sums.reshape(-1, heads)

    def forward(self, spatial_types: torch.Tensor, layout: BatchLayout,
                path_types: "torch.Tensor | None" = None) -> torch.Tensor:
        width, heads, batch = layout.dense_width, self.num_heads, layout.batch_size
        types = _to_width(spatial_types, width).long()
        own = torch.arange(width, device=types.device)[None, :] < \
            layout.num_nodes_per_graph[layout.node_graph_id][:, None]  # (N, W): key j is in i's graph
        types = types.masked_fill(~own, 0)
        check_table_range("spatial type", types, self.spatial_encoder.num_embeddings, "model.graphormer.spatial_types")
        table, codes = self.spatial_encoder.weight, types.unsqueeze(-1)  # (S + 1, H), (N, W, 1)
        weight = own.to(table.dtype).unsqueeze(-1)  # pairs outside a graph: weight 0, bias 0
        if self.edge_encoder is not None:
            if path_types is None:
                raise ValueError("the path encoding needs graph.ndata['path_types']; load the data with "
                                 "model.graphormer.num_edge_types set")
            path_codes, sums = self._path_sums(path_types, own)
            # one bag per pair: its spatial row (weight 1) and its G path rows (weight 1 / max(phi, 1))
            codes = torch.cat([codes, path_codes + table.shape[0]], -1)
            path_weight = (weight / types.clamp(min=1).unsqueeze(-1)).expand(path_codes.shape)
            weight = torch.cat([weight, path_weight], -1)
            table = torch.cat([table, sums])
        rows = _WeightedLookup.apply(table, codes.view(-1, codes.shape[-1]), weight.reshape(-1, codes.shape[-1]))
        dense = rows.new_zeros(batch * width, width, heads).index_copy(0, layout.dense_index,
                                                                         rows.view(-1, width, heads))
        return dense.view(batch, width, width, heads).permute(0, 3, 1, 2).reshape(batch * heads, width, width)
