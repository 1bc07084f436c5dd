"""The heterograph model's two local MPNNs timed against each other: per relation, or typed weights.

``hetero.local_weights='relation'`` runs one GatedGCN per relation on that
relation's subgraph (:class:`~geaet_dgl.nn.hetero_mpnn.RelationMPNN`);
``'typed'`` runs one GatedGCN on the batch's homogeneous view with weights
per relation and node type (:class:`~geaet_dgl.nn.typed_gated_gcn.TypedGatedGCN`,
DGL's ``segment_mm``). Everything else (self-attention, typed GEANet, FFN,
head) is the same. For each number of relations, both models train and infer
on the same pre-built batches of :func:`~geaet_dgl.data.generated.hetero.random_heterographs`
(``num_etypes`` relations over ``min(num_etypes, 4)`` node types); each
(relations, weights) point runs in its own process (:mod:`.worker`), so
its peak RSS is its own, the two in alternating order.

Example
-------
>>> rows = run_hetero_benchmark([2], repeats=2, warmup=1, batch_size=4)  # doctest: +SKIP
>>> sorted(rows[0])  # doctest: +SKIP
['infer_graphs_per_s', 'local_weights', 'num_etypes', 'num_ntypes', 'peak_rss_mib', 'train_graphs_per_s']
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import dgl
import torch
import torch.nn.functional as F

from ..config import GEANetConfig, HeteroConfig, ModelConfig
from ..data.generated.hetero import random_heterographs
from ..models import build_model
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


def measure_hetero(local_weights: str, num_etypes: int, num_ntypes: int, batch_size: int = 32,
                   nodes_per_type: int = 20, edges_per_relation: int = 40, repeats: int = 10, warmup: int = 2,
                   threads: int = 1, device: str = "cpu", seed: int = 0) -> Dict[str, object]:
    """Inference then training graphs/s (median, min, max over ``repeats`` steps) and the peak memory."""
    set_threads(threads)
    torch_device = check_device(device)
    torch.manual_seed(seed)
    model = build_model(hetero_config(num_ntypes, num_etypes, local_weights)).to(torch_device)
    graphs = random_heterographs(4 * batch_size, num_ntypes, num_etypes, nodes_per_type, edges_per_relation,
                                 seed=seed)
    batches = [dgl.batch(graphs[i:i + batch_size]).to(torch_device) for i in range(0, len(graphs), batch_size)]
    labels = torch.arange(batch_size, device=torch_device) % 2
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def infer(batch):
        with torch.no_grad():
            model(batch)

    def step(batch):
        loss = F.cross_entropy(model(batch), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    result: Dict[str, object] = {"local_weights": local_weights, "num_etypes": num_etypes, "num_ntypes": num_ntypes,
                                 "params": sum(p.numel() for p in model.parameters())}
    for name, fn, train in (("infer", infer, False), ("train", step, True)):
        model.train(train)
        for i in range(warmup):
            fn(batches[i % len(batches)])
        seconds = [time_call(lambda b=batches[i % len(batches)]: fn(b), torch_device) for i in range(repeats)]
        result[f"{name}_graphs_per_s"] = summarize(rates([batch_size] * repeats, seconds))
    result["peak_rss_mib"] = peak_rss_mib()
    if torch_device.type == "cuda":
        result["peak_gpu_mib"] = peak_gpu_mib(torch_device)
    return result


def run_hetero_benchmark(etypes: Sequence[int] = (2, 4, 6, 10), **options) -> List[Dict[str, object]]:
    """One row per (relations, local weights), each measured in its own process; order alternates per point."""
    rows = []
    for index, num_etypes in enumerate(etypes):
        order = LOCAL_WEIGHTS if index % 2 == 0 else LOCAL_WEIGHTS[::-1]
        for weights in order:
            rows.append(run_isolated("hetero", {"local_weights": weights, "num_etypes": int(num_etypes),
                                                "num_ntypes": min(int(num_etypes), 4), **options}))
    return sorted(rows, key=lambda r: (r["num_etypes"], LOCAL_WEIGHTS.index(r["local_weights"])))


def hetero_table(rows: List[Dict[str, object]]) -> str:
    """A markdown table: per relations count, both paths' train / inference graphs/s, peak RSS, and the ratios."""
    lines = ["| relations | node types | local weights | train graphs/s | inference graphs/s | peak RSS MiB |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['num_etypes']} | {row['num_ntypes']} | {row['local_weights']} | "
                     f"{row['train_graphs_per_s']['median']:.1f} | {row['infer_graphs_per_s']['median']:.1f} | "
                     f"{row['peak_rss_mib']:.0f} |")
    return "\n".join(lines)
