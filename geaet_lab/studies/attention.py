"""Attention maps: what GEANet's external units and the self-attention look at, per node.

For each chosen graph the trained model runs on that graph **alone** (a batch
of one), in eval mode, and every layer reports

- **GEANet node unit**: the doubly normalised weights ``A`` of shape (N, H, S)
  (softmax over the graph's nodes, then each node's row normalised over the S
  slots: ``A[i, h, :].sum() == 1``). The per-node score is

  ``geanet_score[i] = mean_h max_s A[i, h, s]``  (range [1/S, 1]),

  how strongly node i is claimed by a single external memory slot: 1/S means
  the node spreads evenly over the slots (nothing distinctive), 1 that one
  slot owns it. The full weights are in the JSON too.
- **Transformer branch** (if the model has one): the self-attention each node
  *receives*, ``received[k] = mean_h mean_q W[h, q, k]`` with ``W[h, q, :]``
  the softmax of query q over the graph's nodes; these scores sum to 1 over
  the nodes of the graph.

The maps of the figure average the per-layer scores over layers.

In ``geanet.scope='batch'`` (the paper presets) GEANet's softmax runs over all
nodes of a mini-batch, so its weights depend on which graphs share the batch.
Running each graph alone makes them a property of the graph (and equal to
``scope='graph'``); the JSON says so.

Layout: superpixel graphs (``ndata['feat']`` ending in row, col: MNIST's
intensity, row/28, col/28; CIFAR10's r, g, b, row/32, col/32) are drawn at
their superpixel positions; other graphs with a
networkx spring layout (seed 0).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import dgl
import torch

from geaet_dgl.atomic import atomic_write
from geaet_dgl.scoring import open_trained_run
from geaet_dgl.training import CheckpointError
from geaet_dgl.data.run_splits import load_splits
from geaet_dgl.data.model_fit import FIT_TRAINED, check_data_fits

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

ATTENTION_JSON = "attention.json"
SUPERPIXEL_DATASETS = ("mnist", "synthetic", "cifar10")
GEANET_SCORE = "geanet_score[i] = mean over heads of (max over the S slots of the doubly normalised weight A[i,h,s])"
RECEIVED_SCORE = "received[k] = mean over heads and over query nodes q of the self-attention weight W[h,q,k]"
SCOPE_NOTE = ("each graph runs alone (a batch of one): with geanet.scope='batch' the GEANet weights depend on "
              "the batch, so these are the graph's own weights (equal to scope='graph')")


def geanet_node_score(weights: torch.Tensor) -> torch.Tensor:
    """(N, H, S) doubly normalised GEANet weights -> (N,) ``mean_h max_s``."""
    return weights.max(dim=-1).values.mean(dim=-1)


def received_self_attention(weights: torch.Tensor) -> torch.Tensor:
    """(H, N, N) self-attention of one graph (``[h, q, k]``) -> (N,) attention each key node receives."""
    return weights.mean(dim=(0, 1))


@torch.no_grad()
def attention_maps(checkpoint: PathLike, graphs: Sequence[int], split: str = "test",
                   data: Optional[Mapping[str, Any]] = None, out: Optional[PathLike] = None,
                   draw: bool = True, progress: bool = False) -> Dict[str, Any]:
    """Compute (and draw) the attention maps of ``graphs`` of ``split``.

    Parameters
    ----------
    checkpoint : path-like
        ``best.pt`` / ``last.pt`` of a run; model and data settings come from it.
    graphs : sequence of int
        Indices into the split.
    split : {'train', 'val', 'test'}
    data : mapping, optional
        :class:`DataOptions` fields replacing the run's (``dataset``, ``data_dir``,
        ``limit_*``). Unless given, MNIST loads only the first ``max(graphs)+1``
        graphs of the split.
    out : path-like, optional
        Folder for ``graph<idx>.png`` and ``attention.json`` (default: ``attention/``
        next to the checkpoint).

    Returns
    -------
    dict
        The JSON written: ``{"checkpoint", "dataset", "split", "scores", "note", "graphs": [...]}``,
        each graph ``{"index", "label", "prediction", "num_nodes", "geanet": {"layers": [{"weights"
        (N, H, S), "score" (N,)}], "score"}, "transformer": {"layers": [{"received"}], "score"} | None,
        "png"}``.
    """
    if split not in ("train", "val", "test"):
        raise ValueError(f"split={split!r} is not one of train, val, test")
    graphs = [int(g) for g in graphs]
    if not graphs or min(graphs) < 0:
        raise CheckpointError("give at least one graph index, each >= 0")
    options = dict(data or {})
    run, model, _ = open_trained_run(checkpoint, options, device="cpu")
    if run.data.dataset != "synthetic" and f"limit_{split}" not in options:
        limits = {f"limit_{name}": max(graphs) + 1 if name == split else 1  # a prefix of the split: same graphs
                  for name in ("train", "val", "test") if name == split or f"limit_{name}" not in options}
        run = dataclasses.replace(run, data=dataclasses.replace(run.data, **limits)).validate()
    splits = load_splits(run.data, run.model, progress=progress)
    check_data_fits(run.model, splits, fix=FIT_TRAINED)
    dataset = getattr(splits, split)
    too_big = [g for g in graphs if g >= len(dataset)]
    if too_big:
        raise CheckpointError(f"graph index {too_big} out of range: the {split} split has {len(dataset)} graphs "
                              f"(raise --limit-{split})")

    geanets = [layer.external_model for layer in model.layers
               if layer.external_model is not None and layer.external_model.node_unit]
    attentions = [layer.global_model for layer in model.layers if layer.global_model is not None]
    for module in geanets + attentions:
        module.keep_attention = True
    out = Path(out) if out is not None else Path(checkpoint).resolve().parent / "attention"
    out.mkdir(parents=True, exist_ok=True)
    result: Dict[str, Any] = {
        "checkpoint": str(checkpoint), "dataset": run.data.dataset, "split": split,
        "geanet_scope": run.model.geanet.scope, "note": SCOPE_NOTE,
        "scores": {"geanet": GEANET_SCORE, "transformer": RECEIVED_SCORE, "layers": "figure = mean over layers"},
        "graphs": [],
    }
    try:
        for index in graphs:
            graph, label = dataset[index]
            output = model(dgl.batch([graph]))
            entry = _graph_entry(index, graph, label, output, geanets, attentions, run.train.loss)
            if draw:
                png = out / f"graph{index}.png"
                draw_attention(graph, entry, png, superpixel=run.data.dataset in SUPERPIXEL_DATASETS,
                               title=f"{run.data.dataset} {split} graph {index} (label {_brief(entry['label'])}, "
                                     f"predicted {_brief(entry['prediction'])})")
                entry["png"] = str(png)
            result["graphs"].append(entry)
    finally:
        for module in geanets + attentions:
            module.keep_attention = False
    with atomic_write(out / ATTENTION_JSON, "w") as handle:  # compact: the weights are many numbers
        json.dump(result, handle)
        handle.write("\n")
    return result


def _graph_entry(index: int, graph: dgl.DGLGraph, label: torch.Tensor, output: torch.Tensor, geanets: List,
                 attentions: List, loss: str) -> Dict[str, Any]:
    if loss == "l1":  # regression: the predicted value(s)
        prediction: Any = output.reshape(-1).tolist()
    elif output.shape[-1] == 1:  # binary task: one logit
        prediction = (output.reshape(-1) > 0).long().tolist()
    else:
        prediction = output.argmax(dim=-1).tolist()
    if isinstance(prediction, list) and len(prediction) == 1:
        prediction = prediction[0]
    entry: Dict[str, Any] = {"index": index, "label": label.tolist(), "prediction": prediction,
                             "num_nodes": graph.num_nodes(), "geanet": None, "transformer": None}
    if geanets:
        layers = []
        for module in geanets:
            weights = module.last_node_attention  # (N, H, S)
            layers.append({"weights": _rounded(weights), "score": _rounded(geanet_node_score(weights))})
        entry["geanet"] = {"layers": layers, "score": _mean_over_layers([l["score"] for l in layers])}
    if attentions:
        layers = []
        for module in attentions:
            weights = module.last_attention[0]  # (H, N, N): a batch of one graph, no padding
            layers.append({"received": _rounded(received_self_attention(weights))})
        entry["transformer"] = {"layers": layers, "score": _mean_over_layers([l["received"] for l in layers])}
    return entry


def _rounded(values: torch.Tensor, digits: int = 7) -> Any:
    """Nested lists of floats rounded to ``digits`` decimals (keeps the JSON small; sums stay within 1e-6)."""
    return torch.round(values.double(), decimals=digits).tolist()


def _brief(value: Any) -> str:
    """A label or prediction for a title: floats rounded, long lists cut."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list):
        shown = ", ".join(_brief(v) for v in value[:4])
        return f"[{shown}{', ...' if len(value) > 4 else ''}]"
    return str(value)


