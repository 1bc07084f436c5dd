"""Side-by-side results of two implementations over seeds: per-epoch mean ± std, agreement, plot, table.

Input: per implementation (``"ours"``, ``"reference"``), per seed, a list of
per-epoch rows with ``epoch``, ``{train,val,test}_{loss,metric}``, ``seconds``
and ``train_seconds`` (our ``metrics.jsonl`` rows, or the reference's stats read
by :func:`.reference_run.epoch_rows`).

The ± is the sample standard deviation over seeds (``ddof=1``), as in
:mod:`geaet_dgl.training.aggregate`. Two means *agree within the seeds' spread*
when their difference is at most the standard deviation of a difference of
single runs, ``sqrt(s_ours^2 + s_ref^2)``; Welch's t (the difference over its
standard error ``sqrt(s_ours^2/n_ours + s_ref^2/n_ref)``) is given beside it.
"""
from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from geaet_dgl.atomic import atomic_write  # noqa: E402
from geaet_dgl.training.aggregate import format_mean_std, mean_std  # noqa: E402
from geaet_dgl.training.metrics import is_improvement  # noqa: E402

PathLike = Union[str, os.PathLike]
SIDES = ("ours", "reference")
#: Per-epoch quantities aggregated over seeds.
FIELDS = ("train_loss", "train_metric", "val_loss", "val_metric", "test_loss", "test_metric", "seconds",
          "train_seconds")
#: Quantities whose agreement is judged, at the last epoch and at each seed's best-validation epoch.
JUDGED = ("train_loss", "val_metric", "test_metric")

Runs = Mapping[str, Mapping[int, Sequence[Mapping[str, Any]]]]


def _stat(values: Sequence[float]) -> Dict[str, Any]:
    mean, std = mean_std(values)
    return {"mean": mean, "std": std, "values": [float(v) for v in values]}


def per_epoch(rows_by_seed: Mapping[int, Sequence[Mapping[str, Any]]]) -> List[Dict[str, Any]]:
    """``[{"epoch": e, field: {"mean", "std", "values"}}, ...]`` over the epochs every seed reached."""
    seeds = sorted(rows_by_seed)
    epochs = min(len(rows_by_seed[s]) for s in seeds)
    out = []
    for i in range(epochs):
        entry: Dict[str, Any] = {"epoch": i + 1}
        for field in FIELDS:
            values = [rows_by_seed[s][i].get(field) for s in seeds]
            if all(v is not None for v in values):
                entry[field] = _stat(values)
        out.append(entry)
    return out


def best_epoch_index(rows: Sequence[Mapping[str, Any]], metric: str) -> int:
    """Index of the best validation epoch (the first of ties), as both trainers pick it."""
    best: Optional[float] = None
    index = 0
    for i, row in enumerate(rows):
        if is_improvement(metric, row["val_metric"], best):
            best, index = row["val_metric"], i
    return index


def at_epochs(rows_by_seed: Mapping[int, Sequence[Mapping[str, Any]]], metric: str, which: str) -> Dict[str, Any]:
    """Each seed's values at its last (``which='final'``) or best-validation (``'best'``) epoch, aggregated."""
    seeds = sorted(rows_by_seed)
    chosen = []
    for s in seeds:
        rows = rows_by_seed[s]
        chosen.append(rows[-1] if which == "final" else rows[best_epoch_index(rows, metric)])
    out: Dict[str, Any] = {"epoch": {"values": [row["epoch"] for row in chosen]}}
    for field in FIELDS:
        values = [row.get(field) for row in chosen]
        if all(v is not None for v in values):
            out[field] = _stat(values)
    return out


def agreement(ours: Mapping[str, Any], ref: Mapping[str, Any]) -> Dict[str, Any]:
    """Difference of two ``{"mean", "std", "values"}`` and whether it lies within the seeds' spread."""
    delta = ours["mean"] - ref["mean"]
    result: Dict[str, Any] = {"delta": delta, "spread": None, "welch_t": None, "within_spread": None}
    if ours["std"] is None or ref["std"] is None:
        return result  # one seed: no spread to judge by
    spread = math.sqrt(ours["std"] ** 2 + ref["std"] ** 2)
    error = math.sqrt(ours["std"] ** 2 / len(ours["values"]) + ref["std"] ** 2 / len(ref["values"]))
    result.update(spread=spread, welch_t=delta / error if error > 0 else (0.0 if delta == 0 else math.inf),
                  within_spread=abs(delta) <= spread)
    return result


