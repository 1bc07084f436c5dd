"""Graph convolution (Kipf & Welling) matching PyG's ``GCNConv`` defaults.

.. math::
    x_i' = \\sum_{j \\in N(i) \\cup \\{i\\}} \\frac{1}{\\sqrt{\\hat d_j \\hat d_i}} W x_j + b,

with :math:`\\hat d` the in-degree plus one: as PyG's ``add_remaining_self_loops``, every node ends up
with exactly one self-loop (self-loops already in the graph are replaced, not added to).
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn

from . import sparse_input

#: ndata field that, when a graph carries it, replaces the degrees :math:`\hat d` computed from the graph:
#: the chunks of layer-wise inference (:mod:`geaet_dgl.inference.layerwise`) hold only some nodes' edges,
#: and normalise with the whole graph's degrees.
DEGREE_KEY = "_gcn_degree"


def gcn_degrees(graph: dgl.DGLGraph) -> torch.Tensor:
    """(N,) :math:`\hat d`: in-degree without self-loops, plus one (the self-loop GCN adds)."""
    src, dst = graph.edges()
    keep = src != dst
    return torch.bincount(dst[keep], minlength=graph.num_nodes()).to(torch.float32) + 1.0


NORM_KEY = "gcn_graph_and_norm"


def without_self_loops(graph: dgl.DGLGraph) -> dgl.DGLGraph:
    """``graph`` itself when it has no self-loop, else a copy without them (GCN adds its own)."""
    src, dst = graph.edges()
    return dgl.remove_self_loop(graph) if bool((src == dst).any()) else graph


def loop_free_norm(graph: dgl.DGLGraph, dtype: torch.dtype = torch.float32) -> Tuple[dgl.DGLGraph, torch.Tensor]:
    """``graph`` without self-loops (PyG replaces them by the one GCN adds) and (N, 1) :math:`\hat d^{-1/2}` in
    ``dtype`` (the features')."""
    graph = without_self_loops(graph)
    deg = graph.ndata[DEGREE_KEY] if DEGREE_KEY in graph.ndata else gcn_degrees(graph)
    return graph, deg.to(dtype).rsqrt().unsqueeze(-1)


class GCNLayer(nn.Module):
    """GCN convolution with self-loops and symmetric normalisation.

    Parameters
    ----------
    in_feats, out_feats : int

    Example
    -------
    >>> conv = GCNLayer(8, 8)
    >>> x, e = conv(dgl.rand_graph(5, 10), torch.randn(5, 8))
    >>> x.shape
    torch.Size([5, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int):
        super().__init__()
        self.lin = nn.Linear(in_feats, out_feats, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_feats))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.zeros_(self.bias)

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        *,
        layout=None,
        pe_dist: Optional[torch.Tensor] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats) -> (N, out_feats); edge features pass through unchanged.

        ``layout``, ``pe_dist``, ``edge_output``: the branch calling convention's (:mod:`.branches`), unused.
        """
        h = sparse_input.linear(self.lin, node_feat)  # (raw features may come as a sparse matrix)
        # The graph without self-loops and the (N, 1) normalisation, once per batch when the layout is shared
        graph, norm = loop_free_norm(graph, h.dtype) if layout is None else \
            layout.cached(NORM_KEY, lambda: loop_free_norm(graph, h.dtype))
        norm = norm.to(h.dtype)
        h = h * norm
        out = dgl.ops.copy_u_sum(graph, h) + h  # neighbours plus the self-loop
        return out * norm + self.bias, edge_feat