def _mean_over_layers(rows: List[List[float]]) -> List[float]:
    return torch.tensor(rows).mean(dim=0).tolist()


def graph_positions(graph: dgl.DGLGraph, superpixel: bool) -> Dict[int, Any]:
    """Node -> (x, y): superpixel centres (col, -row) for image graphs, else a seeded spring layout.

    Superpixel features end with (row, col): MNIST (intensity, row, col), CIFAR10 (r, g, b, row, col).
    """
    import networkx as nx

    feat = graph.ndata.get("feat")
    if superpixel and feat is not None and feat.dim() == 2 and feat.shape[1] >= 3:
        return {i: (float(feat[i, -1]), -float(feat[i, -2])) for i in range(graph.num_nodes())}
    return nx.spring_layout(_to_networkx(graph), seed=0)


def _to_networkx(graph: dgl.DGLGraph):
    import networkx as nx

    nx_graph = nx.Graph()
    nx_graph.add_nodes_from(range(graph.num_nodes()))
    src, dst = graph.edges()
    nx_graph.add_edges_from((int(u), int(v)) for u, v in zip(src, dst) if int(u) != int(v))
    return nx_graph


def draw_attention(graph: dgl.DGLGraph, entry: Mapping[str, Any], path: PathLike, superpixel: bool,
                   title: str = "") -> None:
    """One PNG: the graph (node colour = first input feature), GEANet score, received self-attention."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    nx_graph = _to_networkx(graph)
    pos = graph_positions(graph, superpixel)
    panels = [("input (feature 0)", graph.ndata["feat"][:, 0].tolist() if "feat" in graph.ndata else None, "Greys")]
    if entry.get("geanet"):
        panels.append(("GEANet: mean_h max_s A", entry["geanet"]["score"], "viridis"))
    if entry.get("transformer"):
        panels.append(("Transformer: attention received", entry["transformer"]["score"], "magma"))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4.2), squeeze=False)
    size = max(20.0, 3000.0 / max(graph.num_nodes(), 1))
    for ax, (name, values, cmap) in zip(axes[0], panels):
        nx.draw_networkx_edges(nx_graph, pos, ax=ax, edge_color="#bbbbbb", width=0.5)
        nodes = nx.draw_networkx_nodes(nx_graph, pos, ax=ax, node_size=size, cmap=cmap, edgecolors="#666666",
                                       linewidths=0.4, node_color=values if values is not None else "#444444")
        if values is not None:
            fig.colorbar(nodes, ax=ax, fraction=0.046, pad=0.04)
        ax.set_title(name, fontsize=10)
        ax.set_axis_off()
        ax.set_aspect("equal")
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
