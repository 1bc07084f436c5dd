"""What the data fixes for a run on it: the settings a graph file or a named node set fixes (input widths,
encoders, output width, head, loss and metric), and the data options that do not apply to the data named.

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

A named node set (``cora``, ``actor``, ...) fixes the same settings and its
metric (:func:`node_set_settings`). :func:`graph_file_dataset` turns a graph
file path given as ``--dataset`` into ``dataset='file'`` with an absolute
``data_file``; :func:`pin_graph_file` records what the run trains on (task,
file identity, split); :func:`data_dependent_settings` is all the data fixes
for a run (TreeNeighbourMatch's depth too), :func:`graph_file_data` the same for
a reference config's run on a graph file.

:func:`check_graph_file_options` and :func:`check_sampler_options` refuse options
that do not apply to the data named (an :class:`~geaet_dgl.errors.OptionConflict`):
they would be dropped.
"""
from __future__ import annotations

import os
import logging
from typing import Any, Dict, Optional, Tuple

from ..config.presets import Preset, get_preset
from ..config.run import DataOptions
from ..config.settings import from_dict
from ..config.validation import GRAPH_FILE
from ..errors import ConfigError, OptionConflict
from .identity import file_identity
from .nodes.node_graph import inspect_node_graph, is_node_graph_file
from .nodes.node_sets import is_node_set, node_set_shape, node_set_spec
from .own_files.graph_files import FeatureSpec, GraphFileInfo, is_graph_file_name, split_indices
from .own_files.hetero_files import HeteroFileInfo, inspect_file
from .registry import LOADERS

log = logging.getLogger(__name__)

CLASS_LOSSES = ("cross_entropy", "weighted_cross_entropy")
CLASS_METRICS = ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc")
GRAPH_HEADS = ("graph", "mlp_graph", "san_graph")


#: The raw-feature branch's settings when there is none (the ModelConfig defaults).
NO_INPUT_BRANCH = {"model.input_gcn_weight": 0.0, "model.input_branch": "gcn", "model.input_branch_hops": 1,
                   "model.input_branch_mix": "hidden"}


def _no_input_branch(preset: Preset, path: str, why: str) -> Dict[str, Any]:
    """:data:`NO_INPUT_BRANCH`, logged in one line when ``preset`` had a branch (the data turns it off)."""
    model = preset.model
    if model.input_gcn_weight > 0:
        log.info("%s %s, so preset %s's raw-feature branch (input_branch=%s, input_branch_hops=%d, "
                 "input_gcn_weight=%g, input_branch_mix=%s) is off: model.input_gcn_weight=0", path, why,
                 preset.name, model.input_branch, model.input_branch_hops, model.input_gcn_weight,
                 model.input_branch_mix)
    return dict(NO_INPUT_BRANCH)


def graph_file_settings(info: GraphFileInfo, preset: Preset) -> Dict[str, Any]:
    """``{"model.node_in_feats": F, ...}`` overrides that fit ``preset`` to the file ``info`` describes.

    The raw-feature branch (``model.input_gcn_weight``, :mod:`geaet_dgl.models.input_gcn`) convolves float
    node features: on integer (type) features, which are embedded per column, and on heterographs it is off,
    and a preset that had one says so in the log."""
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
                         **_no_input_branch(preset, info.path, "holds heterographs (the branch reads one node "
                                                               "type's float features)")})
    elif feats.node_vocab_sizes is None:
        settings.update({"model.node_encoder": "linear", "model.node_in_feats": feats.node_in_feats,
                         "model.node_vocab_sizes": []})
    else:
        settings.update({"model.node_encoder": "embedding", "model.node_in_feats": feats.node_in_feats,
                         "model.node_vocab_sizes": list(feats.node_vocab_sizes),
                         **_no_input_branch(preset, info.path, "has integer (type) node features, embedded per "
                                                               "column, and the branch convolves float features")})
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


