"""The heterograph model's two local MPNNs timed against each other: per relation, or typed weights.

``hetero.local_weights='relation'`` runs one GatedGCN per relation on that
relation's subgraph (:class:`~geaet_dgl.nn.hetero_mpnn.RelationMPNN`);
``'typed'`` runs one GatedGCN on the batch's homogeneous view with weights
per relation and node type (:class:`~geaet_dgl.nn.typed_gated_gcn.TypedGatedGCN`,
DGL's ``segment_mm``). Everything else (self-attention, typed GEANet, FFN,
head) is the same. For each number of relations, both models train and infer
on the same pre-built batches of :func:`~geaet_dgl.data.generated.hetero.random_heterographs`
(``num_etypes`` relations over ``min(num_etypes, 4)`` node types), timed
step by step in alternating order in one process (so load on the machine
hits both alike: the per-step ratio is the figure to read); each model's
peak RSS comes from a process of its own (:mod:`.worker`).

Example
-------
>>> from geaet_lab.benchmarking.jobs import HeteroJob, Timing
>>> job = HeteroJob(etypes=(2,), batch_size=4, timing=Timing(repeats=2, warmup=1))
>>> rows = run_hetero_benchmark(job)  # doctest: +SKIP
>>> rows[0]['typed_over_relation_train']  # doctest: +SKIP
1.3
"""
from __future__ import annotations

import dataclasses
import statistics
from typing import Dict, List

import dgl
import torch
import torch.nn.functional as F

from geaet_dgl.config import GEANetConfig, HeteroConfig, ModelConfig
from geaet_dgl.data.generated.hetero import random_heterographs
from geaet_dgl.models import build_model
from .jobs import HeteroJob
from .timing import check_device, peak_gpu_mib, peak_rss_mib, rates, set_threads, summarize, time_call
from .worker import run_isolated

LOCAL_WEIGHTS = ("relation", "typed")


