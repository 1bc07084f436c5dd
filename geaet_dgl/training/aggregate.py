"""Mean ± standard deviation over seeds (or public splits), as the paper reports its numbers.

The ± is the *sample* standard deviation (``ddof=1``, divisor n - 1) of the
per-run values, each taken at that run's best-validation epoch (the
``summary.json`` of its run). With a single run the std is undefined and is
written as ``null`` / ``n/a``. The runs differ by seed (``train --seeds``), by
public split (``train --splits``, a named node set's geom-gcn splits, ...), or
by both.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: summary.json fields aggregated over seeds (the metrics at the best-validation epoch, and cost).
AGGREGATED_FIELDS = ("val_metric", "test_metric", "train_metric", "best_epoch", "seconds_per_epoch")

STD_NOTE = "mean ± sample std (ddof=1, n-1 divisor) over seeds, at each seed's best-validation epoch"

#: How runs are labelled: by what differs between them (in this order), ``{"split": 3, "seed": 0}``.
LABEL_KEYS = ("split", "seed")


def std_note(keys: Sequence[str] = ("seed",)) -> str:
    """:data:`STD_NOTE` for runs that differ by ``keys`` (``('split',)``, ``('split', 'seed')``)."""
    if list(keys) == ["seed"]:
        return STD_NOTE
    what, one = ("splits", "split") if list(keys) == ["split"] else (" × ".join(f"{k}s" for k in keys), "run")
    return f"mean ± sample std (ddof=1, n-1 divisor) over {what}, at each {one}'s best-validation epoch"


def _label_text(keys: Sequence[str], agg: Dict[str, Any]) -> str:
    """``seeds [0, 1, 2]`` / ``splits [0, 1]`` / ``runs (splits [0, 1] × seeds [0, 1])``."""
    if len(keys) == 1:
        return f"{keys[0]}s {agg[keys[0] + 's']}"
    return "runs (" + " × ".join(f"{k}s {sorted(set(agg[k + 's']))}" for k in keys) + ")"


def mean_std(values: Sequence[float]) -> Tuple[float, Optional[float]]:
    """(mean, sample std with ddof=1); std is None for fewer than two values."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("mean_std needs at least one value")
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def format_mean_std(mean: float, std: Optional[float], digits: int = 4) -> str:
    """``0.9851 ± 0.0009`` (``± n/a`` for one seed)."""
    spread = "n/a" if std is None else f"{std:.{digits}f}"
    return f"{mean:.{digits}f} ± {spread}"


