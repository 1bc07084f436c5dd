"""The local MPNN of a heterograph: one homogeneous MPNN per relation, averaged per destination type.

For a node :math:`i` of type :math:`t` and the relations
:math:`\\mathcal R_t = \\{r = (s, \\cdot, t)\\}` that end at type ``t``:

.. math::
    x_i' = \\frac{1}{|\\mathcal R_t|} \\sum_{r \\in \\mathcal R_t} \\mathrm{MPNN}_r(G_r, X_{s \\cup t})_i,

where :math:`G_r` holds the relation's edges over the nodes of its source and
destination types and :math:`\\mathrm{MPNN}_r` is any of the homogeneous
layers (GatedGCN, GCN, GIN, GINE; :func:`~.geaet_layer.build_mpnn`) with its
own weights. A type that no relation ends at gets no update: its input back
for an MPNN that adds the residual itself (GatedGCN), zero otherwise (the
GEAET layer then adds the residual). Each edge belongs to one relation, so
GatedGCN's edge update writes every edge once. One relation over one node
type is exactly the homogeneous MPNN.
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch
from torch import nn

from .hetero_view import HeteroView


class RelationMPNN(nn.Module):
    """One MPNN per canonical edge type, mean-aggregated per destination type.

    Parameters
    ----------
    convs : one homogeneous MPNN module per relation (same order as ``canonical_etypes``).
    ntypes : the node types.
    canonical_etypes : the ``(src, rel, dst)`` triples.

    Example
    -------
    >>> hg = dgl.heterograph({('a', 'r', 'b'): ([0, 1], [0, 0]), ('b', 's', 'a'): ([0], [1])})
    >>> view = HeteroView.from_heterograph(hg)
    >>> mpnn = RelationMPNN([GCNLayer(4, 4), GCNLayer(4, 4)], hg.ntypes, hg.canonical_etypes)
    >>> mpnn(view, torch.randn(3, 4))[0].shape
    torch.Size([3, 4])
    """

    def __init__(self, convs: Sequence[nn.Module], ntypes: Sequence[str],
                 canonical_etypes: Sequence[Tuple[str, str, str]]):
        super().__init__()
        if len(convs) != len(canonical_etypes):
            raise ValueError(f"{len(convs)} MPNNs for {len(canonical_etypes)} relations; give one per relation")
        self.convs = nn.ModuleList(convs)
        self.applies_residual = bool(getattr(convs[0], "applies_residual", False)) if convs else False
        ntypes = list(ntypes)
        incoming = [0] * len(ntypes)
        for _, _, dst in canonical_etypes:
            incoming[ntypes.index(dst)] += 1
        self.register_buffer("_incoming", torch.tensor(incoming, dtype=torch.float32), persistent=False)

    def forward(self, view: HeteroView, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None, edge_output: bool = True
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) view nodes and (E, d) view edges -> (N, d), (E, d) (edges None when not ``edge_output``).

        The branch calling convention (:mod:`.branches`) with the view as the graph; ``layout``
        and ``pe_dist`` are unused (no positional encoding on heterographs).
        """
        total = node_feat.new_zeros(node_feat.shape)
        edge_parts = []
        for conv, rel in zip(self.convs, view.relations):
            rel_edges = edge_feat[rel.edges] if edge_feat is not None else None
            h, e = conv(rel.graph, node_feat[rel.nodes], rel_edges, edge_output=edge_output)
            total = total.index_add(0, rel.nodes[rel.dst_rows], h[rel.dst_rows])
            edge_parts.append(e)
        incoming = self._incoming.to(node_feat.dtype)[view.node_type]
        out = total / incoming.clamp(min=1).unsqueeze(-1)
        if self.applies_residual:  # no relation ends at the type: the residual alone, i.e. the input
            out = torch.where((incoming > 0).unsqueeze(-1), out, node_feat)
        if not edge_output or edge_feat is None or not edge_parts:
            return out, edge_feat if edge_output else None
        return out, view.gather_edges(edge_parts)
