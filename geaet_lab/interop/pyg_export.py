"""Our DGL graphs in PyG's forms: the raw files of ``GNNBenchmarkDataset``, and ``Data`` / ``Batch`` objects.

The in-process comparisons (parity, ``benchmark --against-pyg``) feed the reference
:func:`to_pyg_batch` / :func:`to_pyg_data_list` (PyG imported when called); the rest of
this module writes files for ``compare``.

The reference (icm1018/GEAET) loads MNIST and CIFAR10 through
``torch_geometric.datasets.GNNBenchmarkDataset(root, name, split)``: it reads
``root/<NAME>/raw/<NAME>_v2.pt``, a ``torch.save``'d list of the three splits
(train, val, test), each a list of dicts ``{x, edge_index, edge_attr, y, pos}``,
and processes it into ``root/<NAME>/processed/``. Writing that raw file from the
very graphs we train on (same ``--limit-*`` subset, same order) lets PyG's own
processing and the reference's own transforms (``cat(x, pos)``, its Laplacian
PE) run on exactly our data. Only torch is used for the files; PyG is never imported for them.

Per graph (N nodes, E edges, F = ``ndata['feat']`` width):

- ``x``: ``feat[:, :F-2]`` (N, F-2) float32, the superpixel value(s)
- ``pos``: ``feat[:, F-2:]`` (N, 2) float32, so the reference's ``cat(x, pos)`` is ``feat`` again
- ``edge_index``: ``stack(src, dst)`` (2, E) int64, in DGL's edge order
- ``edge_attr``: ``edata['feat'][:, 0]`` (E,) float32 (one kNN weight per edge)
- ``y``: ``(1,)`` int64 class label

Example
-------
>>> from geaet_dgl.data import synthetic_splits
>>> splits = synthetic_splits(num_train=4, num_val=2, num_test=2)  # doctest: +SKIP
>>> write_gnn_benchmark(splits, "out/pyg", "MNIST")  # doctest: +SKIP
PosixPath('out/pyg/GNNBenchmarkDataset/MNIST/raw/MNIST_v2.pt')
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Callable, Dict, List, Optional, Union

import dgl
import torch

from geaet_dgl.atomic import atomic_write
from geaet_dgl.data import DatasetSplits, DataError, GraphDataset

PathLike = Union[str, os.PathLike]

#: The folder the reference's master loader puts under ``dataset.dir`` for ``format: PyG-GNNBenchmarkDataset``.
GNN_BENCHMARK_FOLDER = "GNNBenchmarkDataset"
#: Our dataset name -> PyG's ``GNNBenchmarkDataset`` name.
PYG_NAMES = {"mnist": "MNIST", "cifar10": "CIFAR10"}
SPLITS = ("train", "val", "test")
#: Written beside the raw file: a digest of its content, to reuse or replace it (and PyG's processed files).
SOURCE_FILE = "geaet_dgl_source.json"


def raw_path(root: PathLike, name: str) -> Path:
    """``root/GNNBenchmarkDataset/<name>/raw/<name>_v2.pt``: the file PyG's GNNBenchmarkDataset reads."""
    return Path(root) / GNN_BENCHMARK_FOLDER / name / "raw" / f"{name}_v2.pt"


def edge_index(graph: dgl.DGLGraph) -> torch.Tensor:
    """PyG's ``edge_index`` of a DGL graph: (2, E) int64, sources then destinations, in DGL's edge order."""
    src, dst = graph.edges()
    return torch.stack([src, dst]).to(torch.int64)


