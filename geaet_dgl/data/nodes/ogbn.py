"""``ogbn-arxiv`` and ``ogbn-products`` through OGB's own DGL loader, offline.

The files
---------
OGB publishes each dataset as a zip (``arxiv.zip``, ``products.zip``) holding
one folder (``arxiv/``, ``products/``) with ``RELEASE_v1.txt``, ``raw/``
(``edge.csv.gz``, ``num-node-list.csv.gz``, ``num-edge-list.csv.gz``,
``node-feat.csv.gz``, ``node-label.csv.gz``; arxiv also ``node_year.csv.gz``),
``split/<split>/{train,valid,test}.csv.gz`` (``time`` for arxiv,
``sales_ranking`` for products) and ``mapping/``. Unzip it into ``--data-dir``
and rename the folder to OGB's dataset folder name (``ogbn_arxiv``,
``ogbn_products``): that is where
``ogb.nodeproppred.DglNodePropPredDataset(name, root=data_dir)`` looks. It
processes ``raw/`` once into ``processed/dgl_data_processed`` and reads that
afterwards. Nothing is downloaded: a missing folder or file is a one-line
error saying where to put it (OGB itself would start a download, or wait for
an answer on stdin when the release marker is missing).

What the graph becomes
----------------------
One graph with ``ndata['feat']`` (float32: arxiv's 128-d word-embedding
averages, products' 100-d bag-of-words PCA), ``ndata['label']`` (int64) and the
masks ``train_mask`` / ``val_mask`` / ``test_mask`` from OGB's split indices: a
transductive node-classification task. ogbn-arxiv's citation edges are made
bidirected (every OGB leaderboard model reads it so; a citation says nothing
about direction for the topic of either paper); ogbn-products is stored with
both directions by OGB already.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Tuple, Union

import dgl
import torch

from ..errors import DataError
from ..library_output import quiet_ogb
from ..options import LoadOptions

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]


@dataclass(frozen=True)
class OgbnSpec:
    """One OGB node-property dataset: where its files are and what they hold."""

    name: str
    folder: str  # OGB's folder under root: the name with '_' for '-'
    archive: str  # the published zip and the folder inside it
    split: str  # OGB's default split folder
    num_nodes: int
    num_classes: int
    sizes: Tuple[int, int, int]  # train / valid / test nodes of the published split
    bidirect: bool  # add reverse edges (arxiv is stored one way)

    @property
    def url(self) -> str:
        return f"http://snap.stanford.edu/ogb/data/nodeproppred/{self.archive}.zip"


OGBN: Dict[str, OgbnSpec] = {
    "ogbn-arxiv": OgbnSpec("ogbn-arxiv", "ogbn_arxiv", "arxiv", "time", 169_343, 40, (90_941, 29_799, 48_603), True),
    "ogbn-products": OgbnSpec("ogbn-products", "ogbn_products", "products", "sales_ranking", 2_449_029, 47,
                              (196_615, 39_323, 2_213_091), False),
}
RAW_FILES = ("edge.csv.gz", "num-node-list.csv.gz", "num-edge-list.csv.gz", "node-feat.csv.gz", "node-label.csv.gz")
SPLIT_FILES = ("train.csv.gz", "valid.csv.gz", "test.csv.gz")
RELEASE = "RELEASE_v1.txt"
PROCESSED = Path("processed") / "dgl_data_processed"


def ogbn_root(name: str, data_dir: PathLike) -> Path:
    """The folder OGB reads ``name`` from: ``<data_dir>/ogbn_<name>`` (or OGB's ``..._dgl`` variant if present)."""
    spec = OGBN[name]
    dgl_variant = Path(data_dir) / f"{spec.folder}_dgl"
    return dgl_variant if dgl_variant.is_dir() else Path(data_dir) / spec.folder


def _where(spec: OgbnSpec, data_dir: PathLike) -> str:
    return (f"download {spec.url}, unzip it into {os.fspath(data_dir)} and rename {spec.archive}/ to "
            f"{spec.folder}/ (so that {Path(data_dir) / spec.folder / RELEASE} exists)")


def missing_files(name: str, data_dir: PathLike) -> list:
    """The files OGB needs for ``name`` that are not under ``data_dir`` (empty: ready to load)."""
    spec = OGBN[name]
    root = ogbn_root(name, data_dir)
    needed = [root / RELEASE] + [root / "split" / spec.split / f for f in SPLIT_FILES]
    if not (root / PROCESSED).is_file():
        needed += [root / "raw" / f for f in RAW_FILES]
        if spec.name == "ogbn-arxiv":
            needed.append(root / "raw" / "node_year.csv.gz")
    return [p for p in needed if not p.is_file()]


def ogbn_present(name: str, data_dir: PathLike) -> bool:
    """Whether every file OGB reads for ``name`` is under ``data_dir`` (contents not checked)."""
    return not missing_files(name, data_dir)


def _ogb_dataset(spec: OgbnSpec, data_dir: PathLike):
    with quiet_ogb():
        from ogb.nodeproppred import DglNodePropPredDataset

        return DglNodePropPredDataset(spec.name, root=os.fspath(data_dir))


def read_ogbn(name: str, data_dir: PathLike) -> Tuple[dgl.DGLGraph, int]:
    """Read ``name`` with OGB's loader into one graph with features, labels and split masks.

    Parameters
    ----------
    name : {'ogbn-arxiv', 'ogbn-products'}
    data_dir : path-like
        Holds OGB's folder (see the module docstring).

    Returns
    -------
    graph : dgl.DGLGraph
        ``ndata['feat']`` ``(N, F)`` float32, ``ndata['label']`` ``(N,)`` int64,
        ``ndata['train_mask'/'val_mask'/'test_mask']`` ``(N,)`` bool,
        ``edata['feat']`` ``(E, 1)`` zeros.
    num_classes : int
    """
    if name not in OGBN:
        raise DataError(f"unknown OGB node dataset {name!r}; choose one of {', '.join(OGBN)}")
    spec = OGBN[name]
    missing = missing_files(name, data_dir)
    if missing:
        raise DataError(f"{name}: {missing[0]} is missing; {_where(spec, data_dir)}")
    root = ogbn_root(name, data_dir)
    try:
        dataset = _ogb_dataset(spec, data_dir)
    except DataError:
        raise
    except Exception as exc:  # a truncated processed file: OGB rebuilds it from raw/ once removed
        processed = root / PROCESSED
        if processed.is_file() and all((root / "raw" / f).is_file() for f in RAW_FILES):
            log.warning("%s: %s is unreadable (%s); processing raw/ again", name, processed, exc)
            processed.unlink()
            dataset = _ogb_dataset(spec, data_dir)
        else:
            raise DataError(f"{name}: OGB could not read {root} ({type(exc).__name__}: {exc}); "
                            f"{_where(spec, data_dir)}") from exc
    graph, labels = dataset[0]
    split = dataset.get_idx_split()
    num_nodes = graph.num_nodes()
    labels = labels.reshape(-1).long()
    if len(labels) != num_nodes or "feat" not in graph.ndata:
        raise DataError(f"{name}: {root} holds {len(labels)} labels for {num_nodes} nodes or no node features; "
                        f"{_where(spec, data_dir)}")
    src, dst = graph.edges()
    if spec.bidirect:
        src, dst = torch.cat([src, dst]), torch.cat([dst, src])
    out = dgl.graph((src, dst), num_nodes=num_nodes)
    out.ndata["feat"] = graph.ndata["feat"].float()
    out.ndata["label"] = labels
    out.edata["feat"] = torch.zeros(out.num_edges(), 1)  # no edge features: one constant, as for graph files
    for ours, theirs in (("train", "train"), ("val", "valid"), ("test", "test")):
        index = split[theirs].long()
        if len(index) and (int(index.min()) < 0 or int(index.max()) >= num_nodes):
            raise DataError(f"{name}: split/{spec.split}/{theirs}.csv.gz names node {int(index.max())} of "
                            f"{num_nodes}; {_where(spec, data_dir)}")
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[index] = True
        out.ndata[f"{ours}_mask"] = mask
    num_classes = max(spec.num_classes, int(labels.max()) + 1)
    return out, num_classes


#: The Laplacian of this dataset's LapPE unless ``LoadOptions.laplacian_norm`` says otherwise (the reference config's;
#: :data:`~geaet_dgl.data.registry.LAPLACIAN_NORM` must agree: ``predict`` encodes new graphs with it).
DEFAULT_LAPLACIAN_NORM = "sym"


def load_ogbn(name: str, options: LoadOptions):
    """``name`` as a :class:`~.node_graph.NodeGraph`, its positional encodings cached beside OGB's folder.

    Parameters
    ----------
    name : {'ogbn-arxiv', 'ogbn-products'}
    options : LoadOptions
        ``data_dir``: OGB's root. ``pe_k`` (default 0), ``rwse_k``, ``laplacian_norm`` (default ``'sym'``):
        encodings the one path after the loader attaches (sparse above 2,048 nodes:
        :mod:`..encodings.sparse_encodings`), cached in
        ``<root>/geaet_cache``, keyed by the processed file's size and mtime. ``limit_train``,
        ``limit_val``, ``limit_test``: keep the first N nodes of a split's mask (the graph stays whole).
    """
    from .node_graph import NodeGraph, limit_masks
    from ..encodings.apply import EncodingCache, EncodingPlan, file_stamp

    graph, num_classes = read_ogbn(name, options.data_dir)
    limit_masks(graph, options.limit_of)
    root = ogbn_root(name, options.data_dir)
    stamp = file_stamp(root / PROCESSED)
    cache = root / "geaet_cache"
    data = NodeGraph(graph, "node-classification", num_classes, name=name,
                     source=f"OGB {name} read by ogb.nodeproppred.DglNodePropPredDataset from {root}",
                     cache_dir=cache, stamp=stamp)
    data.encoding_plan = EncodingPlan({"graph": EncodingCache(cache, name, stamp)}, default_norm=DEFAULT_LAPLACIAN_NORM)
    return data
