"""The one path by which a loader's graphs get their LapPE / RWSE: :func:`encode_splits`.

Like DGL's transforms (``dgl.transforms.LapPE``, ``RandomWalkPE``) the
encodings are a step applied to the graphs a loader has built, after the
loader: loaders return their splits without encodings and with an
:class:`EncodingPlan` (``splits.encoding_plan``): where each split's
encodings are cached (the loader knows its files) and the dataset's defaults.
:func:`encode_splits` (called by :func:`~geaet_dgl.data.registry.load_with`)
builds the :class:`EncodingRequest` from the :class:`~geaet_dgl.data.options.LoadOptions`
(eigenpairs, Laplacian, random-walk steps) and applies it split by split with
:func:`encode_graphs`; an :class:`EncodingCache` names a split's cache (the
file names and keys are :mod:`.pe_cache`'s, so caches written before this
module existed still hit).

Example
-------
>>> import dgl
>>> graphs = [dgl.graph(([0, 1, 2], [1, 2, 0]))]
>>> encode_graphs(graphs, EncodingRequest(k=2, progress=False))
>>> tuple(graphs[0].ndata['lap_pe'].shape)
(3, 2)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import dgl

from .pe_cache import PathLike, attach_pe, cached_split_pe, compute_split_pe


@dataclass(frozen=True)
class EncodingRequest:
    """The positional encodings graphs must carry.

    Attributes
    ----------
    k : int
        Laplacian eigenpairs per graph (``ndata['lap_pe']`` / ``['lap_eigval']`` ``(N, k)``); 0: empty ``(N, 0)``.
    norm : {'sym', 'none'}
        The Laplacian they come from.
    rwse_k : int, optional
        Random-walk steps (``ndata['rwse']`` ``(N, rwse_k)``); ``None``: no RWSE.
    progress : bool
        A bar while computing.
    """

    k: int = 0
    norm: str = "sym"
    rwse_k: Optional[int] = None
    progress: bool = True

    def __bool__(self) -> bool:
        """Whether anything is to be computed (a cache is needed)."""
        return bool(self.k) or self.rwse_k is not None


@dataclass(frozen=True)
class EncodingCache:
    """Where one split's encodings are cached: ``folder``, the split's ``tag`` and the ``stamp`` of its source."""

    folder: PathLike
    tag: str
    stamp: str = ""


def file_stamp(path: PathLike) -> str:
    """``'size:mtime_ns'`` of ``path``: the stamp a cache of graphs read from that file is keyed by."""
    stat = Path(path).stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def beside(path: PathLike, tag: str) -> EncodingCache:
    """The cache of graphs read from the file ``path``: ``geaet_cache/`` in its folder, stamped by the file."""
    return EncodingCache(Path(os.fspath(path)).parent / "geaet_cache", tag, file_stamp(path))


def encode_graphs(graphs: Sequence[dgl.DGLGraph], request: EncodingRequest,
                  cache: Optional[EncodingCache] = None) -> None:
    """Store the encodings ``request`` asks for on ``graphs`` in place, read from ``cache`` or computed there.

    ``cache=None`` computes without caching. Sets ``ndata['lap_pe']`` ``(N_i, k)``, ``ndata['lap_eigval']``
    ``(N_i, k)`` and, with ``rwse_k``, ``ndata['rwse']`` ``(N_i, rwse_k)`` (float32), as
    :func:`~.pe_cache.attach_pe`.
    """
    if cache is None:
        pe = compute_split_pe(graphs, request.k, request.norm, request.rwse_k, request.progress and bool(request))
    else:
        pe = cached_split_pe(graphs, cache.folder, tag=cache.tag, k=request.k, norm=request.norm,
                             rwse_k=request.rwse_k, stamp=cache.stamp, progress=request.progress)
    attach_pe(graphs, pe)


@dataclass(frozen=True)
class EncodingPlan:
    """How :func:`encode_splits` encodes a loader's splits: set by the loader as ``splits.encoding_plan``.

    Attributes
    ----------
    caches : dict
        ``{part: EncodingCache or None}`` in the order the parts are encoded: ``'train'`` / ``'val'`` /
        ``'test'`` of a :class:`~geaet_dgl.data.dataset.DatasetSplits`, ``'graph'`` for the one graph of a
        :class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`; ``None``: computed, not cached.
    default_k : int, optional
        The dataset's eigenpairs where ``LoadOptions.pe_k`` is ``None`` (``None`` counts as 0).
    default_norm : {'sym', 'none'}
        The dataset's Laplacian where ``LoadOptions.laplacian_norm`` is ``None``.
    only_if_asked : bool
        Attach nothing (not even an empty ``lap_pe``) unless eigenpairs or RWSE are asked for (VOC / COCO).
    progress : bool
        ``False``: no progress bar whatever the options say (generated graphs).
    structure : callable, optional
        Graphs that share one structure (``tree``): ``structure(options) -> {ndata key: (N, d) tensor}``,
        computed once and given to every graph of every part (the same tensors), instead of a request.
    """

    caches: Dict[str, Optional[EncodingCache]]
    default_k: Optional[int] = 0
    default_norm: str = "sym"
    only_if_asked: bool = False
    progress: bool = True
    structure: Optional[Callable[[Any], Dict[str, Any]]] = None


def _part_graphs(splits: Any, part: str) -> List[dgl.DGLGraph]:
    """The graphs of ``part`` (``'graph'``: a NodeGraph's one graph)."""
    return [splits.graph] if part == "graph" else getattr(splits, part).graphs


def encode_splits(splits: Any, options: Any) -> Any:
    """Attach the encodings ``options`` ask for to ``splits`` as their ``encoding_plan`` says; ``splits`` back.

    ``options`` is a :class:`~geaet_dgl.data.options.LoadOptions`. Splits without a plan (``None``: heterographs,
    which take no positional encoding) are returned as they are.
    """
    plan = getattr(splits, "encoding_plan", None)
    if plan is None:
        return splits
    if plan.structure is not None:  # one structure: its encodings once, shared by every graph
        shared = plan.structure(options)
        for part in plan.caches:
            for graph in _part_graphs(splits, part):
                graph.ndata.update(shared)
        return splits
    request = options.encodings(default_k=plan.default_k, default_norm=plan.default_norm)
    if not plan.progress:
        request = EncodingRequest(k=request.k, norm=request.norm, rwse_k=request.rwse_k, progress=False)
    if plan.only_if_asked and not request:
        return splits
    for part, cache in plan.caches.items():
        encode_graphs(_part_graphs(splits, part), request, cache)
    return splits
