"""One homogeneous view of a batched heterograph, built once per batch and read by every hetero layer.

A heterograph stores each node type's nodes (and each edge type's edges)
apart: all graphs' ``paper`` nodes, then all graphs' ``author`` nodes. The
branches that run over *all* nodes of a graph (self-attention, GEANet, the
graph-wise norms, pooling) need one ``(N, d)`` tensor in which every graph's
nodes are contiguous. :class:`HeteroView` orders the nodes graph by graph and,
inside a graph, type by type (then by id); edges likewise by graph and
relation. So the usual :class:`~.batch_layout.BatchLayout` of ``view.graph``
serves the homogeneous modules unchanged, and the nodes of one type in one
graph form one contiguous segment (``type_counts``), which GEANet's per-type
normalisation uses.

``dgl.to_homogeneous`` gives the same nodes and edges ordered type by type
over the whole batch; this is its graph-major order.

Example
-------
>>> g = dgl.heterograph({('a', 'r', 'b'): ([0, 1], [0, 0]), ('b', 's', 'a'): ([0], [1])})
>>> view = HeteroView.from_heterograph(g)
>>> view.graph.num_nodes(), view.node_type.tolist()
(3, [0, 0, 1])
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Tuple

import dgl
import torch

from .batch_layout import BatchLayout


@dataclass
class RelationGraph:
    """The graph one relation's MPNN runs on.

    For a relation ``s -> d`` with ``s == d`` it holds the ``n_s`` nodes of
    type ``s``; otherwise the ``n_s`` source nodes followed by the ``n_d``
    destination nodes. ``nodes`` (n,) are their positions in the view,
    ``dst_rows`` the rows of the destination type's nodes among them,
    ``edges`` (E_r,) the positions of the relation's edges in the view.
    """

    graph: dgl.DGLGraph
    nodes: torch.Tensor
    dst_rows: slice
    edges: torch.Tensor


@dataclass
class HeteroView:
    """A batched heterograph as one graph-major homogeneous graph.

    Attributes
    ----------
    graph : homogeneous DGLGraph, N nodes and E edges, ``batch_num_nodes`` set.
    node_type : (N,) int64, index into ``ntypes``.
    edge_type : (E,) int64, index into ``canonical_etypes``.
    node_index : one (N_t,) int64 per node type: view position of the type's nodes, in heterograph order.
    edge_index : one (E_r,) int64 per relation, likewise.
    type_counts : (B * T,) int64, nodes of type t in graph b at ``b * T + t``.
    relation_counts : (B * R,) int64, likewise for edges.
    relations : one :class:`RelationGraph` per canonical edge type.
    layout : the :class:`BatchLayout` of ``graph``.
    """

    graph: dgl.DGLGraph
    ntypes: Tuple[str, ...]
    canonical_etypes: Tuple[Tuple[str, str, str], ...]
    node_type: torch.Tensor
    edge_type: torch.Tensor
    node_index: List[torch.Tensor]
    edge_index: List[torch.Tensor]
    type_counts: torch.Tensor
    relation_counts: torch.Tensor
    relations: List[RelationGraph]
    layout: BatchLayout

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes()

    def gather_nodes(self, per_type: List[torch.Tensor]) -> torch.Tensor:
        """Per-type (N_t, D) tensors -> the view's (N, D) tensor."""
        return _scatter(per_type, self.node_index, self.num_nodes)

    def gather_edges(self, per_relation: List[torch.Tensor]) -> torch.Tensor:
        """Per-relation (E_r, D) tensors -> the view's (E, D) tensor."""
        return _scatter(per_relation, self.edge_index, self.graph.num_edges())

    @classmethod
    def from_heterograph(cls, hg: dgl.DGLGraph) -> "HeteroView":
        ntypes = tuple(hg.ntypes)
        etypes = tuple(hg.canonical_etypes)
        device = hg.device
        node_counts = torch.stack([hg.batch_num_nodes(t).to(device=device, dtype=torch.long) for t in ntypes], 1)
        if etypes:
            edge_counts = torch.stack([hg.batch_num_edges(r).to(device=device, dtype=torch.long) for r in etypes], 1)
        else:
            edge_counts = node_counts.new_zeros(node_counts.shape[0], 0)
        node_index = _positions(node_counts)
        edge_index = _positions(edge_counts)
        num_nodes = int(node_counts.sum())
        num_edges = int(edge_counts.sum())
        src = torch.empty(num_edges, dtype=torch.long, device=device)
        dst = torch.empty(num_edges, dtype=torch.long, device=device)
        type_ids = {t: i for i, t in enumerate(ntypes)}
        relations = []
        for r, (stype, etype, dtype) in enumerate(etypes):
            s, d = hg.edges(etype=(stype, etype, dtype))
            s_index, d_index = node_index[type_ids[stype]], node_index[type_ids[dtype]]
            src[edge_index[r]] = s_index[s.long()]
            dst[edge_index[r]] = d_index[d.long()]
            relations.append(_relation_graph(s.long(), d.long(), s_index, d_index, stype == dtype, edge_index[r]))
        graph = dgl.graph((src, dst), num_nodes=num_nodes, device=device)
        graph.set_batch_num_nodes(node_counts.sum(1))
        graph.set_batch_num_edges(edge_counts.sum(1))
        node_type = _type_ids(node_index, num_nodes, device)
        edge_type = _type_ids(edge_index, num_edges, device)
        return cls(graph, ntypes, etypes, node_type, edge_type, node_index, edge_index, node_counts.reshape(-1),
                   edge_counts.reshape(-1), relations, BatchLayout.from_graph(graph))


def _positions(counts: torch.Tensor) -> List[torch.Tensor]:
    """(B, T) counts -> per type t the view positions of its items, graph-major then type-major."""
    num_graphs, num_types = counts.shape
    flat = counts.reshape(-1)
    starts = (torch.cumsum(flat, 0) - flat).reshape(num_graphs, num_types)  # first view position of (b, t)
    out = []
    for t in range(num_types):
        c = counts[:, t]
        graph_of = torch.repeat_interleave(torch.arange(num_graphs, device=counts.device), c)
        rank = torch.arange(int(c.sum()), device=counts.device) - (torch.cumsum(c, 0) - c)[graph_of]
        out.append(starts[graph_of, t] + rank)
    return out


def _type_ids(index: List[torch.Tensor], total: int, device) -> torch.Tensor:
    ids = torch.empty(total, dtype=torch.long, device=device)
    for t, positions in enumerate(index):
        ids[positions] = t
    return ids


def _scatter(parts: List[torch.Tensor], index: List[torch.Tensor], total: int) -> torch.Tensor:
    first = parts[0]
    out = first.new_empty((total,) + tuple(first.shape[1:]))
    for part, positions in zip(parts, index):
        out[positions] = part
    return out


def _relation_graph(src: torch.Tensor, dst: torch.Tensor, src_nodes: torch.Tensor, dst_nodes: torch.Tensor,
                    same_type: bool, edges: torch.Tensor) -> RelationGraph:
    if same_type:
        n = src_nodes.numel()
        graph = dgl.graph((src, dst), num_nodes=n, device=src.device)
        return RelationGraph(graph, src_nodes, slice(0, n), edges)
    n_src, n_dst = src_nodes.numel(), dst_nodes.numel()
    graph = dgl.graph((src, dst + n_src), num_nodes=n_src + n_dst, device=src.device)
    return RelationGraph(graph, torch.cat([src_nodes, dst_nodes]), slice(n_src, n_src + n_dst), edges)
