"""Configuration: what a run is, in one package. Dataclasses with one field per quantity, no global config.

A run is a :class:`RunConfig`: the network (:class:`ModelConfig`), optimisation (:class:`TrainConfig`), where
its data comes from (:class:`DataOptions`) and where it executes. Presets are values of these classes;
YAML/JSON only serialise them.

Modules, lower ones first (each imports only those above it):

==================  ==================================================================================
``validation``      every setting's accepted values (``*_CHOICES``, :data:`NUMERIC_RANGES`, the data menus)
                    and every rule: ``validate_model`` / ``_train`` / ``_run``, the option conflicts
``model``           :class:`ModelConfig` and its sections (:class:`GEANetConfig`, :class:`HeteroConfig`,
                    :class:`SignNetConfig`, :class:`GraphormerConfig`)
``train``           :class:`TrainConfig`
``node_recipes``    the node-classification recipes (:func:`node_recipe`, ``node_training``) and the
                    named node sets they are for
``presets``         :class:`Preset` and the paper's configurations (:func:`get_preset`,
                    :func:`preset_names`), the node presets built from the recipes
``settings``        dataclass <-> dict (:func:`to_dict`, :func:`from_dict`), ``--set`` overrides
                    (:func:`apply_overrides`)
``run``             :class:`RunConfig`, :class:`DataOptions`, older layouts (:func:`migrate_run_dict`)
==================  ==================================================================================

The package sits below the data layer: it imports neither torch nor :mod:`geaet_dgl.data` (a test keeps it
so). What needs the data or the machine sits where it is used: the settings a graph file or a named node set
fixes and the options that do not apply to the data named (:mod:`geaet_dgl.data.run_settings`), the model
against the loaded data (:func:`geaet_dgl.data.model_fit.check_data_fits`), resolving a new run from a
dataset, a preset and overrides (:func:`geaet_dgl.training.new_run.make_run_config`, also exported by
:mod:`geaet_dgl.training`) and the CUDA device and TensorBoard a run asks for
(:mod:`geaet_dgl.training.environment`).

:class:`ConfigError` and :class:`OptionConflict` are defined in :mod:`geaet_dgl.errors` (the data layer
raises them too) and re-exported here. Loading the data a run names is the data layer's:
:func:`geaet_dgl.data.run_splits.load_splits`. The reference's (GraphGPS / graphgym) YAML files are read into
these classes by :mod:`geaet_dgl.interop.reference_yaml` (``train --config``): the reference stays in ``interop/``.
"""
from ..errors import ConfigError, OptionConflict
from .validation import (ACTIVATION_CHOICES, ATTENTION_CHOICES, CONCAT_PES, EDGE_ENCODER_CHOICES, ENCODER_CHOICES,
                         HEAD_CHOICES, KERNEL_PES, LOSS_CHOICES, METRIC_CHOICES, MPNN_CHOICES, NORM_CHOICES,
                         NUMERIC_RANGES, PE_CHOICES, POOLING_CHOICES, SAMPLERS, SE_CHOICES, check_numeric_ranges,
                         check_run_source)
from .model import GEANetConfig, GraphormerConfig, HeteroConfig, ModelConfig, SignNetConfig
from .train import TrainConfig
from .node_recipes import node_recipe
from .presets import Preset, get_preset, preset_names
from .settings import (RETIRED_FIELDS, TRAIN_OPTION_SETTINGS, apply_overrides, from_dict, parse_setting_value,
                       settings_with_options, to_dict)
from .run import CONFIG_VERSION, DataOptions, RunConfig, migrate_run_dict, normalised_run_dict

__all__ = [
    "ConfigError", "OptionConflict",
    "ACTIVATION_CHOICES", "ATTENTION_CHOICES", "CONCAT_PES", "EDGE_ENCODER_CHOICES", "ENCODER_CHOICES",
    "HEAD_CHOICES", "KERNEL_PES", "LOSS_CHOICES", "METRIC_CHOICES", "MPNN_CHOICES", "NORM_CHOICES",
    "NUMERIC_RANGES", "PE_CHOICES", "POOLING_CHOICES", "SAMPLERS", "SE_CHOICES", "check_numeric_ranges",
    "check_run_source",
    "GEANetConfig", "GraphormerConfig", "HeteroConfig", "ModelConfig", "SignNetConfig", "TrainConfig",
    "Preset", "get_preset", "node_recipe", "preset_names",
    "RETIRED_FIELDS", "TRAIN_OPTION_SETTINGS", "apply_overrides", "from_dict", "parse_setting_value",
    "settings_with_options", "to_dict",
    "CONFIG_VERSION", "DataOptions", "RunConfig", "migrate_run_dict", "normalised_run_dict",
]
