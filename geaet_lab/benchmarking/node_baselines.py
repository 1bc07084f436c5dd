"""GEAET beside a 2-layer GCN and a 2-layer MLP on the same graph files with node masks, in one run.

:func:`compare_with_baselines` trains, on each graph file (one graph with
``train_mask`` / ``val_mask`` / ``test_mask``; e.g. the ten split files of a
geom-gcn dataset) and each seed:

* GEAET with the run's defaults (what ``train --dataset FILE [--preset P]`` trains: without a preset, the
  node recipe with the best validation metric, :mod:`geaet_dgl.training.recipe_choice`);
* a 2-layer GCN of DGL's own ``GraphConv`` (Kipf and Welling's training: ReLU,
  dropout 0.5 on the input and the hidden layer, Adam with L2 weight decay 5e-4,
  lr 0.01, 200 epochs; ``hidden`` units, default 64);
* a 2-layer MLP (the same, without the graph),

each baseline trained by the library's one training loop (a :class:`BaselineTask` handed to
:class:`~geaet_dgl.training.trainer.Trainer`) and picked at its best validation epoch, its features
row-normalised when the GEAET run's preset row-normalises them. Rows hold the mean ± sample
std of the test metric over files x seeds.

:func:`node_set_files` writes the splits of a named node set (``cora``, ``actor``,
...) as such files, read by DGL's own loader as ``train --dataset NAME`` reads them,
so a geom-gcn set's ten splits are compared in one run.

Example
-------
>>> from geaet_dgl.data.generated.node_graphs import planted_partition
>>> g = planted_partition(200, 3, 0.05, 0.005, signal=2.0, seed=0)
>>> 0.3 < train_baseline(g, "mlp", seed=0, epochs=20)["test"] <= 1.0
True
"""
from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import dgl
import torch
import torch.nn.functional as F
from torch import nn

from geaet_dgl.atomic import atomic_write
from geaet_dgl.config import RunConfig, TrainConfig
from geaet_dgl.data import input_transform
from geaet_dgl.training.metrics import MetricAccumulator
from geaet_dgl.training.task import Step, Task
from geaet_dgl.training.trainer import Trainer

from ..studies.node_samplers import FullBatch, quiet_training_log

PathLike = Union[str, os.PathLike]
BASELINES = ("gcn", "mlp")


class TwoLayer(nn.Module):
    """``x -> Dropout -> Layer1 -> ReLU -> Dropout -> Layer2``: DGL ``GraphConv`` layers (``gcn``) or ``Linear``
    (``mlp``). (N, F) -> (N, classes)."""

    def __init__(self, kind: str, in_feats: int, hidden: int, classes: int, dropout: float = 0.5):
        super().__init__()
        if kind not in BASELINES:
            raise ValueError(f"kind={kind!r} is not one of {', '.join(BASELINES)}")
        from dgl.nn import GraphConv

        self.kind = kind
        make = (lambda a, b: GraphConv(a, b, allow_zero_in_degree=True)) if kind == "gcn" else nn.Linear
        self.first, self.second = make(in_feats, hidden), make(hidden, classes)
        self.dropout = nn.Dropout(dropout)

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def forward(self, graph: dgl.DGLGraph, feat: torch.Tensor) -> torch.Tensor:
        h = self.dropout(feat)
        h = self.first(graph, h) if self.kind == "gcn" else self.first(h)
        h = self.dropout(F.relu(h))
        return self.second(graph, h) if self.kind == "gcn" else self.second(h)


