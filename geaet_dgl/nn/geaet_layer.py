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

Its eval-mode fast path sits here too: :meth:`GEAETLayer.folded` builds a :class:`FoldedGEAETLayer`, in
which every branch that has a ``folded()`` method of its own (GatedGCN, self-attention, GEANet) runs
folded, the BatchNorms are folded into linear maps, and the branch sum and the FFN take few kernels.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .activation import activation_, make_activation
from .batch_layout import BatchLayout, layout_of
from .norm import BranchNorm, scale_rows


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
            if self.wraps_local():
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

    def wraps_local(self) -> bool:
        """Whether this layer adds the output activation, dropout and residual around the local MPNN (not
        around one that ``applies_residual`` itself)."""
        return self.local_model is not None and not self.local_model.applies_residual

    def _skip(self, h_in: torch.Tensor, branch_out: torch.Tensor) -> torch.Tensor:
        """``h_in + branch_out`` with the residual on, else ``branch_out``."""
        return h_in + branch_out if self.residual else branch_out

    def folded(self) -> Optional["FoldedGEAETLayer"]:
        """An eval-mode copy with its BatchNorms folded (:class:`FoldedGEAETLayer`), or None for a subclass."""
        if type(self) is not GEAETLayer:
            return None
        return FoldedGEAETLayer(self)


def _folded_branch(branch: nn.Module, *args) -> Optional[nn.Module]:
    """The branch's own eval-mode copy (its ``folded(*args)``), or None where it has none or declines."""
    fold = getattr(branch, "folded", None)
    return fold(*args) if fold is not None else None


