"""Our node-set graph against the one the reference loaded from our export (:mod:`.reference_dump` (``--node-set``)).

Compared: the node count; node features element-wise (``x`` against
``ndata['feat']``); labels; the three split masks (the reference's column
``dataset.split_index`` against our chosen split); and the edges *as sets* of
``(src, dst)`` pairs. PyG's loaders coalesce ``edge_index`` (sort by source
then destination, drop duplicates) and DGL keeps its own order, so the order
may differ and is not compared; the counts are reported (a duplicate edge on
either side shows as more edges than distinct pairs). Where the reference's
graph carries Laplacian eigenvalues they are reported, not judged.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Union

import dgl
import torch

PathLike = Union[str, os.PathLike]
SPLITS = ("train", "val", "test")
#: Features are written with 9 significant digits: float32 reads back exactly.
ATOL = 1e-6


def _pair_keys(edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Each edge ``(s, d)`` as the integer ``s * N + d``; (E,) int64."""
    return edge_index[0].long() * int(num_nodes) + edge_index[1].long()


def compare_node_graph(graph: dgl.DGLGraph, ref: Mapping[str, Any]) -> Dict[str, Any]:
    """``{"equal": bool, ...}`` for our ``graph`` (feat, label, *_mask) and a :mod:`.reference_dump` (``--node-set``) dict."""
    n = graph.num_nodes()
    ref_n = int(ref["num_nodes"])
    out: Dict[str, Any] = {"nodes": [n, ref_n]}
    feat, ref_x = graph.ndata["feat"].float(), ref["x"].float()
    out["feature_shape"] = [list(feat.shape), list(ref_x.shape)]
    if n != ref_n or feat.shape != ref_x.shape:
        out["equal"] = False
        return out
    out["x_max_diff"] = float((feat.double() - ref_x.double()).abs().max()) if feat.numel() else 0.0
    out["labels_equal"] = torch.equal(graph.ndata["label"].long().reshape(-1), ref["y"].long().reshape(-1))
    masks = {}
    for split in SPLITS:
        ours, theirs = graph.ndata[f"{split}_mask"].bool(), ref[f"{split}_mask"].bool().reshape(-1)
        masks[split] = {"nodes": [int(ours.sum()), int(theirs.sum())], "equal": torch.equal(ours, theirs)}
    out["masks"] = masks
    src, dst = graph.edges()
    our_keys = _pair_keys(torch.stack([src, dst]), n)
    ref_keys = _pair_keys(ref["edge_index"], n)
    ours_set, ref_set = torch.unique(our_keys), torch.unique(ref_keys)
    only_ours = ours_set[~torch.isin(ours_set, ref_set)]
    only_ref = ref_set[~torch.isin(ref_set, ours_set)]
    out["edges"] = {"ours": int(our_keys.numel()), "reference": int(ref_keys.numel()),
                    "distinct_ours": int(ours_set.numel()), "distinct_reference": int(ref_set.numel()),
                    "only_ours": int(only_ours.numel()), "only_reference": int(only_ref.numel()),
                    "examples_only_ours": [[int(k // n), int(k % n)] for k in only_ours[:3]],
                    "examples_only_reference": [[int(k // n), int(k % n)] for k in only_ref[:3]]}
    out["edge_sets_equal"] = not len(only_ours) and not len(only_ref)
    if "eigvals" in ref and "lap_eigval" in graph.ndata:
        theirs = torch.nan_to_num(ref["eigvals"].double(), nan=0.0)
        ours_ev = graph.ndata["lap_eigval"].double()
        if theirs.shape == ours_ev.shape:
            out["eigvals_max_diff"] = float((theirs - ours_ev).abs().max())
    out["equal"] = bool(out["labels_equal"] and out["x_max_diff"] <= ATOL and out["edge_sets_equal"]
                        and all(m["equal"] for m in masks.values()))
    return out


def check_node_graph(graph: dgl.DGLGraph, reference_file: PathLike) -> Dict[str, Any]:
    """Compare ``graph`` with a :mod:`.reference_dump` (``--node-set``) file."""
    return compare_node_graph(graph, torch.load(reference_file))


def describe(report: Mapping[str, Any]) -> str:
    """A few lines: sizes, features, labels, edges, masks."""
    n, ref_n = report["nodes"]
    if "x_max_diff" not in report:
        return (f"sizes differ: ours {n} nodes, features {report['feature_shape'][0]}; reference {ref_n} nodes, "
                f"features {report['feature_shape'][1]}")
    e = report["edges"]
    lines = [f"{n} nodes, features {tuple(report['feature_shape'][0])} max |diff| {report['x_max_diff']:.2g}, "
             f"labels {'equal' if report['labels_equal'] else 'DIFFER'}",
             f"edges as sets of (src, dst) {'equal' if report['edge_sets_equal'] else 'DIFFER'}: ours {e['ours']} "
             f"({e['distinct_ours']} distinct), reference {e['reference']} ({e['distinct_reference']} distinct), "
             f"only ours {e['only_ours']}, only reference {e['only_reference']} (order not compared: PyG coalesces)",
             "split masks: " + ", ".join(f"{s} {m['nodes'][0]}/{m['nodes'][1]} nodes "
                                         f"{'equal' if m['equal'] else 'DIFFER'}" for s, m in report["masks"].items())]
    if "eigvals_max_diff" in report:
        lines.append(f"Laplacian eigenvalues max |diff| {report['eigvals_max_diff']:.2g} (reported, not judged)")
    return "\n".join(lines)
