"""Apply a trained checkpoint to new graphs: one row of predictions per graph (or per node).

``geaet-dgl predict --checkpoint best.pt --graphs NEW.bin --out preds.csv``
reads graphs written by ``dgl.save_graphs`` (labels, if any, are ignored),
checks them against what the checkpoint's model reads (feature widths,
integer vocabularies; :func:`geaet_dgl.data.own_files.graph_files.conform_graphs`),
computes the positional encodings the model uses, and writes

==========================  =========================================================
classification (per graph)  ``index, predicted, prob_0 .. prob_{C-1}`` (softmax; a
                            single-logit binary model gives ``prob_0 = 1 - p``)
multi-label (BCE)           ``index, predicted`` (the labels with p > 0.5, joined by
                            ``;``), ``prob_0 .. prob_{T-1}`` (sigmoid)
regression                  ``index, value`` or ``index, value_0 .. value_{T-1}``
node-level models           ``graph, node`` instead of ``index``
==========================  =========================================================

as CSV, or with ``as_json`` as JSON lines (``probabilities`` / ``value`` as
lists). The file is written atomically: whole, or not at all.

Batches are the file's graphs in order, ``train.batch_size`` of them, as the
run evaluated. In GEANet's batch scope (``model.geanet.scope=batch``, the
paper presets) a graph's output depends on the graphs batched with it, so the
batch size is the run's and is reported; in graph scope (the ``geaet`` preset)
every graph is predicted independently of the others.
"""
from __future__ import annotations

import csv
import io
import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

import dgl
import torch

from ..atomic import atomic_write
from ..config import ConfigError, ModelConfig
from ..data.errors import DataError
from ..data.own_files.graph_files import FeatureSpec, conform_graphs, read_graph_file
from ..data.own_files.hetero_files import HeteroSchema, conform_hetero_graphs
from ..data.identity import check_unchanged, file_identity, identity_changes
from ..data.nodes.node_graph import MASKS, frame_name, node_frame
from ..data.encodings.pe_cache import attach_pe, compute_split_pe
from ..data.input_transform import apply_input_transform
from ..data.registry import input_transform_of, laplacian_norm_of
from ..data.encodings.se_cache import attach_structural
from ..config import RunConfig
from ..data.run_splits import data_pe_sizes, structural_spec
from ..inference.geaet import fold_for_inference
from ..inference.layerwise import full_graph_forward
from .trained_run import open_trained_run

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
CLASS_LOSSES = ("cross_entropy", "weighted_cross_entropy")


@dataclass(frozen=True)
class OutputKind:
    """What a model's output means: ``level`` 'graph' or 'node'; ``kind`` 'classes', 'binary'
    (one logit), 'multilabel' or 'regression'; ``width`` its last dimension."""

    level: str
    kind: str
    width: int


def output_kind(run: RunConfig) -> OutputKind:
    """Read the meaning of the model's output from the run's head and loss."""
    model, loss = run.model, run.train.loss
    if model.head == "link":
        raise ConfigError("this checkpoint scores node pairs (a link-prediction head); predict writes graph and "
                          "node outputs: score it with `geaet-dgl eval`")
    level = "node" if model.head == "node" else "graph"
    if loss in CLASS_LOSSES:
        kind = "binary" if model.out_feats == 1 else "classes"
    elif loss == "bce":
        kind = "multilabel"
    else:
        kind = "regression"
    return OutputKind(level, kind, model.out_feats)


def feature_spec(model: ModelConfig) -> FeatureSpec:
    """What ``model`` reads from a graph, as a :class:`FeatureSpec` (no edge features for a constant encoder)."""
    node_vocab = tuple(model.node_vocab_sizes) if model.node_encoder in ("embedding", "typedict") else None
    if model.edge_encoder == "constant":
        return FeatureSpec(model.node_in_feats, node_vocab, 0, None)
    edge_vocab = tuple(model.edge_vocab_sizes) if model.edge_encoder in ("embedding", "typedict") else None
    return FeatureSpec(model.node_in_feats, node_vocab, model.edge_in_feats, edge_vocab)


def prepare_graphs(graphs: List[dgl.DGLGraph], path: PathLike, run: RunConfig, checkpoint: PathLike = "",
                   progress: bool = False) -> None:
    """Check ``graphs`` against the run's model, transform their features as the run's loader did
    (``data.input_transform``, e.g. VOC/COCO's standardisation) and attach the positional encodings it reads
    (in place). The graphs' features are those the dataset's files store."""
    trained_on = f"as checkpoint {os.fspath(checkpoint)} was trained" if checkpoint else ""
    hetero = run.model.hetero
    if hetero.ntypes:  # no positional encoding on heterographs
        schema = HeteroSchema(tuple(hetero.ntypes), tuple(hetero.node_in_feats), tuple(hetero.canonical_etypes),
                              tuple(hetero.edge_in_feats), hetero.target_ntype)
        conform_hetero_graphs(graphs, path, schema, trained_on=trained_on or "the model")
        return
    conform_graphs(graphs, path, feature_spec(run.model), trained_on=trained_on)
    apply_input_transform(graphs, run.data.input_transform or input_transform_of(run.data.dataset))
    pe_k, rwse_k = data_pe_sizes(run.model)
    norm = run.data.laplacian_norm or laplacian_norm_of(run.data.dataset)
    attach_pe(graphs, compute_split_pe(graphs, pe_k, norm, rwse_k, progress=progress and bool(pe_k or rwse_k)))
    attach_structural(graphs, structural_spec(run.model))


