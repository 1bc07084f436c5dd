"""Sweeps and ablations: the cartesian product of setting values, each point over seeds.

``--set KEY=V1,V2,...`` with a comma list makes KEY an axis of the sweep;
``--set KEY=V`` (one value) is a fixed override of every point. Keys are the
dotted preset paths of ``--set`` (``model.geanet.num_heads``; the ``model.`` /
``train.`` prefix may be left out). Examples, as in the paper:

- heads (Table 6): ``--set model.geanet.num_heads=2,4,8``
- positional encodings (Table 7): ``--set model.pe=none,lappe,eslappe``
- GEANet ablation (Table 9): ``--set model.geanet.edge_unit=false,true --set model.geanet.shared_unit=false,true``
  (``model.external=false`` removes GEANet altogether: the table's first row)

Convenience: GEANet needs ``geanet.num_heads * geanet.unit_size == hidden_dim``.
When ``geanet.num_heads`` varies and ``geanet.unit_size`` is not set anywhere,
each point gets ``unit_size = hidden_dim // num_heads`` (the reference's head
layout; the slots per head shrink as the heads grow, so the width stays).

Each point trains in ``out/<point>/seed<k>`` (see :mod:`.seeds`; resumable);
``out/sweep.md`` and ``out/sweep.json`` hold one row per point: the swept
values, the parameter count and mean ± sample std (ddof=1) of the
best-validation-epoch val/test metrics. A run that diverges (NaN loss) is a
failed run of its point (:mod:`.failures`): the row says how many failed and
why, and the other points still train.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from geaet_dgl.atomic import atomic_write
from geaet_dgl.config import ConfigError, ModelConfig, TrainConfig, get_preset
from geaet_dgl.training.new_run import make_run_config, run_preset_name
from geaet_dgl.models import build_model
from geaet_dgl.training import run_dir as files
from geaet_dgl.training.run_lock import claim_run_dir
from geaet_dgl.training.aggregate import STD_NOTE, format_mean_std
from geaet_dgl.training.failures import failed_words, report_failures
from geaet_dgl.training.seeds import run_seeds, run_split_indices, run_splits

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

SWEEP_MD = "sweep.md"
SWEEP_JSON = "sweep.json"
HEADS_KEY = "model.geanet.num_heads"
UNIT_KEY = "model.geanet.unit_size"

_MODEL_KEYS = {f.name for f in dataclasses.fields(ModelConfig)}
_TRAIN_KEYS = {f.name for f in dataclasses.fields(TrainConfig)}


def full_key(key: str) -> str:
    """``geanet.num_heads`` -> ``model.geanet.num_heads``; ``lr`` -> ``train.lr``."""
    key = key.strip()
    head = key.split(".")[0]
    if head in ("model", "train"):
        return key
    if head in _MODEL_KEYS:
        return f"model.{key}"
    if head in _TRAIN_KEYS:
        return f"train.{key}"
    raise ConfigError(f"unknown setting {key!r}; use keys like model.hidden_dim, model.geanet.num_heads or "
                      "train.lr")


def parse_sweep_settings(settings: Mapping[str, str]) -> Tuple[Dict[str, str], Dict[str, List[str]]]:
    """Split ``{key: "v"}`` / ``{key: "v1,v2"}`` into (fixed overrides, swept axes), keys made full."""
    fixed: Dict[str, str] = {}
    axes: Dict[str, List[str]] = {}
    for key, raw in settings.items():
        name = full_key(key)
        if name in fixed or name in axes:
            raise ConfigError(f"setting {name} is given twice")
        values = [v.strip() for v in str(raw).split(",")]
        if any(v == "" for v in values):
            raise ConfigError(f"{key}={raw!r}: empty value in the comma list")
        if len(values) == 1:
            fixed[name] = values[0]
        else:
            if len(set(values)) != len(values):
                raise ConfigError(f"{key}={raw!r} repeats a value")
            axes[name] = values
    return fixed, axes


@dataclasses.dataclass
class SweepPoint:
    """One point: the swept values, the full overrides (incl. derived ones) and its directory name."""

    values: Dict[str, str]
    overrides: Dict[str, Any]
    derived: Dict[str, Any]
    name: str


def expand_sweep(preset: str, fixed: Mapping[str, Any], axes: Mapping[str, Sequence[str]]) -> List[SweepPoint]:
    """The cartesian product of ``axes`` (first axis varies slowest), with the unit-size convenience."""
    if not axes:
        raise ConfigError("nothing to sweep: give at least one --set KEY=V1,V2 with a comma list")
    base = get_preset(preset).model
    keys = list(axes)
    points = []
    for combo in itertools.product(*(axes[k] for k in keys)):
        values = dict(zip(keys, combo))
        overrides: Dict[str, Any] = {**fixed, **values}
        derived: Dict[str, Any] = {}
        if HEADS_KEY in axes and UNIT_KEY not in overrides:
            hidden = int(overrides.get("model.hidden_dim", base.hidden_dim))
            heads = int(values[HEADS_KEY])
            if heads <= 0 or hidden % heads:
                raise ConfigError(f"geanet.num_heads={heads} does not divide hidden_dim={hidden}; "
                                  "sweep head counts that divide the width")
            derived[UNIT_KEY] = hidden // heads
            overrides[UNIT_KEY] = derived[UNIT_KEY]
        points.append(SweepPoint(values=values, overrides=overrides, derived=derived, name=point_name(values)))
    return points


def point_name(values: Mapping[str, str]) -> str:
    """Directory name of a point: ``geanet.num_heads=2+edge_unit=true`` style, filesystem-safe."""
    parts = []
    for key, value in values.items():
        short = key.split(".", 1)[1] if key.startswith(("model.", "train.")) else key
        parts.append(f"{short}={value}")
    return re.sub(r"[^A-Za-z0-9._=+-]", "_", "+".join(parts))


@dataclasses.dataclass(frozen=True)
class SweepJob:
    """One sweep: every point of ``settings`` (``--set`` pairs; a comma list makes an axis) on ``dataset`` with
    ``preset`` (None: the dataset's own) and the data options ``data``, each point over ``seeds``, trained on
    ``device`` with ``workers`` loader processes into ``out/<point>/seed<k>``; ``overwrite`` retrains every
    point and seed from scratch, ``retry_failed`` only the runs that diverged before. ``splits``
    (``("all",)`` or indices, a named node set only): each point once per public split (and seed, if any) into
    ``out/<point>/split<k>[-seed<s>]``."""

    dataset: str
    preset: Optional[str]
    settings: Mapping[str, str]
    seeds: Sequence[int]
    out: PathLike
    data: Optional[Mapping[str, Any]] = None
    device: str = "cpu"
    workers: int = 0
    overwrite: bool = False
    progress: bool = True
    splits: Sequence[str] = ()
    retry_failed: bool = False


def run_sweep(job: SweepJob) -> Dict[str, Any]:
    """Run every point of the sweep ``job`` over its seeds; write and return the table.

    Every point's configuration is resolved and its model built (parameter
    count) before any training, so a bad value fails at once. The sweep folder
    is claimed for this process before anything is read (a second process on
    it is refused: :mod:`~geaet_dgl.training.run_lock`).

    Returns
    -------
    dict
        ``{"dataset", "preset", "std", "seeds", "axes", "fixed", "metric_name", "rows": [...]}``;
        each row: ``{"point", "values", "derived", "params", "val_metric", "test_metric",
        "seconds_per_epoch", "runs", "failed"}`` (the three metrics as ``{"mean", "std", "values"}`` over the
        point's runs that finished, absent when none did; ``failed``: its runs that diverged, with reasons).
    """
    with claim_run_dir(job.out):
        return _run_sweep(job)


def _run_sweep(job: SweepJob) -> Dict[str, Any]:
    dataset, seeds = job.dataset, job.seeds
    fixed, axes = parse_sweep_settings(job.settings)
    preset_name = run_preset_name(dataset, job.preset, job.data)
    points = expand_sweep(preset_name, fixed, axes)
    runs = []
    for point in points:
        try:
            run = make_run_config(dataset, preset_name, point.overrides, job.data, device=job.device,
                                  workers=job.workers)
        except ConfigError as exc:
            raise ConfigError(f"sweep point {point.name}: {exc}") from exc
        runs.append((point, run, build_model(run.model).num_parameters))
    splits = run_split_indices(job.splits, runs[0][1]) if job.splits else []
    out = Path(job.out)
    out.mkdir(parents=True, exist_ok=True)
    log.info("sweep: %d points x %d seeds%s into %s", len(points), max(1, len(seeds)),
             f" x {len(splits)} splits" if splits else "", out)
    std = STD_NOTE.replace("over seeds, at each seed's", "over runs (splits x seeds), at each run's") if splits \
        else STD_NOTE
    table: Dict[str, Any] = {"dataset": dataset, "preset": preset_name, "std": std, "seeds": list(seeds),
                             "splits": splits, "axes": axes, "fixed": fixed, "metric_name": None, "rows": []}
    for point, run, params in runs:
        log.info("sweep point %s (%s parameters)", point.name, f"{params:,}")
        title = f"{dataset} / {preset_name}: {point.name}"
        if splits:
            agg = run_splits(run, splits, out / point.name, seeds=list(seeds) or None, overwrite=job.overwrite,
                             progress=job.progress, title=title, retry_failed=job.retry_failed)
        else:
            agg = run_seeds(run, seeds, out / point.name, overwrite=job.overwrite, progress=job.progress,
                            title=title, retry_failed=job.retry_failed)
        table["metric_name"] = agg["metric_name"] or table["metric_name"]
        table["rows"].append({"point": point.name, "values": point.values, "derived": point.derived,
                              "params": params, **{k: agg[k] for k in ("val_metric", "test_metric",
                                                                         "seconds_per_epoch") if k in agg},
                              "runs": agg["runs"], "failed": agg["failed"]})
        _write(table, out)  # after every point: a partial table survives an interruption
    return table


def report_sweep_failures(table: Mapping[str, Any], out: PathLike) -> None:
    """:func:`~.failures.report_failures` over every point's runs (every run failed: raise)."""
    report_failures([{"point": row["point"], **failure} for row in table["rows"] for failure in row.get("failed", [])],
                    sum(row.get("runs", 1) for row in table["rows"]), Path(out) / SWEEP_MD)


def _write(table: Dict[str, Any], out: Path) -> None:
    files.write_json(out / SWEEP_JSON, table)
    with atomic_write(out / SWEEP_MD, "w") as handle:
        handle.write(sweep_markdown(table))


def sweep_markdown(table: Mapping[str, Any]) -> str:
    """The sweep as a Markdown table (one row per point)."""
    metric = table["metric_name"] or "metric"
    keys = list(table["axes"])
    derived_keys = sorted({k for row in table["rows"] for k in row["derived"]})
    any_failed = any(row.get("failed") for row in table["rows"])
    heads = [_short(k) for k in keys] + [f"{_short(k)} (derived)" for k in derived_keys] + \
        ["params", f"val {metric}", f"test {metric}", "s/epoch"] + (["failed runs"] if any_failed else [])
    lines = [f"# Sweep: {table['dataset']} / preset {table['preset']}", "",
             f"{table['std']}; " + (f"public splits {table['splits']}" + (f", seeds {table['seeds']}"
                                     if table["seeds"] else "") if table.get("splits") else f"seeds {table['seeds']}")
             + ".",
             "Fixed settings: " + (", ".join(f"{k}={v}" for k, v in table["fixed"].items()) or "none") + ".", "",
             "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for row in table["rows"]:
        cells = [row["values"][k] for k in keys] + [str(row["derived"].get(k, "-")) for k in derived_keys]
        cells.append(f"{row['params']:,}")
        for name, digits in (("val_metric", 4), ("test_metric", 4), ("seconds_per_epoch", 1)):
            stat = row.get(name)
            cells.append(format_mean_std(stat["mean"], stat["std"], digits) if stat else "-")
        if any_failed:
            cells.append(f"{len(row['failed'])} of {row['runs']}" if row.get("failed") else "-")
        lines.append("| " + " | ".join(cells) + " |")
    failed = [row for row in table["rows"] if row.get("failed")]
    if failed:
        lines += ["", "Failed runs (not in the means; rerun the same command with --retry-failed to train them "
                  "again):", ""]
        lines += [f"- {row['point']}: {failed_words(row['failed'])}" for row in failed]
    return "\n".join(lines) + "\n"


def _short(key: str) -> str:
    return key.split(".", 1)[1] if key.startswith(("model.", "train.")) else key