class BaselineTask(Task):
    """A :class:`TwoLayer` on one graph with node masks as a task of the library's training loop: one full-batch
    step per epoch on the ``train_mask`` nodes, ``val_mask`` / ``test_mask`` scored after it (dropout off).

    ``row_normalize``: the library's ``data.feature_norm=row`` arithmetic
    (:func:`geaet_dgl.data.input_transform.row_normalize`, each row over its absolute sum). The GCN's graph
    gets one self-loop per node (existing ones replaced)."""

    def __init__(self, graph: dgl.DGLGraph, kind: str, hidden: int = 64, row_normalize: bool = False,
                 metric: str = "accuracy"):
        if kind not in BASELINES:
            raise ValueError(f"kind={kind!r} is not one of {', '.join(BASELINES)}")
        self.kind, self.hidden, self.metric = kind, hidden, metric
        self.feat = input_transform.row_normalize(graph.ndata["feat"]) if row_normalize else graph.ndata["feat"].float()
        self.label = graph.ndata["label"].long()
        self.masks = {name: graph.ndata[f"{name}_mask"].bool() for name in ("train", "val", "test")}
        self.classes = int(self.label[self.masks["train"] | self.masks["val"] | self.masks["test"]].max()) + 1
        self.graph = dgl.add_self_loop(dgl.remove_self_loop(graph)) if kind == "gcn" else graph

    def build_model(self, config: Any) -> nn.Module:
        return TwoLayer(self.kind, self.feat.shape[1], self.hidden, self.classes)

    def train_batches(self, epoch: int, start_step: int) -> FullBatch:
        return FullBatch(1, start_step)

    def training_step(self, model: nn.Module, batch: Any, loss_fn: Any) -> Step:
        train = self.masks["train"]
        output = model(self.graph, self.feat)[train]
        return Step(loss_fn(output, self.label[train]), output, self.label[train], int(train.sum()))

    @torch.no_grad()
    def score_splits(self, model: nn.Module, loss_fn: Any, epoch: int) -> Tuple[Dict[str, float], Dict[str, float]]:
        model.eval()
        output = model(self.graph, self.feat)
        scores = []
        for split in ("val", "test"):
            mask = self.masks[split]
            accumulator = MetricAccumulator(self.metric)
            accumulator.update(output[mask], self.label[mask], float(loss_fn(output[mask], self.label[mask])), 1)
            scores.append(accumulator.compute())
        return scores[0], scores[1]

    def sizes(self) -> Dict[str, int]:
        return {split: int(mask.sum()) for split, mask in self.masks.items()}


def train_baseline(graph: dgl.DGLGraph, kind: str, seed: int = 0, hidden: int = 64, epochs: int = 200,
                   lr: float = 0.01, weight_decay: float = 5e-4, row_normalize: bool = False,
                   metric: str = "accuracy") -> Dict[str, float]:
    """Train a :class:`TwoLayer` on ``graph``'s ``train_mask`` nodes through the library's one training loop
    (:class:`~geaet_dgl.training.trainer.Trainer` with a :class:`BaselineTask`: full batch, Adam with coupled
    L2 weight decay, a constant learning rate, no clipping, a temporary run folder);
    -> ``{"val", "test", "epoch"}`` values of ``metric`` (the GEAET run's: ROC-AUC on minesweeper, tolokers and
    questions) at the best validation epoch (first of equals)."""
    run = RunConfig(preset=f"{kind}-baseline", train=TrainConfig(
        batch_size=1, lr=lr, weight_decay=weight_decay, epochs=epochs, warmup_epochs=0, clip_grad_norm=None,
        loss="cross_entropy", metric=metric, seed=seed, optimizer="adam", schedule="constant"))
    task = BaselineTask(graph, kind, hidden, row_normalize, metric)
    with tempfile.TemporaryDirectory() as folder, quiet_training_log():
        summary = Trainer(run, folder, task, progress=False).fit()
    return {"val": summary["val_metric"], "test": summary["test_metric"], "epoch": summary["best_epoch"]}


def node_set_files(name: str, data_dir: PathLike, splits: Sequence[int], folder: PathLike) -> List[str]:
    """Write split ``k`` of the named node set ``name`` (read from DGL's ``raw_dir`` ``data_dir``) as
    ``folder/<name>_split<k>.bin`` for each ``k`` of ``splits`` (all public splits when empty); -> the paths.

    Each file holds the graph ``train --dataset NAME --split-index k`` trains on (features, labels, the
    split's three ``(N,)`` masks), so ``make_run_config(FILE, preset=NAME)`` builds the same run.
    """
    from geaet_dgl.data.nodes.node_sets import node_set_graph, node_set_splits

    indices = list(splits) or list(range(node_set_splits(name, data_dir)))
    os.makedirs(folder, exist_ok=True)
    paths = []
    for index in indices:
        graph, _, _, _ = node_set_graph(name, data_dir, split_index=index)
        path = os.path.join(os.fspath(folder), f"{name}_split{index}.bin")
        with tempfile.TemporaryDirectory() as scratch:  # dgl.save_graphs writes to a name, not a file object
            saved = os.path.join(scratch, "graph.bin")
            dgl.save_graphs(saved, [graph])
            with open(saved, "rb") as source, atomic_write(path) as target:
                shutil.copyfileobj(source, target)
        paths.append(path)
    return paths


def _mean_std(values: Sequence[float]) -> Dict[str, float]:
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values)}