@torch.no_grad()
def model_outputs(model: torch.nn.Module, graphs: List[dgl.DGLGraph], batch_size: int,
                  device: Union[str, torch.device] = "cpu") -> List[torch.Tensor]:
    """Outputs of ``graphs`` in order, batched ``batch_size`` at a time: one ``(out_feats,)`` tensor per
    graph for graph heads, one ``(N_i, out_feats)`` per graph for node heads."""
    device = torch.device(device)
    config = model.config
    if config.head == "node" and len(graphs) == 1:
        # one graph: every node with the whole graph as context, layer by layer when one pass does not fit
        # (a heterograph: its target type's nodes, in one pass)
        return [full_graph_forward(model.to(device), graphs[0].to(device)).cpu()]
    model = fold_for_inference(model.to(device))  # eval mode, BatchNorms folded: same outputs, faster
    outputs: List[torch.Tensor] = []
    for start in range(0, len(graphs), batch_size):
        chunk = graphs[start:start + batch_size]
        output = model(dgl.batch(chunk).to(device)).cpu()
        output = output.reshape(output.shape[0], -1)
        if config.head == "node":
            target = config.hetero.target_ntype or None  # a heterograph model predicts its target type's nodes
            outputs.extend(torch.split(output, [g.num_nodes(target) for g in chunk]))
        else:
            outputs.extend(output)
    return outputs


def _describe(output: torch.Tensor, kind: OutputKind) -> Dict[str, Any]:
    """One row's prediction fields from its output vector ``(out_feats,)``."""
    if kind.kind == "regression":
        values = [float(v) for v in output]
        return {"value": values[0] if len(values) == 1 else values}
    if kind.kind == "binary":
        p = float(torch.sigmoid(output[0]))
        return {"predicted": int(p > 0.5), "probabilities": [1.0 - p, p]}
    if kind.kind == "multilabel":
        probs = [float(v) for v in torch.sigmoid(output)]
        return {"predicted": [i for i, p in enumerate(probs) if p > 0.5], "probabilities": probs}
    probs = torch.softmax(output.double(), dim=-1)
    return {"predicted": int(output.argmax()), "probabilities": [float(p) for p in probs]}


def prediction_rows(outputs: List[torch.Tensor], kind: OutputKind) -> List[Dict[str, Any]]:
    """Rows ``{"index", "predicted", "probabilities"}`` / ``{"index", "value"}`` (``"graph", "node"`` for nodes)."""
    rows = []
    for index, output in enumerate(outputs):
        if kind.level == "node":
            rows.extend({"graph": index, "node": node, **_describe(vector, kind)} for node, vector in enumerate(output))
        else:
            rows.append({"index": index, **_describe(output, kind)})
    return rows


def _csv_text(rows: List[Dict[str, Any]], kind: OutputKind) -> str:
    ids = ["graph", "node"] if kind.level == "node" else ["index"]
    if kind.kind == "regression":
        header = ids + (["value"] if kind.width == 1 else [f"value_{i}" for i in range(kind.width)])
    else:
        classes = 2 if kind.kind == "binary" else kind.width
        header = ids + ["predicted"] + [f"prob_{c}" for c in range(classes)]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        line = [row[key] for key in ids]
        if kind.kind == "regression":
            line += row["value"] if isinstance(row["value"], list) else [row["value"]]
        else:
            predicted = row["predicted"]
            line.append(";".join(map(str, predicted)) if isinstance(predicted, list) else predicted)
            line += row["probabilities"]
        writer.writerow([repr(v) if isinstance(v, float) else v for v in line])
    return buffer.getvalue()


