"""GEANet as the GEAET paper writes it (Section 3.1; ``model.geanet.variant='paper'``): a separate module, not
a mode of :class:`~.external_attention.GEANet` (the reference's code), and :func:`build_geanet`, which picks one.

The paper's units have no bias, the slot count ``S`` is free (not tied to the head width) and the heads are
concatenated then projected by an output matrix; the double normalisation is the same
(:func:`~.external_attention.double_normalize`).
"""
from __future__ import annotations

from typing import Optional, Tuple

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from .batch_layout import BatchLayout
from .external_attention import SCOPES, GEANet, double_normalize, segment_lengths

GEANET_VARIANTS = ("reference", "paper")


def _unit(rows: int, cols: int) -> nn.Parameter:
    """An (rows, cols) external unit, initialised as ``nn.Linear(cols, rows)``'s weight."""
    weight = nn.Parameter(torch.empty(rows, cols))
    nn.init.kaiming_uniform_(weight, a=5 ** 0.5)
    return weight


class PaperGEANet(nn.Module):
    """Multi-head graph external attention as the GEAET paper writes it (Section 3.1).

    For the nodes :math:`X \\in R^{n \\times d}` of one graph, with ``H`` heads
    of width :math:`d_h = d / H` and external units of ``S`` slots:

    .. math::
        X' = X U_s, \\qquad
        h_i = \\mathrm{DNorm}(X'_i U_{nk}^T) U_{nv}, \\qquad
        X_{out} = \\mathrm{Concat}(h_1, \\dots, h_H) W_o,

    where :math:`X'_i \\in R^{n \\times d_h}` is head ``i``'s block of channels,
    :math:`U_{nk}, U_{nv} \\in R^{S \\times d_h}` are shared by all heads (S is
    free: it is not tied to :math:`d_h`), :math:`U_s \\in R^{d \\times d}` is the
    unit shared by nodes and edges, :math:`W_o \\in R^{d \\times d}` the output
    projection and DNorm the double normalisation: softmax over the graph's
    ``n`` nodes for each slot, then each row divided by its sum over the ``S``
    slots. Edges go the same way with their own :math:`U_{ek}, U_{ev}` and
    output projection :math:`W_{eo}`, normalised over the graph's edges. As in
    the paper, no unit has a bias. The residual connection is the GEAET layer's.

    The paper reads ``scope='graph'``; ``scope='batch'`` normalises over the
    whole mini-batch instead (the reference's softmax), for ablations.

    Parameters
    ----------
    hidden_dim : int, ``d``.
    num_heads : int, ``H``; must divide ``d``.
    unit_size : int, ``S``, slots per unit (any positive number; ``d / H`` when None).
    node_unit, edge_unit, shared_unit : bool
        The paper's ablation switches; a disabled node or edge unit passes its
        features through unchanged (and has no :math:`W_o`).
    scope : {'graph', 'batch'}

    Example
    -------
    >>> g = dgl.batch([dgl.rand_graph(5, 12), dgl.rand_graph(3, 4)])
    >>> net = PaperGEANet(16, num_heads=4, unit_size=32, edge_unit=True, shared_unit=True)
    >>> x, e = net(g, torch.randn(8, 16), torch.randn(16, 16))
    >>> x.shape, e.shape
    (torch.Size([8, 16]), torch.Size([16, 16]))
    """

    def __init__(self, hidden_dim: int, num_heads: int = 4, unit_size: Optional[int] = None, node_unit: bool = True,
                 edge_unit: bool = False, shared_unit: bool = False, scope: str = "graph"):
        super().__init__()
        if unit_size is None and num_heads > 0:
            unit_size = hidden_dim // num_heads
        if scope not in SCOPES:
            raise ValueError(f"scope={scope!r} is not one of {', '.join(SCOPES)}")
        if num_heads <= 0 or hidden_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} must divide hidden_dim={hidden_dim}")
        if unit_size <= 0:
            raise ValueError(f"unit_size={unit_size} must be positive")
        self.hidden_dim, self.num_heads, self.unit_size, self.scope = hidden_dim, num_heads, unit_size, scope
        self.head_dim = hidden_dim // num_heads
        self.node_unit, self.edge_unit, self.shared_unit = node_unit, edge_unit, shared_unit
        if shared_unit:
            self.shared = nn.Linear(hidden_dim, hidden_dim, bias=False)  # weight = U_s^T
        if node_unit:
            self.node_key = _unit(unit_size, self.head_dim)  # U_nk (S, d_h)
            self.node_value = _unit(unit_size, self.head_dim)  # U_nv (S, d_h)
            self.node_out = nn.Linear(hidden_dim, hidden_dim, bias=False)  # weight = W_o^T
        if edge_unit:
            self.edge_key = _unit(unit_size, self.head_dim)  # U_ek
            self.edge_value = _unit(unit_size, self.head_dim)  # U_ev
            self.edge_out = nn.Linear(hidden_dim, hidden_dim, bias=False)  # weight = W_eo^T
        self.last_node_attention: Optional[torch.Tensor] = None
        self.keep_attention = False

    def reset_parameters(self) -> None:
        for name, param in self.named_parameters(recurse=False):
            nn.init.kaiming_uniform_(param, a=5 ** 0.5)
        for module in self.children():
            module.reset_parameters()

    def forward(self, graph: dgl.DGLGraph, node_feat: torch.Tensor, edge_feat: Optional[torch.Tensor] = None, *,
                layout: Optional[BatchLayout] = None, pe_dist: Optional[torch.Tensor] = None,
                edge_output: bool = True, node_lse: Optional[torch.Tensor] = None,
                edge_lse: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
        """(N, d) nodes and (E, d) edges -> (N, d), (E, d); same arguments and results as :class:`GEANet`."""
        if node_feat.shape[1] != self.hidden_dim:
            raise ValueError(f"node_feat has width {node_feat.shape[1]}, expected {self.hidden_dim}")
        node_seglen, edge_seglen = segment_lengths(graph, layout, self.scope)
        if not edge_output:
            edge_feat = None
        node_out = node_feat
        if self.node_unit:
            node_out, attn = self._attend(node_feat, "node", self.node_value, self.node_out, node_seglen, node_lse)
            if self.keep_attention:
                self.last_node_attention = attn.detach()
        edge_out = edge_feat
        if self.edge_unit and edge_feat is not None:
            edge_out, _ = self._attend(edge_feat, "edge", self.edge_value, self.edge_out, edge_seglen, edge_lse)
        return node_out, edge_out

    def scores(self, feat: torch.Tensor, kind: str = "node") -> torch.Tensor:
        """(M, d) node (``kind='node'``) or edge features -> the (M, H, S) scores the double norm reads."""
        if self.shared_unit:
            feat = self.shared(feat)
        key = self.node_key if kind == "node" else self.edge_key
        return F.linear(feat.reshape(feat.shape[0], self.num_heads, self.head_dim), key)

    def _attend(self, feat: torch.Tensor, kind: str, value: torch.Tensor, out: nn.Linear,
                seglen: Optional[torch.Tensor], lse: Optional[torch.Tensor] = None
                ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Concat_i(DNorm(X'_i U_k^T) U_v) W_o for (M, d) rows; also the (M, H, S) attention."""
        rows = feat.shape[0]
        scores = self.scores(feat, kind)  # (M, H, S)
        attn = double_normalize(scores, seglen, column_lse=lse)
        heads = torch.matmul(attn, value)  # (M, H, d_h)
        return out(heads.reshape(rows, self.hidden_dim)), attn

    def extra_repr(self) -> str:
        return (f"hidden_dim={self.hidden_dim}, num_heads={self.num_heads}, unit_size={self.unit_size}, "
                f"node_unit={self.node_unit}, edge_unit={self.edge_unit}, shared_unit={self.shared_unit}, "
                f"scope={self.scope!r}")


def build_geanet(variant: str, hidden_dim: int, num_heads: int, unit_size: Optional[int] = None,
                 **options) -> nn.Module:
    """:class:`GEANet` (``variant='reference'``, the reference's code) or :class:`PaperGEANet` (``'paper'``).

    ``unit_size`` None: ``hidden_dim // num_heads`` (what the reference's layout requires). ``options``:
    ``node_unit``, ``edge_unit``, ``shared_unit``, ``scope``.
    """
    if variant not in GEANET_VARIANTS:
        raise ValueError(f"variant={variant!r} is not one of {', '.join(GEANET_VARIANTS)}")
    cls = GEANet if variant == "reference" else PaperGEANet
    return cls(hidden_dim, num_heads, unit_size, **options)
