"""Layers: one per file (GEANet, the local MPNNs, self-attention, the GEAET layer)."""
from .batch_layout import BatchLayout
from .external_attention import GEANet, PaperGEANet, build_geanet, double_normalize
from .gated_gcn import GatedGCNLayer, pe_square_distance
from .gcn import GCNLayer
from .branches import build_attention, build_mpnn
from .geaet_layer import GEAETLayer
from .gin import GINELayer, GINLayer
from .norm import BranchNorm, GraphLayerNorm
from .self_attention import GraphSelfAttention

__all__ = [
    "BatchLayout", "GEANet", "double_normalize", "GatedGCNLayer", "pe_square_distance", "GCNLayer", "GEAETLayer",
    "build_mpnn", "build_attention", "PaperGEANet", "build_geanet",
    "GINELayer", "GINLayer", "BranchNorm", "GraphLayerNorm", "GraphSelfAttention",
]