def pin_graph_file(options: DataOptions, preset: Preset,
                   recorded: Optional[Tuple[GraphFileInfo, Dict[str, Any]]] = None) -> Dict[str, Any]:
    """The settings the graph file of ``options`` (a :class:`~geaet_dgl.config.DataOptions` with
    ``dataset='file'``) fixes for ``preset``; records in ``options`` the file's task, its identity and (a file of
    many graphs) the train/val/test indices, so the run is pinned to this file and this split.

    ``recorded``: (what the one-graph file holds, its identity) as a partition folder recorded them when it
    was cut from the file (checked unchanged since), used instead of reading it: a launcher of a partitioned
    run does not load a graph of millions of nodes to learn its widths."""
    if not options.data_file:
        raise ConfigError("dataset 'file' needs the graph file: pass --dataset PATH.bin or --data-file PATH")
    if recorded is not None:
        info, options.file_identity = recorded
        options.task = info.task
        return graph_file_settings(info, preset)
    masked = is_node_graph_file(options.data_file)  # one graph with node masks: they are the split
    if masked:
        info = inspect_node_graph(options.data_file, options.task, options.target_ntype)
    else:
        info = inspect_file(options.data_file, options.task, options.target_ntype)
    options.task = info.task
    options.file_identity = file_identity(options.data_file, info.num_graphs)  # the run is pinned to this file
    if not masked:
        options.split_indices = split_indices(info.num_graphs, options.data_file, options.split_file,
                                              options.split, options.split_seed)
    return graph_file_settings(info, preset)


def node_set_settings(options: DataOptions, preset_name: str) -> Dict[str, Any]:
    """A named node set fixes what a graph file fixes (input width, classes, ``head=node``; see
    :func:`graph_file_settings`) and its metric (ROC-AUC for the binary heterophilous sets).
    The graph is read here (DGL's loader; kept for the run's own read) and the split index checked."""
    options.dataset = options.dataset.lower()
    width, classes = node_set_shape(options.dataset, options.data_dir, options.split_index)
    info = GraphFileInfo(path=options.dataset, num_graphs=1, task="node-classification", num_outputs=classes,
                         features=FeatureSpec(node_in_feats=width))
    settings = graph_file_settings(info, get_preset(preset_name))
    settings["train.metric"] = node_set_spec(options.dataset).metric
    return settings


def graph_file_dataset(dataset: Optional[str], data: Dict[str, Any]) -> str:
    """``dataset`` as a DataOptions name: a graph file path becomes ``'file'`` with ``data['data_file']``;
    the file paths are made absolute (in ``data``), so a checkpoint finds them from any folder."""
    if dataset is not None and dataset.lower() not in LOADERS and is_graph_file_name(dataset):
        if data.get("data_file") not in (None, dataset):
            raise ConfigError(f"--dataset {dataset} and --data-file {data['data_file']} both name a graph file; "
                              "pass one of them")
        data["data_file"], dataset = dataset, GRAPH_FILE
    elif data.get("data_file") is not None:
        if dataset not in (GRAPH_FILE, None):
            raise ConfigError(f"--data-file trains on a graph file but --dataset names {dataset!r}; drop one of them")
        dataset = GRAPH_FILE
    for key in ("data_file", "split_file"):
        if data.get(key) is not None:
            data[key] = os.path.abspath(os.path.expanduser(str(data[key])))
    return dataset


