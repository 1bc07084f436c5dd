"""A 2-layer GCN on the raw node features beside the GEAET stack (SGFormer's graph branch).

On citation graphs with a few labels per class, a network whose first weight
matrix reads the encoder's output (``Linear -> GCN -> GCN -> head``) overfits
within ~20 epochs and stays ~5 points under a 2-layer GCN whose first matrix
reads the propagated raw features (docs/node-classification.md). SGFormer
(Wu et al., 2023) keeps such a GCN beside its attention stack and mixes the
two before the head; ``model.input_gcn_weight = w`` does the same here:

.. math::
    h = (1 - w)\\, h_{\\text{stack}} + w\\, \\mathrm{GCN}_2(\\mathrm{Dropout}(\\mathrm{ReLU}(\\mathrm{GCN}_1(X)))),

with :math:`X` the node features after ``model.input_dropout`` and the dropout
``model.feature_dropout``; the head reads :math:`h`. ``model.input_branch_mix =
logits`` mixes after the head instead, :math:`(1 - w)\, \mathrm{head}(h_{\text{stack}})
+ w\, \mathrm{GCN}_2(\ldots)` with :math:`\mathrm{GCN}_2` mapping to the outputs: a
plain 2-layer GCN, where a GCN feeding the linear head trains ~1.7 points lower on Cora. ``model.input_branch = mlp``
drops the graph from the branch (two linear layers on :math:`X`): on sets where
a 2-layer MLP beats GCN (WebKB, Actor) the head then always has the node's own
features, whatever the stack mixes in. ``model.input_branch = hops`` keeps the
node's own embedding apart from its neighbours' (:class:`HopBranch`, H2GCN's
ego/neighbour separation): on WebKB it is above the MLP where GCN, which sums the
two, is 20-30 points under it.
"""
from __future__ import annotations

from typing import Optional

import dgl
import torch
from torch import nn

from ..nn import sparse_input
from ..nn.batch_layout import BatchLayout
from ..nn.gcn import NORM_KEY, GCNLayer, loop_free_norm, without_self_loops


class InputGCN(nn.Module):
    """``GCN(in_feats -> d) -> ReLU -> Dropout -> GCN(d -> d)`` on float node features: (N, F) -> (N, d).

    Parameters
    ----------
    in_feats : int, width F of the raw node features.
    hidden_dim : int, width d of the GEAET stack it is mixed with.
    dropout : float, between the two convolutions.
    propagate : bool, False: the two layers are linear maps that ignore the graph (an MLP branch).
    out_feats : int or None, width of the second layer's output (None: ``hidden_dim``; the number of outputs
        when the branch is mixed with the head's logits, ``model.input_branch_mix=logits``).

    Example
    -------
    >>> branch = InputGCN(12, 8, 0.5)
    >>> branch(dgl.rand_graph(5, 10), torch.randn(5, 12)).shape
    torch.Size([5, 8])
    >>> InputGCN(12, 8, 0.5, out_feats=3)(dgl.rand_graph(5, 10), torch.randn(5, 12)).shape
    torch.Size([5, 3])
    """

    def __init__(self, in_feats: int, hidden_dim: int, dropout: float, propagate: bool = True,
                 out_feats: Optional[int] = None):
        super().__init__()
        self.propagate = propagate
        layer = GCNLayer if propagate else _Unpropagated
        self.first = layer(in_feats, hidden_dim)
        self.second = layer(hidden_dim, hidden_dim if out_feats is None else out_feats)
        self.dropout = nn.Dropout(dropout)

    def forward(self, graph: dgl.DGLGraph, feat: torch.Tensor, layout: BatchLayout = None) -> torch.Tensor:
        h, _ = self.first(graph, feat.to(self.first.lin.weight.dtype), layout=layout)
        h = self.dropout(torch.relu(h))
        h, _ = self.second(graph, h, layout=layout)
        return h


class _Unpropagated(GCNLayer):
    """A :class:`GCNLayer`'s weights (same initialisation, same state-dict keys) without the graph:
    ``X W^T + b``, (N, F) -> (N, out)."""

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat=None, *, layout=None, **unused):
        return sparse_input.linear(self.lin, node_feat) + self.bias, edge_feat


class HopBranch(nn.Module):
    """Ego and neighbour embeddings kept apart (H2GCN's first two designs, Zhu et al. 2020): (N, F) -> (N, out).

    .. math::
        Z = X W_1 = [Z_0 \\mid Z_1 \\mid \\dots \\mid Z_K], \\qquad
        h = \\mathrm{Dropout}(\\mathrm{ReLU}([Z_0 \\mid \\hat A Z_1 \\mid \\dots \\mid \\hat A^K Z_K]))\\, W_2^\\top + b_2,

    with :math:`\\hat A = D^{-1/2} A D^{-1/2}` the graph's adjacency without self-loops (D: in-degrees, 1 where
    a node has none), so the node's own features (:math:`Z_0`) are never averaged with its neighbours' as a
    GCN averages them. :math:`\\hat A^k Z_k = \\hat A^k X W_{1,k}`: each hop is propagated after the linear
    map, on ``(N, hidden_dim)`` states (``copy_u_sum``, no ``(E, d)`` tensor).

    Parameters
    ----------
    in_feats : int, width F of the raw node features.
    hidden_dim : int, width of each hop's embedding (K + 1 of them are concatenated).
    dropout : float, on the concatenated embeddings.
    hops : int, K >= 1, the farthest neighbourhood read.
    out_feats : int or None, the output width (None: ``hidden_dim``).

    Example
    -------
    >>> HopBranch(12, 8, 0.5, hops=2, out_feats=3)(dgl.rand_graph(5, 10), torch.randn(5, 12)).shape
    torch.Size([5, 3])
    """

    def __init__(self, in_feats: int, hidden_dim: int, dropout: float, hops: int = 1,
                 out_feats: Optional[int] = None):
        super().__init__()
        if hops < 1:
            raise ValueError(f"hops={hops} must be at least 1")
        self.hidden_dim, self.hops = hidden_dim, hops
        self.first = nn.Linear(in_feats, hidden_dim * (hops + 1))
        self.second = nn.Linear(hidden_dim * (hops + 1), hidden_dim if out_feats is None else out_feats)
        self.dropout = nn.Dropout(dropout)

    def forward(self, graph: dgl.DGLGraph, feat: torch.Tensor, layout: BatchLayout = None) -> torch.Tensor:
        parts = list(sparse_input.linear(self.first, feat.to(self.first.weight.dtype)).split(self.hidden_dim, dim=1))
        loopless, norm = normalized_adjacency(graph, parts[0].dtype)
        for k in range(1, self.hops + 1):
            for _ in range(k):
                parts[k] = dgl.ops.copy_u_sum(loopless, parts[k] * norm) * norm
        return self.second(self.dropout(torch.relu(torch.cat(parts, dim=1))))


