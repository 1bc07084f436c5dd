"""The splits a run reads: the dataset its data options name, with the encodings its model reads, checked.

:func:`load_splits` takes a run's :class:`~geaet_dgl.config.DataOptions` and
its :class:`~geaet_dgl.config.ModelConfig` (the configuration sits below the
data layer): it loads the dataset
(:func:`~geaet_dgl.data.registry.load_with`) with the Laplacian / RWSE
sizes (:func:`data_pe_sizes`) and structural encodings (:func:`structural_spec`)
the model reads, applies the feature transforms the options ask for
(:func:`apply_feature_transforms`), validates the graphs, and refuses data that
differs from what the run recorded (:mod:`.identity`).
"""
from __future__ import annotations

import json
import numbers
from typing import Any, Dict, Optional, Tuple, Union

import torch

from ..config.model import ModelConfig
from ..config.run import DataOptions
from ..errors import ConfigError
from .dataset import DatasetSplits
from .encodings.se_cache import StructuralSpec
from .errors import DataError
from .identity import (check_unchanged, data_limits, fingerprint_changes, graph_size_change, node_split_changes,
                       splits_fingerprint)
from .input_transform import apply_input_transform, propagate_transform, row_normalize_transform
from .nodes.node_graph import NodeGraph
from .own_files.graph_files import GRAPH_FILE
from .options import LoadOptions
from .registry import load_with
from .validation import validate_splits, warn_label_gaps


#: What the encodings are sized by: a run's model, or just the number of Laplacian eigenvectors.
ModelOrPeK = Union[ModelConfig, int]


def _is_model(model: ModelOrPeK) -> bool:
    """A :class:`~geaet_dgl.config.ModelConfig` (not a bare number of Laplacian eigenvectors)."""
    return not isinstance(model, numbers.Integral)


def data_pe_sizes(model: ModelOrPeK) -> Tuple[int, Optional[int]]:
    """``(Laplacian eigenpairs, RWSE steps or None)`` the data must carry for ``model``.

    ``model.pe`` 'eslappe'/'lappe' asks for ``model.pe_k`` eigenpairs
    (``ndata['lap_pe']``/``ndata['lap_eigval']``), 'rwse' for ``ndata['rwse']``
    with ``model.pe_k`` steps; other encodings for neither (no eigen-decomposition
    is paid for: about 20 ms a graph). ``model`` is a :class:`~geaet_dgl.config.ModelConfig`; an int stands
    for ``pe_k`` alone (no RWSE).
    """
    if _is_model(model):
        laplacian = model.pe_k if model.pe in ("eslappe", "lappe", "signnet") else 0
        if model.pe == "rwse":
            return laplacian, model.pe_k
        return laplacian, model.se_k if model.se == "rwse" else None
    return int(model), None


def structural_spec(model: ModelOrPeK) -> StructuralSpec:
    """The structural encodings (:mod:`geaet_dgl.data.encodings.se_cache`) the data must carry for ``model``:
    HKdiagSE at times 1..``pe_k``, ElstaticSE, Graphormer's degrees and spatial types."""
    if not _is_model(model):
        return StructuralSpec()
    graphormer = model.graphormer
    return StructuralSpec(
        hk_times=tuple(float(t) for t in range(1, model.pe_k + 1)) if model.pe == "hkdiagse" else (),
        elstatic=model.pe == "elstaticse",
        spatial_types=graphormer.spatial_types if graphormer.enable and not graphormer.degrees_only else 0,
        degrees=graphormer.enable,
        path_types=graphormer.enable and not graphormer.degrees_only and graphormer.num_edge_types > 0)


def load_options(options: DataOptions, model: ModelOrPeK, progress: bool = True, allow_changed_data: bool = False) -> LoadOptions:
    """The :class:`~.options.LoadOptions` of a run's data options ``options`` for the encodings ``model`` reads.

    The Laplacian norm is passed only when set (and eigenpairs are asked for): loaders keep their own default.
    A graph file's recorded ``split_indices`` are its split; a run from before they were recorded
    (``legacy_split``) cuts its split as it did.
    """
    pe_k, rwse_k = data_pe_sizes(model)
    if options.statistics is not None:
        if options.dataset not in ("voc", "coco") or options.statistics not in ("voc", "coco"):
            raise ConfigError(f"data.statistics={options.statistics!r} standardises PascalVOC-SP / COCO-SP only; "
                              "use voc or coco with --dataset voc or coco, or leave it unset")
    graph_file = options.dataset == GRAPH_FILE
    return LoadOptions(
        data_dir=options.data_dir, limit_train=options.limit_train, limit_val=options.limit_val,
        limit_test=options.limit_test, pe_k=pe_k, rwse_k=rwse_k,
        laplacian_norm=options.laplacian_norm if pe_k else None, structural=structural_spec(model),
        progress=progress, mnist_images=options.mnist_images, cifar_images=options.cifar_images,
        generate=options.generate, depth=options.depth, statistics=options.statistics,
        split_index=options.split_index, split_seed=options.split_seed, data_file=options.data_file,
        task=options.task, target_ntype=options.target_ntype, split_file=options.split_file, split=options.split,
        identity=options.file_identity if graph_file else None, indices=options.split_indices if graph_file else None,
        allow_changed=allow_changed_data, legacy_split=graph_file and options.split_indices is None)


