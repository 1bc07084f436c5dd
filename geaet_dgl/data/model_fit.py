"""Whether a model fits the data it is about to read: widths, encodings, head and labels against the loaded splits.

:func:`check_data_fits` takes a :class:`~geaet_dgl.config.ModelConfig` and the loaded
:class:`~geaet_dgl.data.DatasetSplits` (or one :class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`) and raises one
:class:`~geaet_dgl.errors.ConfigError` listing every mismatch, with how to mend it (:data:`FIT_BY_SETTINGS` for a
new run, :data:`FIT_TRAINED` for a trained model). Training (:mod:`geaet_dgl.training.graph_task`) and scoring
(:mod:`geaet_dgl.scoring.evaluate`) call it before the first batch.
"""
from __future__ import annotations

from typing import Union

from ..config.model import ModelConfig
from ..errors import ConfigError
from .dataset import DatasetSplits
from .nodes.node_graph import NodeGraph
from .own_files.hetero_files import is_heterograph
from .validation import check_labels, node_label_sizes

#: ndata fields each positional encoding reads.
PE_FIELDS = {"none": (), "eslappe": ("lap_pe",), "lappe": ("lap_pe", "lap_eigval"), "rwse": ("rwse",),
             "signnet": ("lap_pe",), "hkdiagse": ("hkdiag_se",), "elstaticse": ("elstatic_se",)}


#: How to mend a model that does not fit its data: a new run can change its settings; a trained model cannot.
FIT_BY_SETTINGS = "pick the dataset's preset or fix these with --set"
FIT_TRAINED = ("a trained model reads data of the shape it was trained on: score it on that data (the run's own "
               "--data-file / --data-dir), or train a new run on this data")


def check_data_fits(model: ModelConfig, splits: Union[DatasetSplits, NodeGraph],
                    fix: str = FIT_BY_SETTINGS) -> None:
    """Raise ConfigError if the model's (a :class:`~geaet_dgl.config.ModelConfig`) input/output widths, encodings
    or head do not match the loaded ``splits`` (:class:`~geaet_dgl.data.DatasetSplits` or a one-graph
    :class:`~geaet_dgl.data.nodes.node_graph.NodeGraph`); ``fix``: how to mend it (a trained model:
    :data:`FIT_TRAINED`)."""
    node_graph = isinstance(splits, NodeGraph)
    for name in ("train", "val", "test"):
        if node_graph:
            break
        if len(getattr(splits, name)) == 0:
            raise ConfigError(f"the {name} split of {splits.name!r} is empty; raise --limit-{name}")
    problems = []
    if is_heterograph(splits.first_graph()) != bool(model.hetero.ntypes):
        problems.append("the graphs are heterographs but the model is not (or the other way round); train on the "
                        "file with its own settings (train --dataset FILE.bin)")
    elif model.hetero.ntypes:  # the heterograph reader checked the schema and widths against the file
        pass
    elif splits.node_feat_dim != model.node_in_feats:
        problems.append(f"model.node_in_feats={model.node_in_feats} but the graphs have "
                        f"{splits.node_feat_dim} node features")
    if not model.hetero.ntypes and splits.edge_feat_dim != model.edge_in_feats:
        problems.append(f"model.edge_in_feats={model.edge_in_feats} but the graphs have "
                        f"{splits.edge_feat_dim} edge features")
    example = splits.first_graph()
    missing = [key for key in PE_FIELDS[model.pe] if key not in example.ndata]
    if missing:
        problems.append(f"model.pe={model.pe!r} reads ndata[{missing[0]!r}], which the graphs lack "
                        f"(load them with load_splits(options, model), or set model.pe=none)")
    elif model.pe in ("eslappe", "lappe", "signnet") and splits.pe_dim != model.pe_k:
        problems.append(f"model.pe_k={model.pe_k} but the graphs carry {splits.pe_dim} Laplacian eigenvectors")
    elif model.pe == "rwse" and example.ndata["rwse"].shape[1] != model.pe_k:
        problems.append(f"model.pe_k={model.pe_k} but the graphs carry {example.ndata['rwse'].shape[1]} "
                        "random-walk steps")
    if model.se == "rwse" and "rwse" not in example.ndata:
        problems.append("model.se='rwse' reads ndata['rwse'], which the graphs lack (load them with "
                        "load_splits(options, model), or set model.se=none)")
    elif model.se == "rwse" and example.ndata["rwse"].shape[1] != model.se_k:
        problems.append(f"model.se_k={model.se_k} but the graphs carry {example.ndata['rwse'].shape[1]} "
                        "random-walk steps")
    if node_graph and model.head != "node":
        problems.append(f"model.head={model.head!r} but {splits.name!r} is one graph with node masks (use "
                        "model.head=node)")
    link_data = not node_graph and getattr(splits.train, "level", "graph") == "link"
    if link_data != (model.head == "link"):
        problems.append(f"model.head={model.head!r} but the dataset's targets are "
                        f"{'node pairs (use model.head=link)' if link_data else 'not node pairs'}")
    classes = splits.num_classes
    if node_graph and splits.task == "node-regression" and model.out_feats != classes:
        problems.append(f"model.out_feats={model.out_feats} but {splits.name!r} has {classes} targets per node")
    elif model.out_feats != classes and not (model.out_feats == 1 and classes == 2):
        problems.append(f"model.out_feats={model.out_feats} but {splits.name!r} has {classes} classes")
    if problems:
        raise ConfigError(f"the model does not fit dataset {splits.name!r}: {'; '.join(problems)}; {fix}")
    if node_graph:  # labels checked as the graph was read
        return
    model_classes = 2 if model.out_feats == 1 else model.out_feats
    for name in ("train", "val", "test"):
        dataset = getattr(splits, name)
        if link_data:  # node pairs, checked against their graphs when loaded
            continue
        check_labels(dataset.labels, name, splits.name, model_classes, what=f"model.out_feats={model.out_feats}",
                     node_sizes=node_label_sizes(dataset))