class PropagationBranch(nn.Module):
    """Predict, then propagate (APPNP, Klicpera et al. 2019): a 2-layer MLP on the raw features whose output
    is smoothed by K steps of personalised PageRank, (N, F) -> (N, out).

    .. math::
        Z^{(0)} = \\mathrm{Dropout}(\\mathrm{ReLU}(X W_1^\\top + b_1))\\, W_2^\\top + b_2, \\qquad
        Z^{(k+1)} = (1 - \\alpha)\\, \\hat A Z^{(k)} + \\alpha Z^{(0)},

    with :math:`\\hat A = \\hat D^{-1/2} (A + I) \\hat D^{-1/2}` (GCN's normalisation, one self-loop per node)
    and teleport :math:`\\alpha` = :data:`TELEPORT`. The propagation has no weights, so its reach (K hops) does
    not add parameters to overfit a few labels with, as a deeper GCN would; each step is one ``copy_u_sum`` on
    ``(N, out)`` states.

    Parameters
    ----------
    in_feats : int, width F of the raw node features.
    hidden_dim : int, width of the MLP's hidden layer.
    dropout : float, on the MLP's hidden layer.
    hops : int, K >= 1 propagation steps.
    out_feats : int or None, the output width (None: ``hidden_dim``).

    Example
    -------
    >>> PropagationBranch(12, 8, 0.5, hops=10, out_feats=3)(dgl.rand_graph(5, 10), torch.randn(5, 12)).shape
    torch.Size([5, 3])
    """

    def __init__(self, in_feats: int, hidden_dim: int, dropout: float, hops: int = 10,
                 out_feats: Optional[int] = None):
        super().__init__()
        if hops < 1:
            raise ValueError(f"hops={hops} must be at least 1")
        self.hops = hops
        self.first = nn.Linear(in_feats, hidden_dim)
        self.second = nn.Linear(hidden_dim, hidden_dim if out_feats is None else out_feats)
        self.dropout = nn.Dropout(dropout)

    def forward(self, graph: dgl.DGLGraph, feat: torch.Tensor, layout: BatchLayout = None) -> torch.Tensor:
        h = sparse_input.linear(self.first, feat.to(self.first.weight.dtype))
        start = self.second(self.dropout(torch.relu(h)))
        loopless, norm = loop_free_norm(graph, start.dtype) if layout is None else \
            layout.cached(NORM_KEY, lambda: loop_free_norm(graph, start.dtype))
        norm = norm.to(start.dtype)
        # (1 - alpha) D^-1/2 (A + I) D^-1/2 as edge weights (E, 1) and a self-loop weight (N, 1): one gspmm and
        # one fused multiply-add a step
        src, dst = loopless.edges()
        edge_weight = (norm[src] * norm[dst]) * (1.0 - TELEPORT)
        self_weight = norm.square() * (1.0 - TELEPORT)
        teleported = TELEPORT * start
        h = start
        for _ in range(self.hops):
            h = torch.addcmul(teleported, h, self_weight) + dgl.ops.u_mul_e_sum(loopless, h, edge_weight)
        return h


#: APPNP's teleport probability :math:`\\alpha` (its paper's value for the citation graphs).
TELEPORT = 0.1


def normalized_adjacency(graph: dgl.DGLGraph, dtype: torch.dtype = torch.float32):
    """``graph`` without self-loops and its (N, 1) :math:`D^{-1/2}` (D: in-degrees there, 1 where a node has
    none), so that ``copy_u_sum(g, h * norm) * norm`` is :math:`D^{-1/2} A D^{-1/2} h`."""
    graph = without_self_loops(graph)
    degrees = graph.in_degrees().to(dtype).clamp(min=1)
    return graph, degrees.rsqrt().unsqueeze(-1)


def build_input_branch(config) -> Optional[nn.Module]:
    """The raw-feature branch ``config`` (a :class:`~geaet_dgl.config.ModelConfig`) names, or None
    (``input_gcn_weight`` 0)."""
    if config.input_gcn_weight <= 0:
        return None
    out = config.out_feats if config.input_branch_mix == "logits" else None
    if config.input_branch == "appnp":
        return PropagationBranch(config.node_in_feats, config.hidden_dim, config.feature_dropout,
                                 config.input_branch_hops, out)
    if config.input_branch == "hops":
        return HopBranch(config.node_in_feats, config.hidden_dim, config.feature_dropout, config.input_branch_hops,
                         out)
    return InputGCN(config.node_in_feats, config.hidden_dim, config.feature_dropout, config.input_branch == "gcn",
                    out)
