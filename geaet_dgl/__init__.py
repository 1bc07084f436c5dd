"""geaet-dgl: GEAET (Graph External Attention Enhanced Transformer) in DGL."""
__version__ = "0.1.0"
