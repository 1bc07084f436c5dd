"""The GEAET layer: local MPNN + global self-attention + GEANet, then an FFN.

All three branches read the same input :math:`X^l`:

.. math::
    X_M, E_M &= \\mathrm{MPNN}(X^l, E^l), \\\\
    X_T &= \\mathrm{SelfAttn}(X^l), \\\\
    X_G, E_G &= \\mathrm{GEANet}(X^l, E_M),

each followed by dropout, the residual :math:`X^l + \\cdot` and a norm; the
branch outputs are summed, then :math:`X^{l+1} = \\mathrm{Norm}(X + \\mathrm{FFN}(X))`
and :math:`E^{l+1} = E_G`. This is the reference's composition; a GatedGCN
branch applies its own BatchNorm, activation, dropout and residual inside,
so the layer adds only the norm for it.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn

from .activation import make_activation
from .batch_layout import BatchLayout, layout_of
from .external_attention import build_geanet
from .gated_gcn import GatedGCNLayer
from .gcn import GCNLayer
from .gin import GINELayer, GINLayer
from .norm import BranchNorm
from .self_attention import GraphSelfAttention

MPNNS = ("gatedgcn", "gcn", "gin", "gine", "none")
ATTENTIONS = ("transformer", "none")


def build_mpnn(
    name: str, hidden_dim: int, dropout: float, activation: str, equivstable_pe: bool
) -> Optional[nn.Module]:
    """The local message-passing network called ``name`` (or None for 'none')."""
    if name == "gatedgcn":
        return GatedGCNLayer(hidden_dim, hidden_dim, dropout=dropout, residual=True,
                             activation=activation, equivstable_pe=equivstable_pe)
    if name == "gcn":
        return GCNLayer(hidden_dim, hidden_dim)
    if name == "gin":
        return GINLayer(hidden_dim, hidden_dim, activation)
    if name == "gine":
        return GINELayer(hidden_dim, hidden_dim, activation)
    if name == "none":
        return None
    raise ValueError(f"mpnn={name!r} is not one of {', '.join(MPNNS)}")


class GEAETLayer(nn.Module):
    """One GEAET feature-extraction layer.

    Parameters
    ----------
    hidden_dim : int
    mpnn : {'gatedgcn', 'gcn', 'gin', 'gine', 'none'}
    attention : {'transformer', 'none'}
    external : bool, whether the GEANet branch is present.
    num_heads : int, self-attention heads.
    geanet_heads, geanet_unit_size : int, GEANet heads and slots.
    geanet_node_unit, geanet_edge_unit, geanet_shared_unit : bool
    geanet_scope : {'graph', 'batch'}
    local_dropout, global_dropout, external_dropout, ffn_dropout, attn_dropout : float
        Dropout after each branch, in the FFN and on attention weights. As in
        the reference, GatedGCN's internal dropout uses ``ffn_dropout``.
    norm : {'batch', 'layer'}
    use_ffn : bool
    local_out_act : bool, apply the activation to the MPNN output (non-GatedGCN).
    activation : {'relu', 'gelu'}
    equivstable_pe : bool, feed the EquivStableLapPE to the GatedGCN gate.
    geanet_variant : {'reference', 'paper'}, GEANet as the reference codes it
        (:class:`~.external_attention.GEANet`) or as the paper writes it
        (:class:`~.external_attention.PaperGEANet`).
    """

    def __init__(
        self,
        hidden_dim: int,
        mpnn: str = "gatedgcn",
        attention: str = "transformer",
        external: bool = True,
        num_heads: int = 4,
        geanet_heads: int = 4,
        geanet_unit_size: Optional[int] = None,
        geanet_node_unit: bool = True,
        geanet_edge_unit: bool = False,
        geanet_shared_unit: bool = False,
        geanet_scope: str = "graph",
        local_dropout: float = 0.0,
        global_dropout: float = 0.0,
        external_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
        attn_dropout: float = 0.0,
        norm: str = "batch",
        use_ffn: bool = True,
        local_out_act: bool = False,
        activation: str = "relu",
        equivstable_pe: bool = False,
        geanet_variant: str = "reference",
    ):
        super().__init__()
        if attention not in ATTENTIONS:
            raise ValueError(f"attention={attention!r} is not one of {', '.join(ATTENTIONS)}")
        self.hidden_dim = hidden_dim
        self.local_model = build_mpnn(mpnn, hidden_dim, ffn_dropout, activation, equivstable_pe)
        self.global_model = (
            GraphSelfAttention(hidden_dim, num_heads, attn_dropout) if attention == "transformer" else None
        )
        self.external_model = None
        if external:
            unit_size = geanet_unit_size if geanet_unit_size is not None else hidden_dim // geanet_heads
            self.external_model = build_geanet(geanet_variant, hidden_dim, geanet_heads, unit_size,
                                               node_unit=geanet_node_unit, edge_unit=geanet_edge_unit,
                                               shared_unit=geanet_shared_unit, scope=geanet_scope)
        if self.local_model is None and self.global_model is None and self.external_model is None:
            raise ValueError("a GEAET layer needs at least one of mpnn, attention, external")

        self.local_out_act = make_activation(activation) if local_out_act else None
        if self.local_model is not None:
            self.dropout_local = nn.Dropout(local_dropout)
            self.norm1_local = BranchNorm(norm, hidden_dim)
        if self.global_model is not None:
            self.dropout_global = nn.Dropout(global_dropout)
            self.norm1_global = BranchNorm(norm, hidden_dim)
        if self.external_model is not None:
            self.dropout_external = nn.Dropout(external_dropout)
            self.norm1_external = BranchNorm(norm, hidden_dim)
        self.use_ffn = use_ffn
        if use_ffn:
            self.ff_linear1 = nn.Linear(hidden_dim, 2 * hidden_dim)
            self.ff_linear2 = nn.Linear(2 * hidden_dim, hidden_dim)
            self.act_ff = make_activation(activation, inplace=True)  # on ff_linear1's output, read by nothing else
            self.ff_dropout1 = nn.Dropout(ffn_dropout)
            self.ff_dropout2 = nn.Dropout(ffn_dropout)
        self.norm2 = BranchNorm(norm, hidden_dim)

    def forward(
        self,
        graph: dgl.DGLGraph,
        node_feat: torch.Tensor,
        edge_feat: Optional[torch.Tensor] = None,
        pe_dist: Optional[torch.Tensor] = None,
        layout: Optional[BatchLayout] = None,
        edge_output: bool = True,
    ) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """
        Parameters
        ----------
        graph : batched DGLGraph, N nodes, E edges.
        node_feat : (N, d)
        edge_feat : (E, d) or None
        pe_dist : (E, 1) squared EquivStableLapPE distances for the GatedGCN
            gate (``gated_gcn.pe_square_distance``), or None.
        layout : the batch's :class:`BatchLayout` (built if None).
        edge_output : bool
            False when nothing reads this layer's edge output (the model's last
            layer): the edge updates are then skipped, and None is returned.

        Returns
        -------
        (N, d) nodes and (E, d) edges for the next layer.
        """
        layout = layout_of(graph, layout)
        local = global_out = external = None
        if self.local_model is not None:
            local = self.local_model(graph, node_feat, edge_feat, pe_dist, edge_output)
            edge_feat = local[1]
        if self.global_model is not None:
            global_out = self.global_model(graph, node_feat, layout)
        if self.external_model is not None:
            external = self.external_model(graph, node_feat, edge_feat if edge_output else None,
                                           layout.num_nodes_per_graph, layout.num_edges_per_graph)
        return self.combine(node_feat, edge_feat, local, global_out, external, layout, edge_output)

    def combine(self, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor], local: Optional[Tuple[torch.Tensor, Optional[torch.Tensor]]],
                global_out: Optional[torch.Tensor], external: Optional[Tuple[torch.Tensor, Optional[torch.Tensor]]],
                layout: BatchLayout, edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The layer's output from its branches' raw outputs: dropout, residuals, norms, sum, FFN.

        ``edge_feat`` is returned as the edge output when no branch updates the
        edges. ``local`` and ``external`` are the ``(N, d), (E, d)`` results of the
        MPNN and GEANet (``None`` for an absent branch), ``global_out`` the
        ``(N, d)`` self-attention output. :meth:`forward` computes the branches
        on the whole batch; layer-wise inference
        (:mod:`geaet_dgl.inference.layerwise`) computes them in node chunks.
        """
        h_in = node_feat
        branches = []
        if local is not None:
            h_local, edge_feat = local
            if not getattr(self.local_model, "applies_residual", False):
                if self.local_out_act is not None:
                    h_local = self.local_out_act(h_local)
                h_local = h_in + self.dropout_local(h_local)
            branches.append(self.norm1_local(h_local, layout))
        if global_out is not None:
            branches.append(self.norm1_global(h_in + self.dropout_global(global_out), layout))
        if external is not None:
            h_ext, edge_feat = external
            branches.append(self.norm1_external(h_in + self.dropout_external(h_ext), layout))

        h = branches[0]
        for branch in branches[1:]:
            h = h + branch
        if self.use_ffn:
            h = h + self.ff_dropout2(self.ff_linear2(self.ff_dropout1(self.act_ff(self.ff_linear1(h)))))
        return self.norm2(h, layout), edge_feat if edge_output else None