class FoldedGEAETLayer(nn.Module):
    """:class:`GEAETLayer` in eval mode: same call, same outputs up to float rounding. Built by :meth:`GEAETLayer.folded`.

    With BatchNorm branch norms :math:`\\mathrm{BN}_b(x) = s_b x + t_b`, the layer's branch sum is

    .. math::
        \\sum_b s_b (X + Y_b) + t_b = \\big(\\textstyle\\sum_b s_b\\big) X + \\sum_b s_b Y_b + \\sum_b t_b,

    where :math:`Y_b` is a branch's output before its residual. A branch that ends in a linear map
    (self-attention's ``out_proj``, GEANet's value unit) takes :math:`s_b` into that map's rows (its
    ``folded(out_affine)``); the others are added with one ``addcmul`` each. The FFN's closing norm goes into
    its second linear map: :math:`\\mathrm{BN}(h + W_2 a + b_2) = s h + (s W_2) a + (s b_2 + t)`. A LayerNorm
    (it reads each node's or graph's statistics) is applied as it is, and a branch without a ``folded()``
    method (or whose ``folded()`` declines) runs its own eval forward, its norm too. Dropout is skipped.
    """

    def __init__(self, layer: GEAETLayer):
        super().__init__()
        d = layer.hidden_dim
        like = next(layer.parameters())
        self.hidden_dim = d
        self.residual = layer.residual
        # The sum of the folded branch norms: coefficient of the layer input and constant term.
        self.residual_scale = torch.zeros(d, dtype=like.dtype, device=like.device)
        self.shift = torch.zeros(d, dtype=like.dtype, device=like.device)
        self.any_folded = False

        self.local_model = self.local_out_act = None
        self.local_scale = self.local_norm = None
        if layer.local_model is not None:
            self.local_model = _folded_branch(layer.local_model) or layer.local_model
            self.local_out_act = layer.local_out_act
            self.local_wrapped = layer.wraps_local()  # the layer adds act / residual around it
            self.local_residual = self.local_wrapped and layer.residual
            affine = layer.norm1_local.affine()
            if affine is not None:
                self._add_norm(affine, residual=self.local_residual)
                self.local_scale = affine[0]  # applied to the branch output by one addcmul
            else:
                self.local_norm = layer.norm1_local

        self.global_model, self.global_norm = self._fold_branch(layer.global_model, layer.norm1_global
                                                                if layer.global_model is not None else None)
        self.external_model, self.external_norm = self._fold_branch(layer.external_model, layer.norm1_external
                                                                    if layer.external_model is not None else None)

        self.use_ffn = layer.use_ffn
        out_affine = layer.norm2.affine()
        self.norm2 = None if out_affine is not None else layer.norm2
        self.out_scale = out_affine[0] if out_affine is not None else None
        if self.use_ffn:
            self.ff1 = (layer.ff_linear1.weight.detach(), layer.ff_linear1.bias.detach())
            self.ff2 = scale_rows(layer.ff_linear2.weight, layer.ff_linear2.bias, out_affine)
            self.act_ff = layer.act_ff
        elif out_affine is not None:
            self.out_shift = out_affine[1]

    def _fold_branch(self, branch: Optional[nn.Module], norm: Optional[BranchNorm]):
        """(module, norm) to run for a global or external branch: its folded copy with the norm's scale in its
        output map (norm None), or the branch and its norm as they are."""
        if branch is None:
            return None, None
        affine = norm.affine()
        folded = _folded_branch(branch, (affine[0], torch.zeros_like(affine[1])) if affine is not None else None)
        if folded is None:  # run as it is, its norm too
            return branch, norm
        if affine is None:
            return folded, norm
        self._add_norm(affine, residual=self.residual)
        return folded, None

    def _add_norm(self, affine, residual: bool) -> None:
        """Record a folded branch norm's share of the input coefficient and the constant term."""
        scale, shift = affine
        if residual:
            self.residual_scale += scale
        self.shift += shift
        self.any_folded = True

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None,
                pe_dist: Optional[torch.Tensor] = None, layout: Optional[BatchLayout] = None,
                edge_output: bool = True) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """As :meth:`GEAETLayer.forward` in eval mode."""
        layout = layout_of(graph, layout)
        h_in = node_feat
        parts: List[Tuple[torch.Tensor, Optional[torch.Tensor]]] = []  # (tensor, scale or None) to be summed
        if self.local_model is not None:
            h_local, edge_feat = self.local_model(graph, h_in, edge_feat, layout=layout, pe_dist=pe_dist,
                                                  edge_output=edge_output)
            if self.local_wrapped and self.local_out_act is not None:
                h_local = self.local_out_act(h_local)
            if self.local_scale is not None:
                parts.append((h_local, self.local_scale))
            else:
                parts.append((self.local_norm(h_in + h_local if self.local_residual else h_local, layout), None))
        if self.global_model is not None:
            h_global, _ = self.global_model(graph, h_in, layout=layout, edge_output=False)
            parts.append((h_global, None) if self.global_norm is None
                         else (self.global_norm(self._skip(h_in, h_global), layout), None))
        if self.external_model is not None:
            h_ext, edge_feat = self.external_model(graph, h_in, edge_feat if edge_output else None, layout=layout,
                                                   edge_output=edge_output)
            parts.append((h_ext, None) if self.external_norm is None
                         else (self.external_norm(self._skip(h_in, h_ext), layout), None))
        h = self._sum(h_in, parts)
        return self._feed_forward(h, layout), edge_feat if edge_output else None

    def _skip(self, h_in: torch.Tensor, branch_out: torch.Tensor) -> torch.Tensor:
        return h_in + branch_out if self.residual else branch_out

    def _sum(self, h_in: torch.Tensor, parts) -> torch.Tensor:
        """``residual_scale * h_in + shift + sum of the parts``, accumulated in one fresh (N, d) tensor."""
        if self.any_folded:
            h = torch.addcmul(self.shift, h_in, self.residual_scale)
        else:
            (first, scale), parts = parts[0], parts[1:]
            h = first * scale if scale is not None else first.clone()
        for part, scale in parts:
            if scale is None:
                h.add_(part)
            else:
                h.addcmul_(part, scale)
        return h

    def _feed_forward(self, h: torch.Tensor, layout: BatchLayout) -> torch.Tensor:
        """``Norm2(h + FFN(h))`` (or ``Norm2(h)`` without FFN)."""
        if self.use_ffn:
            hidden = activation_(F.linear(h, *self.ff1), self.act_ff)
            if self.norm2 is None:
                return torch.addmm(self.ff2[1], hidden, self.ff2[0].t()).addcmul_(h, self.out_scale)
            return self.norm2(h.add_(F.linear(hidden, *self.ff2)), layout)
        if self.norm2 is None:
            return torch.addcmul(self.out_shift, h, self.out_scale)
        return self.norm2(h, layout)
