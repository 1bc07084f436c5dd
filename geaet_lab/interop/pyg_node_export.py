"""Our geom-gcn node sets (Actor, WebKB, WikipediaNetwork) as the raw files PyG's own loaders read.

The reference (icm1018/GEAET, on GraphGPS) loads its node configurations
(``dataset.format: PyG-Actor``, ``PyG-WebKB`` with ``name: cornell|texas|wisconsin``,
``PyG-WikipediaNetwork`` with ``name: chameleon|squirrel``) through
``torch_geometric.datasets.Actor`` / ``WebKB`` / ``WikipediaNetwork(geom_gcn_preprocess=True)``
under ``dataset.dir/<Actor|WebKB|WikipediaNetwork>``. Each reads geom-gcn's three kinds of files
from its raw folder (:func:`raw_dir`):

- ``out1_node_feature_label.txt``: a header line, then ``id<TAB>features<TAB>label``; Actor's
  features are the ids of the nonzero columns (PyG sets those to 1 and sizes the matrix by the
  largest id), the others' the comma-separated values of every column;
- ``out1_graph_edges.txt``: a header line, then ``src<TAB>dst`` per edge (PyG coalesces them:
  sorted, duplicates dropped; it adds no reverse edges);
- ``<stem>_split_0.6_0.2_<k>.npz`` for k in 0..9: ``train_mask`` / ``val_mask`` / ``test_mask``
  ``(N,)`` (Actor's stem is ``film``, the others' their name).

We write them from the graph *we* train on (:func:`geaet_dgl.data.nodes.node_sets.node_set_graph`:
DGL's loader, then made bidirected), so the reference's PyG processing runs on exactly our nodes,
features, labels, edges (both directions, as we train on them; geom-gcn's own files list most edges
one way, which PyG keeps directed) and split masks (all of DGL's ``(N, S)`` columns, the chosen
``--split-index`` among them). Only numpy and torch are used; PyG is never imported here.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import dgl
import numpy as np
import torch

from geaet_dgl.atomic import atomic_write
from geaet_dgl.data import DataError

PathLike = Union[str, os.PathLike]

#: Written beside the raw files: a digest of their content, to reuse or replace them (and PyG's processed files).
SOURCE_FILE = "geaet_dgl_source.json"
FEATURES_FILE = "out1_node_feature_label.txt"
EDGES_FILE = "out1_graph_edges.txt"


@dataclass(frozen=True)
class PygNodeFormat:
    """Where PyG's loader of one node set reads: ``dataset.format`` ``PyG-<folder>``, ``dataset.name``."""

    folder: str  # Actor, WebKB or WikipediaNetwork (the master loader's subfolder of dataset.dir)
    pyg_name: str  # the config's dataset.name ('none' for Actor)
    split_stem: str  # <stem>_split_0.6_0.2_<k>.npz
    sparse_features: bool  # Actor: the ids of the nonzero columns

    def raw_subdir(self) -> Path:
        if self.folder == "Actor":
            return Path("Actor") / "raw"
        if self.folder == "WebKB":
            return Path("WebKB") / self.pyg_name / "raw"
        return Path("WikipediaNetwork") / self.pyg_name / "geom_gcn" / "raw"


#: Our node set -> PyG's loader of it in the reference's master loader.
PYG_NODE_FORMATS: Dict[str, PygNodeFormat] = {
    "actor": PygNodeFormat("Actor", "none", "film", True),
    **{name: PygNodeFormat("WebKB", name, name, False) for name in ("cornell", "texas", "wisconsin")},
    **{name: PygNodeFormat("WikipediaNetwork", name, name, False) for name in ("chameleon", "squirrel")},
}


def node_set_of_config(dataset_format: str, dataset_name: str) -> Optional[str]:
    """Our node set for a config's ``dataset.format`` / ``dataset.name`` (``PyG-Actor`` / ``none`` -> ``actor``),
    or None when it is not one PyG reads from geom-gcn files."""
    if not str(dataset_format).startswith("PyG-"):
        return None
    folder = str(dataset_format)[len("PyG-"):]
    for name, fmt in PYG_NODE_FORMATS.items():
        if fmt.folder == folder and (folder == "Actor" or fmt.pyg_name == str(dataset_name).lower()):
            return name
    return None


def raw_dir(root: PathLike, name: str) -> Path:
    """The raw folder PyG's loader of ``name`` reads under the reference's ``dataset.dir`` ``root``."""
    return Path(root) / _format(name).raw_subdir()


def split_file(name: str, k: int) -> str:
    return f"{_format(name).split_stem}_split_0.6_0.2_{k}.npz"


def _format(name: str) -> PygNodeFormat:
    if name not in PYG_NODE_FORMATS:
        raise DataError(f"node set {name!r} has no geom-gcn loader in PyG; choose one of "
                        f"{', '.join(PYG_NODE_FORMATS)}")
    return PYG_NODE_FORMATS[name]


