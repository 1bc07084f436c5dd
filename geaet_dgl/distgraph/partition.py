"""``geaet-dgl partition``: one graph with node masks -> DGL partitions for distributed training.

Everything a trainer reads is computed on the whole graph *before* it is cut
(positional encodings need the whole graph), then
``dgl.distributed.partition_graph`` (METIS) splits nodes so that every
partition holds about the same number of training nodes
(``balance_ntypes=train_mask``) and of edges (``balance_edges=True``),
stores each partition's nodes and edges with their features, and relabels
the nodes partition by partition (``return_mapping=True`` gives the original
ID of every new one, saved as ``orig_nids.pt``).

The folder ``DIR`` gets DGL's ``NAME.json`` + ``part0/ ... part{N-1}/`` and
our ``geaet-partition.json``: the graph file it came from (path, size and
mtime, to refuse a folder that no longer matches it), the task, the feature
widths, the encodings and the per-partition figures that are printed.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional

import dgl
import numpy as np
import torch

from ..data.errors import DataError
from ..data.graph_files import GraphFileInfo, read_graph_file
from ..data.node_graph import NodeGraph, inspect_node_graph, is_node_graph_file, load_node_graph

SIDECAR = "geaet-partition.json"


@dataclass
class PartitionReport:
    """What ``partition`` prints: sizes per partition and the edge cut."""

    graph_name: str
    config: str
    num_nodes: int
    num_edges: int
    part_nodes: List[int]
    part_edges: List[int]
    part_train_nodes: List[int]
    edge_cut: int

    def lines(self) -> List[str]:
        rows = [f"partitioned {self.num_nodes} nodes, {self.num_edges} edges into {len(self.part_nodes)} parts "
                f"-> {self.config}"]
        for i, (n, e, t) in enumerate(zip(self.part_nodes, self.part_edges, self.part_train_nodes)):
            rows.append(f"  part {i}: {n} nodes ({t} training), {e} edges")
        share = self.edge_cut / max(self.num_edges, 1)
        rows.append(f"  edge cut: {self.edge_cut} edges ({100 * share:.1f}%) join nodes of different parts")
        return rows


def file_stamp(path: str) -> Dict[str, object]:
    """Size and mtime of a file: what a partition folder records of the graph it came from."""
    info = os.stat(path)
    return {"path": os.path.abspath(path), "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def load_single_graph(path: str, lap_k: int = 0, rwse_k: int = 0) -> NodeGraph:
    """The one graph of a node-task file, checked (masks, labels, features), with its encodings attached.

    A file of many graphs is refused: those train data-parallel with ``--nproc``.
    """
    graphs, _ = read_graph_file(path)
    if len(graphs) != 1:
        raise DataError(f"{path} holds {len(graphs)} graphs; partitioning splits one large graph: train a file "
                        "of many graphs data-parallel with `geaet-dgl train --dataset FILE.bin --nproc N` instead")
    if not is_node_graph_file(path):
        raise DataError(f"{path}: the graph has no node masks; a node task on one graph needs boolean "
                        "ndata['train_mask'], ndata['val_mask'] and ndata['test_mask']")
    return load_node_graph(path, pe_k=lap_k, rwse_k=rwse_k or None, progress=False)


def partition_file(path: str, parts: int, out_dir: str, *, lap_k: int = 0, rwse_k: int = 0,
                   name: Optional[str] = None) -> PartitionReport:
    """Partition the single graph of ``path`` into ``parts`` parts under ``out_dir`` (see the module docstring)."""
    if parts < 1:
        raise DataError(f"--parts {parts}: pass at least 1")
    graph = load_single_graph(path, lap_k, rwse_k).graph
    if not lap_k:  # no Laplacian encoding asked for: drop the empty (N, 0) fields
        graph.ndata.pop("lap_pe", None)
        graph.ndata.pop("lap_eigval", None)
    info = inspect_node_graph(path)
    if parts > graph.num_nodes():
        raise DataError(f"--parts {parts} is more than the graph's {graph.num_nodes()} nodes")
    name = name or os.path.splitext(os.path.basename(path))[0]
    os.makedirs(out_dir, exist_ok=True)
    with contextlib.redirect_stdout(io.StringIO()):  # DGL prints a dozen progress lines; we print the report
        orig_nids, _ = dgl.distributed.partition_graph(
            graph, name, parts, out_dir, part_method="metis" if parts > 1 else "random",
            balance_ntypes=graph.ndata["train_mask"], balance_edges=True, return_mapping=True)
    torch.save(orig_nids, os.path.join(out_dir, "orig_nids.pt"))
    report = _report(graph, name, os.path.join(out_dir, f"{name}.json"), orig_nids)
    sidecar = {"graph_file": file_stamp(path), "task": info.task, "num_outputs": info.num_outputs,
               "features": asdict(info.features), "lap_k": lap_k, "rwse_k": rwse_k,
               "report": asdict(report)}
    with open(os.path.join(out_dir, SIDECAR), "w") as handle:
        json.dump(sidecar, handle, indent=1)
    return report


def _report(graph: dgl.DGLGraph, name: str, config: str, orig_nids: torch.Tensor) -> PartitionReport:
    with open(config) as handle:
        meta = json.load(handle)
    ranges = np.asarray(meta["node_map"]["_N"])  # new IDs [start, end) of each partition
    edge_ranges = np.asarray(meta["edge_map"]["_N:_E:_N"])
    part_of_new = np.repeat(np.arange(len(ranges)), ranges[:, 1] - ranges[:, 0])
    part = np.empty(graph.num_nodes(), dtype=np.int64)
    part[orig_nids.numpy()] = part_of_new  # partition of every original node
    src, dst = (t.numpy() for t in graph.edges())
    train = graph.ndata["train_mask"].numpy()
    return PartitionReport(
        graph_name=name, config=config, num_nodes=graph.num_nodes(), num_edges=graph.num_edges(),
        part_nodes=[int(e - s) for s, e in ranges], part_edges=[int(e - s) for s, e in edge_ranges],
        part_train_nodes=[int(train[part == i].sum()) for i in range(len(ranges))],
        edge_cut=int((part[src] != part[dst]).sum()))


def read_sidecar(config: str) -> dict:
    """``geaet-partition.json`` beside a partition JSON (one-line error when it is not there)."""
    path = os.path.join(os.path.dirname(os.path.abspath(config)), SIDECAR)
    if not os.path.isfile(path):
        raise DataError(f"{path} is missing: {config} was not written by `geaet-dgl partition`; partition the "
                        "graph file with it")
    with open(path) as handle:
        return json.load(handle)


def graph_info(sidecar: dict) -> GraphFileInfo:
    """The :class:`GraphFileInfo` of the partitioned graph, as recorded when it was partitioned."""
    from ..data.graph_files import FeatureSpec

    feats = {key: (tuple(v) if isinstance(v, list) else v) for key, v in sidecar["features"].items()}
    return GraphFileInfo(path=sidecar["graph_file"]["path"], num_graphs=1, task=sidecar["task"],
                         num_outputs=int(sidecar["num_outputs"]), features=FeatureSpec(**feats))


def check_matches_graph(config: str, sidecar: dict, num_nodes: int, num_edges: int,
                        graph_file: Optional[str] = None) -> None:
    """Refuse a partition folder that does not belong to ``graph_file`` (or to the file it recorded)."""
    recorded = sidecar["graph_file"]
    path = graph_file or recorded["path"]
    if not os.path.isfile(path):
        raise DataError(f"{config} was cut from {path}, which is gone; pass the graph file with --graphs or "
                        "partition again")
    stamp = file_stamp(path)
    report = sidecar["report"]
    if (report["num_nodes"], report["num_edges"]) != (num_nodes, num_edges):
        raise DataError(f"{config} holds {num_nodes} nodes / {num_edges} edges but {SIDECAR} says "
                        f"{report['num_nodes']} / {report['num_edges']}; partition the graph again")
    if (stamp["size"], stamp["mtime_ns"]) != (recorded["size"], recorded["mtime_ns"]):
        graph = load_single_graph(path).graph
        raise DataError(f"{config} does not match {path}: the partitions were cut from a file of "
                        f"{recorded['size']} bytes, this one has {stamp['size']} bytes and "
                        f"{graph.num_nodes()} nodes / {graph.num_edges()} edges (partitions: {num_nodes} / "
                        f"{num_edges}); run `geaet-dgl partition {path} --parts N --out DIR` again")
