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

from .biased_attention import BiasedGraphSelfAttention
from .paper_geanet import GEANET_VARIANTS, build_geanet
from .gated_gcn import GatedGCNLayer
from .gat import GATLayer
from .gcn import GCNLayer
from .gen_conv import GENConvLayer
from .gin import GINELayer, GINLayer
from .performer import PerformerAttention
from .pna import PNALayer
from .sage import SAGELayer
from .self_attention import GraphSelfAttention

MPNNS = ("gatedgcn", "gcn", "sage", "gin", "gine", "gat", "pna", "genconv", "none")
ATTENTIONS = ("transformer", "biased_transformer", "performer", "none")

__all__ = ["MPNNS", "ATTENTIONS", "GEANET_VARIANTS", "build_mpnn", "build_attention", "build_geanet"]


def build_mpnn(name: str, hidden_dim: int, dropout: float = 0.0, activation: str = "relu",
               equivstable_pe: bool = False, num_heads: int = 4) -> Optional[nn.Module]:
    """The local message-passing branch called ``name`` (None for 'none'), (N, d) -> (N, d).

    ``dropout`` is GatedGCN's internal dropout (the reference gives it the FFN dropout);
    ``equivstable_pe`` gates GatedGCN's messages with the EquivStableLapPE distances. The other
    MPNNs take no positional encoding: asking for it with them raises. As the reference builds
    them: GAT is PyG's ``GATConv(d, d // H, H, edge_dim=d)`` with ``H = num_heads``, PNA
    ``PNAConv`` with edge width ``min(128, d)``, GENConv ``GENConv(d, d)``.
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
    if name == "sage":
        return SAGELayer(hidden_dim, hidden_dim)
    if name == "gin":
        return GINLayer(hidden_dim, hidden_dim, activation)
    if name == "gine":
        return GINELayer(hidden_dim, hidden_dim, activation)
    if name == "gat":
        return GATLayer(hidden_dim, hidden_dim, num_heads, edge_feats=hidden_dim)
    if name == "pna":
        return PNALayer(hidden_dim, hidden_dim, edge_feats=min(128, hidden_dim))
    if name == "genconv":
        return GENConvLayer(hidden_dim)
    return None


def build_attention(name: str, hidden_dim: int, num_heads: int, attn_dropout: float = 0.0,
                    performer_pad_keys: bool = False) -> Optional[nn.Module]:
    """The global attention branch called ``name`` (None for 'none'), (N, d) -> (N, d) per graph.

    ``performer``: performer_pytorch's ``SelfAttention(d, H, dropout=attn_dropout)`` as the reference
    builds it (:class:`~.performer.PerformerAttention`); ``performer_pad_keys`` counts its padding keys.
    """
    if name == "transformer":
        return GraphSelfAttention(hidden_dim, num_heads, attn_dropout)
    if name == "biased_transformer":  # reads the batch's Graphormer bias (biased_attention.ATTENTION_BIAS)
        return BiasedGraphSelfAttention(hidden_dim, num_heads, attn_dropout)
    if name == "performer":
        return PerformerAttention(hidden_dim, num_heads, attn_dropout, pad_keys=performer_pad_keys)
    if name == "none":
        return None
    raise ValueError(f"attention={name!r} is not one of {', '.join(ATTENTIONS)}")
