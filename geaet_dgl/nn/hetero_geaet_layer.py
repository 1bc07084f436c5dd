"""The GEAET layer on a heterograph (typed nodes and edges).

The layer is :class:`~.geaet_layer.GEAETLayer` (each branch, then dropout,
the residual and a norm; the branches summed; the FFN) run on the
graph-major homogeneous view of the batch (:class:`~.hetero_view.HeteroView`,
passed where the layer takes its graph), with two branches typed:

* the local MPNN runs once per relation and is averaged per destination type
  (``local_weights='relation'``, :class:`~.hetero_mpnn.RelationMPNN`), or once
  on the whole view with weights per relation and node type
  (``'typed'``, GatedGCN only: :class:`~.typed_gated_gcn.TypedGatedGCN`);
* GEANet has node units per node type and edge units per edge type, plus the
  shared unit (:class:`~.hetero_external_attention.HeteroGEANet`), normalised
  within a type or over all nodes (``geanet_type_scope``).

Self-attention (:func:`~.branches.build_attention`) runs over all nodes of
each graph, whatever their type; the type is in the features (the model adds
a learned type embedding). With one node type and one edge type the layer is
exactly the homogeneous GEAET layer (same weights, same outputs).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import torch

from .branches import build_attention, build_mpnn
from .geaet_layer import GEAETLayer
from .hetero_external_attention import HeteroGEANet
from .hetero_mpnn import RelationMPNN
from .hetero_view import HeteroView
from .typed_gated_gcn import TypedGatedGCN

LOCAL_WEIGHTS = ("relation", "typed")


class HeteroGEAETLayer(GEAETLayer):
    """One GEAET layer for heterographs, its branches built by name.

    Parameters
    ----------
    hidden_dim : int
    ntypes : node types.
    canonical_etypes : ``(src, rel, dst)`` triples.
    mpnn : {'gatedgcn', 'gcn', 'gin', 'gine', 'none'}
    attention : {'transformer', 'none'}
    external : bool, whether the GEANet branch is present.
    num_heads, attn_dropout : self-attention heads and dropout on its weights.
    geanet_heads, geanet_unit_size, geanet_node_unit, geanet_edge_unit, geanet_shared_unit, geanet_scope :
        as :class:`~.external_attention.GEANet`.
    geanet_type_scope : {'type', 'all'}, GEANet's normalisation within each
        node (edge) type or over all nodes (edges); see
        :mod:`~.hetero_external_attention`.
    local_weights : {'relation', 'typed'}, see the module docstring.
    ffn_dropout, activation : as the homogeneous layer (GatedGCN's internal dropout is ``ffn_dropout``).
    **options : ``local_dropout``, ``global_dropout``, ``external_dropout``, ``norm``, ``use_ffn``,
        ``local_out_act`` of :class:`~.geaet_layer.GEAETLayer`.

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
                 mpnn: str = "gatedgcn", attention: str = "transformer", external: bool = True, num_heads: int = 4,
                 geanet_heads: int = 4, geanet_unit_size: Optional[int] = None, geanet_node_unit: bool = True,
                 geanet_edge_unit: bool = False, geanet_shared_unit: bool = False, geanet_scope: str = "graph",
                 geanet_type_scope: str = "type", local_weights: str = "relation", attn_dropout: float = 0.0,
                 ffn_dropout: float = 0.0, activation: str = "relu", **options):
        if local_weights not in LOCAL_WEIGHTS:
            raise ValueError(f"local_weights={local_weights!r} is not one of {', '.join(LOCAL_WEIGHTS)}")
        if local_weights == "typed" and mpnn not in ("gatedgcn", "none"):
            raise ValueError(f"local_weights='typed' is a GatedGCN; use mpnn='gatedgcn' or local_weights='relation' "
                             f"(mpnn={mpnn!r})")
        ntypes = tuple(ntypes)
        relations = tuple(tuple(r) for r in canonical_etypes)
        # Built in the homogeneous layer's order (local, global, external): one relation over one type
        # draws the homogeneous layer's initial weights from the same seed.
        local = None
        if mpnn != "none" and local_weights == "typed":
            local = TypedGatedGCN(hidden_dim, len(ntypes), len(relations), ffn_dropout, activation)
        elif mpnn != "none":
            local = RelationMPNN([build_mpnn(mpnn, hidden_dim, ffn_dropout, activation) for _ in relations],
                                 ntypes, relations)
        global_model = build_attention(attention, hidden_dim, num_heads, attn_dropout)
        geanet = None
        if external:
            geanet = HeteroGEANet(hidden_dim, geanet_heads, geanet_unit_size, len(ntypes), len(relations),
                                  node_unit=geanet_node_unit, edge_unit=geanet_edge_unit,
                                  shared_unit=geanet_shared_unit, scope=geanet_scope, type_scope=geanet_type_scope)
        super().__init__(hidden_dim, local, global_model, geanet, ffn_dropout=ffn_dropout, activation=activation,
                         **options)
        self.ntypes, self.canonical_etypes = ntypes, relations

    def forward(self, view: HeteroView, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None,
                pe_dist: Optional[torch.Tensor] = None, layout=None, edge_output: bool = True
                ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """
        Parameters
        ----------
        view : the batch's :class:`~.hetero_view.HeteroView` (N nodes, E edges).
        node_feat : (N, d), in the view's order.
        edge_feat : (E, d) or None.
        pe_dist : must be None (no positional encoding on heterographs).
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
