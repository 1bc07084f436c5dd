"""Compute per-split positional encodings once and cache them on disk, verified.

A cache file (``torch.save`` of plain tensors, written atomically) holds the
encodings of a list of graphs together with

* ``meta``: what was computed (PE sizes, Laplacian norm, a stamp of the
  graphs' source file), compared with what is asked for;
* ``num_nodes`` / ``num_edges`` per graph, compared with the graphs in memory;
* ``sha256`` over all stored tensors, recomputed on load.

A file that cannot be read, fails a check, or was truncated is logged and
recomputed, never used. A cache of the first ``n`` graphs also serves any
request for its first ``m <= n`` graphs.
"""

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import dgl
import numpy as np
import torch
from tqdm.auto import tqdm

from ...atomic import atomic_write
from ..errors import DataError
from .positional_encoding import DENSE_MAX_NODES, laplacian_pe_from_edges, random_walk_se_from_edges

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
CACHE_FORMAT = 1
CACHE_PREFIX = "geaet_pe_"
#: Where caches go when the folder beside the data cannot be written (default ~/.cache/geaet-dgl).
CACHE_ENV = "GEAET_DGL_CACHE"
#: float64 N x N matrices alive at once in a dense encoding (adjacency, Laplacian, eigenvectors, LAPACK work).
DENSE_MATRICES = 4


@dataclass
class SplitPE:
    """Encodings of ``G`` graphs with ``N = sum(num_nodes)`` nodes in total.

    Attributes
    ----------
    lap_pe : torch.Tensor
        ``(N, k)`` float32 Laplacian eigenvectors, graphs concatenated.
    lap_eigval : torch.Tensor
        ``(G, k)`` float32 eigenvalues per graph.
    num_nodes : torch.Tensor
        ``(G,)`` int64.
    num_edges : torch.Tensor
        ``(G,)`` int64.
    rwse : torch.Tensor or None
        ``(N, r)`` float32 random-walk landing probabilities, if asked for.
    """

    lap_pe: torch.Tensor
    lap_eigval: torch.Tensor
    num_nodes: torch.Tensor
    num_edges: torch.Tensor
    rwse: Optional[torch.Tensor] = None

    def tensors(self) -> Dict[str, torch.Tensor]:
        """The stored tensors by name, in a fixed order (``rwse`` only if present)."""
        out = {
            "lap_pe": self.lap_pe,
            "lap_eigval": self.lap_eigval,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
        }
        if self.rwse is not None:
            out["rwse"] = self.rwse
        return out

    def head(self, count: int) -> "SplitPE":
        """Encodings of the first ``count`` graphs."""
        n_nodes = int(self.num_nodes[:count].sum())
        return SplitPE(
            lap_pe=self.lap_pe[:n_nodes],
            lap_eigval=self.lap_eigval[:count],
            num_nodes=self.num_nodes[:count],
            num_edges=self.num_edges[:count],
            rwse=None if self.rwse is None else self.rwse[:n_nodes],
        )


def graph_counts(graphs: Sequence[dgl.DGLGraph]):
    """``(num_nodes (G,), num_edges (G,))`` int64 tensors of ``graphs``."""
    nodes = torch.tensor([g.num_nodes() for g in graphs], dtype=torch.int64)
    edges = torch.tensor([g.num_edges() for g in graphs], dtype=torch.int64)
    return nodes, edges