def compare_with_baselines(files: Sequence[PathLike], out: PathLike, seeds: Sequence[int] = (0, 1, 2),
                           preset: Optional[str] = None, overrides: Optional[Mapping[str, Any]] = None,
                           hidden: int = 64, threads: int = 1, skip_geaet: bool = False,
                           skip_baselines: bool = False, progress: bool = False) -> Dict[str, Dict[str, Any]]:
    """Each file x seed: GEAET (into ``out/<file stem>/seed<k>``), the GCN and the MLP; -> ``{model: row}`` with
    ``test`` / ``val`` as ``{"mean", "std", "n"}`` and ``seconds`` (all its runs), and ``runs`` (per run).
    ``skip_geaet`` / ``skip_baselines`` leave out GEAET / the GCN and the MLP."""
    from geaet_dgl.training.new_run import make_run_config

    results: Dict[str, List[Dict[str, float]]] = {"geaet": [], "gcn": [], "mlp": []}
    seconds = {name: 0.0 for name in results}
    metric = "accuracy"
    for path in files:
        path = os.fspath(path)
        probe = make_run_config(path, preset=preset, overrides=dict(overrides or {}), threads=threads)
        row_norm, metric = probe.data.feature_norm == "row", probe.train.metric
        graph = dgl.load_graphs(path)[0][0]
        for seed in seeds:
            for kind in () if skip_baselines else BASELINES:
                started = time.perf_counter()
                row = train_baseline(graph, kind, seed=seed, hidden=hidden, row_normalize=row_norm, metric=metric)
                seconds[kind] += time.perf_counter() - started
                results[kind].append({"file": path, "seed": seed, **row})
            if skip_geaet:
                continue
            started = time.perf_counter()
            summary = _train_geaet(path, preset, {**(overrides or {}), "train.seed": seed}, threads,
                                   Path(out) / Path(path).stem / f"seed{seed}", progress)
            seconds["geaet"] += time.perf_counter() - started
            results["geaet"].append({"file": path, "seed": seed, "val": summary["val_metric"],
                                     "test": summary["test_metric"], "epoch": summary["best_epoch"],
                                     "preset": summary["preset"]})
    table = {}
    for name, runs in results.items():
        if runs:
            table[name] = {"test": _mean_std([r["test"] for r in runs]), "val": _mean_std([r["val"] for r in runs]),
                           "seconds": seconds[name], "runs": runs, "metric": metric}
    return table


def _train_geaet(path: str, preset: Optional[str], overrides: Mapping[str, Any], threads: int, run_dir: Path,
                 progress: bool) -> Dict[str, Any]:
    """GEAET on ``path`` as ``train --dataset PATH [--preset P]`` trains it: without a preset, a file of one graph
    with node masks gets the recipe with the best validation metric (:mod:`~geaet_dgl.training.recipe_choice`)."""
    from geaet_dgl.training.new_run import NODE_GRAPH_PRESET, make_run_config
    from geaet_dgl.training import train
    from geaet_dgl.training.recipe_choice import choose_node_recipe

    run = make_run_config(path, preset=preset, overrides=dict(overrides), threads=threads)
    if preset is not None or run.preset != NODE_GRAPH_PRESET or run.data.sampler != "full":
        return train(run, run_dir, overwrite=True, progress=progress)
    choice = choose_node_recipe(path, lambda name: make_run_config(path, name, dict(overrides), threads=threads),
                                workdir=run_dir.parent)
    return choice.run_into(run_dir, True, lambda: train(
        make_run_config(path, choice.preset, dict(overrides), threads=threads), run_dir, overwrite=True,
        progress=progress))


def format_table(table: Mapping[str, Mapping[str, Any]]) -> str:
    """A markdown table of :func:`compare_with_baselines`' rows (the run's metric, in %)."""
    names = {"geaet": "GEAET (dataset defaults)", "gcn": "2-layer GCN (DGL GraphConv)", "mlp": "2-layer MLP"}
    metric = next((row.get("metric", "accuracy") for row in table.values()), "accuracy").replace("_", "-")
    lines = [f"| model | test {metric} (%) | val {metric} (%) | runs | seconds |", "|---|---|---|---|---|"]
    for key, row in table.items():
        test, val = row["test"], row["val"]
        lines.append(f"| {names.get(key, key)} | {100 * test['mean']:.2f} ± {100 * test['std']:.2f} | "
                     f"{100 * val['mean']:.2f} ± {100 * val['std']:.2f} | {test['n']} | {row['seconds']:.0f} |")
    return "\n".join(lines)
