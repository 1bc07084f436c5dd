"""The GEAET layer: local MPNN + global self-attention + GEANet, then an FFN.

All three branches read the same input :math:`X^l`:

.. math::
    X_M, E_M &= \\mathrm{MPNN}(X^l, E^l), \\\\
    X_T &= \\mathrm{SelfAttn}(X^l), \\\\
    X_G, E_G &= \\mathrm{GEANet}(X^l, E_M),

each followed by dropout, the residual :math:`X^l + \\cdot` and a norm; the
branch outputs are summed, then :math:`X^{l+1} = \\mathrm{Norm}(X + \\mathrm{FFN}(X))`
and :math:`E^{l+1} = E_G`. This is the reference's composition; a branch that
applies its own residual inside (``applies_residual``: the reference's GatedGCN,
with its BatchNorm, activation and dropout) gets only the norm.

The layer takes its branches as modules (:mod:`.branches` builds them by name);
they share one calling convention, written there.
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
from torch import nn

from .activation import make_activation
from .batch_layout import BatchLayout, layout_of
from .norm import BranchNorm


class GEAETLayer(nn.Module):
    """One GEAET feature-extraction layer around up to three branch modules.

    Parameters
    ----------
    hidden_dim : int
    local_model : module or None
        The local MPNN (:func:`~.branches.build_mpnn`), updating nodes and edges.
    global_model : module or None
        The global attention (:func:`~.branches.build_attention`); its edge output is not read.
    external_model : module or None
        GEANet (:func:`~.external_attention.build_geanet`); it reads the MPNN's edges and its
        edge output is the layer's.
    local_dropout, global_dropout, external_dropout : float
        Dropout on each branch's output before its residual (not around a branch that
        ``applies_residual``).
    ffn_dropout : float, dropout inside the FFN.
    norm : {'batch', 'layer', 'node_layer', 'none'}, see :class:`~.norm.BranchNorm`.
    use_ffn : bool
    residual : bool
        Add the layer input to each branch's output (``X + Dropout(Y_b)``) before its norm; False:
        ``Norm(Dropout(Y_b))``. A branch that ``applies_residual`` keeps its own.
    local_out_act : bool, apply ``activation`` to the MPNN output before its residual.
    activation : {'relu', 'gelu'}

    Example
    -------
    >>> from geaet_dgl.nn.branches import build_attention, build_geanet, build_mpnn
    >>> layer = GEAETLayer(16, build_mpnn("gatedgcn", 16), build_attention("transformer", 16, 4),
    ...                    build_geanet("reference", 16, 4))
    >>> g = dgl.batch([dgl.rand_graph(5, 12), dgl.rand_graph(3, 4)])
    >>> x, e = layer(g, torch.randn(8, 16), torch.randn(16, 16))
    >>> x.shape, e.shape
    (torch.Size([8, 16]), torch.Size([16, 16]))
    """

    def __init__(
        self,
        hidden_dim: int,
        local_model: Optional[nn.Module] = None,
        global_model: Optional[nn.Module] = None,
        external_model: Optional[nn.Module] = None,
        local_dropout: float = 0.0,
        global_dropout: float = 0.0,
        external_dropout: float = 0.0,
        ffn_dropout: float = 0.0,
        norm: str = "batch",
        use_ffn: bool = True,
        local_out_act: bool = False,
        activation: str = "relu",
        residual: bool = True,
    ):
        super().__init__()
        if local_model is None and global_model is None and external_model is None:
            raise ValueError("a GEAET layer needs at least one of local_model, global_model, external_model")
        self.hidden_dim = hidden_dim
        self.residual = residual
        self.local_model = local_model
        self.global_model = global_model
        self.external_model = external_model

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

    def reset_parameters(self) -> None:
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                module.reset_parameters()

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
            local = self.local_model(graph, node_feat, edge_feat, layout=layout, pe_dist=pe_dist,
                                     edge_output=edge_output)
            edge_feat = local[1]
        if self.global_model is not None:
            global_out, _ = self.global_model(graph, node_feat, layout=layout, edge_output=False)
        if self.external_model is not None:
            external = self.external_model(graph, node_feat, edge_feat if edge_output else None, layout=layout,
                                           edge_output=edge_output)
        return self.combine(node_feat, edge_feat, local, global_out, external, layout, edge_output)

    def combine(self, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor],
                local: Optional[Tuple[torch.Tensor, Optional[torch.Tensor]]], global_out: Optional[torch.Tensor],
                external: Optional[Tuple[torch.Tensor, Optional[torch.Tensor]]], layout: BatchLayout,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The layer's output from its branches' raw outputs: dropout, residuals, norms, sum, FFN.

        ``edge_feat`` is returned as the edge output when no branch updates the
        edges. ``local`` and ``external`` are the ``(N, d), (E, d)`` results of the
        MPNN and GEANet (``None`` for an absent branch), ``global_out`` the
        ``(N, d)`` global attention output. :meth:`forward` computes the branches
        on the whole batch; layer-wise inference
        (:mod:`geaet_dgl.inference.layerwise`) computes them in node chunks.
        """
        h_in = node_feat
        branches = []
        if local is not None:
            h_local, edge_feat = local
            if not self.local_model.applies_residual:
                if self.local_out_act is not None:
                    h_local = self.local_out_act(h_local)
                h_local = self._skip(h_in, self.dropout_local(h_local))
            branches.append(self.norm1_local(h_local, layout))
        if global_out is not None:
            branches.append(self.norm1_global(self._skip(h_in, self.dropout_global(global_out)), layout))
        if external is not None:
            h_ext, edge_feat = external
            branches.append(self.norm1_external(self._skip(h_in, self.dropout_external(h_ext)), layout))

        h = branches[0]
        for branch in branches[1:]:
            h = h + branch
        if self.use_ffn:
            h = h + self.ff_dropout2(self.ff_linear2(self.ff_dropout1(self.act_ff(self.ff_linear1(h)))))
        return self.norm2(h, layout), edge_feat if edge_output else None

    def _skip(self, h_in: torch.Tensor, branch_out: torch.Tensor) -> torch.Tensor:
        """``h_in + branch_out`` with the residual on, else ``branch_out``."""
        return h_in + branch_out if self.residual else branch_out
