"""Edge and segment operations in plain PyTorch ops that TorchScript and the ONNX exporter both read.

The library's layers run their edge work on DGL's kernels (``dgl.ops``); an exported model cannot carry
them. These functions are the same reductions written with ``index_select``, ``scatter_add`` and
``scatter_reduce`` only. ``scatter_add`` (ONNX ``ScatterElements`` with ``reduction='add'``) is used rather than
``index_add``: torch 2.2's ONNX exporter writes ``index_add`` as a scatter *without* accumulation, so rows
sent to the same segment would overwrite each other (measured; a test keeps it in view).

Every function takes tensors and returns tensors, with no Python branch on their values or sizes, so that
one exported file serves any number of graphs, nodes and edges.
"""
from __future__ import annotations

import torch

#: The lowest float32, the start of a segment maximum (TorchScript has no ``torch.finfo`` and reads no globals).
LOWEST = -3.4028234663852886e38


def graph_index(node_counts: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """(B,) nodes per graph -> (N,) int64 graph of every node (graphs may have 0 nodes).

    A 1 is added at every graph's end offset, and the running sum counts the ends passed.
    """
    ends = torch.cumsum(node_counts, 0)
    marks = torch.zeros(num_nodes + 1, dtype=torch.long, device=node_counts.device)
    marks = marks.scatter_add(0, ends, torch.ones_like(node_counts))
    return torch.cumsum(marks, 0)[:num_nodes]


def segment_sum(values: torch.Tensor, index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """(M, D) rows summed into (num_segments, D) by their (M,) segment ``index``; empty segments are 0."""
    out = torch.zeros(num_segments, values.shape[1], dtype=values.dtype, device=values.device)
    return out.scatter_add(0, index.unsqueeze(1).expand(-1, values.shape[1]), values)


def segment_max(values: torch.Tensor, index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """(M, D) -> (num_segments, D) column maxima per segment; empty segments are 0 (as DGL's segment max)."""
    lowest = -3.4028234663852886e38  # LOWEST, below every value: the ONNX exporter takes include_self=True only
    out = torch.full((num_segments, values.shape[1]), lowest, dtype=values.dtype, device=values.device)
    out = out.scatter_reduce(0, index.unsqueeze(1).expand(-1, values.shape[1]), values, "amax", include_self=True)
    return torch.where(out == lowest, torch.zeros_like(out), out)


def segment_mean(values: torch.Tensor, index: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """(M, D) -> (B, D) means per segment, ``counts`` (B,) rows per segment; empty segments are 0."""
    total = segment_sum(values, index, counts.shape[0])
    return total / counts.clamp(min=1).to(values.dtype).unsqueeze(1)


def segment_softmax(scores: torch.Tensor, index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """Softmax of (M, D) rows over the rows of each segment, column by column (``dgl.ops.segment_softmax``)."""
    top = segment_max(scores, index, num_segments).index_select(0, index)
    weights = torch.exp(scores - top)
    return weights / segment_sum(weights, index, num_segments).index_select(0, index)
