"""Models: encoders, positional encodings, the encoder stage, heads and the GEAET network."""
from .encoders import ConstantEncoder, LinearEncoder, TypeEmbeddingEncoder, build_encoder
from .build import build_model
from .encoder_stage import Encoded, EncoderStage, HeteroEncoderStage
from .geaet import GEAET
from .hetero_geaet import HeteroGEAET
from .heads import GraphHead, NodeHead, pool_nodes
from .positional import EquivStableLapPEEncoder, LapPEDeepSetEncoder, RWSEEncoder

__all__ = [
    "ConstantEncoder", "LinearEncoder", "TypeEmbeddingEncoder", "build_encoder", "Encoded", "EncoderStage",
    "HeteroEncoderStage", "GEAET", "HeteroGEAET", "build_model",
    "GraphHead", "NodeHead", "pool_nodes", "EquivStableLapPEEncoder", "LapPEDeepSetEncoder", "RWSEEncoder",
]