def load_splits(options: DataOptions, model: ModelOrPeK, progress: bool = True,
                allow_changed_data: bool = False) -> DatasetSplits:
    """Load the dataset of ``options`` with the encodings ``model`` reads, and validate it.

    Data that differs from what ``options`` recorded (``file_identity``,
    ``fingerprint``) is refused with a DataError, or with
    ``allow_changed_data`` logged (a graph file's recorded ``split_indices``
    are used either way).

    ``options`` is the run's :class:`~geaet_dgl.config.DataOptions`, ``model`` its
    :class:`~geaet_dgl.config.ModelConfig` (or just the number of
    Laplacian eigenvectors). The graphs are checked at load time (no empty
    graph, no NaN/inf field, labels in range: see
    :mod:`geaet_dgl.data.validation`), so bad data fails before training.
    """
    splits = load_with(options.dataset, load_options(options, model, progress, allow_changed_data))
    apply_feature_transforms(splits, options.feature_norm, options.feature_propagation)
    if not isinstance(splits, NodeGraph):  # one graph with node masks is checked as it is read
        splits = validate_splits(splits)
    if options.dataset == GRAPH_FILE and options.fingerprint is None:  # a new run on the user's file
        warn_label_gaps(split_labels(splits), options.data_file)
    recorded = options.input_transform
    if recorded is not None and json.loads(json.dumps(splits.input_transform)) != json.loads(json.dumps(recorded)):
        raise DataError(f"the {options.dataset} loader now transforms the input features otherwise than when the "
                        "run was trained (data.input_transform); score the run with the geaet-dgl version that "
                        "trained it")
    if options.fingerprint is not None:
        current = splits_fingerprint(splits, data_limits(options))
        changes = fingerprint_changes(options.fingerprint, current)
        where = options.data_file if options.dataset == GRAPH_FILE else f"{options.dataset} in {options.data_dir}"
        if changes and isinstance(splits, NodeGraph):
            split_changes = node_split_changes(options.fingerprint, current)
            resized = graph_size_change(options.fingerprint, current)
            if split_changes == [] and resized:  # the masks and labels are the run's: only the graph changed
                changes = [resized]
            elif allow_changed_data:
                what = "the node masks or their labels" if split_changes is not None else \
                    "the graph, its node masks or their labels"
                raise DataError(f"{what} in {where} changed since the run was trained ({'; '.join(changes)}): the "
                                "file's masks are the split, so the run's own split cannot be restored from it "
                                "(--allow-changed-data goes on only where the masks and their labels are "
                                "unchanged); restore the file the run was trained on, or start a new run on this one")
        check_unchanged(f"the data ({where})", changes, allow_changed_data,
                        "rebuild or restore the files the run was trained on")
    return splits


def split_labels(splits: DatasetSplits) -> Dict[str, Optional[torch.Tensor]]:
    """``{split: labels}`` of a node graph's masked nodes (classification only) or of each split's graphs."""
    if isinstance(splits, NodeGraph):
        if not splits.task.endswith("classification"):
            return {}
        return {split: splits.labels(split) for split in ("train", "val", "test")}
    return {split: getattr(splits, split).labels for split in ("train", "val", "test")}


def apply_feature_transforms(splits: DatasetSplits, feature_norm: str, feature_propagation: int = 0) -> None:
    """Transform the node features of one graph with node masks as ``data.feature_norm`` and
    ``data.feature_propagation`` say, and record it as the data's ``input_transform`` (``predict`` applies it
    again to the graphs it reads)."""
    changed = {key: (value, off) for key, value, off in (("feature_norm", feature_norm, "none"),
                                                         ("feature_propagation", feature_propagation, 0))
               if value != off}
    if not changed:
        return
    asked = " and ".join(f"data.{key}={value}" for key, (value, _) in changed.items())
    resets = " and ".join(f"data.{key}={off}" for key, (_, off) in changed.items())
    if not isinstance(splits, NodeGraph) or not splits.graph.is_homogeneous:
        raise ConfigError(f"{asked} transforms the features of one graph with node masks "
                          f"(of one node type); set {resets} for this dataset")
    if not splits.graph.ndata["feat"].is_floating_point():
        raise ConfigError(f"{asked} transforms float features, but {splits.name} has integer (type) "
                          f"node features; set {resets}")
    transform: Dict[str, Any] = {}
    if feature_norm == "row":
        transform.update(row_normalize_transform())
    if feature_propagation:
        transform.update(propagate_transform(feature_propagation))
    apply_input_transform([splits.graph], transform)
    splits.input_transform = transform