def user_cache_dir() -> Path:
    """``$GEAET_DGL_CACHE``, else ``$XDG_CACHE_HOME/geaet-dgl``, else ``~/.cache/geaet-dgl``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "geaet-dgl"


def writable_cache_dir(preferred: PathLike, key: str) -> Path:
    """``preferred`` if it can be created and written, else ``user_cache_dir() / key`` (logged).

    Raises a one-line DataError if neither can be written.
    """
    preferred = Path(preferred)
    fallback = user_cache_dir() / key
    for candidate in (preferred, fallback):
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=candidate):
                pass
        except OSError:
            continue
        if candidate != preferred:
            log.warning("cannot write the encoding cache to %s; using %s (set %s=DIR to choose)", preferred,
                        candidate, CACHE_ENV)
        return candidate
    raise DataError(f"cannot write the encoding cache to {preferred} (read-only?) nor to {fallback}; set "
                    f"{CACHE_ENV}=DIR to a writable folder")


def free_memory_bytes() -> Optional[int]:
    """Memory the system can still give (Linux ``MemAvailable``); ``None`` where unknown."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_dense_fits(num_nodes: int, index: int) -> None:
    """Raise a one-line DataError if a dense (N, N) encoding of graph ``index`` cannot fit in free memory."""
    need = DENSE_MATRICES * 8 * num_nodes * num_nodes
    free = free_memory_bytes()
    if free is not None and need > free:
        raise DataError(_too_large(num_nodes, index, need, free))


def _too_large(num_nodes: int, index: int, need: int, free: Optional[int]) -> str:
    have = f", more than the {free / 2**30:.1f} GiB free" if free is not None else ""
    return (f"graph {index} has {num_nodes} nodes: its dense positional encoding (N x N eigen-decomposition / random "
            f"walk) needs about {need / 2**30:.1f} GiB{have}; set model.pe=none for graphs this large, or split them")


def compute_split_pe(
    graphs: Sequence[dgl.DGLGraph], k: int, norm: str = "sym", rwse_k: Optional[int] = None, progress: bool = True
) -> SplitPE:
    """Laplacian PE (and optionally RWSE) of every graph.

    Parameters
    ----------
    graphs : sequence of dgl.DGLGraph
    k : int
        Laplacian eigenpairs per graph.
    norm : {'sym', 'none'}
    rwse_k : int, optional
        Random-walk steps; no RWSE if ``None``.
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    SplitPE
    """
    vecs: List[np.ndarray] = []
    vals: List[np.ndarray] = []
    walks: List[np.ndarray] = []
    for index, g in enumerate(tqdm(graphs, desc=f"Laplacian PE k={k} ({norm})", disable=not progress,
                                   unit="graph")):
        src, dst = (t.numpy() for t in g.edges())
        if (k or rwse_k is not None) and g.num_nodes() <= DENSE_MAX_NODES:  # larger graphs go the sparse route
            check_dense_fits(g.num_nodes(), index)
        try:
            v, lam = laplacian_pe_from_edges(src, dst, g.num_nodes(), k, norm)
            if rwse_k is not None:
                walks.append(random_walk_se_from_edges(src, dst, g.num_nodes(), rwse_k))
        except MemoryError as exc:
            if g.num_nodes() > DENSE_MAX_NODES:
                raise DataError(f"graph {index} ({g.num_nodes():,} nodes, {g.num_edges():,} edges): its sparse "
                                "positional encoding ran out of memory; set model.pe=none or free memory") from exc
            raise DataError(_too_large(g.num_nodes(), index, DENSE_MATRICES * 8 * g.num_nodes() ** 2,
                                       free_memory_bytes())) from exc
        vecs.append(v)
        vals.append(lam)
    num_nodes, num_edges = graph_counts(graphs)
    return SplitPE(
        lap_pe=torch.from_numpy(np.concatenate(vecs) if vecs else np.zeros((0, k), np.float32)),
        lap_eigval=torch.from_numpy(np.stack(vals) if vals else np.zeros((0, k), np.float32)),
        num_nodes=num_nodes,
        num_edges=num_edges,
        rwse=None
        if rwse_k is None
        else torch.from_numpy(np.concatenate(walks) if walks else np.zeros((0, rwse_k), np.float32)),
    )


