"""Configuration: what a run is, in one package. Dataclasses with one field per quantity, no global config.

A run is a :class:`RunConfig`: the network (:class:`ModelConfig`), optimisation (:class:`TrainConfig`), where
its data comes from (:class:`DataOptions`) and where it executes. Presets are values of these classes;
YAML/JSON only serialise them.

Modules, lower ones first (each imports only those above it):

==================  ==================================================================================
``validation``      every setting's accepted values (``*_CHOICES``, :data:`NUMERIC_RANGES`) and every
                    rule: ``validate_model`` / ``_train`` / ``_run``, the option conflicts, and
                    :func:`check_data_fits` (the model against the loaded data)
``model``           :class:`ModelConfig` and its sections (:class:`GEANetConfig`, :class:`HeteroConfig`,
                    :class:`SignNetConfig`, :class:`GraphormerConfig`)
``train``           :class:`TrainConfig`
``presets``         :class:`Preset` and the paper's configurations (:func:`get_preset`,
                    :func:`preset_names`, the node recipes)
``settings``        dataclass <-> dict (:func:`to_dict`, :func:`from_dict`), ``--set`` overrides
                    (:func:`apply_overrides`)
``graph_file``      the settings a graph file or a named node set fixes for a run on it
``run``             :class:`RunConfig`, :class:`DataOptions`, :func:`make_run_config`, older layouts
                    (:func:`migrate_run_dict`)
==================  ==================================================================================

:class:`ConfigError` and :class:`OptionConflict` are defined in :mod:`geaet_dgl.errors` (the data layer
raises them too) and re-exported here. Loading the data a run names is the data layer's:
:func:`geaet_dgl.data.run_splits.load_splits`. The reference's (GraphGPS / graphgym) YAML files are read into
these classes by :mod:`geaet_dgl.interop.reference_yaml` (``train --config``): the reference stays in ``interop/``.
"""
from ..errors import ConfigError, OptionConflict
from .validation import (ACTIVATION_CHOICES, ATTENTION_CHOICES, CONCAT_PES, EDGE_ENCODER_CHOICES, ENCODER_CHOICES,
                         HEAD_CHOICES, KERNEL_PES, LOSS_CHOICES, METRIC_CHOICES, MPNN_CHOICES, NORM_CHOICES,
                         NUMERIC_RANGES, PE_CHOICES, POOLING_CHOICES, SAMPLERS, SE_CHOICES, check_data_fits,
                         check_graph_file_options, check_numeric_ranges, check_run_source, check_sampler_options)
from .model import GEANetConfig, GraphormerConfig, HeteroConfig, ModelConfig, SignNetConfig
from .train import TrainConfig
from .presets import Preset, get_preset, node_recipe, preset_names
from .settings import (RETIRED_FIELDS, TRAIN_OPTION_SETTINGS, apply_overrides, from_dict, parse_setting_value,
                       settings_with_options, to_dict)
from .graph_file import graph_file_settings
from .run import (CONFIG_VERSION, DEFAULT_PRESETS, NODE_GRAPH_PRESET, DataOptions, RunConfig, default_preset,
                  make_run_config, migrate_run_dict, normalised_run_dict, run_preset_name)

__all__ = [
    "ConfigError", "OptionConflict",
    "ACTIVATION_CHOICES", "ATTENTION_CHOICES", "CONCAT_PES", "EDGE_ENCODER_CHOICES", "ENCODER_CHOICES",
    "HEAD_CHOICES", "KERNEL_PES", "LOSS_CHOICES", "METRIC_CHOICES", "MPNN_CHOICES", "NORM_CHOICES",
    "NUMERIC_RANGES", "PE_CHOICES", "POOLING_CHOICES", "SAMPLERS", "SE_CHOICES", "check_data_fits",
    "check_graph_file_options", "check_numeric_ranges", "check_run_source", "check_sampler_options",
    "GEANetConfig", "GraphormerConfig", "HeteroConfig", "ModelConfig", "SignNetConfig", "TrainConfig",
    "Preset", "get_preset", "node_recipe", "preset_names",
    "RETIRED_FIELDS", "TRAIN_OPTION_SETTINGS", "apply_overrides", "from_dict", "parse_setting_value",
    "settings_with_options", "to_dict", "graph_file_settings",
    "CONFIG_VERSION", "DEFAULT_PRESETS", "NODE_GRAPH_PRESET", "DataOptions", "RunConfig", "default_preset",
    "make_run_config", "migrate_run_dict", "normalised_run_dict", "run_preset_name",
]
