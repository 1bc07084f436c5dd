"""Configurations as plain values: dataclass <-> nested dict, and dotted ``--set`` overrides.

:func:`to_dict` / :func:`from_dict` turn the dataclasses into JSON/YAML-friendly
dicts and back (unknown keys and wrong types refused in one line, fields of older
versions in :data:`RETIRED_FIELDS`); :func:`apply_overrides` applies
``{"model.hidden_dim": "64"}`` pairs to a preset; :func:`settings_with_options`
merges ``--set`` with the options that set a training value directly.
"""
from __future__ import annotations

import dataclasses
from dataclasses import fields
from typing import Any, Dict, List, Mapping

from ..errors import ConfigError
from .model import ModelConfig
from .presets import Preset
from .train import TrainConfig


def to_dict(obj) -> Dict[str, Any]:
    """Dataclass -> nested plain dict (JSON/YAML friendly)."""
    return dataclasses.asdict(obj)


def from_dict(cls, data: Dict[str, Any], where: str = ""):
    """Nested dict -> dataclass, rejecting unknown keys and wrong types.

    Raises :class:`ConfigError` naming the offending key and the valid ones.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where.rstrip('.') or cls.__name__} must be a mapping, got {type(data).__name__}; "
                          f"set its fields instead (e.g. {where or 'model.'}<field>=...)")
    data = _without_retired_fields(cls, data, where)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown key(s) {', '.join(where + k for k in unknown)}; valid keys: {', '.join(sorted(known))}"
        )
    kwargs = {}
    defaults = cls() if _has_all_defaults(cls) else None
    for key, value in data.items():
        default = getattr(defaults, key) if defaults is not None else None
        if value is None and default is not None and "Optional" not in str(known[key].type):
            raise ConfigError(f"{where}{key} cannot be null; give a value like {default!r} (--set or preset)")
        if dataclasses.is_dataclass(default):
            kwargs[key] = from_dict(type(default), value, where=f"{where}{key}.")
        else:
            kwargs[key] = _coerce(f"{where}{key}", value, default)
    return cls(**kwargs)


#: Fields that configurations written by older versions hold but no code ever read: dropped on reading
#: when they hold the value they always had in effect, refused otherwise.
RETIRED_FIELDS = {"ModelConfig": {"head_batchnorm": False}}


def _without_retired_fields(cls, data: Dict[str, Any], where: str) -> Dict[str, Any]:
    retired = RETIRED_FIELDS.get(cls.__name__, {})
    if not retired.keys() & data.keys():
        return data
    for key, inert in retired.items():
        if key in data and data[key] != inert:
            raise ConfigError(f"{where}{key}={data[key]!r} was never applied (no code read it) and is gone; "
                              "remove it from the configuration")
    return {key: value for key, value in data.items() if key not in retired}


def _has_all_defaults(cls) -> bool:
    return all(
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING  # type: ignore[misc]
        for f in fields(cls)
    )


def _coerce(name: str, value: Any, default: Any) -> Any:
    """Check ``value`` against the type of ``default`` (ints may stand for floats)."""
    if default is None or value is None:
        return value
    if isinstance(default, list):
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) and not v.lstrip("-").isdigit()
                                                               for v in value):
            return list(value)  # names (hetero.ntypes, hetero.etypes)
        return _coerce_int_list(name, value)
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"{name} must be true or false, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ConfigError(f"{name} must be an integer, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"{name} must be a number, got {value!r}; fix that value (--set or preset)")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise ConfigError(f"{name} must be a string, got {value!r}; fix that value (--set or preset)")
    return value


def _coerce_int_list(name: str, value: Any) -> List[int]:
    """A list of integers, given as a list or as text such as ``"119,5,12"`` / ``"[119, 5, 12]"``."""
    items = value
    if isinstance(value, str):
        text = value.strip().strip("[]").strip()
        items = [part.strip() for part in text.split(",")] if text else []
    if isinstance(items, (list, tuple)):
        parsed = []
        for item in items:
            if isinstance(item, int) and not isinstance(item, bool):
                parsed.append(item)
            elif isinstance(item, str) and item.lstrip("-").isdigit():
                parsed.append(int(item))
            else:
                break
        else:
            return parsed
    raise ConfigError(f"{name} must be a list of integers (e.g. 119,5,12), got {value!r}; "
                      "fix that value (--set or preset)")


def apply_overrides(preset: Preset, overrides: Dict[str, str]) -> Preset:
    """Apply ``{"model.hidden_dim": "64", "train.lr": "5e-4"}`` style overrides.

    Keys are dotted paths into the preset (``model.geanet.scope``); values are
    strings parsed with the type of the field they replace.
    """
    data = {"model": to_dict(preset.model), "train": to_dict(preset.train)}
    for path, raw in overrides.items():
        parts = path.split(".")
        if parts[0] not in data:
            parts = ["model"] + parts if _is_model_key(parts[0]) else ["train"] + parts
        node = data
        for p in parts[:-1]:
            if p not in node or not isinstance(node[p], dict):
                raise ConfigError(f"unknown setting {path!r}; use keys like model.hidden_dim or train.lr")
            node = node[p]
        if parts[-1] not in node:
            raise ConfigError(f"unknown setting {path!r}; valid keys here: {', '.join(sorted(node))}")
        node[parts[-1]] = parse_setting_value(raw)
    _paper_variant_scope(data["model"], overrides)
    model = from_dict(ModelConfig, data["model"], where="model.").validate()
    train = from_dict(TrainConfig, data["train"], where="train.").validate()
    return dataclasses.replace(preset, model=model, train=train)


#: Command-line options that set a training value directly: option -> dotted setting.
TRAIN_OPTION_SETTINGS = {"epochs": "train.epochs", "batch_size": "train.batch_size", "lr": "train.lr",
                         "seed": "train.seed"}


def settings_with_options(settings: Mapping[str, str], **options: Any) -> Dict[str, str]:
    """``--set`` pairs plus the options of :data:`TRAIN_OPTION_SETTINGS` that were given (not None).

    Values are strings, as :func:`apply_overrides` parses them (``str`` of an int or
    float parses back to the same number); an option wins over ``--set`` of the same key.
    """
    pairs = dict(settings)
    for name, value in options.items():
        if value is not None:
            pairs[TRAIN_OPTION_SETTINGS[name]] = str(value)
    return pairs


def _paper_variant_scope(model: Dict[str, Any], overrides: Dict[str, str]) -> None:
    """``geanet.variant=paper`` means the paper's per-graph normalisation unless the same call sets the scope."""
    keys = {path.split(".", 1)[1] if path.startswith("model.") else path for path in overrides}
    if "geanet.variant" in keys and "geanet.scope" not in keys and model["geanet"].get("variant") == "paper":
        model["geanet"]["scope"] = "graph"


def _is_model_key(key: str) -> bool:
    return key in {f.name for f in fields(ModelConfig)}


def parse_setting_value(raw: Any) -> Any:
    """A ``--set`` value as YAML would read it: ``true``/``false``, ``null``, an int, a float, else the string."""
    if not isinstance(raw, str):
        return raw
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    if low == "null":
        return None
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            continue
    return raw