def graph_record(graph, label: torch.Tensor) -> Dict[str, torch.Tensor]:
    """One DGL superpixel graph -> the dict PyG builds a ``Data`` from (see the module docstring)."""
    feat = graph.ndata["feat"]
    if feat.ndim != 2 or feat.shape[1] < 3:
        raise DataError(f"ndata['feat'] has shape {tuple(feat.shape)}; a superpixel graph has (N, >=3) features "
                        "(value(s) then a 2-d position)")
    efeat = graph.edata["feat"]
    if efeat.ndim != 2 or efeat.shape[1] != 1:
        raise DataError(f"edata['feat'] has shape {tuple(efeat.shape)}; GNNBenchmarkDataset stores one weight "
                        "per edge, (E, 1)")
    return {
        "x": feat[:, :-2].to(torch.float32).clone(),
        "edge_index": edge_index(graph),
        "edge_attr": efeat[:, 0].to(torch.float32).clone(),
        "y": torch.as_tensor(label, dtype=torch.int64).reshape(1),
        "pos": feat[:, -2:].to(torch.float32).clone(),
    }


def split_records(dataset: GraphDataset) -> List[Dict[str, torch.Tensor]]:
    """The records of every graph of ``dataset``, in order."""
    if getattr(dataset, "level", "graph") != "graph":
        raise DataError("only graph-level datasets (MNIST, CIFAR10) can be written as GNNBenchmarkDataset files")
    return [graph_record(graph, label) for graph, label in dataset]


def records_digest(splits_records: List[List[Dict[str, torch.Tensor]]]) -> str:
    """SHA-256 over every tensor's shape, dtype and bytes, split by split, graph by graph."""
    digest = hashlib.sha256()
    for records in splits_records:
        digest.update(f"split:{len(records)};".encode())
        for record in records:
            for key in sorted(record):
                tensor = record[key].contiguous()
                digest.update(f"{key}:{tuple(tensor.shape)}:{tensor.dtype};".encode())
                digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def write_gnn_benchmark(splits: DatasetSplits, root: PathLike, name: str) -> Path:
    """Write ``splits`` as ``GNNBenchmarkDataset`` raw data under ``root``; return the raw file's path.

    Parameters
    ----------
    splits : DatasetSplits
        Graph-level superpixel splits (``ndata['feat']`` (N, F>=3), ``edata['feat']`` (E, 1)).
    root : path-like
        The reference's ``dataset.dir``; the file goes to :func:`raw_path`.
    name : str
        PyG's dataset name, ``MNIST`` or ``CIFAR10``.

    If the raw file already holds exactly these graphs (same digest) nothing is
    written; otherwise it is replaced and PyG's ``processed/`` folder beside it is
    removed, so PyG processes the new graphs instead of reusing stale ones.
    """
    if name not in PYG_NAMES.values():
        raise DataError(f"GNNBenchmarkDataset name {name!r} is not one of {', '.join(PYG_NAMES.values())}")
    records = [split_records(getattr(splits, split)) for split in SPLITS]
    digest = records_digest(records)
    path = raw_path(root, name)
    source = path.parent / SOURCE_FILE
    sizes = {split: len(r) for split, r in zip(SPLITS, records)}
    if path.is_file() and source.is_file() and json.loads(source.read_text()).get("sha256") == digest:
        return path
    shutil.rmtree(path.parent.parent / "processed", ignore_errors=True)
    source.unlink(missing_ok=True)
    with atomic_write(path) as handle:
        torch.save(records, handle)
    with atomic_write(source, "w") as handle:
        json.dump({"sha256": digest, "sizes": sizes, "dataset": splits.name, "source": splits.source}, handle,
                  indent=2)
    return path