def aggregate_summaries(summaries: Sequence[Dict[str, Any]],
                        labels: Optional[Sequence[Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Aggregate per-run ``summary.json`` dicts.

    Parameters
    ----------
    summaries : sequence of dict
    labels : sequence of dict, optional
        What tells each run apart, ``{"split": k}`` or ``{"split": k, "seed": s}``
        (keys of :data:`LABEL_KEYS`); default ``{"seed": summary["seed"]}``.

    Returns
    -------
    dict
        ``{"std": std_note(keys), "n": n, "over": keys, "<key>s": [...] per label key (e.g. "seeds"), "metric_name",
        "params", "<field>": {"mean", "std", "values"} for each of AGGREGATED_FIELDS,
        "per_<keys joined by _>": [{<key>..., <field>...}]}`` (``per_seed`` for a seed study).
    """
    if not summaries:
        raise ValueError("no per-run summaries to aggregate")
    labels = list(labels) if labels is not None else [{"seed": s.get("seed")} for s in summaries]
    if len(labels) != len(summaries) or not labels[0]:
        raise ValueError(f"{len(labels)} labels for {len(summaries)} summaries")
    keys = [k for k in LABEL_KEYS if k in labels[0]]
    names = {s.get("metric_name") for s in summaries}
    if len(names) != 1:
        raise ValueError(f"the runs report different metrics {sorted(map(str, names))}")
    result: Dict[str, Any] = {"std": std_note(keys), "n": len(summaries), "over": keys,
                              **{f"{k}s": [label[k] for label in labels] for k in keys},
                              "metric_name": names.pop(), "params": summaries[0].get("params")}
    for name in AGGREGATED_FIELDS:
        values = [s[name] for s in summaries if s.get(name) is not None]
        if len(values) != len(summaries):
            continue
        mean, std = mean_std(values)
        result[name] = {"mean": mean, "std": std, "values": values}
    result["per_" + "_".join(keys)] = [{**{k: label[k] for k in keys}, **{k: s.get(k) for k in AGGREGATED_FIELDS}}
                                       for label, s in zip(labels, summaries)]
    return result


def aggregate_study(summaries: Sequence[Dict[str, Any]], labels: Sequence[Dict[str, Any]],
                    failed: Sequence[Dict[str, Any]], keys: Sequence[str]) -> Dict[str, Any]:
    """:func:`aggregate_summaries` of the runs that finished, plus ``failed``: the runs that diverged
    (``[{<key>..., "reason"}]``, outside the mean) and ``runs``: how many the study holds in all.

    With no run finished there is nothing to average: ``n`` is 0 and ``metric_name`` None.
    """
    keys = list(keys)
    if summaries:
        result = aggregate_summaries(summaries, labels)
    else:
        result = {"std": std_note(keys), "n": 0, "over": keys, **{f"{k}s": [] for k in keys},
                  "metric_name": None, "params": None, "per_" + "_".join(keys): []}
    result["failed"] = [dict(row) for row in failed]
    result["runs"] = len(summaries) + len(failed)
    return result


def label_keys(agg: Dict[str, Any]) -> List[str]:
    """What the runs of an aggregate differ by: ``['seed']``, ``['split']`` or ``['split', 'seed']``."""
    return list(agg.get("over", ["seed"]))  # aggregates written before "over" existed are over seeds


def aggregate_markdown(agg: Dict[str, Any], title: str = "") -> str:
    """A Markdown report of one aggregate: the mean ± std table, then the per-seed values."""
    metric = agg["metric_name"]
    keys = label_keys(agg)
    failed = agg.get("failed", [])
    lines: List[str] = [f"# {title}" if title else f"# Aggregate over {'splits' if keys == ['split'] else 'seeds'}",
                        ""]
    if agg["n"] == 0:
        lines += [f"No run finished: all {len(failed)} failed (listed below).", ""]
        return "\n".join(lines + _failed_lines(keys, failed)) + "\n"
    lines += [f"{agg['std']}; n = {agg['n']} {_label_text(keys, agg)}; metric: {metric}; "
              f"{agg['params']:,} parameters." + (f" {len(failed)} of {agg['runs']} runs failed (not in the "
                                                   "mean; listed below)." if failed else ""), "",
              "| quantity | mean ± std |", "|---|---|"]
    for name in AGGREGATED_FIELDS:
        if name in agg:
            digits = 1 if name in ("best_epoch", "seconds_per_epoch") else 4
            label = name.replace("_metric", f" {metric}")
            lines.append(f"| {label} | {format_mean_std(agg[name]['mean'], agg[name]['std'], digits)} |")
    lines += ["", "| " + " | ".join(keys) + " | " + " | ".join(AGGREGATED_FIELDS) + " |",
              "|---" * (len(AGGREGATED_FIELDS) + len(keys)) + "|"]
    for row in agg["per_" + "_".join(keys)]:
        cells = [str(row[k]) for k in keys] + [_cell(row.get(k)) for k in AGGREGATED_FIELDS]
        lines.append("| " + " | ".join(cells) + " |")
    for row in failed:
        cells = [str(row[k]) for k in keys] + ["failed"] + ["-"] * (len(AGGREGATED_FIELDS) - 1)
        lines.append("| " + " | ".join(cells) + " |")
    if failed:
        lines += [""] + _failed_lines(keys, failed)
    return "\n".join(lines) + "\n"


def _failed_lines(keys: Sequence[str], failed: Sequence[Dict[str, Any]]) -> List[str]:
    """The failed runs with their reasons, and how to train them again."""
    lines = ["Failed runs (rerun the same command with --retry-failed to train them again):", ""]
    for row in failed:
        lines.append("- " + ", ".join(f"{k} {row[k]}" for k in keys) + f": {row['reason']}")
    return lines


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "-" if value is None else str(value)
