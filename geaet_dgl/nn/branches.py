"""The GEAET layer's branch menu: one explicit table of local MPNNs and of global attentions, and their builders.

Every branch module follows one calling convention,

.. code-block:: python

    node_out, edge_out = branch(graph, node_feat, edge_feat=None, *, layout=None, pe_dist=None,
                                edge_output=True)

with (N, d) nodes, (E, d) edges (or None), the batch's :class:`~.batch_layout.BatchLayout`, the (E, 1)
EquivStableLapPE distances and whether the caller reads the edge output (False: a branch may skip
its edge update and return None). A branch reads only the arguments it needs and passes the edge
features it does not update through unchanged. A branch that adds its input itself (the
reference's GatedGCN, with its dropout inside) says so with ``applies_residual = True``; the
GEAET layer then adds no residual, dropout or output activation around it.
"""
from __future__ import annotations

from typing import Optional

from torch import nn

from .external_attention import GEANET_VARIANTS, build_geanet
from .gated_gcn import GatedGCNLayer
from .gcn import GCNLayer
from .gin import GINELayer, GINLayer
from .self_attention import GraphSelfAttention

MPNNS = ("gatedgcn", "gcn", "gin", "gine", "none")
ATTENTIONS = ("transformer", "none")

__all__ = ["MPNNS", "ATTENTIONS", "GEANET_VARIANTS", "build_mpnn", "build_attention", "build_geanet"]


def build_mpnn(name: str, hidden_dim: int, dropout: float = 0.0, activation: str = "relu",
               equivstable_pe: bool = False) -> Optional[nn.Module]:
    """The local message-passing branch called ``name`` (None for 'none'), (N, d) -> (N, d).

    ``dropout`` is GatedGCN's internal dropout (the reference gives it the FFN dropout);
    ``equivstable_pe`` gates GatedGCN's messages with the EquivStableLapPE distances. The other
    MPNNs take no positional encoding: asking for it with them raises.
    """
    if name == "gatedgcn":
        return GatedGCNLayer(hidden_dim, hidden_dim, dropout=dropout, residual=True,
                             activation=activation, equivstable_pe=equivstable_pe)
    if name not in MPNNS:
        raise ValueError(f"mpnn={name!r} is not one of {', '.join(MPNNS)}")
    if equivstable_pe and name != "none":
        raise ValueError(f"mpnn={name!r} does not read the EquivStableLapPE; only gatedgcn does")
    if name == "gcn":
        return GCNLayer(hidden_dim, hidden_dim)
    if name == "gin":
        return GINLayer(hidden_dim, hidden_dim, activation)
    if name == "gine":
        return GINELayer(hidden_dim, hidden_dim, activation)
    return None


def build_attention(name: str, hidden_dim: int, num_heads: int, attn_dropout: float = 0.0) -> Optional[nn.Module]:
    """The global attention branch called ``name`` (None for 'none'), (N, d) -> (N, d) per graph."""
    if name == "transformer":
        return GraphSelfAttention(hidden_dim, num_heads, attn_dropout)
    if name == "none":
        return None
    raise ValueError(f"attention={name!r} is not one of {', '.join(ATTENTIONS)}")
