"""Element-wise comparison of our DGL graphs with the graphs the reference loaded from our export.

The reference side is a file written by :mod:`.reference_dump` (the reference's
own loader, run with its Python); ours are the splits we train on. Both are
concatenated split by split in their own order, which must be the same.

Compared per split: number of graphs; nodes and edges per graph; node features
(the reference's ``cat(x, pos)`` against ``ndata['feat']``); edges
(``edge_index`` against DGL's ``(src, dst)``, each graph's own node ids); edge
features; labels; and, where both carry them, the Laplacian eigenvalues
(the reference pads graphs smaller than k with NaN, we with 0) and
eigenvectors up to their sign (columns whose eigenvalue repeats have no unique
eigenvector, so the match there is counted, not required).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import torch

from geaet_dgl.data import DatasetSplits, GraphDataset

PathLike = Union[str, os.PathLike]

#: Tolerance for the float comparisons (features and weights are copied exactly; eigen-decompositions differ
#: between numpy calls only by rounding).
ATOL = 1e-5


def concat_ours(dataset: GraphDataset) -> Dict[str, torch.Tensor]:
    """Our graphs of one split, concatenated as :mod:`.reference_dump` writes the reference's."""
    graphs = dataset.graphs
    fields = {
        "x": torch.cat([g.ndata["feat"] for g in graphs]),
        "edge_index": torch.cat([torch.stack(g.edges()) for g in graphs], dim=1),
        "edge_attr": torch.cat([g.edata["feat"] for g in graphs]),
        "y": dataset.labels.reshape(-1),
        "num_nodes": torch.tensor([g.num_nodes() for g in graphs]),
        "num_edges": torch.tensor([g.num_edges() for g in graphs]),
    }
    if all("lap_eigval" in g.ndata for g in graphs):
        fields["eigvals"] = torch.cat([g.ndata["lap_eigval"] for g in graphs])
    if all("lap_pe" in g.ndata for g in graphs):
        fields["eigvecs"] = torch.cat([g.ndata["lap_pe"] for g in graphs])
    return fields


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b.double()).abs().max())


def compare_split(ours: Dict[str, torch.Tensor], ref: Dict[str, torch.Tensor]) -> Dict[str, Any]:
    """Compare one split (dicts as :func:`concat_ours`); return ``{"equal": bool, ...details}``."""
    out: Dict[str, Any] = {"graphs": [len(ours["y"]), len(ref["y"])]}
    same_shape = (len(ours["y"]) == len(ref["y"]) and torch.equal(ours["num_nodes"], ref["num_nodes"])
                  and torch.equal(ours["num_edges"], ref["num_edges"]))
    out["sizes_equal"] = same_shape
    if not same_shape:
        out["equal"] = False
        return out
    out["labels_equal"] = torch.equal(ours["y"].long(), ref["y"].long())
    out["edges_equal"] = torch.equal(ours["edge_index"].long(), ref["edge_index"].long())
    out["x_max_diff"] = _max_diff(ours["x"], ref["x"].reshape(ours["x"].shape))
    out["edge_attr_max_diff"] = _max_diff(ours["edge_attr"], ref["edge_attr"].reshape(ours["edge_attr"].shape))
    checks = [out["labels_equal"], out["edges_equal"], out["x_max_diff"] <= ATOL, out["edge_attr_max_diff"] <= ATOL]
    if "eigvals" in ours and "eigvals" in ref:
        theirs = torch.nan_to_num(ref["eigvals"].reshape(ours["eigvals"].shape), nan=0.0)
        out["eigvals_max_diff"] = _max_diff(ours["eigvals"], theirs)
        checks.append(out["eigvals_max_diff"] <= ATOL)
    if "eigvecs" in ours and "eigvecs" in ref:
        out.update(_eigvec_match(ours["eigvecs"], ref["eigvecs"], ours["num_nodes"], ours.get("eigvals")))
        checks.append(out["eigvec_simple_columns_matched"] == out["eigvec_simple_columns"])
    out["equal"] = bool(all(checks))
    return out