def attach_pe(graphs: Sequence[dgl.DGLGraph], pe: SplitPE) -> None:
    """Store ``pe`` on the graphs in place.

    Sets ``ndata['lap_pe']`` ``(N_i, k)``, ``ndata['lap_eigval']`` ``(N_i, k)``
    (the graph's eigenvalues repeated per node) and, if present,
    ``ndata['rwse']`` ``(N_i, r)``.
    """
    sizes = pe.num_nodes.tolist()
    vec_parts = torch.split(pe.lap_pe, sizes)
    walk_parts = torch.split(pe.rwse, sizes) if pe.rwse is not None else None
    for i, g in enumerate(graphs):
        g.ndata["lap_pe"] = vec_parts[i]
        g.ndata["lap_eigval"] = pe.lap_eigval[i].unsqueeze(0).repeat(sizes[i], 1)
        if walk_parts is not None:
            g.ndata["rwse"] = walk_parts[i]


def _digest(tensors: Dict[str, torch.Tensor], meta: dict) -> str:
    sha = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for name, tensor in tensors.items():
        sha.update(name.encode())
        sha.update(str(tuple(tensor.shape)).encode())
        sha.update(tensor.contiguous().numpy().tobytes())
    return sha.hexdigest()


def save_tensor_cache(path: PathLike, tensors: Dict[str, torch.Tensor], meta: dict, count: int) -> None:
    """Write named ``tensors`` (of ``count`` graphs) with ``meta`` and a checksum to ``path`` atomically."""
    payload = {
        "format": CACHE_FORMAT,
        "meta": dict(meta),
        "count": int(count),
        "tensors": tensors,
        "sha256": _digest(tensors, meta),
    }
    with atomic_write(path) as handle:
        torch.save(payload, handle)


