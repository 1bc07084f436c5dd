"""MalNet (Freitas et al.): function-call graphs of Android apps.

:mod:`.tiny`
    MalNet-Tiny (5,000 graphs, 5 classes; GraphGPS's ``PyG-MalNetTiny``): the raw
    edge lists and split files PyG's ``MalNetTiny`` reads, from
    ``data_dir/MalNetTiny/raw/``; LocalDegreeProfile node features. Nothing
    downloads: a missing folder is a one-line error naming it and where it goes.
"""

from .tiny import load_malnet_tiny

__all__ = ["load_malnet_tiny"]
