"""GEANet on a heterograph: external node units per node type, edge units per edge type, shared units.

For a node :math:`i` of type :math:`t(i)` with features split into ``H`` heads
of ``S`` channels, as :class:`~.external_attention.GEANet` but with the units
of its own type:

.. math::
    a_i = x_i U_{k, t(i)}^T + b_{k, t(i)}, \\qquad
    \\hat a_{is} = \\frac{\\exp a_{is}}{\\sum_{j \\in \\Omega(i)} \\exp a_{js}}, \\qquad
    \\bar a_{is} = \\frac{\\hat a_{is}}{\\sum_{u} \\hat a_{iu}}, \\qquad
    x_i' = \\bar a_i U_{v, t(i)}^T + b_{v, t(i)},

per head. The normalisation set :math:`\\Omega(i)` is set by ``type_scope``
and ``scope``:

=================  ==========================================  ==========================================
                   ``scope='graph'``                           ``scope='batch'``
``type_scope=all``  the nodes of i's graph, every type          every node of the batch
``type_scope=type`` the nodes of i's graph of type t(i)         every node of type t(i) in the batch
=================  ==========================================  ==========================================

Edges go the same way with one pair of units per canonical edge type
(the reference's strided head layout) and :math:`\\Omega` over edges and
relations. The shared unit :math:`U_s` (``shared_unit``, one (d, d) map for
every type) is applied to nodes, and to edges when the edge units are on,
first. With one node type and one edge type, this is
:class:`~.external_attention.GEANet` with the same weights.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import torch
from torch import nn

from .external_attention import SCOPES, GEANet, double_normalize
from .hetero_view import HeteroView

TYPE_SCOPES = ("type", "all")


class HeteroGEANet(nn.Module):
    """Multi-head graph external attention with units per node type and per edge type.

    Parameters
    ----------
    hidden_dim, num_heads : int, unit_size : int or None, as :class:`~.external_attention.GEANet`
        (``H * S = d``; None: ``d // H``).
    num_ntypes, num_etypes : int, node types and canonical edge types.
    node_unit, edge_unit, shared_unit : bool, the ablation switches of GEANet.
    scope : {'graph', 'batch'}
    type_scope : {'type', 'all'}, see the module docstring.

    Example
    -------
    >>> hg = dgl.heterograph({('a', 'r', 'b'): ([0, 1], [0, 0]), ('b', 's', 'a'): ([0], [1])})
    >>> view = HeteroView.from_heterograph(hg)
    >>> net = HeteroGEANet(8, 2, 4, num_ntypes=2, num_etypes=2, edge_unit=True)
    >>> [t.shape for t in net(view, torch.randn(3, 8), torch.randn(3, 8))]
    [torch.Size([3, 8]), torch.Size([3, 8])]
    """

    def __init__(self, hidden_dim: int, num_heads: int, unit_size: Optional[int], num_ntypes: int, num_etypes: int,
                 node_unit: bool = True, edge_unit: bool = False, shared_unit: bool = False,
                 scope: str = "graph", type_scope: str = "type"):
        super().__init__()
        if scope not in SCOPES:
            raise ValueError(f"scope={scope!r} is not one of {', '.join(SCOPES)}")
        if type_scope not in TYPE_SCOPES:
            raise ValueError(f"type_scope={type_scope!r} is not one of {', '.join(TYPE_SCOPES)}")
        unit_size = hidden_dim // num_heads if unit_size is None else unit_size
        if num_heads * unit_size != hidden_dim:
            raise ValueError(f"num_heads * unit_size = {num_heads}*{unit_size} must equal hidden_dim={hidden_dim}")
        self.hidden_dim, self.num_heads, self.unit_size = hidden_dim, num_heads, unit_size
        self.scope, self.type_scope = scope, type_scope
        self.node_unit, self.edge_unit, self.shared_unit = node_unit, edge_unit, shared_unit
        # Each type's units are a GEANet's (its unit_on_heads and the reference's parameter names).
        self.node_units = nn.ModuleList(
            GEANet(hidden_dim, num_heads, unit_size, node_unit=True) for _ in range(num_ntypes if node_unit else 0))
        self.edge_units = nn.ModuleList(
            GEANet(hidden_dim, num_heads, unit_size, node_unit=False, edge_unit=True)
            for _ in range(num_etypes if edge_unit else 0))
        if shared_unit:
            self.share_U = nn.Linear(hidden_dim, hidden_dim)
        self.keep_attention = False
        self.last_node_attention: Optional[torch.Tensor] = None

    def reset_parameters(self) -> None:
        for module in self.children():
            module.reset_parameters()

    def forward(self, view: HeteroView, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout=None, pe_dist: Optional[torch.Tensor] = None, edge_output: bool = True
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) view nodes and (E, d) view edges -> (N, d), (E, d) (edges None when not ``edge_output``).

        The branch calling convention (:mod:`.branches`) with the view as the graph; the view has the layout.
        """
        if not edge_output:
            edge_feat = None
        if node_feat.shape[1] != self.hidden_dim:
            raise ValueError(f"node_feat has width {node_feat.shape[1]}, expected {self.hidden_dim}")
        if self.shared_unit:
            node_feat = self.share_U(node_feat)
        node_out = node_feat
        if self.node_unit:
            keys = [(unit, unit.node_U1, unit.node_U2) for unit in self.node_units]
            node_out, attn = self._attend(node_feat, keys, view.node_index, view.type_counts,
                                          view.layout.num_nodes_per_graph, False)
            if self.keep_attention:
                self.last_node_attention = attn.detach()
        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            if self.shared_unit:
                edge_feat = self.share_U(edge_feat)
            keys = [(unit, unit.edge_U1, unit.edge_U2) for unit in self.edge_units]
            edge_out, _ = self._attend(edge_feat, keys, view.edge_index, view.relation_counts,
                                       view.layout.num_edges_per_graph, True)
        return node_out, edge_out

    def _attend(self, feat: torch.Tensor, units, index: List[torch.Tensor], typed_counts: torch.Tensor,
                graph_counts: torch.Tensor, strided: bool) -> Tuple[torch.Tensor, torch.Tensor]:
        """Rows of each type through their own key unit, the double normalisation over Omega, their value unit."""
        rows, dim = feat.shape
        scores = _per_type(feat, units, index, 1, strided)
        scores = scores.view(rows, self.num_heads, self.unit_size)
        if self.scope == "graph":
            seglen = typed_counts if self.type_scope == "type" else graph_counts
            attn = double_normalize(scores, seglen)
        elif self.type_scope == "all" or len(index) == 1:
            attn = double_normalize(scores, None)
        else:  # per type over the batch: the types' rows are not contiguous in the view
            order = torch.cat(index)
            counts = torch.tensor([len(i) for i in index], device=feat.device)
            attn = torch.empty_like(scores)
            attn[order] = double_normalize(scores[order], counts)
        return _per_type(attn.reshape(rows, dim), units, index, 2, False), attn

    def extra_repr(self) -> str:
        return (f"hidden_dim={self.hidden_dim}, num_heads={self.num_heads}, unit_size={self.unit_size}, "
                f"node_unit={self.node_unit}, edge_unit={self.edge_unit}, shared_unit={self.shared_unit}, "
                f"scope={self.scope!r}, type_scope={self.type_scope!r}")


def _per_type(feat: torch.Tensor, units: Sequence, index: List[torch.Tensor], which: int,
              strided: bool) -> torch.Tensor:
    """(M, d) -> (M, d): the rows of type t through unit ``which`` (1: key, 2: value) of type t."""
    if len(index) == 1 and index[0].numel() == feat.shape[0]:
        net, key, value = units[0]
        return net.unit_on_heads(key if which == 1 else value, feat, strided)
    out = feat.new_empty(feat.shape)
    for (net, key, value), rows in zip(units, index):
        out[rows] = net.unit_on_heads(key if which == 1 else value, feat[rows], strided)
    return out
