"""What a run's data was: a graph file's identity and a fingerprint of the loaded splits, checked on reuse.

A run records both (in ``config.json`` and its checkpoints, see
:class:`geaet_dgl.config.DataOptions`); ``eval``, ``--resume`` and
a rerun of ``--seeds`` compare them with the data found now and refuse data
that changed in one line, or, with ``allow_changed`` (``--allow-changed-data``),
log what changed and go on with the run's own split.

Example
-------
>>> import dgl, torch
>>> dgl.save_graphs('/tmp/identity.bin', [dgl.rand_graph(3, 4)], {'label': torch.tensor([0])})
>>> sorted(file_identity('/tmp/identity.bin', 1))
['graphs', 'sha256', 'size']
"""
from __future__ import annotations

import hashlib
import logging
import os
from typing import Any, Dict, List, Mapping, Optional

import numpy as np

from .dataset import DatasetSplits
from .errors import DataError

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
ALLOW_HINT = "--allow-changed-data"

#: DataOptions fields a run records after reading its data (:func:`record_data`): a configuration built before
#: reading anything (the rerun of a study) has them unset, and a run that reads its data again checks them
#: against that data itself, so they are no part of what the run was asked to do.
RECORDED_AFTER_LOADING = ("fingerprint", "input_transform")


def file_identity(path: "os.PathLike | str", num_graphs: int) -> Dict[str, Any]:
    """``{"size": bytes, "graphs": G, "sha256": hex digest of the content}`` of a file holding ``num_graphs`` graphs."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"size": os.path.getsize(path), "graphs": int(num_graphs), "sha256": digest.hexdigest()}


def identity_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> List[str]:
    """Words for how ``current`` differs from ``recorded`` (empty: the same file)."""
    changes = []
    if recorded.get("graphs") != current.get("graphs"):
        changes.append(f"{recorded.get('graphs')} -> {current.get('graphs')} graphs")
    if recorded.get("size") != current.get("size"):
        changes.append(f"{recorded.get('size')} -> {current.get('size')} bytes")
    if recorded.get("sha256") != current.get("sha256") and not changes:
        changes.append("same size, other content")
    return changes


def check_unchanged(what: str, changes: List[str], allow_changed: bool, fix: str,
                    going_on: str = "going on with the run's own split") -> None:
    """Raise a one-line DataError for data ``what`` that changed (``changes``), or log it when ``allow_changed``
    (``going_on`` says what happens then)."""
    if not changes:
        return
    detail = "; ".join(changes)
    if allow_changed:
        log.warning("%s changed since the run was trained (%s); %s (%s)", what, detail, going_on, ALLOW_HINT)
        return
    raise DataError(f"{what} changed since the run was trained ({detail}): its graphs and splits are no longer the "
                    f"run's; {fix}, or pass {ALLOW_HINT} to use the run's own split on the data as it is now")


def splits_fingerprint(splits: DatasetSplits, limits: Optional[Mapping[str, Optional[int]]] = None
                       ) -> Dict[str, Dict[str, Any]]:
    """Per split ``{"graphs": n, "limit": --limit-<split>, "sha256": ...}`` over every graph's node and edge
    counts and the labels: cheap (no features read), and it changes when a processed file is rebuilt."""
    limits = dict(limits or {})
    if hasattr(splits, "split_fingerprints"):  # one graph with node masks (nodes.node_graph.NodeGraph): its own record
        return splits.split_fingerprints(limits)
    result = {}
    for name in SPLITS:
        dataset = getattr(splits, name)
        digest = hashlib.sha256()
        sizes = np.array([(g.num_nodes(), g.num_edges()) for g in dataset.graphs], dtype=np.int64).reshape(-1, 2)
        digest.update(sizes.tobytes())
        labels = dataset.labels.detach().cpu().contiguous()
        digest.update(str(labels.dtype).encode() + str(tuple(labels.shape)).encode())
        digest.update(labels.numpy().tobytes())
        result[name] = {"graphs": len(dataset), "limit": limits.get(name), "sha256": digest.hexdigest()[:32]}
    return result


def fingerprint_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> List[str]:
    """Words for the splits whose fingerprint differs; a split loaded with another limit than the run's is not
    compared (``eval --limit-test N`` scores another number of graphs on purpose)."""
    changes = []
    for name in SPLITS:
        old, new = recorded.get(name), current.get(name)
        if not isinstance(old, Mapping) or new is None or old.get("limit") != new.get("limit"):
            continue
        if old.get("graphs") != new.get("graphs"):
            changes.append(f"{name}: {old.get('graphs')} -> {new.get('graphs')} graphs")
        elif old.get("sha256") != new.get("sha256"):
            changes.append(f"{name}: other graphs or labels")
    return changes


def node_split_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> Optional[List[str]]:
    """For one graph with node masks: words for the splits whose node ids or labels changed (empty: only the
    graph around them changed, e.g. its edges); None where the record predates ``split_sha256`` (cannot tell)."""
    changes = []
    for name in SPLITS:
        old, new = recorded.get(name), current.get(name)
        if not isinstance(old, Mapping) or new is None or old.get("limit") != new.get("limit"):
            continue
        if "split_sha256" not in old:
            return None
        if old["split_sha256"] != new.get("split_sha256"):
            changes.append(f"{name}: {old.get('graphs')} -> {new.get('graphs')} nodes" if old.get("graphs") !=
                           new.get("graphs") else f"{name}: other nodes or labels")
    return changes


def graph_size_change(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> Optional[str]:
    """``the graph: 300 -> 300 nodes, 2400 -> 2450 edges`` when the recorded size of one graph with node masks
    differs from the current one (None: the same, or not recorded)."""
    old = next((entry.get("size") for entry in recorded.values() if isinstance(entry, Mapping)), None)
    new = next((entry.get("size") for entry in current.values() if isinstance(entry, Mapping)), None)
    if not old or not new or list(old) == list(new):
        return None
    return f"the graph: {old[0]} -> {new[0]} nodes, {old[1]} -> {new[1]} edges"


def data_limits(options: Any) -> Dict[str, Optional[int]]:
    """``{'train': limit_train, 'val': limit_val, 'test': limit_test}`` of a run's
    :class:`~geaet_dgl.config.DataOptions`."""
    return {"train": options.limit_train, "val": options.limit_val, "test": options.limit_test}


def record_data(options: Any, splits: DatasetSplits) -> None:
    """Store the fingerprint of the loaded ``splits`` and their loader's input transform in ``options`` (a
    :class:`~geaet_dgl.config.DataOptions`; a new run, before its config is written)."""
    options.fingerprint = splits_fingerprint(splits, data_limits(options))
    options.input_transform = splits.input_transform