def _pyg_data(graph: dgl.DGLGraph, label: torch.Tensor, edge_types_as_vector: bool = False):
    """One DGL graph and its label(s) -> a PyG ``Data`` with the fields the reference reads."""
    from torch_geometric.data import Data  # imported here: only the in-process comparisons need PyG

    edge_attr = graph.edata["feat"]
    if edge_types_as_vector:  # PyG's ZINC: one bond type per edge, (E,), read whole by TypeDictEdge
        edge_attr = edge_attr.reshape(-1)
    fields = dict(x=graph.ndata["feat"], edge_index=edge_index(graph), edge_attr=edge_attr, y=label)
    if "lap_pe" in graph.ndata:
        vecs = graph.ndata["lap_pe"]
        vals = graph.ndata.get("lap_eigval", torch.zeros_like(vecs))
        if graph.num_nodes() < vecs.shape[1]:  # frequencies past the graph's size: ours 0, its loader's NaN, which
            vecs, vals = vecs.clone(), vals.clone()  # its LapPE encoder leaves out of the sum (0 would count)
            vecs[:, graph.num_nodes():] = vals[:, graph.num_nodes():] = float("nan")
        fields.update(EigVecs=vecs, EigVals=vals.unsqueeze(-1))
    if "rwse" in graph.ndata:
        fields["pestat_RWSE"] = graph.ndata["rwse"]
    if "lap_pe" in graph.ndata:  # SignNet reads its own copy of the eigenvectors
        fields.update(eigvecs_sn=fields["EigVecs"], eigvals_sn=fields["EigVals"])
    for ours, theirs in (("hkdiag_se", "pestat_HKdiagSE"), ("elstatic_se", "pestat_ElstaticSE"),
                         ("in_degree", "in_degrees"), ("out_degree", "out_degrees")):
        if ours in graph.ndata:
            fields[theirs] = graph.ndata[ours]
    if "spatial_types" in graph.ndata:  # Graphormer's (N * N,) types over all (i, j) pairs, row-major
        n = graph.num_nodes()
        fields["spatial_types"] = graph.ndata["spatial_types"][:, :n].long().reshape(-1)
        pairs = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        fields["graph_index"] = torch.stack(pairs).reshape(2, -1)
        if "path_types" in graph.ndata:  # the edge types along each pair's shortest path, (N * N, S), row-major
            paths = graph.ndata["path_types"][:, :n]
            fields["shortest_path_types"] = paths.long().reshape(n * n, paths.shape[-1])
    return Data(**fields)


def to_pyg_batch(graph: dgl.DGLGraph, labels: torch.Tensor, edge_types_as_vector: bool = False,
                 items_hook: Optional[Callable[[list], list]] = None):
    """A batched DGL graph -> the equivalent PyG ``Batch``.

    ``edge_types_as_vector``: ``edge_attr`` as PyG's ZINC holds it, one type per edge (E,) (our (E, 1)
    column flattened), which the reference's ``TypeDictEdge`` embeds as is. ``items_hook``: applied to the
    list of per-graph ``Data`` before they are batched (e.g. the reference's own statistics,
    :func:`~.reference_loader.with_reference_statistics`).

    Carries ``x``/``edge_attr`` from ``feat``, Laplacian PE as ``EigVecs``/``EigVals`` (and SignNet's
    ``eigvecs_sn``), RWSE, HKdiagSE and ElstaticSE as ``pestat_*``, Graphormer's ``spatial_types``,
    ``graph_index``, ``shortest_path_types``, ``in_degrees`` and ``out_degrees`` when present, and ``y``: one label per graph, or per node when ``labels`` has one
    entry per node (node-level tasks).
    """
    from torch_geometric.data import Batch

    node_level = labels.shape[0] == graph.num_nodes() and labels.shape[0] != graph.batch_size
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), graph.batch_num_nodes().cumsum(0)]).tolist()
    items = [_pyg_data(g, labels[offsets[i]:offsets[i + 1]] if node_level else labels[i:i + 1],
                       edge_types_as_vector) for i, g in enumerate(dgl.unbatch(graph))]
    return Batch.from_data_list(items_hook(items) if items_hook is not None else items)


def to_pyg_data_list(dataset) -> list:
    """A graph- or node-level :class:`~geaet_dgl.data.GraphDataset` -> a list of PyG ``Data``, one per graph,
    with the fields of :func:`to_pyg_batch` (``y``: ``(1,)`` or ``(1, T)`` per graph, ``(N_i,)`` per node),
    ready for the reference's ``DataLoader``."""
    level = getattr(dataset, "level", "graph")
    if level not in ("graph", "node"):
        raise ValueError(f"the reference reads graph- or node-level datasets, not level={level!r}")
    return [_pyg_data(g, y if level == "node" else torch.as_tensor(y).unsqueeze(0)) for g, y in dataset]