def feature_lines(feat: torch.Tensor, label: torch.Tensor, sparse: bool) -> str:
    """``out1_node_feature_label.txt``: header, then one ``id<TAB>features<TAB>label`` line per node, in id order.

    ``sparse`` (Actor): the ids of the nonzero columns; every feature must be 0 or 1, every node have one,
    and the last column be used by some node (PyG sizes the matrix by the largest id). Otherwise every
    value, printed with 9 significant digits (float32 read back exactly).
    """
    feat = feat.float()
    lines = []
    if sparse:
        if not bool(((feat == 0) | (feat == 1)).all()):
            raise DataError("Actor's file format holds 0/1 features only (the ids of the nonzero columns); these "
                            "features have other values")
        nonzero = feat != 0
        empty = torch.nonzero(~nonzero.any(1)).flatten()
        if len(empty):
            raise DataError(f"node {int(empty[0])} has no nonzero feature; Actor's file format (PyG's reader) needs "
                            "at least one per node")
        if not bool(nonzero[:, -1].any()):
            raise DataError(f"no node uses feature column {feat.shape[1] - 1}; PyG's Actor reader sizes the features "
                            "by the largest id, so the reference would read fewer columns")
        lines.append(f"node_id\tfeature(feature_amount:{feat.shape[1]})\tlabel")
        for i, (row, y) in enumerate(zip(nonzero, label.tolist())):
            lines.append(f"{i}\t{','.join(str(c) for c in torch.nonzero(row).flatten().tolist())}\t{y}")
    else:
        lines.append("node_id\tfeature\tlabel")
        for i, (row, y) in enumerate(zip(feat.tolist(), label.tolist())):
            lines.append(f"{i}\t{','.join(f'{v:.9g}' for v in row)}\t{y}")
    return "\n".join(lines) + "\n"  # PyG drops the header and the empty string after the last newline


def edge_lines(graph: dgl.DGLGraph) -> str:
    """``out1_graph_edges.txt``: header, then every edge of ``graph`` as ``src<TAB>dst``, in DGL's order."""
    src, dst = graph.edges()
    return "node_id\tnode_id\n" + "".join(f"{a}\t{b}\n" for a, b in zip(src.tolist(), dst.tolist()))


def _npz_bytes(train: torch.Tensor, val: torch.Tensor, test: torch.Tensor) -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, train_mask=train.numpy().astype(np.uint8), val_mask=val.numpy().astype(np.uint8),
             test_mask=test.numpy().astype(np.uint8))
    return buffer.getvalue()


def write_geom_gcn(graph: dgl.DGLGraph, masks: Dict[str, torch.Tensor], root: PathLike, name: str
                   ) -> Tuple[Path, str]:
    """Write ``graph`` as ``name``'s PyG raw files under the reference's ``dataset.dir`` ``root``.

    Parameters
    ----------
    graph : DGLGraph
        ``ndata['feat']`` (N, F), ``ndata['label']`` (N,); its edges are written as they are.
    masks : dict
        ``{'train', 'val', 'test'}`` -> ``(N, S)`` (or ``(N,)``) bool: one split file per column (S of them;
        PyG's loaders read 10).
    root : path-like
        The reference's ``dataset.dir``.
    name : str
        Our node set (:data:`PYG_NODE_FORMATS`).

    Returns ``(raw folder, sha256 of the files)``. Files already holding the same content are kept;
    otherwise the raw folder is rewritten and PyG's ``processed/`` beside it removed, so that PyG
    processes the new files instead of reusing stale ones.
    """
    fmt = _format(name)
    columns = {split: (m if m.ndim == 2 else m.unsqueeze(1)).bool() for split, m in masks.items()}
    count = max(c.shape[1] for c in columns.values())
    files = {FEATURES_FILE: feature_lines(graph.ndata["feat"], graph.ndata["label"], fmt.sparse_features).encode(),
             EDGES_FILE: edge_lines(graph).encode()}
    for k in range(count):
        parts = [columns[s][:, k if columns[s].shape[1] > 1 else 0] for s in ("train", "val", "test")]
        files[split_file(name, k)] = _npz_bytes(*parts)
    digest = hashlib.sha256()
    for file_name in sorted(files):
        digest.update(f"{file_name}:{len(files[file_name])};".encode())
        digest.update(files[file_name])
    sha = digest.hexdigest()
    folder = raw_dir(root, name)
    source = folder / SOURCE_FILE
    if source.is_file() and json.loads(source.read_text()).get("sha256") == sha:
        return folder, sha
    if folder.exists():
        shutil.rmtree(folder)
    processed = folder.parent / "processed"
    if processed.exists():
        shutil.rmtree(processed)
    folder.mkdir(parents=True)
    for file_name, content in files.items():
        with atomic_write(folder / file_name) as handle:
            handle.write(content)
    with atomic_write(source, "w") as handle:
        json.dump({"sha256": sha, "node_set": name, "nodes": graph.num_nodes(), "edges": graph.num_edges(),
                   "splits": count}, handle, indent=1)
    return folder, sha
