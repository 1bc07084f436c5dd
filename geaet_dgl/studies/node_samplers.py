"""The samplers compared on one graph with node masks: full, cluster and random, against logistic regression.

:func:`compare_samplers` trains the same run once per sampler (``full``,
``cluster``, ``random``; the other settings equal) and fits a multinomial
logistic regression on the node features alone (:func:`logistic_regression`),
so that one table shows whether sampling costs accuracy and whether the graph
helps. ``benchmarks/node_samplers.py`` runs it on a planted-partition graph
and on a kNN graph of MNIST images (docs/your-own-graphs.md).

Example
-------
>>> from geaet_dgl.data.generated.node_graphs import planted_partition
>>> round(logistic_regression(planted_partition(300, 3, 0.05, 0.005, signal=3.0, seed=0)), 2) > 0.9
True
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Dict, Mapping, Sequence, Union

import dgl
import torch
import torch.nn.functional as F

from ..training.node_batches import SAMPLERS

PathLike = Union[str, os.PathLike]


def logistic_regression(graph: dgl.DGLGraph, steps: int = 300, lr: float = 0.05, weight_decay: float = 1e-4,
                        seed: int = 0) -> float:
    """Test accuracy of a linear softmax classifier on ``ndata['feat']`` (standardised), trained on the
    ``train_mask`` nodes (full-batch Adam, ``steps`` steps); the model picked at the best validation accuracy."""
    feat = graph.ndata["feat"].float()
    feat = (feat - feat.mean(0)) / feat.std(0).clamp(min=1e-6)
    label = graph.ndata["label"].long()
    train, val, test = (graph.ndata[name].bool() for name in ("train_mask", "val_mask", "test_mask"))
    generator = torch.Generator().manual_seed(seed)
    classes = int(label[train | val | test].max()) + 1
    weight = (torch.randn(feat.shape[1], classes, generator=generator) * 0.01).requires_grad_()
    bias = torch.zeros(classes, requires_grad=True)
    optimizer = torch.optim.Adam([weight, bias], lr=lr, weight_decay=weight_decay)
    best_val, best_test = -1.0, 0.0
    for _ in range(steps):
        optimizer.zero_grad()
        F.cross_entropy(feat[train] @ weight + bias, label[train]).backward()
        optimizer.step()
        with torch.no_grad():
            predicted = (feat @ weight + bias).argmax(1)
            val_acc = (predicted[val] == label[val]).double().mean().item()
            if val_acc > best_val:
                best_val, best_test = val_acc, (predicted[test] == label[test]).double().mean().item()
    return best_test


def compare_samplers(graph_file: PathLike, out: PathLike, overrides: Mapping[str, Any],
                     samplers: Sequence[str] = SAMPLERS, preset: str = None, threads: int = 1,
                     progress: bool = False) -> Dict[str, Dict[str, Any]]:
    """Train ``graph_file`` once per sampler into ``out/<sampler>``; -> ``{name: row}`` with the logistic
    regression as row ``'logistic regression'``.

    Each row: ``test_metric``, ``val_metric``, ``best_epoch``, ``params``, ``seconds`` (the whole run).
    """
    from ..training import make_run_config, train

    graphs, _ = dgl.load_graphs(os.fspath(graph_file))
    graph = graphs[0]
    for name in ("train_mask", "val_mask", "test_mask"):
        graph.ndata[name] = graph.ndata[name].bool()
    rows: Dict[str, Dict[str, Any]] = {"logistic regression": {"test_metric": logistic_regression(graph)}}
    for sampler in samplers:
        started = time.perf_counter()
        run = make_run_config(os.fspath(graph_file), preset=preset,
                              overrides={**overrides, "data.sampler": sampler}, threads=threads)
        summary = train(run, Path(out) / sampler, overwrite=True, progress=progress)
        rows[sampler] = {key: summary[key] for key in ("test_metric", "val_metric", "best_epoch", "params")}
        rows[sampler]["seconds"] = time.perf_counter() - started
    return rows


def format_rows(rows: Mapping[str, Mapping[str, Any]]) -> str:
    """A markdown table of :func:`compare_samplers`' rows (accuracies in %)."""
    lines = ["| model | test accuracy (%) | val accuracy (%) | best epoch | seconds |", "|---|---|---|---|---|"]
    for name, row in rows.items():
        val = f"{100 * row['val_metric']:.2f}" if "val_metric" in row else ""
        seconds = f"{row['seconds']:.0f}" if "seconds" in row else ""
        lines.append(f"| {name} | {100 * row['test_metric']:.2f} | {val} | {row.get('best_epoch', '')} | {seconds} |")
    return "\n".join(lines)
