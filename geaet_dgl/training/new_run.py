"""A new run's configuration, resolved from a dataset, a preset and overrides against the data it names.

:func:`make_run_config` is what ``train`` does before it trains: it picks the preset (the dataset's own,
:func:`default_preset`), applies ``--set`` overrides and the settings the data fixes
(:func:`geaet_dgl.data.run_settings.data_dependent_settings`: a graph file's widths and head, a node set's
metric, ...), refuses options that do not apply to the data, and checks the result
(:meth:`~geaet_dgl.config.RunConfig.validate`) and what it asks of this machine
(:func:`~.environment.check_environment`). :func:`run_preset_name` says which preset a run on a dataset takes.
"""
from __future__ import annotations

import difflib
from typing import Any, Mapping, Optional

from ..config.presets import get_preset, preset_names
from ..config.run import DataOptions, RunConfig, absolute_data_paths
from ..config.settings import apply_overrides, from_dict, parse_setting_value
from ..config.validation import GRAPH_FILE, check_input_branch_takes_effect
from ..data.nodes.node_graph import is_node_graph_file
from ..data.nodes.node_sets import is_node_set
from ..data.registry import LOADERS
from ..data.run_settings import (check_graph_file_options, check_sampler_options, data_dependent_settings,
                                 graph_file_dataset)
from ..errors import ConfigError
from ..threads import default_threads
from .environment import check_environment

#: Datasets without a preset of their own train with this preset by default.
DEFAULT_PRESETS = {"synthetic": "mnist", GRAPH_FILE: "geaet", "pcqm4mv2-subset": "pcqm4mv2",
                   "pcqm4mv2-inference": "pcqm4mv2"}

#: The default preset of a graph file holding one graph with node masks, and of a named node set
#: (``cora``, ``actor``, ...) that has no preset of its own.
NODE_GRAPH_PRESET = "geaet-node"


def default_preset(dataset: str) -> str:
    """The preset a run on ``dataset`` takes unless told: the dataset's own (a preset of the same name),
    else :data:`DEFAULT_PRESETS`' entry, else :data:`NODE_GRAPH_PRESET` for a named node set."""
    if dataset in DEFAULT_PRESETS:
        return DEFAULT_PRESETS[dataset]
    if is_node_set(dataset) and dataset.lower() not in preset_names():
        return NODE_GRAPH_PRESET
    return dataset


def check_dataset_name(dataset: str) -> None:
    """Refuse a dataset name no loader reads (a typo: ``citseer``), naming the closest one, before it is taken
    for the name of a preset."""
    key = str(dataset).lower()
    if key == GRAPH_FILE or key in LOADERS or key in DEFAULT_PRESETS:
        return
    close = difflib.get_close_matches(key, sorted(set(LOADERS) - {GRAPH_FILE}), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise ConfigError(f"unknown dataset {dataset!r}; {hint}`geaet-dgl datasets` lists the names, and a graph file "
                      "is given as PATH.bin")


def _preset_of(dataset: str, preset: Optional[str], data: Mapping[str, Any]) -> str:
    """The preset a run on ``dataset`` (already through :func:`graph_file_dataset`) with data options ``data``
    takes: ``preset``, else the dataset's own (:func:`default_preset`; a graph file of one graph with node
    masks: :data:`NODE_GRAPH_PRESET`)."""
    check_dataset_name(dataset)
    if preset is not None:
        return preset
    if dataset == GRAPH_FILE and data.get("data_file") and is_node_graph_file(data["data_file"]):
        return NODE_GRAPH_PRESET
    return default_preset(dataset)


def run_preset_name(dataset: str, preset: Optional[str] = None, data: Optional[Mapping[str, Any]] = None) -> str:
    """The preset :func:`make_run_config` ``(dataset, preset, data=data)`` resolves (a graph file ``PATH.bin``:
    ``geaet``, or ``geaet-node`` for one graph with node masks); an unknown dataset name is refused."""
    data = dict(data or {})
    return _preset_of(graph_file_dataset(dataset, data), preset, data)


#: The :class:`~geaet_dgl.config.RunConfig` fields :func:`make_run_config` takes as keywords (where and how the
#: run executes), with the RunConfig's defaults.
RUN_FIELDS = ("device", "workers", "checkpoint_every", "threads", "sync_bn", "tensorboard")


def make_run_config(dataset: str, preset: Optional[str] = None, overrides: Optional[Mapping[str, Any]] = None,
                    data: Optional[Mapping[str, Any]] = None, recorded: Optional[tuple] = None,
                    **run_fields: Any) -> RunConfig:
    """Resolve a run: the preset (default: the dataset's own), dotted overrides, data options.

    Parameters
    ----------
    dataset : str
        Name for ``geaet_dgl.data.load_dataset``, or the path of a DGL graph
        file (``*.bin``; same as ``dataset='file'`` with ``data_file``).
    preset : str, optional
        Preset name; default ``dataset`` itself (``mnist`` for ``synthetic``,
        ``geaet`` for a graph file).
    overrides : mapping, optional
        ``{"model.hidden_dim": "64", "train.epochs": 3}`` style values.
    data : mapping, optional
        Fields of :class:`~geaet_dgl.config.DataOptions` other than ``dataset``.
    recorded : (GraphFileInfo, dict), optional
        What a one-graph file ``dataset`` holds and its identity, as a partition folder recorded them: read
        instead of the file (:func:`~geaet_dgl.data.run_settings.pin_graph_file`); give ``preset`` with it.
    **run_fields
        The :class:`~geaet_dgl.config.RunConfig` fields of :data:`RUN_FIELDS`: ``device`` (``cpu``),
        ``workers`` (0), ``checkpoint_every`` (0), ``threads`` (CPU threads, see :mod:`geaet_dgl.threads`;
        ``None``: the cores this process may use, or $OMP_NUM_THREADS, resolved and recorded here),
        ``sync_bn`` (True), ``tensorboard`` (False).
    """
    unknown = sorted(set(run_fields) - set(RUN_FIELDS))
    if unknown:
        raise TypeError(f"make_run_config() got an unexpected keyword argument {unknown[0]!r}")
    overrides = dict(overrides or {})
    data = dict(data or {})
    for key in [k for k in overrides if k.startswith("data.")]:  # --set data.depth=3
        data[key[len("data."):]] = parse_setting_value(overrides.pop(key))
    dataset = graph_file_dataset(dataset, data)
    preset_name = _preset_of(dataset, preset, data)
    preset_data = {key: value for key, value in get_preset(preset_name).data.items() if key not in data}
    options = absolute_data_paths(from_dict(DataOptions, {"dataset": dataset, **preset_data, **data}, where="data."))
    check_graph_file_options(options)
    check_sampler_options(options, node_graph=recorded is not None)
    user_keys = set(overrides)
    overrides = {**data_dependent_settings(options, preset_name, recorded=recorded), **overrides}  # --set wins
    resolved = apply_overrides(get_preset(preset_name), overrides)
    check_input_branch_takes_effect(resolved.model, given=user_keys)
    threads = run_fields.pop("threads", None)
    run = RunConfig(preset=resolved.name, model=resolved.model, train=resolved.train, data=options,
                    threads=default_threads() if threads is None else threads, **run_fields)
    return check_environment(run.validate())
