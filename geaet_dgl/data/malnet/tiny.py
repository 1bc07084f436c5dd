"""MalNet-Tiny: 5,000 function-call graphs of Android apps in 5 classes, from the raw files PyG's loader reads.

The files
---------
MalNet publishes ``malnet-graphs-tiny.tar.gz`` and ``split_info_tiny.zip``;
PyG's ``MalNetTiny(root)`` (and GraphGPS's copy of it, which its
``PyG-MalNetTiny`` configs use, with ``root = <dataset.dir>/MalNetTiny``)
unpack them into ``raw/``::

    data_dir/MalNetTiny/raw/malnet-graphs-tiny/<type>/<family>/<sha256>.edgelist
    data_dir/MalNetTiny/raw/split_info_tiny/type/{train,val,test}.txt

The five types are ``addisplay``, ``adware``, ``benign``, ``downloader`` and
``trojan`` (1,000 graphs each). An edge list has 5 header lines, then one
``src dst`` pair per line (a directed call). A split file lists
``<type>/<family>/<sha256>`` per line: 3,500 / 500 / 1,000 graphs (70/10/20
stratified by type). Nothing is downloaded: a missing folder is a one-line
error naming it and where it goes.

What a graph becomes (GraphGPS's ``MalNetTiny.process`` + ``LocalDegreeProfile``)
--------------------------------------------------------------------------------
* the label is the type's position in the sorted type list (addisplay 0 ...
  trojan 4), GraphGPS's order;
* isolated nodes (no edge but self-loops) are dropped and the others
  renumbered in order, as PyG's ``remove_isolated_nodes`` does: the calls
  between distinct functions in file order, then one self-loop per remaining
  node that had any;
* ``ndata['feat']`` (N, 5) float32: PyG's ``LocalDegreeProfile`` (the
  ``dataset.name: LocalDegreeProfile`` of the configs), see
  :func:`local_degree_profile`;
* ``edata['feat']`` (E, 1) zeros: there are no edge features (the configs'
  ``DummyEdge``: one learned vector, our ``constant`` encoder).

The graphs are parsed once and cached in ``MalNetTiny/processed/geaet_dgl.bin``
(keyed by the split files and the edge-list sizes); Laplacian PEs (the
unnormalised Laplacian, GraphGPS's ``malnettiny-*`` configs) in
``MalNetTiny/geaet_cache``.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
from pathlib import Path
from typing import Dict, List, Tuple, Union

import dgl
import numpy as np
import torch
from tqdm import tqdm

from ..dataset import DatasetSplits, GraphDataset
from ..encodings.apply import EncodingCache, EncodingPlan
from ..errors import DataError
from ..options import LoadOptions

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

FOLDER = "MalNetTiny"
TYPES = ("addisplay", "adware", "benign", "downloader", "trojan")
SPLITS = (("train", "train"), ("val", "val"), ("test", "test"))  # ours, the split file's
MALNET_TINY_SIZES = {"train": 3_500, "val": 500, "test": 1_000}
GRAPHS_URL = "http://malnet.cc.gatech.edu/graph-data/malnet-graphs-tiny.tar.gz"
SPLIT_URL = "http://malnet.cc.gatech.edu/split-info/split_info_tiny.zip"
HEADER_LINES = 5
CACHE_FORMAT = 1


def malnet_files(data_dir: PathLike) -> Dict[str, Path]:
    """``{'graphs': the edge-list folder, 'split': the split folder, 'processed': our cache}``."""
    root = Path(data_dir).expanduser() / FOLDER
    return {"graphs": root / "raw" / "malnet-graphs-tiny", "split": root / "raw" / "split_info_tiny" / "type",
            "processed": root / "processed" / "geaet_dgl.bin"}


def _where(data_dir: PathLike) -> str:
    raw = Path(data_dir) / FOLDER / "raw"
    return f"download {GRAPHS_URL} and {SPLIT_URL} and unpack both into {raw} (PyG's MalNetTiny layout)"


def missing_files(data_dir: PathLike) -> List[Path]:
    files = malnet_files(data_dir)
    needed = [files["split"] / f"{name}.txt" for _, name in SPLITS] + [files["graphs"] / t for t in TYPES]
    return [p for p in needed if not p.exists()]


def malnet_present(data_dir: PathLike) -> bool:
    return not missing_files(data_dir)


def local_degree_profile(src: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """PyG's ``LocalDegreeProfile`` (torch_geometric 2.5): (E,), (E,) edges -> (N, 5) float32.

    For node i with out-degree :math:`d_i` (edges with source i, self-loops and
    repeats counted) and the multiset :math:`DN(i) = \\{d_j : (i, j)\\}` of
    its out-neighbours' degrees: ``[d_i, min DN(i), max DN(i), mean DN(i),
    std DN(i)]``, all 0 when i has no out-edge. The standard deviation is
    PyG's ``StdAggregation``: :math:`\\sqrt{\\max(E[x^2] - E[x]^2, 10^{-5})}`,
    set to 0 where that is :math:`\\le \\sqrt{10^{-5}}` (the population
    standard deviation for any spread that is not tiny).
    """
    src, dst = src.long(), dst.long()
    ones = torch.ones(len(src))
    deg = torch.zeros(num_nodes).index_add_(0, src, ones)
    neighbour = deg[dst]
    count = deg.clamp(min=1)
    mean = torch.zeros(num_nodes).index_add_(0, src, neighbour) / count
    var = torch.zeros(num_nodes).index_add_(0, src, neighbour * neighbour) / count - mean * mean
    std = var.clamp(min=1e-5).sqrt()
    std = std.masked_fill(std <= math.sqrt(1e-5), 0.0)
    low = torch.zeros(num_nodes).scatter_reduce_(0, src, neighbour, "amin", include_self=False)
    high = torch.zeros(num_nodes).scatter_reduce_(0, src, neighbour, "amax", include_self=False)
    return torch.stack([deg, low, high, mean, std], dim=1)


def drop_isolated_nodes(src: np.ndarray, dst: np.ndarray) -> Tuple[np.ndarray, np.ndarray, int]:
    """PyG's ``remove_isolated_nodes`` on a directed edge list: -> (src, dst, num_nodes), nodes renumbered.

    A node is kept when an edge between two distinct nodes touches it; the kept
    nodes keep their order. The edges between distinct nodes come first, in
    their order, then one self-loop per kept node that has any, by node.
    """
    loop = src == dst
    nodes = int(max(src.max(), dst.max())) + 1 if len(src) else 0
    keep = np.zeros(nodes, dtype=bool)
    keep[src[~loop]] = True
    keep[dst[~loop]] = True
    new_id = np.full(nodes, -1, dtype=np.int64)
    new_id[keep] = np.arange(int(keep.sum()))
    looped = np.zeros(nodes, dtype=bool)
    looped[src[loop]] = True
    loop_nodes = np.flatnonzero(looped & keep)
    out_src = np.concatenate([new_id[src[~loop]], new_id[loop_nodes]])
    out_dst = np.concatenate([new_id[dst[~loop]], new_id[loop_nodes]])
    return out_src, out_dst, int(max(out_src.max(), out_dst.max())) + 1 if len(out_src) else 0


def read_edge_list(path: Path) -> Tuple[np.ndarray, np.ndarray]:
    """A MalNet ``.edgelist``: 5 header lines, then ``src dst`` per line -> (src, dst) int64."""
    try:
        with open(path) as handle:
            lines = handle.read().split("\n")[HEADER_LINES:]
        pairs = np.array([[int(v) for v in line.split()] for line in lines if line.strip()], dtype=np.int64)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is not a MalNet edge list (5 header lines, then 'src dst' per line): "
                        f"{type(exc).__name__}: {exc}") from exc
    if pairs.ndim != 2 or pairs.shape[0] == 0 or pairs.shape[1] != 2 or (pairs < 0).any():
        raise DataError(f"{path} holds no 'src dst' pairs of node ids after its 5 header lines; replace it with "
                        f"the published file ({GRAPHS_URL})")
    return pairs[:, 0], pairs[:, 1]


def _split_names(files: Dict[str, Path]) -> Dict[str, List[str]]:
    names = {}
    for ours, theirs in SPLITS:
        lines = (files["split"] / f"{theirs}.txt").read_text().split("\n")
        names[ours] = [line.strip() for line in lines if line.strip()]
    return names


def _stamp(files: Dict[str, Path], paths: List[Path]) -> str:
    digest = hashlib.sha256(str(CACHE_FORMAT).encode())
    for _, name in SPLITS:
        digest.update((files["split"] / f"{name}.txt").read_bytes())
    for path in paths:
        digest.update(f"{path.relative_to(files['graphs'])}:{path.stat().st_size}".encode())
    return digest.hexdigest()[:16]


def _build(files: Dict[str, Path], paths: List[Path], progress: bool) -> Tuple[List[dgl.DGLGraph], torch.Tensor]:
    graphs, labels = [], []
    for path in tqdm(paths, desc="MalNet-Tiny edge lists", disable=not progress, unit="graph"):
        src, dst, num_nodes = drop_isolated_nodes(*read_edge_list(path))
        if num_nodes == 0:
            raise DataError(f"{path} has no edge between two distinct functions; replace it with the published "
                            f"file ({GRAPHS_URL})")
        graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=num_nodes)
        graph.ndata["feat"] = local_degree_profile(graph.edges()[0], graph.edges()[1], num_nodes)
        graph.edata["feat"] = torch.zeros(graph.num_edges(), 1)
        graphs.append(graph)
        labels.append(TYPES.index(path.relative_to(files["graphs"]).parts[0]))
    return graphs, torch.tensor(labels, dtype=torch.int64)


def read_malnet_tiny(data_dir: PathLike, progress: bool = True):
    """Every graph (cached), its label, and the split: -> (graphs, labels (G,), {'train': idx, ...}, stamp)."""
    missing = missing_files(data_dir)
    if missing:
        raise DataError(f"malnet-tiny: {missing[0]} is missing; {_where(data_dir)}")
    files = malnet_files(data_dir)
    paths = sorted(p for t in TYPES for p in (files["graphs"] / t).glob("*/*.edgelist"))
    by_id = {p.stem: i for i, p in enumerate(paths)}
    names = _split_names(files)
    split = {}
    for part, entries in names.items():
        ids = [entry.split("/")[-1] for entry in entries]
        unknown = [entry for entry, graph_id in zip(entries, ids) if graph_id not in by_id]
        if unknown:
            raise DataError(f"malnet-tiny: {files['split'] / (part + '.txt')} names {unknown[0]}, which has no "
                            f"edge list under {files['graphs']}; {_where(data_dir)}")
        split[part] = torch.tensor([by_id[i] for i in ids], dtype=torch.int64)
    stamp = _stamp(files, paths)
    cache = files["processed"]
    graphs = None
    if cache.is_file():
        try:
            graphs, extra = dgl.load_graphs(str(cache))
            if extra.get("stamp") is None or bytes(extra["stamp"].tolist()).decode() != stamp:
                graphs = None
            else:
                labels = extra["labels"]
        except Exception as exc:  # a truncated cache: rebuilt below
            log.warning("malnet-tiny: %s is unreadable (%s); reading the edge lists again", cache, exc)
            graphs = None
    if graphs is None:
        graphs, labels = _build(files, paths, progress)
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp.bin")
        dgl.save_graphs(str(tmp), graphs, {"labels": labels,
                                            "stamp": torch.tensor(list(stamp.encode()), dtype=torch.uint8)})
        os.replace(tmp, cache)
    return graphs, labels, split, stamp


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "none"


def load_malnet_tiny(options: LoadOptions) -> DatasetSplits:
    """MalNet-Tiny's type split with LocalDegreeProfile features and Laplacian PE (and RWSE if ``rwse_k``).

    Parameters
    ----------
    options : LoadOptions
        ``data_dir``: holds ``MalNetTiny/raw/`` (see the module docstring). ``pe_k`` (default 0),
        ``rwse_k``, ``laplacian_norm`` (default ``'none'``): encodings (cached in
        ``MalNetTiny/geaet_cache``). ``limit_train``, ``limit_val``, ``limit_test``: the first N graphs of
        a split, in the split file's order.

    Returns
    -------
    DatasetSplits
        5 classes, labels (G,) int64.
    """
    graphs, labels, split, stamp = read_malnet_tiny(options.data_dir, options.progress)
    limits = options.limit_of
    root = malnet_files(options.data_dir)["processed"].parent.parent
    parts, caches = {}, {}
    for part, _ in SPLITS:
        idx = split[part] if limits[part] is None else split[part][:limits[part]]
        chosen = [graphs[i] for i in idx.tolist()]
        caches[part] = EncodingCache(root / "geaet_cache", part, stamp)
        parts[part] = GraphDataset(chosen, labels[idx])
    return DatasetSplits(train=parts["train"], val=parts["val"], test=parts["test"], num_classes=len(TYPES),
                         name="malnet-tiny", source=f"MalNet-Tiny edge lists in {root / 'raw'} (PyG's layout)",
                         encoding_plan=EncodingPlan(caches, default_norm=DEFAULT_LAPLACIAN_NORM))
