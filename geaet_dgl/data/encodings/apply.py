"""The one path by which a loader's graphs get their LapPE / RWSE: :func:`encode_graphs`.

Like DGL's transforms (``dgl.transforms.LapPE``, ``RandomWalkPE``) the
encodings are a step applied to graphs a loader has built: an
:class:`EncodingRequest` says what (eigenpairs, Laplacian, random-walk steps;
from :meth:`~geaet_dgl.data.options.LoadOptions.encodings`), an
:class:`EncodingCache` says where a split's encodings are cached (the loader
knows its files; the file names and keys are :mod:`.pe_cache`'s, so caches
written before this module existed still hit).

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
from typing import Optional, Sequence

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