def data_dependent_settings(options: DataOptions, preset_name: str, preset: Optional[Preset] = None,
                            recorded: Optional[Tuple[GraphFileInfo, Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Model settings the data fixes: TreeNeighbourMatch of depth r has 2^r classes and, as Alon & Yahav
    train it, r + 1 layers (so messages from every leaf reach the root); a graph file or a named node set
    fixes the widths, encoders, head and loss (:func:`graph_file_settings`) and its task is recorded
    (``recorded``: see :func:`pin_graph_file`)."""
    if options.dataset.lower() == "tree" and preset_name == "tree":
        return {"model.out_feats": 2 ** options.depth, "model.num_layers": options.depth + 1}
    if is_node_set(options.dataset):
        return node_set_settings(options, preset_name)
    if options.dataset == GRAPH_FILE:
        return pin_graph_file(options, preset if preset is not None else get_preset(preset_name), recorded)
    return {}


def graph_file_data(dataset: Optional[str], data: Dict[str, Any],
                    preset: Preset) -> Tuple[Optional[DataOptions], Dict[str, Any]]:
    """(data options, model settings the file fixes) when ``dataset`` / ``data['data_file']`` name a graph file
    that replaces the data of ``preset`` (a reference config's); ``(None, {})`` otherwise."""
    data = dict(data)
    name = graph_file_dataset(dataset, data)
    if name != GRAPH_FILE:
        return None, {}
    options = from_dict(DataOptions, {**data, "dataset": GRAPH_FILE}, where="data.")
    check_graph_file_options(options)
    return options, data_dependent_settings(options, preset.name, preset)


#: DataOptions fields that only a graph file reads, and how the user sets each.
GRAPH_FILE_OPTIONS = {"task": "--task", "split_file": "--split-file", "split": "--split",
                      "split_seed": "data.split_seed"}


def check_graph_file_options(options: DataOptions) -> None:
    """Refuse graph-file options on a named dataset (its split and task are fixed): they would be dropped.
    A named node set takes ``split_index`` (and the seeded-split sets ``split_seed``); no other dataset does.
    ``options`` is a :class:`~geaet_dgl.config.DataOptions`."""
    defaults = type(options)()
    if options.split_index != defaults.split_index and not is_node_set(options.dataset):
        raise OptionConflict(f"--split-index picks a public split of a named node set (cora, actor, ...; see "
                             f"`geaet-dgl datasets`), but the run trains on {options.name!r}; drop it")
    if options.dataset == GRAPH_FILE:
        return
    seeded = is_node_set(options.dataset) and node_set_spec(options.dataset).seeded
    given = [flag for name, flag in GRAPH_FILE_OPTIONS.items() if getattr(options, name) != getattr(defaults, name)
             and not (name == "split_seed" and seeded)]
    if options.data_file is not None:
        given.insert(0, "--data-file")
    if given:
        raise OptionConflict(f"{', '.join(given)} apply only to a graph file, but the run trains on "
                             f"{options.dataset!r}, whose split and task are fixed; drop them (or train on a graph "
                             "file: --dataset PATH.bin)")


#: Named datasets of many graphs: the node samplers (``--sampler``, ``data.num_parts``) do not apply to them.
MANY_GRAPH_DATASETS = ("mnist", "cifar10", "synthetic", "pattern", "cluster", "zinc", "tree", "voc", "coco",
                       "peptides-func", "peptides-struct", "pcqm-contact")


def check_sampler_options(options: DataOptions, node_graph: bool = False) -> None:
    """Refuse ``--sampler`` / ``data.num_parts`` where no one graph with node masks is cut (they would be dropped).

    ``node_graph``: the graph file is known to be one graph with node masks (a partition folder's record)."""
    defaults = type(options)()
    given = [flag for name, flag in (("sampler", "--sampler"), ("num_parts", "data.num_parts"))
             if getattr(options, name) != getattr(defaults, name)]
    if not given or node_graph:
        return
    if options.dataset == GRAPH_FILE and options.data_file and os.path.isfile(options.data_file) \
            and not is_node_graph_file(options.data_file):
        where = f"{options.data_file} holds graphs without node masks (a graph-level task or per-graph node labels)"
    elif options.dataset in MANY_GRAPH_DATASETS:
        where = f"{options.dataset!r} is a dataset of many graphs"
    else:
        return
    raise OptionConflict(f"{', '.join(given)} cut one graph with train/val/test node masks into batches, but "
                         f"{where}, batched whole with --batch-size; drop {', '.join(given)}")