def predict_file(checkpoint: PathLike, graphs_path: PathLike, out: PathLike, as_json: bool = False,
                 device: str = "cpu", progress: bool = True, nodes: Optional[str] = None,
                 allow_changed_data: bool = False) -> Dict[str, Any]:
    """Predict every graph of ``graphs_path`` with ``checkpoint``; write the rows to ``out``.

    A node-level model on a file of one graph scores every node with the
    whole graph as context (:func:`~.layerwise.full_graph_forward`);
    ``nodes`` ('train', 'val' or 'test') keeps only the rows of the nodes in
    that mask of the graph (``ndata['<nodes>_mask']``, on a heterograph the
    target type's ``nodes[t].data['<nodes>_mask']``). When that file is the
    one the run trained on, its masks are the run's split: a file changed since
    training is refused (``allow_changed_data``: read as it is now, logged).

    Returns
    -------
    dict
        ``{"rows", "graphs", "level", "kind", "batch_size", "scope", "out", "whole_graph"}``.
    """
    run, model, _ = open_trained_run(checkpoint)
    kind = output_kind(run)
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device=cuda but no CUDA device is available; use --device cpu")
    graphs, _ = read_graph_file(graphs_path)
    keep = None
    if nodes is not None:
        check_own_file_unchanged(run, graphs_path, len(graphs), allow_changed_data)
        keep = node_selection(graphs, graphs_path, nodes, kind.level, run.model.hetero.target_ntype)
    prepare_graphs(graphs, graphs_path, run, checkpoint, progress=progress)
    batch_size, scope = run.train.batch_size, run.model.geanet.scope
    whole_graph = kind.level == "node" and len(graphs) == 1
    uses_batch = run.model.external and scope == "batch"
    if whole_graph:
        target = run.model.hetero.target_ntype or None
        log.info("scoring the %d %snodes of one graph, each with the whole graph as context",
                 graphs[0].num_nodes(target), f"{target!r} " if target else "")
    else:
        log.info("predicting %d graphs in batches of %d (the run's train.batch_size)%s", len(graphs), batch_size,
                 "; GEANet scope=batch: a graph's output depends on the graphs batched with it" if uses_batch
                 else "; each graph is predicted independently of the others")
    rows = prediction_rows(model_outputs(model, graphs, batch_size, device), kind)
    if keep is not None:
        rows = [row for row in rows if keep[row["node"]]]
    with atomic_write(out, "w") as handle:
        if as_json:
            for row in rows:
                handle.write(json.dumps(row) + "\n")
        else:
            handle.write(_csv_text(rows, kind))
    return {"rows": len(rows), "graphs": len(graphs), "level": kind.level, "kind": kind.kind,
            "batch_size": batch_size, "scope": scope if run.model.external else None, "out": os.fspath(out),
            "whole_graph": whole_graph}


def check_own_file_unchanged(run: RunConfig, path: PathLike, num_graphs: int, allow_changed: bool) -> None:
    """Refuse ``path`` (read by ``predict --nodes``) when it is the graph file the run trained on and has
    changed since (its masks would no longer be the run's split); other files are new graphs to score."""
    trained_on, recorded = run.data.data_file, run.data.file_identity
    if not (trained_on and recorded and os.path.exists(trained_on) and os.path.samefile(path, trained_on)):
        return
    changes = identity_changes(recorded, file_identity(path, num_graphs))
    check_unchanged(f"graph file {os.fspath(path)}", changes, allow_changed,
                    "restore the file the run was trained on", going_on="reading its node masks as they are now")


def node_selection(graphs: List[dgl.DGLGraph], path: PathLike, nodes: str, level: str, ntype: str = ""
                   ) -> torch.Tensor:
    """The ``(N,)`` bool mask ``ndata['<nodes>_mask']`` of the file's one graph (``predict --nodes``); of a
    heterograph's target type ``ntype``, ``nodes[ntype].data['<nodes>_mask']``."""
    path = os.fspath(path)
    if nodes not in MASKS:
        raise ConfigError(f"--nodes {nodes!r} is not one of {', '.join(MASKS)}")
    if level != "node":
        raise ConfigError("--nodes picks nodes, but this checkpoint predicts whole graphs; drop --nodes")
    if len(graphs) != 1:
        raise DataError(f"{path} holds {len(graphs)} graphs; --nodes reads the node masks of a file with one graph")
    name = MASKS[nodes]
    ntype = ntype or None
    frame, where, count = node_frame(graphs[0], ntype), frame_name(ntype), graphs[0].num_nodes(ntype)
    if name not in frame:
        raise DataError(f"{path}: the graph has no {where}[{name!r}]; --nodes {nodes} keeps the nodes of that mask "
                        "(store it, or drop --nodes for every node)")
    mask = frame[name]
    if mask.dtype not in (torch.bool, torch.uint8) or tuple(mask.shape) != (count,):
        raise DataError(f"{path}: {where}[{name!r}] is not a boolean mask of shape ({count},); "
                        "store one torch.bool flag per node")
    return mask.bool()


def read_predictions(path: PathLike) -> List[Dict[str, str]]:
    """The rows of a CSV written by :func:`predict_file`, as dicts of strings."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


__all__ = ["OutputKind", "output_kind", "feature_spec", "prepare_graphs", "model_outputs",
           "prediction_rows", "predict_file", "node_selection", "read_predictions"]
