"""Local MPNNs of layer-wise inference whose per-node work runs once, on the whole graph.

Cutting the graph into chunks of destination nodes (:func:`~.layerwise.chunk_graph`) and running a
module on each chunk graph recomputes every per-node transform on each chunk's *source* nodes too. On a
graph without locality (random or block-model edges) a chunk of ``c`` nodes has up to ``min(N, c * deg)``
distinct sources, so the total per-node work grows like ``N^2 / c`` until the sources saturate at
``E``: measured, the evaluation time grew with exponent 1.9 above 300k nodes. Here the two MPNNs the
large-graph presets use compute their node projections once per layer on all ``N`` nodes, and only
per-edge gathers and sums run per chunk, so a layer costs ``O(N d^2 + E d)`` and its temporaries are
bounded by the chunk:

* GCN (:func:`whole_graph_gcn`): linear in its input, so it runs on the whole graph in one call
  (one ``(N, d)`` product and one ``copy_u_sum``: no ``(E, d)`` tensor at all);
* GatedGCN (:func:`chunked_gated_gcn`): ``B x`` and ``E x`` for all nodes once (``(N, 2d)``), then for
  each chunk the edges into it: ``A x``, ``D x`` on the chunk's own rows, the gate from row gathers,
  the two sums by ``index_add_``.

Both equal the module's own forward in eval mode up to float rounding (tests/inference/test_layerwise.py).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F

from ..nn.gated_gcn import GatedGCNLayer
from ..nn.gcn import DEGREE_KEY, GCNLayer


def without_self_loops(graph: dgl.DGLGraph) -> dgl.DGLGraph:
    """``graph`` itself when it has no self-loop, else a copy without them (GCN adds its own)."""
    src, dst = graph.edges()
    return dgl.remove_self_loop(graph) if bool((src == dst).any()) else graph


def whole_graph_gcn(layer: GCNLayer, loopless: dgl.DGLGraph, degrees: torch.Tensor, h: torch.Tensor
                    ) -> torch.Tensor:
    """(N, d) GCN output on the whole graph ``loopless`` (no self-loops) with its (N,) degrees ``degrees``."""
    loopless.ndata[DEGREE_KEY] = degrees
    try:
        return layer(loopless, h)[0]
    finally:
        loopless.ndata.pop(DEGREE_KEY)


def chunked_gated_gcn(layer: GatedGCNLayer, graph: dgl.DGLGraph, h: torch.Tensor, e: torch.Tensor,
                      pe_dist: Optional[torch.Tensor], chunks: List[Tuple[int, int]], edge_output: bool,
                      edges_in_place: bool = False) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """GatedGCN (eval mode) on the whole graph, edges in chunks of destination nodes.

    Parameters
    ----------
    h : (N, d) node states; e : (E, d) edge states; pe_dist : (E, 1) ESLapPE distances or None.
    chunks : (start, stop) ranges of destination nodes covering ``0..N-1``.
    edge_output : bool, False to skip the edge update (None returned).
    edges_in_place : bool
        ``e`` may be overwritten with the edge output (each edge is read and written by its own
        destination's chunk only): no second ``(E, d)`` tensor.

    Returns
    -------
    (N, d) nodes and (E, d) edges (or None), as ``layer(graph, h, e, pe_dist=...)``.
    """
    d = layer.out_feats
    source = F.linear(h, torch.cat([layer.B.weight, layer.E.weight]), torch.cat([layer.B.bias, layer.E.bias]))
    bx, ex = source[:, :d], source[:, d:]
    own_weight = torch.cat([layer.A.weight, layer.D.weight])
    own_bias = torch.cat([layer.A.bias, layer.D.bias + layer.C.bias])  # C's bias rides on D's (see the layer)
    if edge_output:
        e_out = e if edges_in_place else e.new_empty(graph.num_edges(), d)
    else:
        e_out = None
    parts = []
    for start, stop in chunks:
        src, dst, eids = graph.in_edges(torch.arange(start, stop, device=h.device), form="all")
        dst = dst - start
        own = F.linear(h[start:stop], own_weight, own_bias)
        ax, dx = own[:, :d], own[:, d:]
        edges_in = e[eids]
        e_hat = torch.addmm(ex.index_select(0, src).add_(dx.index_select(0, dst)), edges_in, layer.C.weight.t())
        sigma = torch.sigmoid(e_hat)
        if layer.equivstable_pe:
            if pe_dist is None:
                raise ValueError("equivstable_pe=True needs the positional-encoding distances `pe_dist`")
            sigma = sigma * layer.distance_gate(pe_dist[eids])
        numerator = torch.zeros_like(ax).index_add_(0, dst, bx.index_select(0, src).mul_(sigma))
        denominator = torch.zeros_like(ax).index_add_(0, dst, sigma)
        x = layer.act_x(layer.bn_node_x(torch.addcdiv(ax, numerator, denominator + 1e-6)))
        parts.append(h[start:stop] + x if layer.residual else x)
        if e_out is not None:
            new = layer.act_e(layer.bn_edge_e(e_hat))
            e_out[eids] = edges_in + new if layer.residual else new
    return torch.cat(parts), e_out