def _eigvec_match(ours: torch.Tensor, ref: torch.Tensor, num_nodes: torch.Tensor,
                  eigvals: Optional[torch.Tensor] = None) -> Dict[str, Any]:
    """Per graph and column, min(|v - w|, |v + w|) (max over nodes): how many columns agree up to sign, in all
    and among the columns of a simple eigenvalue (unique eigenvector up to sign: these must agree; a repeated
    eigenvalue's columns are any basis of its space, so they are only counted). ``eigvals`` ``(N, k)`` (each
    node carrying its graph's); without them every column counts as simple."""
    ref = torch.nan_to_num(ref.reshape(ours.shape), nan=0.0).double()
    ours = ours.double()
    graph_of_node = torch.repeat_interleave(torch.arange(len(num_nodes)), num_nodes)
    worst = torch.zeros(len(num_nodes), ours.shape[1], dtype=torch.float64)
    for sign in (1.0, -1.0):
        diff = (ours - sign * ref).abs()
        index = graph_of_node.unsqueeze(1).expand_as(diff)
        per_graph = torch.zeros_like(worst).scatter_reduce_(0, index, diff, "amax", include_self=False)
        worst = per_graph if sign == 1.0 else torch.minimum(worst, per_graph)
    matched = worst <= 1e-4
    simple = torch.ones_like(matched)
    if eigvals is not None and len(num_nodes):
        firsts = torch.cumsum(num_nodes, 0) - num_nodes
        per_graph = eigvals.double()[firsts.clamp(max=max(len(eigvals) - 1, 0))]  # (G, k)
        close = (per_graph[:, 1:] - per_graph[:, :-1]).abs() <= 1e-6
        simple[:, 1:] &= ~close
        simple[:, :-1] &= ~close
    return {"eigvec_columns_matched": int(matched.sum()), "eigvec_columns": int(matched.numel()),
            "eigvec_simple_columns_matched": int((matched & simple).sum()), "eigvec_simple_columns": int(simple.sum())}


def check_graphs(splits: DatasetSplits, reference_file: PathLike) -> Dict[str, Any]:
    """Compare ``splits`` with a :mod:`.reference_dump` file: ``{"equal": bool, "train": {...}, ...}``."""
    ref = torch.load(reference_file)
    report: Dict[str, Any] = {}
    for split in ("train", "val", "test"):
        report[split] = compare_split(concat_ours(getattr(splits, split)), ref[split])
    report["equal"] = all(report[s]["equal"] for s in ("train", "val", "test"))
    return report


def describe(report: Dict[str, Any]) -> str:
    """One line per split: sizes and the largest differences."""
    lines = []
    for split in ("train", "val", "test"):
        r = report[split]
        if not r["sizes_equal"]:
            lines.append(f"{split}: sizes differ (graphs ours/ref {r['graphs'][0]}/{r['graphs'][1]})")
            continue
        text = (f"{split}: {r['graphs'][0]} graphs, labels {'equal' if r['labels_equal'] else 'DIFFER'}, "
                f"edges {'equal' if r['edges_equal'] else 'DIFFER'}, node features max |diff| {r['x_max_diff']:.2g}, "
                f"edge features max |diff| {r['edge_attr_max_diff']:.2g}")
        if "eigvals_max_diff" in r:
            text += f", eigenvalues max |diff| {r['eigvals_max_diff']:.2g}"
        if "eigvec_columns" in r:
            text += (f", eigenvectors equal up to sign in {r['eigvec_columns_matched']}/{r['eigvec_columns']} columns"
                     f" ({r['eigvec_simple_columns_matched']}/{r['eigvec_simple_columns']} of simple eigenvalues, "
                     "which must all agree)")
        lines.append(text)
    return "\n".join(lines)