def load_tensor_cache(path: PathLike, meta: dict, what: str = "PE") -> Optional[Dict[str, torch.Tensor]]:
    """The tensors :func:`save_tensor_cache` wrote to ``path``; ``None`` if unusable.

    Unusable means: missing, unreadable or truncated, written for different
    ``meta``, or failing its checksum. Every case but "missing" is logged.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
        tensors = payload["tensors"]
        ok_format = payload["format"] == CACHE_FORMAT
        stored_meta = payload["meta"]
        checksum = payload["sha256"]
    except Exception as exc:  # any failure to read means "corrupt": recompute
        log.warning("%s cache %s is unreadable (%s: %s); recomputing", what, path, type(exc).__name__, exc)
        return None
    if not ok_format or stored_meta != meta:
        log.info("%s cache %s was built for other settings; recomputing", what, path)
        return None
    if _digest(tensors, stored_meta) != checksum:
        log.warning("%s cache %s fails its checksum (corrupt); recomputing", what, path)
        return None
    return tensors


def save_pe_cache(path: PathLike, pe: SplitPE, meta: dict) -> None:
    """Write ``pe`` with ``meta`` and a checksum to ``path`` atomically."""
    save_tensor_cache(path, pe.tensors(), meta, len(pe.num_nodes))


def load_pe_cache(path: PathLike, meta: dict) -> Optional[SplitPE]:
    """Read a cache written by :func:`save_pe_cache`; ``None`` if unusable (see :func:`load_tensor_cache`)."""
    tensors = load_tensor_cache(path, meta)
    return None if tensors is None else SplitPE(**tensors)


def cache_path(cache_dir: PathLike, tag: str, count: int, meta: dict) -> Path:
    """File name for ``count`` graphs of ``tag`` under the settings in ``meta``."""
    rw = f"_rw{meta['rwse_k']}" if meta.get("rwse_k") is not None else ""
    return Path(cache_dir) / f"{CACHE_PREFIX}{tag}_n{count}_k{meta['k']}_{meta['norm']}{rw}.pt"


def _candidates(cache_dir: Path, tag: str, count: int, meta: dict) -> List[Path]:
    """Existing caches for ``tag``/settings holding >= ``count`` graphs, smallest first."""
    exact = cache_path(cache_dir, tag, count, meta)
    pattern = re.compile(re.escape(exact.name).replace(f"_n{count}_", r"_n(\d+)_") + "$")
    found = []
    if cache_dir.is_dir():
        for entry in cache_dir.iterdir():
            match = pattern.match(entry.name)
            if match and int(match.group(1)) >= count:
                found.append((int(match.group(1)), entry))
    return [p for _, p in sorted(found)]


def _meta(k: int, norm: str, rwse_k: Optional[int], tag: str, stamp: str) -> dict:
    return {"k": int(k), "norm": norm, "rwse_k": None if rwse_k is None else int(rwse_k), "tag": tag, "stamp": stamp}


def has_cached_pe(cache_dir: PathLike, tag: str, count: int, k: int, norm: str = "sym",
                  rwse_k: Optional[int] = None, stamp: str = "") -> bool:
    """Whether :func:`cached_split_pe` would find a cache file for ``count`` graphs of ``tag`` (not yet verified).

    Always true when nothing is to be computed (``k = 0`` and no ``rwse_k``).
    """
    if not k and rwse_k is None:
        return True
    return bool(_candidates(Path(cache_dir), tag, count, _meta(k, norm, rwse_k, tag, stamp)))


def cached_split_pe(
    graphs: Sequence[dgl.DGLGraph],
    cache_dir: PathLike,
    tag: str,
    k: int,
    norm: str = "sym",
    rwse_k: Optional[int] = None,
    stamp: str = "",
    progress: bool = True,
) -> SplitPE:
    """Encodings of ``graphs``: from a verified cache if possible, else computed and cached.

    Parameters
    ----------
    graphs : sequence of dgl.DGLGraph
        The graphs, in a fixed order (the first ``len(graphs)`` of ``tag``).
    cache_dir : path-like
        Folder of the cache files.
    tag : str
        Names the graph sequence, e.g. ``"train_from5000"``.
    k, norm, rwse_k : see :func:`compute_split_pe`; with ``k = 0`` and no ``rwse_k`` nothing is
        computed or cached.
    stamp : str
        Identifies the source of ``graphs`` (e.g. size and mtime of the
        processed dataset file); a cache with another stamp is not used.
    progress : bool
        Show a bar while computing.

    Returns
    -------
    SplitPE
        Exactly ``len(graphs)`` graphs' encodings.
    """
    if not k and rwse_k is None:  # nothing to compute: empty (N, 0) fields, no cache file
        return compute_split_pe(graphs, 0, norm, None, progress=False)
    cache_dir = Path(cache_dir)
    meta = _meta(k, norm, rwse_k, tag, stamp)
    count = len(graphs)
    num_nodes, num_edges = graph_counts(graphs)
    for candidate in _candidates(cache_dir, tag, count, meta):
        pe = load_pe_cache(candidate, meta)
        if pe is None:
            continue
        pe = pe.head(count)
        if torch.equal(pe.num_nodes, num_nodes) and torch.equal(pe.num_edges, num_edges):
            log.info("PE for %d %s graphs read from cache %s", count, tag, candidate)
            return pe
        log.warning("PE cache %s does not match the graphs' sizes; recomputing", candidate)
    pe = compute_split_pe(graphs, k, norm, rwse_k, progress)
    target = cache_path(cache_dir, tag, count, meta)
    save_pe_cache(target, pe, meta)
    log.info("PE for %d %s graphs cached in %s", count, tag, target)
    return pe


def remove_pe_caches(cache_dir: PathLike, tag_prefixes: Sequence[str] = ("",)) -> None:
    """Delete the PE cache files in ``cache_dir`` whose tag starts with one of ``tag_prefixes``.

    Called after graphs were rebuilt; the default deletes every cache. Datasets
    sharing a folder pass their own tag prefixes (e.g. ``("train_from",
    "test_from")``) to keep the others' caches.
    """
    cache_dir = Path(cache_dir)
    if cache_dir.is_dir():
        for prefix in tag_prefixes:
            for entry in cache_dir.glob(f"{CACHE_PREFIX}{prefix}*.pt"):
                entry.unlink(missing_ok=True)
