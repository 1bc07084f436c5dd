"""DGL graphs as the npz file ``examples/predict_exported.py`` reads (the exported models' input format on disk).

==============  ==============  ===========================================================
``num_nodes``   (G,)            nodes of each graph
``num_edges``   (G,)            edges of each graph
``x``           (sum N, F)      ``ndata['feat']`` of the graphs, stacked
``edge_index``  (2, sum E)      each graph's edges with node ids local to the graph
``edge_attr``   (sum E, F_e)    ``edata['feat']``, stacked (where the graphs carry it)
==============  ==============  ===========================================================

The features are written as the graphs hold them; give the graphs as a graph file stores them (before any
input transform: the exported model applies the run's).
"""
from __future__ import annotations

import os
from typing import Sequence, Union

import dgl
import numpy as np

from ..atomic import atomic_write

PathLike = Union[str, os.PathLike]


def write_graphs_npz(graphs: Sequence[dgl.DGLGraph], path: PathLike) -> None:
    """Write ``graphs`` to ``path`` in the npz layout above (atomically)."""
    edges = [g.edges() for g in graphs]
    arrays = {
        "num_nodes": np.array([g.num_nodes() for g in graphs], dtype=np.int64),
        "num_edges": np.array([g.num_edges() for g in graphs], dtype=np.int64),
        "x": np.concatenate([_rows(g.ndata["feat"]) for g in graphs]),
        "edge_index": np.stack([np.concatenate([src.numpy() for src, _ in edges]),
                                np.concatenate([dst.numpy() for _, dst in edges])]).astype(np.int64),
    }
    if all("feat" in g.edata for g in graphs):
        arrays["edge_attr"] = np.concatenate([_rows(g.edata["feat"]) for g in graphs])
    with atomic_write(path, "wb") as handle:
        np.savez(handle, **arrays)


def _rows(feat) -> np.ndarray:
    """(M, ...) features as an (M, F) array (M may be 0)."""
    array = feat.numpy()
    return array.reshape(array.shape[0], int(np.prod(array.shape[1:], dtype=np.int64)))
