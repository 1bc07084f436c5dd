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
import logging
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Tuple

import dgl
import numpy as np
import torch

from ..data.encodings.apply import encode_splits
from ..data.errors import DataError
from ..data.own_files.graph_files import GraphFileInfo, read_graph_file
from ..data.identity import file_identity
from ..data.nodes.node_graph import NodeGraph, inspect_node_graph, is_node_graph_file, load_node_graph
from ..data.options import LoadOptions

SIDECAR = "geaet-partition.json"
log = logging.getLogger(__name__)
#: DGL's words when METIS returns METIS_ERROR: what it returns when the process gets SIGTERM while it runs
#: (METIS's own signal trap; its memory errors and bad input have other words).
METIS_STOPPED = "Error in Metis partitioning: other errors"


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


def file_stamp(path: str, content: bool = False) -> Dict[str, object]:
    """Size and mtime of a file (and, with ``content``, its SHA-256): what a partition folder records of its graph."""
    info = os.stat(path)
    stamp = {"path": os.path.abspath(path), "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    if content:
        stamp["sha256"] = file_identity(path, 1)["sha256"]
    return stamp


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
    options = LoadOptions(data_file=path, pe_k=lap_k, rwse_k=rwse_k or None, progress=False)
    return encode_splits(load_node_graph(options), options)  # the loader, then the one encoding path


def check_partitionable(path: str, data: NodeGraph, parts: int) -> None:
    """Refuse, in one line, a graph that DGL's partitioner cannot cut into ``parts`` usable partitions."""
    graph = data.graph
    if data.target_ntype or not graph.is_homogeneous:
        raise DataError(f"{path} is a heterograph (node types {', '.join(graph.ntypes)}); `geaet-dgl partition` "
                        "cuts a graph of one node type: train the heterograph on one process with "
                        f"`geaet-dgl train --dataset {path}`")
    if graph.num_edges() == 0:
        raise DataError(f"{path}: the graph has no edges; partitions are cut along edges, and a graph without edges "
                        f"needs no graph server: train it on one process with `geaet-dgl train --dataset {path} "
                        "--sampler random`")
    if parts > graph.num_nodes():
        train_nodes = int(graph.ndata["train_mask"].sum()) if "train_mask" in graph.ndata else graph.num_nodes()
        raise DataError(f"--parts {parts} is more than the graph's {graph.num_nodes()} nodes; each partition needs "
                        f"nodes of its own, and a training node: pass --parts {min(train_nodes, graph.num_nodes())} "
                        "or fewer")
    train_nodes = int(graph.ndata["train_mask"].sum())
    if parts > train_nodes:
        raise DataError(f"--parts {parts} is more than the graph's {train_nodes} training node(s); METIS balances "
                        f"training nodes over the partitions, so each needs one: pass --parts {train_nodes} or fewer")


#: Peak bytes of ``geaet-dgl partition`` (the loaded graph and DGL's ``partition_graph``) per stored (directed)
#: edge, cutting in 2: 208 / 212 / 198 measured on products-shaped graphs (degree 50.5) of 300k, 600k and 2.45M
#: nodes, the peak in DGL's C split of the graph into partitions with their halos
#: (docs/performance.md#an-ogbn-products-sized-graph).
PARTITION_BYTES_PER_EDGE = 210


def partition_memory_warning(path: str, num_edges: int, held: int, available: Optional[int],
                             swap_free: Optional[int]) -> Optional[str]:
    """A warning when partitioning will need more memory than the process ``held`` plus ``available`` (bytes).

    Partitioning is a one-off step whose peak (about :data:`PARTITION_BYTES_PER_EDGE` a stored edge) is
    several times a trainer's: where it does not fit in memory it can still finish in swap, slower; where it
    fits in neither the system kills it without a message, so the user hears it first. ``None`` when it fits
    or the memory is unknown."""
    need = PARTITION_BYTES_PER_EDGE * num_edges
    if available is None or need <= held + available:
        return None
    gib = 2 ** 30
    swap = swap_free or 0
    head = (f"partitioning {path} peaks at about {need / gib:.1f} GiB (about {PARTITION_BYTES_PER_EDGE} bytes a "
            f"stored edge, {num_edges} edges) and this machine has {(held + available) / gib:.1f} GiB of memory for it")
    if need <= held + available + swap:
        return f"{head}: it will run partly in swap ({swap / gib:.1f} GiB free), slower"
    return (f"{head} and {swap / gib:.1f} GiB of swap: the system may stop it; partition on a machine with more "
            "memory (once: copy the folder to the trainers' machines) or add swap")


def machine_memory() -> Tuple[int, int, int]:
    """(bytes this process holds, bytes the machine can still give, free swap): what partitioning may use."""
    import psutil

    return psutil.Process().memory_info().rss, psutil.virtual_memory().available, psutil.swap_memory().free


def check_out_dir(out_dir: str, path: str) -> None:
    """Refuse an ``--out`` folder that holds the partitions of another graph (they would be broken)."""
    if not os.path.isdir(out_dir):
        if os.path.exists(out_dir):
            raise DataError(f"--out {out_dir} is a file; pass a folder")
        return
    sidecar = os.path.join(out_dir, SIDECAR)
    if os.path.isfile(sidecar):
        try:
            with open(sidecar) as handle:
                recorded = json.load(handle)["graph_file"]["path"]
        except (OSError, ValueError, KeyError, TypeError):
            recorded = "an unknown graph (its geaet-partition.json is unreadable)"
        if recorded != os.path.abspath(path):
            raise DataError(f"--out {out_dir} holds the partitions of {recorded}; partitioning {path} there would "
                            "break them: pass another --out folder (or delete that one)")
        return
    foreign = sorted(name for name in os.listdir(out_dir)
                     if name == "orig_nids.pt" or (name.startswith("part") and name[4:].isdigit()))
    if foreign:
        raise DataError(f"--out {out_dir} holds partition files not written by `geaet-dgl partition` "
                        f"({', '.join(foreign[:3])}); pass an empty or new --out folder")


def _remove_previous(out_dir: str) -> None:
    """Remove the partition set ``geaet-dgl partition`` wrote in ``out_dir`` before (of the same graph)."""
    sidecar = os.path.join(out_dir, SIDECAR)
    if not os.path.isfile(sidecar):
        return
    try:
        with open(sidecar) as handle:
            config = json.load(handle)["report"]["config"]
        with open(config) as handle:
            count = int(json.load(handle)["num_parts"])
    except (OSError, ValueError, KeyError, TypeError):
        config, count = None, 0
    os.remove(sidecar)  # first: a half-removed folder is not taken for a whole one
    for k in range(count):
        shutil.rmtree(os.path.join(out_dir, f"part{k}"), ignore_errors=True)
    for leftover in (config, os.path.join(out_dir, "orig_nids.pt")):
        if leftover and os.path.isfile(leftover):
            os.remove(leftover)


def partition_file(path: str, parts: int, out_dir: str, *, lap_k: int = 0, rwse_k: int = 0,
                   name: Optional[str] = None) -> PartitionReport:
    """Partition the single graph of ``path`` into ``parts`` parts under ``out_dir`` (see the module docstring).

    The partitions are written to a temporary folder inside ``out_dir`` and
    moved into place once whole (the sidecar last), so a failure leaves
    ``out_dir`` as it was.
    """
    if parts < 1:
        raise DataError(f"--parts {parts}: pass at least 1")
    data = load_single_graph(path, lap_k, rwse_k)
    check_partitionable(path, data, parts)
    check_out_dir(out_dir, path)
    graph = data.graph
    if not lap_k:  # no Laplacian encoding asked for: drop the empty (N, 0) fields
        graph.ndata.pop("lap_pe", None)
        graph.ndata.pop("lap_eigval", None)
    warning = partition_memory_warning(path, graph.num_edges(), *machine_memory())
    if warning:
        log.warning(warning)
    info = inspect_node_graph(path)
    name = name or os.path.splitext(os.path.basename(path))[0]
    created = not os.path.isdir(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".partitioning-", dir=out_dir)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # DGL prints a dozen progress lines; we print the report
            try:
                orig_nids, _ = dgl.distributed.partition_graph(
                    graph, name, parts, work, part_method="metis" if parts > 1 else "random",
                    balance_ntypes=graph.ndata["train_mask"], balance_edges=True, return_mapping=True)
            except Exception as exc:  # noqa: BLE001 - DGL's partitioner fails with KeyError, TypeError, ...
                if METIS_STOPPED in str(exc):  # METIS catches SIGTERM itself and returns this
                    raise DataError(f"METIS stopped before it finished partitioning {path} (it stops so when the "
                                    "process gets SIGTERM); nothing was written: run the command again to partition "
                                    "the graph") from exc
                raise DataError(f"DGL could not partition {path} into {parts} parts ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else 'no message'}); try fewer --parts") from exc
        torch.save(orig_nids, os.path.join(work, "orig_nids.pt"))
        report = _report(graph, name, os.path.join(work, f"{name}.json"), orig_nids)
        empty = [i for i, n in enumerate(report.part_nodes) if n == 0]
        if empty:
            raise DataError(f"METIS left partition(s) {', '.join(map(str, empty))} of {path} empty; pass fewer --parts")
        report.config = os.path.join(out_dir, f"{name}.json")
        sidecar = {"graph_file": file_stamp(path, content=True), "task": info.task, "num_outputs": info.num_outputs,
                   "features": asdict(info.features), "lap_k": lap_k, "rwse_k": rwse_k,
                   "report": asdict(report)}
        with open(os.path.join(work, SIDECAR), "w") as handle:
            json.dump(sidecar, handle, indent=1)
        _remove_previous(out_dir)
        for entry in sorted(os.listdir(work), key=lambda e: e == SIDECAR):  # the sidecar last
            target = os.path.join(out_dir, entry)
            if os.path.isdir(target):
                shutil.rmtree(target)
            os.replace(os.path.join(work, entry), target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        if created and not os.listdir(out_dir):
            os.rmdir(out_dir)
        raise
    shutil.rmtree(work, ignore_errors=True)
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
    try:
        with open(path) as handle:
            sidecar = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is unreadable ({type(exc).__name__}: {str(exc)[:120]}); partition the graph again "
                        "with `geaet-dgl partition`") from exc
    missing = [key for key, kinds in SIDECAR_FIELDS.items() if not _has(sidecar, key.split("."), kinds)]
    if missing:
        raise DataError(f"{path} is damaged ({', '.join(missing)} missing or of the wrong type); partition the graph "
                        "again with `geaet-dgl partition`")
    return sidecar


#: What ``train --partitions`` reads from the sidecar, and the JSON types each must have.
SIDECAR_FIELDS = {"graph_file.path": (str,), "graph_file.size": (int,), "graph_file.mtime_ns": (int,),
                  "task": (str,), "num_outputs": (int,), "features": (dict,), "lap_k": (int,), "rwse_k": (int,),
                  "report.num_nodes": (int,), "report.num_edges": (int,), "report.config": (str,)}


def _has(tree, keys, kinds) -> bool:
    for key in keys:
        if not isinstance(tree, dict) or key not in tree:
            return False
        tree = tree[key]
    return isinstance(tree, kinds) and not isinstance(tree, bool)


def graph_info(sidecar: dict) -> GraphFileInfo:
    """The :class:`GraphFileInfo` of the partitioned graph, as recorded when it was partitioned (a damaged record:
    one-line DataError)."""
    from ..config.validation import NODE_TASKS
    from ..data.own_files.graph_files import FeatureSpec

    feats = {key: (tuple(v) if isinstance(v, list) else v) for key, v in sidecar["features"].items()}
    try:
        spec = FeatureSpec(**feats)
        counts = [spec.node_in_feats, spec.edge_in_feats, *(spec.node_vocab_sizes or ()),
                  *(spec.edge_vocab_sizes or ())]
        widths_ok = all(isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in counts) and all(
            v is None or isinstance(v, tuple) for v in (spec.node_vocab_sizes, spec.edge_vocab_sizes))
    except TypeError:
        widths_ok = False
    if not widths_ok or sidecar["task"] not in NODE_TASKS or sidecar["num_outputs"] < 1:
        raise DataError(f"{SIDECAR} of {sidecar['graph_file']['path']} is damaged (task, num_outputs or features "
                        "out of range); partition the graph again with `geaet-dgl partition`")
    return GraphFileInfo(path=sidecar["graph_file"]["path"], num_graphs=1, task=sidecar["task"],
                         num_outputs=int(sidecar["num_outputs"]), features=spec)


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
    if (stamp["size"], stamp["mtime_ns"]) == (recorded["size"], recorded["mtime_ns"]):
        return
    if recorded.get("sha256") and file_identity(path, 1)["sha256"] == recorded["sha256"]:
        return  # touched (copied, restored from a backup) but the same content
    when = (f"modified at {_time(stamp['mtime_ns'])}, after the partitions were cut from it at "
            f"{_time(recorded['mtime_ns'])}")
    if stamp["size"] == recorded["size"]:
        how = (f"other content of the same size ({stamp['size']} bytes)" if recorded.get("sha256") else
               f"the same size ({stamp['size']} bytes), but the folder predates content checks")
        raise DataError(f"{config} does not match {path}: the file was {when}, with {how}; run `geaet-dgl "
                        f"partition {path} --parts N --out DIR` again (or restore the file the partitions were cut "
                        "from)")
    # not read: a file that changed may be damaged, and DGL can crash the process on some damaged files
    raise DataError(f"{config} does not match {path}: the file was {when}; the partitions were cut from a file of "
                    f"{recorded['size']} bytes, this one has {stamp['size']} bytes (partitions: {num_nodes} nodes / "
                    f"{num_edges} edges); run `geaet-dgl partition {path} --parts N --out DIR` again")


def _time(mtime_ns: int) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(mtime_ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")