def hetero_config(num_ntypes: int, num_etypes: int, local_weights: str, feats: int = 8,
                  hidden_dim: int = 64) -> ModelConfig:
    """The benchmarked model: the ``geaet`` preset's layer (GatedGCN + Transformer + GEANet, 4 layers of width 64,
    4 heads) on the schema of :func:`random_heterographs`, a graph head of 2 classes."""
    graph = random_heterographs(1, num_ntypes, num_etypes, nodes_per_type=1, edges_per_relation=1)[0]
    schema = HeteroConfig(ntypes=list(graph.ntypes), node_in_feats=[feats] * num_ntypes,
                          etypes=[":".join(r) for r in graph.canonical_etypes], edge_in_feats=[feats] * num_etypes,
                          local_weights=local_weights)
    return ModelConfig(hidden_dim=hidden_dim, num_layers=4, pe="none", out_feats=2, num_heads=4, head="graph",
                       geanet=GEANetConfig(num_heads=4, unit_size=hidden_dim // 4, edge_unit=True), hetero=schema)


def _setup(job: HeteroJob, local_weights: str, num_etypes: int, num_ntypes: int, device: torch.device):
    """The model (seeded), its optimizer, and the step functions ``infer(batch)`` / ``train(batch)``."""
    torch.manual_seed(job.timing.seed)
    model = build_model(hetero_config(num_ntypes, num_etypes, local_weights)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    labels = torch.arange(job.batch_size, device=device) % 2

    def infer(batch):
        model.eval()
        with torch.no_grad():
            model(batch)

    def train(batch):
        model.train()
        loss = F.cross_entropy(model(batch), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return model, infer, train


def _batches(job: HeteroJob, num_etypes: int, num_ntypes: int, device: torch.device) -> List[dgl.DGLGraph]:
    batch_size = job.batch_size
    graphs = random_heterographs(4 * batch_size, num_ntypes, num_etypes, job.nodes_per_type, job.edges_per_relation,
                                 seed=job.timing.seed)
    return [dgl.batch(graphs[i:i + batch_size]).to(device) for i in range(0, len(graphs), batch_size)]


def measure_hetero(local_weights: str, num_etypes: int, num_ntypes: int, job: HeteroJob) -> Dict[str, object]:
    """One model alone (for its own process): inference then training graphs/s (median, min, max over
    ``job.timing.repeats`` steps) and the process's peak memory."""
    timing = job.timing
    set_threads(timing.threads)
    torch_device = check_device(timing.device)
    batches = _batches(job, num_etypes, num_ntypes, torch_device)
    model, infer, train = _setup(job, local_weights, num_etypes, num_ntypes, torch_device)
    result: Dict[str, object] = {"local_weights": local_weights, "num_etypes": num_etypes, "num_ntypes": num_ntypes,
                                 "params": sum(p.numel() for p in model.parameters())}
    for name, fn in (("infer", infer), ("train", train)):
        for i in range(timing.warmup):
            fn(batches[i % len(batches)])
        seconds = [time_call(lambda b=batches[i % len(batches)]: fn(b), torch_device) for i in range(timing.repeats)]
        result[f"{name}_graphs_per_s"] = summarize(rates([job.batch_size] * timing.repeats, seconds))
    result["peak_rss_mib"] = peak_rss_mib()
    if torch_device.type == "cuda":
        result["peak_gpu_mib"] = peak_gpu_mib(torch_device)
    return result


def measure_hetero_pair(num_etypes: int, num_ntypes: int, job: HeteroJob) -> Dict[str, object]:
    """Both models on the same batches, timed step by step in alternating order (drift hits both alike):
    per model the median graphs/s of inference and training, and the median of the per-step ratios
    typed / relation."""
    timing = job.timing
    set_threads(timing.threads)
    torch_device = check_device(timing.device)
    batches = _batches(job, num_etypes, num_ntypes, torch_device)
    steps = {w: _setup(job, w, num_etypes, num_ntypes, torch_device)[1:] for w in LOCAL_WEIGHTS}
    result: Dict[str, object] = {"num_etypes": num_etypes, "num_ntypes": num_ntypes}
    for phase, which in (("infer", 0), ("train", 1)):
        seconds = {w: [] for w in LOCAL_WEIGHTS}
        for i in range(timing.warmup + timing.repeats):
            batch = batches[i % len(batches)]
            for w in (LOCAL_WEIGHTS if i % 2 == 0 else LOCAL_WEIGHTS[::-1]):
                took = time_call(lambda: steps[w][which](batch), torch_device)
                if i >= timing.warmup:
                    seconds[w].append(took)
        for w in LOCAL_WEIGHTS:
            result[f"{w}_{phase}_graphs_per_s"] = summarize(rates([job.batch_size] * timing.repeats, seconds[w]))
        result[f"typed_over_relation_{phase}"] = statistics.median(
            r / t for r, t in zip(seconds["relation"], seconds["typed"]))
    return result


def run_hetero_benchmark(job: HeteroJob = HeteroJob()) -> List[Dict[str, object]]:
    """Per relation count of ``job.etypes``: the interleaved pair (:func:`measure_hetero_pair`) and, with
    ``job.memory``, each model's peak RSS from its own process (:func:`measure_hetero`, 2 steps per phase)."""
    job = dataclasses.replace(job, timing=job.timing.resolved())
    alone = dataclasses.replace(job, timing=dataclasses.replace(job.timing, repeats=2, warmup=0))
    rows = []
    for num_etypes in job.etypes:
        point = {"num_etypes": int(num_etypes), "num_ntypes": min(int(num_etypes), 4)}
        row = run_isolated("hetero_pair", {**point, "job": job})
        if job.memory:
            for weights in LOCAL_WEIGHTS:
                own = run_isolated("hetero", {**point, "local_weights": weights, "job": alone})
                row[f"{weights}_peak_rss_mib"] = own["peak_rss_mib"]
                if "peak_gpu_mib" in own:
                    row[f"{weights}_peak_gpu_mib"] = own["peak_gpu_mib"]
        rows.append(row)
    return rows


def hetero_table(rows: List[Dict[str, object]]) -> str:
    """A markdown table: per relation count, both paths' train / inference graphs/s, the paired ratios, peak RSS."""
    lines = ["| relations | node types | train graphs/s relation / typed | typed/relation (train) | "
             "inference graphs/s relation / typed | typed/relation (inference) | peak RSS MiB relation / typed |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        memory = (f"{row['relation_peak_rss_mib']:.0f} / {row['typed_peak_rss_mib']:.0f}"
                  if "relation_peak_rss_mib" in row else "")
        lines.append(
            f"| {row['num_etypes']} | {row['num_ntypes']} | {row['relation_train_graphs_per_s']['median']:.1f} / "
            f"{row['typed_train_graphs_per_s']['median']:.1f} | {row['typed_over_relation_train']:.2f} | "
            f"{row['relation_infer_graphs_per_s']['median']:.1f} / {row['typed_infer_graphs_per_s']['median']:.1f} | "
            f"{row['typed_over_relation_infer']:.2f} | {memory} |")
    return "\n".join(lines)
