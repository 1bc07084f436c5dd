"""Principal neighbourhood aggregation (Corso et al. 2020) as the reference configures PyG's ``PNAConv``.

Aggregators mean, max and sum, the identity scaler, one tower, one pre- and one post-layer:

.. math::
    m_{ji} = W_{pre} [x_i \\Vert x_j \\Vert W_e e_{ji} + b_e] + b_{pre}, \\\\
    x_i' = W \\big(W_{post} [x_i \\Vert \\mathrm{mean}_{j \\to i} m_{ji} \\Vert \\max_{j \\to i} m_{ji}
           \\Vert \\textstyle\\sum_{j \\to i} m_{ji}] + b_{post}\\big) + b,

each aggregation zero for a node without incoming edges. :math:`W_{pre}` acts on a concatenation,
so it runs as three products (per destination node, per source node, per edge) joined by one
``gsddmm``; the aggregations are ``gspmm`` calls. The average degrees of the training split's degree
histogram are kept as buffers (``aggr_module.avg_deg_lin`` / ``avg_deg_log``, PyG's names): the
identity scaler does not read them, but checkpoints carry them both ways.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import dgl
import torch
from torch import nn

AGGREGATORS = ("mean", "max", "sum")


class _DegreeStatistics(nn.Module):
    """PyG's ``DegreeScalerAggregation`` buffers: mean degree and mean log(degree + 1) of a histogram."""

    def __init__(self, degree_histogram: Optional[Sequence[int]]):
        super().__init__()
        self.register_buffer("avg_deg_lin", torch.zeros(1))
        self.register_buffer("avg_deg_log", torch.zeros(1))
        self.set_histogram(degree_histogram if degree_histogram is not None else [1])

    @torch.no_grad()
    def set_histogram(self, degree_histogram: Sequence[int]) -> None:
        hist = torch.as_tensor(list(degree_histogram), dtype=torch.float64)
        degrees = torch.arange(hist.numel(), dtype=torch.float64)
        total = float(hist.sum()) or 1.0
        self.avg_deg_lin.fill_(float((degrees * hist).sum()) / total)
        self.avg_deg_log.fill_(float(((degrees + 1).log() * hist).sum()) / total)


def degree_histogram(graphs, etype=None) -> list:
    """Counts of in-degree 0, 1, 2, ... over the nodes of ``graphs`` (PyG's ``PNAConv.get_degree_histogram``);
    of heterographs, the in-degrees along relation ``etype`` of its destination type's nodes."""
    counts = torch.zeros(1, dtype=torch.long)
    for graph in graphs:
        binned = torch.bincount(graph.in_degrees(etype=etype), minlength=counts.numel())
        counts = torch.nn.functional.pad(counts, (0, binned.numel() - counts.numel())) + binned
    return counts.tolist()


class PNALayer(nn.Module):
    """PNA convolution; edges pass through.

    Parameters
    ----------
    in_feats, out_feats : int
    edge_feats : int, width of the edge features (the reference: ``min(128, d)``).
    degree_histogram : list of int, optional
        Nodes of in-degree 0, 1, ... in the training split (:func:`degree_histogram`); kept for
        checkpoints (the identity scaler does not use it).

    Example
    -------
    >>> g = dgl.rand_graph(6, 20)
    >>> conv = PNALayer(8, 8, edge_feats=8)
    >>> x, e = conv(g, torch.randn(6, 8), torch.randn(20, 8))
    >>> x.shape
    torch.Size([6, 8])
    """

    applies_residual = False  # the GEAET layer adds the residual

    def __init__(self, in_feats: int, out_feats: int, edge_feats: int,
                 degree_histogram: Optional[Sequence[int]] = None):
        super().__init__()
        self.in_feats = in_feats
        self.aggr_module = _DegreeStatistics(degree_histogram)
        self.edge_encoder = nn.Linear(edge_feats, in_feats)
        self.pre_nns = nn.ModuleList([nn.Sequential(nn.Linear(3 * in_feats, in_feats))])
        self.post_nns = nn.ModuleList([nn.Sequential(nn.Linear((len(AGGREGATORS) + 1) * in_feats, out_feats))])
        self.lin = nn.Linear(out_feats, out_feats)

    def set_degree_histogram(self, degree_histogram: Sequence[int]) -> None:
        """Keep the averages of this histogram (the training split's, :func:`degree_histogram`)."""
        self.aggr_module.set_histogram(degree_histogram)

    def reset_parameters(self) -> None:
        for module in (self.edge_encoder, self.pre_nns[0][0], self.post_nns[0][0], self.lin):
            module.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, in_feats), (E, edge_feats) -> (N, out_feats); ``edge_feat`` passes through (other keywords unused)."""
        if edge_feat is None:
            raise ValueError("PNALayer needs edge features")
        d = self.in_feats
        pre = self.pre_nns[0][0]
        w_dst, w_src, w_edge = pre.weight.split(d, dim=1)  # [x_i || x_j || e'] @ W^T
        encoded = self.edge_encoder(edge_feat)
        messages = torch.addmm(pre.bias, encoded, w_edge.t()) + dgl.ops.u_add_v(
            graph, node_feat @ w_src.t(), node_feat @ w_dst.t())  # (E, d)
        isolated = (graph.in_degrees() == 0).unsqueeze(-1)  # DGL's max leaves -inf there, PyG's 0
        aggregated = [dgl.ops.copy_e_mean(graph, messages),
                      dgl.ops.copy_e_max(graph, messages).masked_fill(isolated, 0.0),
                      dgl.ops.copy_e_sum(graph, messages)]
        out = self.post_nns[0](torch.cat([node_feat] + aggregated, dim=-1))
        return self.lin(out), edge_feat
