"""HKdiagSE, ElstaticSE and Graphormer's spatial types / degrees: computed once per split, cached, attached.

A dataset transform applied after loading (:func:`attach_structural`): the
encodings of a list of graphs are read from a verified cache file
(:func:`~.pe_cache.save_tensor_cache`) named by a digest of the graphs' edges
and the settings, or computed (:mod:`.structural_encoding`) and cached. They are
stored on the graphs as

* ``ndata['hkdiag_se']`` ``(N_i, K)`` float32;
* ``ndata['elstatic_se']`` ``(N_i, 10)`` float32;
* ``ndata['spatial_types']`` ``(N_i, W)`` uint8: row ``i`` holds the spatial
  types from node ``i`` to the nodes ``0..N_i-1`` of its graph, padded to the
  split's largest graph ``W`` with 255;
* ``ndata['path_types']`` ``(N_i, W, S)`` uint8: the edge types along the shortest path from node
  ``i`` to each node of its graph (read from ``edata['feat'][:, 0]``), Graphormer's path encoding;
* ``ndata['in_degree']``, ``ndata['out_degree']`` ``(N_i,)`` int64.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import dgl
import numpy as np
import torch
from tqdm.auto import tqdm

from .pe_cache import PathLike, load_tensor_cache, save_tensor_cache
from .structural_encoding import (ELSTATIC_DIM, electrostatic_se_from_edges, graphormer_degrees,
                                  heat_kernel_diag_from_edges, path_edge_types_from_edges, spatial_types_from_edges)

log = logging.getLogger(__name__)

SE_CACHE_PREFIX = "geaet_se_"
#: Padding of ``ndata['spatial_types']`` past a graph's own nodes.
SPATIAL_PAD = 255


@dataclass(frozen=True)
class StructuralSpec:
    """Which structural encodings the model reads.

    Attributes
    ----------
    hk_times : tuple of float
        HKdiagSE diffusion times; empty: none.
    elstatic : bool
        ElstaticSE.
    spatial_types : int
        Graphormer's ``num_spatial_types`` ``S``; 0: no spatial types.
    degrees : bool
        Graphormer's in/out degrees.
    path_types : bool
        Graphormer's edge types along shortest paths (needs ``spatial_types``).
    """

    hk_times: Tuple[float, ...] = ()
    elstatic: bool = False
    spatial_types: int = 0
    degrees: bool = False
    path_types: bool = False

    def __bool__(self) -> bool:
        return bool(self.hk_times or self.elstatic or self.spatial_types or self.degrees)


def compute_structural(graphs: Sequence[dgl.DGLGraph], spec: StructuralSpec,
                       progress: bool = False) -> Dict[str, torch.Tensor]:
    """The encodings of ``spec`` for every graph, nodes of all graphs concatenated (see the module docstring)."""
    parts: Dict[str, list] = {}
    width = max((g.num_nodes() for g in graphs), default=0)
    for g in tqdm(graphs, desc="structural encodings", disable=not progress, unit="graph"):
        src, dst = (t.cpu().numpy().astype(np.int64) for t in g.edges())
        n = g.num_nodes()
        if spec.hk_times:
            parts.setdefault("hkdiag_se", []).append(heat_kernel_diag_from_edges(src, dst, n, spec.hk_times))
        if spec.elstatic:
            parts.setdefault("elstatic_se", []).append(electrostatic_se_from_edges(src, dst, n))
        if spec.spatial_types:
            types = np.full((n, width), SPATIAL_PAD, dtype=np.uint8)
            types[:, :n] = spatial_types_from_edges(src, dst, n, spec.spatial_types)
            parts.setdefault("spatial_types", []).append(types)
        if spec.path_types:
            if "feat" not in g.edata:
                raise ValueError("Graphormer's path encoding reads integer edge types from edata['feat']; the "
                                 "graphs have none")
            paths = np.zeros((n, width, spec.spatial_types), dtype=np.uint8)
            feat = g.edata["feat"]  # (E,) or (E, F); a graph without edges too
            edge_types = (feat if feat.dim() > 1 else feat.unsqueeze(1))[:, 0].long().cpu().numpy()
            paths[:, :n] = path_edge_types_from_edges(src, dst, edge_types, n, spec.spatial_types)
            parts.setdefault("path_types", []).append(paths)
        if spec.degrees:
            in_deg, out_deg = graphormer_degrees(src, dst, n)
            parts.setdefault("in_degree", []).append(in_deg)
            parts.setdefault("out_degree", []).append(out_deg)
    empty = {"hkdiag_se": (len(spec.hk_times),), "elstatic_se": (ELSTATIC_DIM,), "spatial_types": (width,),
             "path_types": (width, spec.spatial_types), "in_degree": (), "out_degree": ()}
    return {name: torch.from_numpy(np.concatenate(arrays)) if arrays else torch.zeros((0,) + empty[name])
            for name, arrays in parts.items()}


def _graphs_digest(graphs: Sequence[dgl.DGLGraph], spec: StructuralSpec) -> str:
    sha = hashlib.sha256(json.dumps(asdict(spec), sort_keys=True).encode())
    for g in graphs:
        src, dst = g.edges()
        sha.update(np.int64(g.num_nodes()).tobytes())
        sha.update(src.numpy().astype(np.int64).tobytes())
        sha.update(dst.numpy().astype(np.int64).tobytes())
        if spec.path_types:  # the path encoding also reads the edge types
            sha.update(g.edata["feat"].reshape(g.num_edges(), -1)[:, 0].long().numpy().tobytes())
    return sha.hexdigest()


def cached_structural(graphs: Sequence[dgl.DGLGraph], spec: StructuralSpec, cache_dir: Optional[PathLike],
                      progress: bool = False) -> Dict[str, torch.Tensor]:
    """:func:`compute_structural` through a cache in ``cache_dir`` (``None``: no cache).

    The file name is a digest of the graphs' node counts and edges and of
    ``spec``, so a cache is used only for exactly these graphs; a corrupt or
    mismatching file is logged and recomputed.
    """
    if cache_dir is None:
        return compute_structural(graphs, spec, progress)
    digest = _graphs_digest(graphs, spec)
    meta = {"spec": json.dumps(asdict(spec), sort_keys=True), "digest": digest, "count": len(graphs)}
    path = Path(cache_dir) / f"{SE_CACHE_PREFIX}{digest[:24]}.pt"
    tensors = load_tensor_cache(path, meta, what="structural encoding")
    if tensors is not None:
        log.info("structural encodings of %d graphs read from cache %s", len(graphs), path)
        return tensors
    tensors = compute_structural(graphs, spec, progress)
    save_tensor_cache(path, tensors, meta, len(graphs))
    log.info("structural encodings of %d graphs cached in %s", len(graphs), path)
    return tensors


def attach_structural(graphs: Sequence[dgl.DGLGraph], spec: StructuralSpec, cache_dir: Optional[PathLike] = None,
                      progress: bool = False) -> None:
    """Compute (or read from the cache) the encodings of ``spec`` and store them on ``graphs`` in place."""
    if not spec or not len(graphs):
        return
    tensors = cached_structural(graphs, spec, cache_dir, progress)
    sizes = [g.num_nodes() for g in graphs]
    for name, tensor in tensors.items():
        for g, part in zip(graphs, torch.split(tensor, sizes)):
            g.ndata[name] = part
