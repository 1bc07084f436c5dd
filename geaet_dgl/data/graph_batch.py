"""``batch_graphs``: ``dgl.batch`` for the homogeneous graphs of our datasets, without its per-graph overhead.

``dgl.batch`` is general (heterographs, batches of batches, graphs without
features): for every graph of a batch it builds a ``batch_num_nodes`` tensor
(kept on the graph from then on), reads the feature schemes and compares them,
then concatenates each field. For the homogeneous, unbatched graphs of our
datasets only two things matter: the disjoint union of the structures (one C
call, the same one ``dgl.batch`` makes) and one ``torch.cat`` per field. This
builds exactly that, with the node and edge counts from one Python list each,
and hands the concatenated fields to the new graph without per-field checks.
The result equals ``dgl.batch``'s (structure, edge order, fields, batch sizes;
tested); anything unusual (a heterograph, a graph that is itself a batch,
fields that differ between graphs) goes to ``dgl.batch``, which raises its own
error where it must.

Example
-------
>>> import dgl, torch
>>> gs = [dgl.graph(([0], [1])), dgl.graph(([0, 1], [1, 2]))]
>>> for g in gs:
...     g.ndata["feat"] = torch.ones(g.num_nodes(), 2)
>>> batch_graphs(gs).batch_num_nodes().tolist()
[2, 3]
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import dgl
import torch
from dgl.frame import Frame
from dgl.heterograph_index import disjoint_union


def batch_graphs(graphs: Sequence[dgl.DGLGraph]) -> dgl.DGLGraph:
    """The batched graph of ``graphs``, as ``dgl.batch(graphs)``.

    Parameters
    ----------
    graphs : sequence of dgl.DGLGraph
        ``B`` graphs with ``N_i`` nodes and ``E_i`` edges.

    Returns
    -------
    dgl.DGLGraph
        ``N = sum N_i`` nodes, ``E = sum E_i`` edges (graph ``i``'s ids shifted by
        the nodes before it), every ``ndata`` field ``(N, ...)`` and ``edata``
        field ``(E, ...)`` concatenated in order, ``batch_num_nodes() == [N_1, ..., N_B]``.
    """
    graphs = list(graphs)
    if not graphs or not _plain(graphs):
        return dgl.batch(graphs)
    indices = [g._graph for g in graphs]
    node_data = _concatenated([g._node_frames[0] for g in graphs])
    edge_data = _concatenated([g._edge_frames[0] for g in graphs])
    if node_data is None or edge_data is None:
        return dgl.batch(graphs)
    first = graphs[0]
    nodes = torch.tensor([index.num_nodes(0) for index in indices], dtype=torch.int64)
    edges = torch.tensor([index.num_edges(0) for index in indices], dtype=torch.int64)
    union = disjoint_union(first._graph.metagraph, indices)
    out = dgl.DGLGraph(union, first.ntypes, first.etypes,
                       node_frames=[Frame(node_data, num_rows=int(nodes.sum()))],
                       edge_frames=[Frame(edge_data, num_rows=int(edges.sum()))])
    device = first.device
    out.set_batch_num_nodes(nodes.to(device))
    out.set_batch_num_edges(edges.to(device))
    return out


def _plain(graphs: List[dgl.DGLGraph]) -> bool:
    """Homogeneous graphs, none of them a batch or a block (the union itself checks id types and devices)."""
    first = graphs[0]
    if len(first.ntypes) != 1 or len(first.canonical_etypes) != 1 or first.is_block:
        return False
    for g in graphs:
        if (len(g._node_frames) != 1 or len(g._edge_frames) != 1 or _is_batch(g._batch_num_nodes)
                or _is_batch(g._batch_num_edges)):
            return False
    return True


def _is_batch(counts: Optional[Dict[str, torch.Tensor]]) -> bool:
    """Whether a graph's cached batch sizes (None until first asked for) describe more than one graph."""
    return counts is not None and any(c.numel() != 1 for c in counts.values())


def _concatenated(frames: List[Frame]) -> Optional[Dict[str, torch.Tensor]]:
    """Each field concatenated over the frames, or None if the frames' fields differ (names, dtypes, shapes)."""
    keys = list(frames[0].keys())
    if any(list(frame.keys()) != keys for frame in frames):
        return None
    out = {}
    for key in keys:
        parts = [frame[key] for frame in frames]
        dtype, shape = parts[0].dtype, parts[0].shape[1:]
        if any(p.dtype != dtype or p.shape[1:] != shape for p in parts):
            return None
        out[key] = torch.cat(parts, 0)
    return out
