"""Label homophily of one graph's edges, measured on the labelled nodes a run may look at.

Edge homophily is the fraction of edges whose two ends share a class. Platonov et al. (ICLR 2023, "A critical
look at the evaluation of GNNs under heterophily") show that it misleads with unbalanced classes (minesweeper:
0.68, yet its labels are no more alike across an edge than chance) and propose the *adjusted* homophily,

.. math::
    h_{adj} = \\frac{h_{edge} - \\sum_k \\bar p_k^2}{1 - \\sum_k \\bar p_k^2},
    \\qquad \\bar p_k = \\frac{\\sum_{v: y_v = k} d_v}{2 |E|},

0 for labels independent of the edges, 1 for edges inside classes only, negative below chance. Here the edges are
those whose two ends are both in ``known`` (the training and validation nodes: a choice made with them never reads
a test label), self-loops left out, each stored direction counted once.

Example
-------
>>> import dgl, torch
>>> g = dgl.graph((torch.tensor([0, 1, 2, 3]), torch.tensor([1, 0, 3, 2])))
>>> label = torch.tensor([0, 0, 1, 1])
>>> round(adjusted_homophily(g, label, torch.ones(4, dtype=torch.bool)), 3)
1.0
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch


def labelled_edges(graph: dgl.DGLGraph, known: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """(E',) source and destination ids of the edges between two ``known`` nodes, self-loops left out."""
    src, dst = graph.edges()
    keep = known[src] & known[dst] & (src != dst)
    return src[keep], dst[keep]


def edge_homophily(graph: dgl.DGLGraph, label: torch.Tensor, known: torch.Tensor) -> Optional[float]:
    """Fraction of the edges between ``known`` nodes whose ends share a label; None without such an edge.

    ``label`` (N,) integer classes (only the ``known`` (N,) bool entries are read)."""
    src, dst = labelled_edges(graph, known)
    if src.numel() == 0:
        return None
    return (label[src] == label[dst]).double().mean().item()


def adjusted_homophily(graph: dgl.DGLGraph, label: torch.Tensor, known: torch.Tensor) -> Optional[float]:
    """Platonov et al.'s adjusted homophily over the edges between ``known`` nodes (module docstring); None
    without such an edge, or when every end holds one class (the measure is undefined)."""
    src, dst = labelled_edges(graph, known)
    if src.numel() == 0:
        return None
    label = label.long()
    same = (label[src] == label[dst]).double().mean().item()
    ends = torch.cat([label[src], label[dst]])
    share = torch.bincount(ends - ends.min()).double() / ends.numel()
    chance = float((share ** 2).sum())
    if chance >= 1.0:
        return None
    return (same - chance) / (1.0 - chance)
