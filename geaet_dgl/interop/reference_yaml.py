"""Read the reference's (GraphGPS / graphgym) YAML configuration files into our dataclasses.

``geaet-dgl train --config configs/GEAET/mnist.yaml`` runs what the reference's
``main.py --cfg configs/GEAET/mnist.yaml`` runs. The file is read as plain
YAML (no yacs); a key it leaves out means what it means in the reference:
graphgym's ``set_cfg`` defaults, then the reference's own
(``GEAET/config/*.py``), then graphgym's ``assert_cfg`` adjustments.

Every key falls in one of four groups:

- *mapped*: it changes the model, the data or the training, and becomes one
  of our fields (e.g. ``gt.dim_hidden`` -> ``model.hidden_dim``,
  ``GEANet.unit_size`` -> ``model.geanet.unit_size``, ``optim.base_lr`` ->
  ``train.lr``, ``posenc_LapPE.eigen.laplacian_norm`` ->
  ``data.laplacian_norm``); a value we cannot reproduce is a one-line
  :class:`~geaet_dgl.config.ConfigError` naming the key and what is supported;
- *ignored, logging or hardware* (``out_dir``, ``accelerator``, ``wandb.*``,
  ``train.ckpt_period``, ...): named in the log;
- *ignored, no effect on a GEAET network*: keys read only by other models,
  samplers or schedulers of graphgym (``gnn.agg``, ``gt.bigbird.*``,
  ``optim.momentum`` with AdamW, ...): named in the log;
- anything else is an unknown key: an error.

The fields of :class:`ModelConfig` that the built network does not read for
this configuration (the pooling of a node head, the PE sizes without a PE, the
dropout of a graphgym head) keep our dataclass defaults, so that a file and
the preset it was written from compare equal.

The tables of the reference's keys and the reader that looks them up are in
:mod:`.reference_keys`; what each value becomes of ours, in :mod:`.reference_fields`.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

import yaml

from ..errors import ConfigError, OptionConflict
from ..threads import default_threads
from ..config.presets import Preset
from ..config.run import DataOptions, RunConfig, absolute_data_paths
from ..config.settings import apply_overrides, from_dict
from ..data.run_settings import check_graph_file_options, graph_file_data
from ..training.environment import check_environment
from .reference_fields import read_dataset, read_laplacian_norm, read_model, read_train
# DATASETS and REFERENCE_PRESETS are read from this module by the compare and benchmark side too
from .reference_keys import (DATASETS, LOGGING_KEYS, LOGGING_PREFIXES, NO_EFFECT_KEYS,  # noqa: F401
                             NO_EFFECT_PREFIXES, REFERENCE_DEFAULTS, REFERENCE_PRESETS, KeyReader)

log = logging.getLogger(__name__)


@dataclass
class ReferenceConfig:
    """A reference YAML read into our configuration.

    ``preset`` holds the model and training settings; ``data`` the
    :class:`~geaet_dgl.config.DataOptions` fields it fixes (``dataset`` and,
    with a Laplacian PE, ``laplacian_norm``); ``ignored`` every key of
    the file we do not use, with the reason.
    """

    preset: Preset
    data: Dict[str, Any]
    ignored: List[Tuple[str, str]] = field(default_factory=list)
    #: ``pretrained.dir``'s folder (the reference's run: config.yaml, ckpt/), or None
    pretrained: Optional[str] = None
    #: graphgym's ``train.mode``: ``custom`` (train) or ``inference-only`` (evaluate the pretrained model)
    mode: str = "custom"


def flatten(tree: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """``{"gt": {"layers": 5}}`` -> ``{"gt.layers": 5}`` (dicts only; lists are values)."""
    flat: Dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _is_logging(key: str) -> bool:
    return key in LOGGING_KEYS or key.startswith(LOGGING_PREFIXES) or key.endswith(".pass_as_var")


def _is_no_effect(key: str) -> bool:
    return key in NO_EFFECT_KEYS or key.startswith(NO_EFFECT_PREFIXES)


def read_reference_config(path: "os.PathLike | str") -> ReferenceConfig:
    """Read a reference / GraphGPS YAML file (see the module docstring).

    Raises
    ------
    ConfigError
        The file cannot be read, has a key the reference does not know, or a
        result-changing value geaet-dgl cannot reproduce (one line naming it).
    """
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            tree = yaml.safe_load(handle)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--config {path} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                          f"{exc.start}); save it as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read --config {path} ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path} is not valid YAML ({' '.join(str(exc).split())[:200]})") from exc
    if not isinstance(tree, Mapping):
        raise ConfigError(f"--config {path} must hold a mapping of reference keys (e.g. gt: {{layers: 5}})")
    values = flatten(tree)
    for key, value in values.items():
        if not isinstance(value, Mapping) and any(default.startswith(f"{key}.") for default in REFERENCE_DEFAULTS):
            raise ConfigError(f"{os.path.basename(path)}: {key} must be a section of settings (e.g. {key}: "
                              f"{{layers: 5}}), got {value!r}; compare with the reference's configs/GEAET/*.yaml")
    return config_from_values(values, where=os.path.basename(path), base_dir=os.path.dirname(path))


#: What GraphGPS's ``load_pretrained_model_cfg`` takes from the pretrained run's config.yaml: every
#: ``posenc_*`` and ``gt.*`` key, and ``gnn.*`` but the head's four; these must agree with the file.
PRETRAINED_STRICT = ("model.type", "dataset.node_encoder", "dataset.node_encoder_name", "dataset.node_encoder_bn",
                     "dataset.edge_encoder", "dataset.edge_encoder_name", "dataset.edge_encoder_bn", "gnn.act")
PRETRAINED_KEEP = ("gnn.head", "gnn.layers_post_mp", "gnn.act", "gnn.dropout")


def pretrained_folder(values: Mapping[str, Any], where: str, base_dir: str = "") -> Optional[str]:
    """The folder ``pretrained.dir`` names (relative: to the working directory, else the config's folder),
    checked to hold the reference's ``config.yaml`` and ``ckpt/``; None when the file names none."""
    name = values.get("pretrained.dir") or ""
    if not name:
        return None
    if not isinstance(name, str):
        raise ConfigError(f"{where}: pretrained.dir={name!r} must be text (a folder)")
    candidates = [name] if os.path.isabs(name) else [name, os.path.join(base_dir, name)]
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, "config.yaml")) and _has_checkpoint_folder(folder):
            return os.path.abspath(folder)
    raise ConfigError(f"{where}: pretrained.dir={name!r} is not a reference run folder here (it needs config.yaml "
                      f"and <seed>/ckpt/<epoch>.ckpt or ckpt/<epoch>.ckpt; looked in {', '.join(os.path.abspath(c) for c in candidates)}); "
                      "download GraphGPS's pretrained model into it or fix the path")


