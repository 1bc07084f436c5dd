"""Settings a graph file fixes for a run on it: input widths, encoders, output width, head, loss and metric.

``train --dataset PATH.bin --preset P`` keeps preset P's network (width,
layers, branches, positional encoding, optimisation) and takes from the file
(:func:`geaet_dgl.data.own_files.graph_files.inspect_graph_file`):

==========================  ======================================================
node features               float: ``node_encoder=linear``, ``node_in_feats=F``;
                            integer types: ``embedding`` with one vocabulary per
                            column (largest value + 1)
edge features               the same; none: ``edge_encoder=constant`` (one
                            learned vector per edge, the reference's DummyEdge)
graph-classification        ``out_feats`` = classes, a graph head (P's if it
                            pools graphs, else ``graph``), P's cross-entropy
                            loss and class metric if it has them, else
                            ``cross_entropy`` / ``accuracy``
graph-regression            ``out_feats`` = targets, a graph head, ``l1`` /
                            ``mae``
node-classification         ``out_feats`` = classes, ``head=node``, loss and
                            metric as for graph classification (many graphs
                            with node labels, or one graph with node masks)
node-regression             ``out_feats`` = targets, ``head=node``, ``l1`` /
                            ``mae`` (one graph with node masks, float labels)
==========================  ======================================================

A heterograph file (:mod:`geaet_dgl.data.own_files.hetero_files`) sets the schema
instead of the widths and encoders (``model.hetero.*``: node types and their
feature widths, relations and theirs, the target node type) and
``model.pe=none`` (no positional encoding on heterographs); the model is then
:class:`~geaet_dgl.models.hetero_geaet.HeteroGEAET`.

Explicit ``--set`` values win over these.
"""
from __future__ import annotations

from typing import Any, Dict

from ..config import Preset
from ..data.own_files.graph_files import GraphFileInfo
from ..data.own_files.hetero_files import HeteroFileInfo

CLASS_LOSSES = ("cross_entropy", "weighted_cross_entropy")
CLASS_METRICS = ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc")
GRAPH_HEADS = ("graph", "mlp_graph", "san_graph")


def graph_file_settings(info: GraphFileInfo, preset: Preset) -> Dict[str, Any]:
    """``{"model.node_in_feats": F, ...}`` overrides that fit ``preset`` to the file ``info`` describes."""
    feats = info.features
    settings: Dict[str, Any] = {"model.out_feats": info.num_outputs}
    if isinstance(info, HeteroFileInfo) and info.schema is not None:
        schema = info.schema
        settings.update({"model.hetero.ntypes": list(schema.ntypes),
                         "model.hetero.node_in_feats": list(schema.node_in_feats),
                         "model.hetero.etypes": schema.etype_names,
                         "model.hetero.edge_in_feats": list(schema.edge_in_feats),
                         "model.hetero.target_ntype": schema.target_ntype, "model.pe": "none",
                         # the node recipe's readout and dropouts are for one node type
                         "model.jk": "none", "model.input_dropout": 0.0, "model.feature_dropout": 0.0,
                         "model.input_gcn_weight": 0.0})
    elif feats.node_vocab_sizes is None:
        settings.update({"model.node_encoder": "linear", "model.node_in_feats": feats.node_in_feats,
                         "model.node_vocab_sizes": []})
    else:
        settings.update({"model.node_encoder": "embedding", "model.node_in_feats": feats.node_in_feats,
                         "model.node_vocab_sizes": list(feats.node_vocab_sizes),
                         "model.input_gcn_weight": 0.0})  # the raw-feature GCN convolves float features only
    if feats is None:
        pass
    elif feats.edge_in_feats == 0:
        settings.update({"model.edge_encoder": "constant", "model.edge_in_feats": 1, "model.edge_vocab_sizes": []})
    elif feats.edge_vocab_sizes is None:
        settings.update({"model.edge_encoder": "linear", "model.edge_in_feats": feats.edge_in_feats,
                         "model.edge_vocab_sizes": []})
    else:
        settings.update({"model.edge_encoder": "embedding", "model.edge_in_feats": feats.edge_in_feats,
                         "model.edge_vocab_sizes": list(feats.edge_vocab_sizes)})
    model, train = preset.model, preset.train
    if info.task.startswith("node-"):
        settings["model.head"] = "node"
    else:
        settings["model.head"] = model.head if model.head in GRAPH_HEADS else "graph"
    if info.task in ("graph-regression", "node-regression"):
        settings.update({"train.loss": "l1", "train.metric": "mae"})
    else:
        settings["train.loss"] = train.loss if train.loss in CLASS_LOSSES else "cross_entropy"
        settings["train.metric"] = train.metric if train.metric in CLASS_METRICS else "accuracy"
    return settings
