"""Layers: one per file (GEANet, the local MPNNs, self-attention, the GEAET layer)."""
from .batch_layout import BatchLayout
from .external_attention import GEANet, double_normalize
from .paper_geanet import PaperGEANet, build_geanet
from .gated_gcn import GatedGCNLayer, pe_square_distance
from .gcn import GCNLayer
from .branches import build_attention, build_mpnn
from .geaet_layer import GEAETLayer
from .gin import GINELayer, GINLayer
from .hetero_external_attention import HeteroGEANet
from .hetero_geaet_layer import HeteroGEAETLayer
from .hetero_mpnn import RelationMPNN
from .hetero_view import HeteroView
from .typed_gated_gcn import TypedGatedGCN
from .norm import BranchNorm, GraphLayerNorm
from .self_attention import GraphSelfAttention

__all__ = [
    "BatchLayout", "GEANet", "double_normalize", "GatedGCNLayer", "pe_square_distance", "GCNLayer", "GEAETLayer",
    "build_mpnn", "build_attention", "PaperGEANet", "build_geanet",
    "GINELayer", "GINLayer", "HeteroGEANet", "HeteroGEAETLayer", "RelationMPNN", "HeteroView",
    "TypedGatedGCN", "BranchNorm", "GraphLayerNorm", "GraphSelfAttention",
]