def _has_checkpoint_folder(folder: str) -> bool:
    """``folder/ckpt/`` (a graphgym run) or ``folder/<seed>/ckpt/`` (GraphGPS's pretrained layout) exists."""
    if os.path.isdir(os.path.join(folder, "ckpt")):
        return True
    return os.path.isdir(folder) and any(entry.isdigit() and os.path.isdir(os.path.join(folder, entry, "ckpt"))
                                         for entry in os.listdir(folder))


def _with_pretrained(values: Dict[str, Any], where: str, folder: str) -> Dict[str, Any]:
    """``values`` with the pretrained run's model settings merged in, as GraphGPS's
    ``load_pretrained_model_cfg`` merges them."""
    path = os.path.join(folder, "config.yaml")
    try:
        with open(path) as handle:
            pretrained = flatten(yaml.safe_load(handle) or {})
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{where}: pretrained.dir: cannot read {path} ({' '.join(str(exc).split())[:160]})") \
            from exc
    for key in PRETRAINED_STRICT:
        mine, theirs = values.get(key, REFERENCE_DEFAULTS.get(key)), pretrained.get(key, REFERENCE_DEFAULTS.get(key))
        if mine != theirs:
            raise ConfigError(f"{where}: {key}={mine!r} differs from the pretrained model's {theirs!r} "
                              f"({path}); GraphGPS requires them equal")
    merged = {k: v for k, v in values.items() if not k.startswith(("posenc_", "gt."))
              and not (k.startswith("gnn.") and k not in PRETRAINED_KEEP)}
    merged.update({k: v for k, v in pretrained.items() if k.startswith(("posenc_", "gt."))
                   or (k.startswith("gnn.") and k not in PRETRAINED_KEEP)})
    return merged


def config_from_values(values: Dict[str, Any], where: str = "config", base_dir: str = "") -> ReferenceConfig:
    """Dotted reference keys -> :class:`ReferenceConfig` (see :func:`read_reference_config`).

    A ``pretrained.dir`` (relative: to the working directory, else ``base_dir``) must hold the reference's
    run (``config.yaml``, ``ckpt/``): its model settings are merged in as GraphGPS does, and
    ``data['pretrained']`` names the folder."""
    folder = pretrained_folder(values, where, base_dir)
    if folder is not None:
        values = _with_pretrained(values, where, folder)
    get = KeyReader(values, where)
    if folder is not None:
        get.used.update({"pretrained.dir", "pretrained.reset_prediction_head", "pretrained.freeze_main"})
    try:
        ref = _config_from_values(values, where, get)
        if folder is not None:
            ref.pretrained = folder
            ref.preset.train.freeze_main = bool(values.get("pretrained.freeze_main", False))
        return ref
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        shown = f" (near {get.last}={values.get(get.last)!r})" if get.last in values else ""
        raise ConfigError(f"{where}: a value has the wrong type{shown}: {' '.join(str(exc).split())[:160]}; "
                          "compare with the reference's configs/GEAET/*.yaml") from exc


