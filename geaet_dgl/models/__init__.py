"""Models: encoders, positional encodings, heads and the GEAET network."""
from .encoders import ConstantEncoder, LinearEncoder, TypeEmbeddingEncoder, build_encoder
from .geaet import GEAET, build_model
from .heads import GraphHead, NodeHead, pool_nodes
from .positional import EquivStableLapPEEncoder, LapPEDeepSetEncoder, RWSEEncoder

__all__ = [
    "ConstantEncoder", "LinearEncoder", "TypeEmbeddingEncoder", "build_encoder", "GEAET", "build_model",
    "GraphHead", "NodeHead", "pool_nodes", "EquivStableLapPEEncoder", "LapPEDeepSetEncoder", "RWSEEncoder",
]
