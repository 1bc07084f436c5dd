"""Full-graph inference on one graph: every node scored with the whole graph as context.

:func:`full_graph_forward` runs the model on the whole graph in one pass when
that fits in memory (:func:`inference_bytes` against what the machine has),
else layer by layer (:func:`layerwise_forward`): each layer is computed for
every node before the next one starts, its neighbourhood work in chunks of
destination nodes, so that only the (N, d) node and (E, d) edge states of one
layer and one chunk's temporaries are alive. Both give the same outputs up to
float rounding (tested), so a node's score depends on the graph, never on how
training cut it.

Per layer, in eval mode (no dropout, BatchNorm with its running statistics):

* local MPNN: for each chunk C of destination nodes, the chunk graph holds
  the edges into C and their source nodes; a node's output reads only its
  in-edges, so C's rows and the chunk's edge rows are exact (GCN gets the
  whole graph's degrees, :data:`~geaet_dgl.nn.gcn.DEGREE_KEY`);
* global attention: the dense Transformer in chunks of queries against all
  keys; any other global model on the whole graph;
* GEANet: its softmax over all nodes (edges) enters each row only through the
  per-slot :math:`\\log \\sum_j \\exp s_{js}`, computed over all rows first
  (:func:`~geaet_dgl.nn.external_attention.column_logsumexp`), then applied
  chunk by chunk;
* residuals, norms (GraphLayerNorm over the whole graph) and the FFN on the
  whole (N, d) states (:meth:`~geaet_dgl.nn.geaet_layer.GEAETLayer.combine`).

Example
-------
>>> import dgl, torch
>>> from geaet_dgl.config import GEANetConfig, ModelConfig
>>> from geaet_dgl.models import build_model
>>> g = dgl.rand_graph(50, 300); g.ndata['feat'] = torch.randn(50, 3); g.edata['feat'] = torch.randn(300, 1)
>>> model = build_model(ModelConfig(node_in_feats=3, edge_in_feats=1, out_feats=2, hidden_dim=16, num_layers=2,
...                                 head='node', pe='none', geanet=GEANetConfig(num_heads=4, unit_size=4))).eval()
>>> torch.allclose(layerwise_forward(model, g, chunk_nodes=7), model(g), atol=1e-5)
True
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Tuple

import dgl
import torch

from ..config import ModelConfig
from ..nn.batch_layout import BatchLayout
from ..nn.external_attention import column_logsumexp
from ..nn.gated_gcn import GatedGCNLayer
from ..nn.gcn import DEGREE_KEY, GCNLayer, gcn_degrees, without_self_loops
from ..nn.norm import BranchNorm
from ..nn.self_attention import MAX_DENSE_NODES, GraphSelfAttention

#: Queries per chunk of the dense Transformer on a graph too large for one pass: (chunk x N) scores per head.
DENSE_QUERY_CHUNK = 4096

#: Floats per node and per edge (times the width d) alive in one inference pass of one layer
#: (inputs, branch outputs, norms, FFN; GatedGCN's edge gates and messages), and per attention score.
NODE_FLOATS, EDGE_FLOATS = 12, 8
BYTES = 4
#: Default cap on one pass: a larger graph goes layer-wise, whatever memory is free, so that evaluation
#: memory is the (N, d) states plus one chunk's temporaries (at most :data:`CHUNK_BYTES`), not a pass's.
ONE_PASS_BYTES = 2**30
CHUNK_BYTES = 2**29
#: Node rows per block of a layer's combine (norms, FFN, residuals) when it treats rows apart: its
#: temporaries stay in cache (measured: the whole-graph combine slowed per node as N grew past 100k).
COMBINE_ROWS = 8192


def inference_bytes(model: ModelConfig, num_nodes: int, num_edges: int) -> int:
    """Rough peak bytes of a one-pass forward (no gradients) on a graph of this size."""
    d = model.hidden_dim
    dense = 2 * model.num_heads * num_nodes * num_nodes if model.attention == "transformer" else 0
    return BYTES * (NODE_FLOATS * num_nodes * d + EDGE_FLOATS * num_edges * d + dense)


def available_bytes(device: torch.device) -> int:
    """Memory the process can still take: free GPU memory for CUDA, else the machine's available RAM."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    import psutil

    return int(psutil.virtual_memory().available)