def _config_from_values(values: Dict[str, Any], where: str, get: "KeyReader") -> ReferenceConfig:
    dataset = read_dataset(get)
    model, data = read_model(get, dataset), {"dataset": dataset.name}
    laplacian = read_laplacian_norm(get, model)
    if laplacian is not None:
        data["laplacian_norm"] = laplacian
    train = read_train(get, dataset)
    index = get("dataset.split_index")
    if index:
        data["split_index"] = index
    encoders = (str(get("dataset.node_encoder_name")).split("+")[0], get("dataset.edge_encoder_name"))
    if dataset.name == "coco" and encoders != ("COCONode", "COCOEdge"):
        if encoders != ("VOCNode", "VOCEdge"):
            raise get.fail("dataset.edge_encoder_name", "must come from the node encoder's dataset (VOCNode with "
                                                        "VOCEdge, COCONode with COCOEdge)")
        data["statistics"] = "voc"  # VOC's encoders standardise with PascalVOC-SP's statistics
    ignored = []
    for key in sorted(values):
        if key in get.used:
            continue
        if _is_logging(key):
            ignored.append((key, "logging/hardware"))
        elif _is_no_effect(key) or key in REFERENCE_DEFAULTS:
            ignored.append((key, "no effect on this GEAET network"))
        else:
            raise ConfigError(f"{where}: unknown key {key!r}: not a reference/graphgym setting geaet-dgl knows; "
                              "remove it or check its spelling")
    preset = Preset(name=dataset.name, dataset=dataset.name, model=model.validate(), train=train.validate(),
                    note=f"read from the reference's {where}")
    return ReferenceConfig(preset=preset, data=data, ignored=ignored, mode=get("train.mode"))


def reference_run_config(path: "os.PathLike | str", overrides: Optional[Mapping[str, Any]] = None,
                         data: Optional[Mapping[str, Any]] = None, device: str = "cpu", workers: int = 0,
                         checkpoint_every: int = 0, threads: Optional[int] = None, sync_bn: bool = True,
                         tensorboard: bool = False):
    """A :class:`~geaet_dgl.config.RunConfig` from a reference YAML, then ``--set``-style ``overrides``.

    ``data`` gives the :class:`~geaet_dgl.config.DataOptions` fields the file
    does not fix (``data_dir``, ``limit_*``, ...); the ignored keys are logged. ``device`` to
    ``tensorboard``: the RunConfig fields of the same names.
    """
    if (data or {}).get("data_file") is not None:
        raise OptionConflict(f"--config {os.fspath(path)} trains on its own dataset; --data-file does not replace "
                             "it: pass the graph file as --dataset PATH.bin with --config (its model then reads "
                             "the file), or drop --config")
    ref = read_reference_config(path)
    data = dict(data or {})
    overrides = dict(overrides or {})
    data_settings = {k[len("data."):]: v for k, v in overrides.items() if k.startswith("data.")}
    file_options, file_settings = graph_file_data(data.get("dataset"), {k: v for k, v in data.items()
                                                                        if k != "dataset"}, ref.preset)
    if file_options is not None:  # the user's own graph file replaces the file's dataset
        if ref.preset.model.edge_encoder == "none":  # the file's model reads no edges: it stays so
            file_settings = {k: v for k, v in file_settings.items()
                             if k not in ("model.edge_encoder", "model.edge_vocab_sizes")}
        fixed = {"laplacian_norm": ref.data["laplacian_norm"]} if "laplacian_norm" in ref.data else {}
        data = {**dataclasses.asdict(file_options), **fixed}
        ref.data = {}
    for reason in ("logging/hardware", "no effect on this GEAET network"):
        keys = [k for k, why in ref.ignored if why == reason]
        if keys:
            log.info("--config %s: ignored (%s): %s", os.path.basename(os.fspath(path)), reason, ", ".join(keys))
    preset = apply_overrides(ref.preset, {**file_settings,
                                          **{k: v for k, v in overrides.items() if not k.startswith("data.")}})
    options = absolute_data_paths(from_dict(DataOptions, {**ref.data, **data, **data_settings}, where="data."))
    check_graph_file_options(options)
    run = RunConfig(preset=preset.name, model=preset.model, train=preset.train, data=options, device=device,
                    workers=workers, checkpoint_every=checkpoint_every,
                    threads=default_threads() if threads is None else threads, sync_bn=sync_bn,
                    tensorboard=tensorboard)
    return check_environment(run.validate())