def compare_runs(runs: Runs, metric: str) -> Dict[str, Any]:
    """Aggregate both sides and judge agreement (the body of ``compare.json``)."""
    result: Dict[str, Any] = {"metric_name": metric,
                              "std": "sample std (ddof=1) over seeds",
                              "agreement_rule": "|mean_ours - mean_ref| <= sqrt(std_ours^2 + std_ref^2)"}
    for side in SIDES:
        result[side] = {"seeds": sorted(runs[side]), "per_epoch": per_epoch(runs[side]),
                        "final": at_epochs(runs[side], metric, "final"),
                        "best": at_epochs(runs[side], metric, "best"),
                        "per_seed": {str(s): list(rows) for s, rows in sorted(runs[side].items())}}
    result["agreement"] = {
        which: {field: agreement(result["ours"][which][field], result["reference"][which][field])
                for field in JUDGED}
        for which in ("final", "best")
    }
    verdicts = [v["within_spread"] for which in result["agreement"].values() for v in which.values()]
    result["all_within_spread"] = None if any(v is None for v in verdicts) else all(verdicts)
    return result


def plot_comparison(result: Mapping[str, Any], path: PathLike, labels: Mapping[str, str] = None) -> None:
    """Train loss, validation and test metric per epoch: each side's mean, shaded ± std over seeds."""
    labels = labels or {"ours": "ours (DGL)", "reference": "reference (PyG)"}
    metric = result["metric_name"]
    panels = (("train_loss", "train loss"), ("val_metric", f"val {metric}"), ("test_metric", f"test {metric}"))
    fig, axes = plt.subplots(1, len(panels), figsize=(14, 4))
    for ax, (field, title) in zip(axes, panels):
        for side, color in zip(SIDES, ("tab:blue", "tab:orange")):
            rows = [e for e in result[side]["per_epoch"] if field in e]
            epochs = [e["epoch"] for e in rows]
            means = [e[field]["mean"] for e in rows]
            stds = [e[field]["std"] or 0.0 for e in rows]
            n = len(result[side]["seeds"])
            ax.plot(epochs, means, marker="o", color=color, label=f"{labels[side]}, {n} seeds")
            ax.fill_between(epochs, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)],
                            color=color, alpha=0.2, linewidth=0)
        ax.set(xlabel="epoch", title=title)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("mean ± sample std over seeds")
    fig.tight_layout()
    with atomic_write(path) as handle:
        fig.savefig(handle, format="png", dpi=100)
    plt.close(fig)


def markdown_table(result: Mapping[str, Any], title: str = "") -> str:
    """Per-epoch table (both sides, mean ± std), then the final/best-epoch agreement."""
    metric = result["metric_name"]
    lines: List[str] = [f"# {title}" if title else "# Ours against the reference", ""]
    n_ours, n_ref = len(result["ours"]["seeds"]), len(result["reference"]["seeds"])
    lines.append(f"mean ± sample std (ddof=1) over seeds: ours {result['ours']['seeds']}, reference "
                 f"{result['reference']['seeds']} (n = {n_ours} / {n_ref}).")
    lines += ["", f"| epoch | train loss ours | train loss ref | val {metric} ours | val {metric} ref | "
                  f"test {metric} ours | test {metric} ref | s/epoch ours | s/epoch ref |",
              "|---:" + "|---" * 8 + "|"]
    epochs = min(len(result[side]["per_epoch"]) for side in SIDES)
    for i in range(epochs):
        cells = [str(i + 1)]
        for field, digits in (("train_loss", 4), ("val_metric", 4), ("test_metric", 4), ("seconds", 1)):
            for side in SIDES:
                stat = result[side]["per_epoch"][i].get(field)
                cells.append("-" if stat is None else format_mean_std(stat["mean"], stat["std"], digits))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "| at | quantity | ours | reference | difference | spread | Welch t | within spread |",
              "|---|---|---|---|---|---|---|---|"]
    for which, label in (("final", "last epoch"), ("best", "best val epoch")):
        for field in JUDGED:
            o, r = result["ours"][which][field], result["reference"][which][field]
            a = result["agreement"][which][field]
            lines.append(f"| {label} | {field.replace('_metric', ' ' + metric).replace('_', ' ')} | "
                         f"{format_mean_std(o['mean'], o['std'])} | {format_mean_std(r['mean'], r['std'])} | "
                         f"{a['delta']:+.4f} | {_fmt(a['spread'])} | {_fmt(a['welch_t'], 2)} | "
                         f"{_verdict(a['within_spread'])} |")
    return "\n".join(lines) + "\n"


def _fmt(value: Optional[float], digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _verdict(value: Optional[bool]) -> str:
    return "n/a (one seed)" if value is None else ("yes" if value else "NO")
