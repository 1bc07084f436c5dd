"""The GEAET layer on a heterograph (typed nodes and edges).

The composition is :class:`~.geaet_layer.GEAETLayer`'s (each branch, then
dropout, the residual and a norm; the branches summed; the FFN), on the
graph-major homogeneous view of the batch (:class:`~.hetero_view.HeteroView`),
with two branches typed:

* the local MPNN runs once per relation and is averaged per destination type
  (``local_weights='relation'``, :class:`~.hetero_mpnn.RelationMPNN`), or once
  on the whole view with weights per relation and node type
  (``'typed'``, GatedGCN only: :class:`~.typed_gated_gcn.TypedGatedGCN`);
* GEANet has node units per node type and edge units per edge type, plus the
  shared unit (:class:`~.hetero_external_attention.HeteroGEANet`), normalised
  within a type or over all nodes (``geanet_type_scope``).

Self-attention runs over all nodes of each graph, whatever their type; the
type is in the features (the model adds a learned type embedding). With one
node type and one edge type the layer is exactly the homogeneous GEAET layer
(same weights, same outputs).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch

from .geaet_layer import GEAETLayer, build_mpnn
from .hetero_external_attention import HeteroGEANet
from .hetero_mpnn import RelationMPNN
from .hetero_view import HeteroView
from .typed_gated_gcn import TypedGatedGCN

LOCAL_WEIGHTS = ("relation", "typed")


class HeteroGEAETLayer(GEAETLayer):
    """One GEAET layer for heterographs.

    Parameters
    ----------
    hidden_dim : int
    ntypes : node types.
    canonical_etypes : ``(src, rel, dst)`` triples.
    geanet_type_scope : {'type', 'all'}, GEANet's normalisation within each
        node (edge) type or over all nodes (edges); see
        :mod:`~.hetero_external_attention`.
    local_weights : {'relation', 'typed'}, the local MPNN as one module per
        relation or as one typed GatedGCN (see the module docstring).
    **options : the other arguments of :class:`~.geaet_layer.GEAETLayer`
        (``geanet_variant`` must stay 'reference'; no ``equivstable_pe``).

    Example
    -------
    >>> hg = dgl.heterograph({('a', 'r', 'b'): ([0, 1], [0, 0]), ('b', 's', 'a'): ([0], [1])})
    >>> view = HeteroView.from_heterograph(hg)
    >>> layer = HeteroGEAETLayer(8, hg.ntypes, hg.canonical_etypes, num_heads=2, geanet_heads=2)
    >>> h, e = layer(view, torch.randn(3, 8), torch.randn(3, 8))
    >>> h.shape, e.shape
    (torch.Size([3, 8]), torch.Size([3, 8]))
    """

    def __init__(self, hidden_dim: int, ntypes: Sequence[str], canonical_etypes: Sequence[Tuple[str, str, str]],
                 geanet_type_scope: str = "type", local_weights: str = "relation", **options):
        if options.get("geanet_variant", "reference") != "reference":
            raise ValueError("a heterograph layer has the reference's GEANet only: geanet_variant='reference'")
        if options.get("equivstable_pe"):
            raise ValueError("a heterograph layer takes no positional encoding: equivstable_pe=False")
        if local_weights not in LOCAL_WEIGHTS:
            raise ValueError(f"local_weights={local_weights!r} is not one of {', '.join(LOCAL_WEIGHTS)}")
        if local_weights == "typed" and options.get("mpnn", "gatedgcn") not in ("gatedgcn", "none"):
            raise ValueError(f"local_weights='typed' is a GatedGCN; use mpnn='gatedgcn' or local_weights='relation' "
                             f"(mpnn={options.get('mpnn')!r})")
        super().__init__(hidden_dim, **options)
        self.ntypes = tuple(ntypes)
        self.canonical_etypes = tuple(tuple(r) for r in canonical_etypes)
        if self.local_model is not None and local_weights == "typed":
            self.local_model = TypedGatedGCN(hidden_dim, len(self.ntypes), len(self.canonical_etypes),
                                             options.get("ffn_dropout", 0.0), options.get("activation", "relu"))
        elif self.local_model is not None:
            convs = [build_mpnn(options.get("mpnn", "gatedgcn"), hidden_dim, options.get("ffn_dropout", 0.0),
                                options.get("activation", "relu"), False) for _ in self.canonical_etypes]
            self.local_model = RelationMPNN(convs, self.ntypes, self.canonical_etypes)
        if self.external_model is not None:
            old = self.external_model
            self.external_model = HeteroGEANet(
                hidden_dim, old.num_heads, old.unit_size, len(self.ntypes), len(self.canonical_etypes),
                node_unit=old.node_unit, edge_unit=old.edge_unit, shared_unit=old.shared_unit, scope=old.scope,
                type_scope=geanet_type_scope)

    def forward(self, view: HeteroView, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None,
                pe_dist: Optional[torch.Tensor] = None, layout=None, edge_output: bool = True
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """
        Parameters
        ----------
        view : the batch's :class:`~.hetero_view.HeteroView` (N nodes, E edges).
        node_feat : (N, d), in the view's order.
        edge_feat : (E, d) or None.
        pe_dist : must be None.
        layout : ignored (the view's layout is used).
        edge_output : bool, as :class:`~.geaet_layer.GEAETLayer`.

        Returns
        -------
        (N, d) nodes and (E, d) edges (or None).
        """
        if pe_dist is not None:
            raise ValueError("a heterograph layer takes no positional encoding; pass pe_dist=None")
        # The branches receive the view as their graph: the typed ones read its types and relations,
        # self-attention and the norms only the layout.
        return super().forward(view, node_feat, edge_feat, None, view.layout, edge_output)