def chunk_size(model: ModelConfig, num_nodes: int, num_edges: int, budget: int) -> Optional[int]:
    """Destination nodes per chunk so that a chunk's share of one pass fits ``budget`` (at most
    :data:`CHUNK_BYTES`); None: one pass fits."""
    if inference_bytes(model, num_nodes, num_edges) <= budget:
        return None
    per_node = inference_bytes(model, num_nodes, num_edges) / max(num_nodes, 1)
    return max(1, min(num_nodes, int(min(budget, CHUNK_BYTES) / per_node)))


@torch.no_grad()
def full_graph_forward(model: torch.nn.Module, graph: dgl.DGLGraph, chunk_nodes: Optional[int] = None,
                       budget: Optional[int] = None) -> torch.Tensor:
    """(N, out_feats) outputs of a node-level model on the whole ``graph`` (eval mode).

    ``chunk_nodes`` forces layer-wise inference with chunks of that many
    destination nodes; by default one pass when :func:`inference_bytes` fits
    ``budget`` (default: half of :func:`available_bytes`, at most
    :data:`ONE_PASS_BYTES`), else chunks of at most :data:`CHUNK_BYTES` of temporaries. The dense Transformer takes at most
    :data:`DENSE_QUERY_CHUNK` queries per chunk on a graph above
    :data:`~geaet_dgl.nn.self_attention.MAX_DENSE_NODES` nodes.
    A heterograph (:class:`~geaet_dgl.models.hetero_geaet.HeteroGEAET`) runs in one pass:
    (N_target, out_feats).
    """
    model.eval()
    if not graph.is_homogeneous:  # a heterograph model has no layer-wise path: one pass
        return model(graph)
    if chunk_nodes is None:
        budget = budget if budget is not None else min(available_bytes(graph.device) // 2, ONE_PASS_BYTES)
        chunk_nodes = chunk_size(model.config, graph.num_nodes(), graph.num_edges(), budget)
        if model.config.attention == "transformer" and graph.num_nodes() > MAX_DENSE_NODES:
            chunk_nodes = min(chunk_nodes or DENSE_QUERY_CHUNK, DENSE_QUERY_CHUNK)
    if chunk_nodes is None or chunk_nodes >= graph.num_nodes():
        return model(graph)
    return layerwise_forward(model, graph, chunk_nodes)


@torch.no_grad()
def layerwise_forward(model: torch.nn.Module, graph: dgl.DGLGraph, chunk_nodes: int) -> torch.Tensor:
    """The model on one whole graph, layer by layer, neighbourhood work in chunks of ``chunk_nodes``
    destination nodes: (N, out_feats), equal to ``model(graph)`` in eval mode up to rounding."""
    if graph.batch_size != 1:
        raise ValueError(f"layer-wise inference runs on one graph, got a batch of {graph.batch_size}")
    if chunk_nodes < 1:
        raise ValueError(f"chunk_nodes={chunk_nodes} must be at least 1")
    if model.encoder.graph_token is not None:
        raise ValueError("layer-wise inference runs on the graph's own nodes: a model with "
                         "model.graphormer.graph_token adds one; run the model itself")
    model.eval()
    num_nodes = graph.num_nodes()
    layout = BatchLayout.from_graph(graph)
    chunks = [(a, min(a + chunk_nodes, num_nodes)) for a in range(0, num_nodes, chunk_nodes)]
    edge_ranges = _even_ranges(graph.num_edges(), len(chunks))
    degrees = gcn_degrees(graph).to(graph.device) if any(isinstance(layer.local_model, GCNLayer)
                                                        for layer in model.layers) else None
    loopless = without_self_loops(graph) if degrees is not None else None
    encoded = model.encode(graph, layout)
    h, e, pe_dist = encoded.nodes, encoded.edges, encoded.pe_dist
    whole = ChunkedGraph(graph, layout, chunks, edge_ranges, pe_dist, degrees, loopless)
    last = len(model.layers) - 1
    owned = False  # whether ``e`` is an (E, d) tensor this loop allocated (then a layer may overwrite it)
    outputs = [h]
    for index, layer in enumerate(model.layers):
        before = e
        h, e = _layer(layer, whole, h, e, edge_output=index < last, edges_owned=owned)
        owned = owned or (e is not None and e is not before)
        outputs.append(h)
    return model.readout(outputs, layout, encoded.branch)


def whole_graph_gcn(layer: GCNLayer, loopless: dgl.DGLGraph, degrees: torch.Tensor, h: torch.Tensor
                    ) -> torch.Tensor:
    """(N, d) GCN output on the whole graph ``loopless`` (no self-loops) with its (N,) degrees ``degrees``.

    GCN is linear in its input: one ``(N, d)`` product and one ``copy_u_sum`` on the whole graph, no
    ``(E, d)`` tensor, however large the graph."""
    loopless.ndata[DEGREE_KEY] = degrees
    try:
        return layer(loopless, h)[0]
    finally:
        loopless.ndata.pop(DEGREE_KEY)


def _even_ranges(total: int, parts: int) -> List[Tuple[int, int]]:
    step = math.ceil(total / parts) if total else 0
    return [(min(i * step, total), min((i + 1) * step, total)) for i in range(parts)]


def chunk_graph(graph: dgl.DGLGraph, start: int, stop: int) -> Tuple[dgl.DGLGraph, torch.Tensor, torch.Tensor]:
    """The edges into nodes ``start..stop-1`` as a graph -> (chunk graph, its node ids, its edge ids).

    The chunk graph's nodes ``0..stop-start-1`` are the destination nodes, in
    order, then the other source nodes; its edges are ``graph``'s edges
    ``edge ids`` in that order.
    """
    device = graph.device
    size = stop - start
    src, dst, eids = graph.in_edges(torch.arange(start, stop, device=device), form="all")
    inside = (src >= start) & (src < stop)
    outside = src[~inside].unique()  # sorted
    nodes = torch.cat([torch.arange(start, stop, device=device), outside])
    # Local ids without an (N,) lookup table: a chunk costs its own edges, not the graph's nodes.
    local_src = torch.where(inside, src - start, size + torch.searchsorted(outside, src))
    sub = dgl.graph((local_src, dst - start), num_nodes=len(nodes), device=device)
    return sub, nodes, eids


@dataclass(frozen=True)
class ChunkedGraph:
    """One whole graph as the layers read it, cut into chunks.

    ``chunks``: ``(start, stop)`` destination-node ranges; ``edge_ranges``: as many even ranges of edge ids;
    ``pe_dist``: the (E, ...) positional distances the encoder made, or None; ``degrees``: the (N,) GCN
    degrees and ``loopless`` the graph without self-loops when a layer runs GCN (else None)."""

    graph: dgl.DGLGraph
    layout: BatchLayout
    chunks: List[Tuple[int, int]]
    edge_ranges: List[Tuple[int, int]]
    pe_dist: Optional[torch.Tensor] = None
    degrees: Optional[torch.Tensor] = None
    loopless: Optional[dgl.DGLGraph] = None


def _layer(layer, whole: ChunkedGraph, h, e, edge_output: bool, edges_owned: bool = False):
    """One GEAET layer on the whole graph, branches computed chunk by chunk, combined on the whole graph.

    Cutting the graph into chunk graphs recomputes every per-node transform on each chunk's source
    nodes too (up to ``N^2 / c`` work on a graph without locality), so GCN runs on the whole graph
    (:func:`whole_graph_gcn`) and GatedGCN computes its node projections once
    (:meth:`~geaet_dgl.nn.gated_gcn.GatedGCNLayer.forward_in_chunks`); another MPNN runs on each chunk graph."""
    graph, layout, chunks, pe_dist, degrees = whole.graph, whole.layout, whole.chunks, whole.pe_dist, whole.degrees
    local = None
    if isinstance(layer.local_model, GCNLayer):
        local = (whole_graph_gcn(layer.local_model, whole.loopless, degrees, h), e)
    elif isinstance(layer.local_model, GatedGCNLayer) and e is not None:
        local = layer.local_model.forward_in_chunks(graph, h, e, pe_dist, chunks, edge_output,
                                                    edges_in_place=edges_owned and e.is_contiguous())
    elif layer.local_model is not None:
        parts, edge_out, passed_through = [], None, False
        for start, stop in chunks:
            sub, nodes, eids = chunk_graph(graph, start, stop)
            if degrees is not None:
                sub.ndata[DEGREE_KEY] = degrees[nodes]
            sub_pe = pe_dist[eids] if pe_dist is not None else None
            edges_in = e[eids] if e is not None else None
            out_h, out_e = layer.local_model(sub, h[nodes], edges_in, pe_dist=sub_pe, edge_output=edge_output)
            parts.append(out_h[:stop - start])
            if out_e is not None and out_e is edges_in:  # an MPNN without edge updates (GCN): no (E, d) copy
                passed_through = True
            elif out_e is not None:
                if edge_out is None:
                    edge_out = out_e.new_empty(graph.num_edges(), out_e.shape[1])
                edge_out[eids] = out_e
        local = (torch.cat(parts), e if passed_through and edge_out is None else edge_out)
    global_out = None
    if layer.global_model is not None:
        global_out = _global(layer.global_model, graph, layout, h, chunks)
    external = None
    if layer.external_model is not None:
        edges_in = (local[1] if local is not None else e) if edge_output else None
        external = _external(layer.external_model, graph, layout, h, edges_in, chunks, whole.edge_ranges)
    if not _rows_apart(layer):
        return layer.combine(h, e, local, global_out, external, layout, edge_output)
    # Eval-mode BatchNorm, FFN, residuals: row by row, so combined in cache-sized row blocks.
    parts = []
    for start in range(0, h.shape[0], COMBINE_ROWS):
        rows = slice(start, start + COMBINE_ROWS)
        parts.append(layer.combine(h[rows], None, None if local is None else (local[0][rows], None),
                                   None if global_out is None else global_out[rows],
                                   None if external is None else (external[0][rows], None), layout, False)[0])
    edges = external[1] if external is not None else (local[1] if local is not None else e)
    return torch.cat(parts), (edges if edge_output else None)


def _rows_apart(layer) -> bool:
    """Whether the layer's combine treats every node on its own: no norm over the graph (GraphLayerNorm)."""
    return not any(isinstance(module, BranchNorm) and module.kind != "batch" for module in layer.modules())


def _global(module, graph, layout, h, chunks):
    # Only the plain Transformer in query chunks: a subclass (the Graphormer-biased one) adds to its scores.
    if type(module) is not GraphSelfAttention or len(chunks) == 1:
        return module(graph, h, layout=layout, edge_output=False)[0]
    return module.attend_in_chunks(h, chunks)


def _external(net, graph, layout, h, edges, chunks, edge_ranges):
    """GEANet on every node (and edge) with the whole graph's column normalisation, in chunks.

    The whole graph and its layout go along only for the branch calling convention: with the column
    log-sum-exps given, GEANet reads no segment lengths."""
    node_lse = edge_lse = None
    if net.node_unit:
        node_lse = column_logsumexp(net.scores(h[a:b], "node") for a, b in chunks)
    if net.edge_unit and edges is not None and edges.shape[0]:
        edge_lse = column_logsumexp(net.scores(edges[a:b], "edge") for a, b in edge_ranges)
    node_parts, edge_parts, passed_through = [], [], False
    for (start, stop), (first, last) in zip(chunks, edge_ranges):
        edges_in = edges[first:last] if edges is not None else None
        out_h, out_e = net(graph, h[start:stop], edges_in, layout=layout, edge_output=edges is not None,
                           node_lse=node_lse, edge_lse=edge_lse)
        node_parts.append(out_h)
        if out_e is not None and out_e is edges_in:  # no edge units: the edges pass through, no (E, d) copy
            passed_through = True
        elif out_e is not None:
            edge_parts.append(out_e)
    if passed_through and not edge_parts:
        return torch.cat(node_parts), edges
    return torch.cat(node_parts), (torch.cat(edge_parts) if edge_parts else None)
