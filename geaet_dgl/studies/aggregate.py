"""Mean ± standard deviation over seeds, as the paper reports its numbers.

The ± is the *sample* standard deviation (``ddof=1``, divisor n - 1) of the
per-seed values, each taken at that seed's best-validation epoch (the
``summary.json`` of its run). With a single seed the std is undefined and is
written as ``null`` / ``n/a``.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

#: summary.json fields aggregated over seeds (the metrics at the best-validation epoch, and cost).
AGGREGATED_FIELDS = ("val_metric", "test_metric", "train_metric", "best_epoch", "seconds_per_epoch")

STD_NOTE = "mean ± sample std (ddof=1, n-1 divisor) over seeds, at each seed's best-validation epoch"


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


def aggregate_summaries(summaries: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Aggregate per-seed ``summary.json`` dicts.

    Returns
    -------
    dict
        ``{"std": STD_NOTE, "n": n, "seeds": [...], "metric_name", "params",
        "<field>": {"mean", "std", "values"} for each of AGGREGATED_FIELDS,
        "per_seed": [{seed, <field>...}]}``.
    """
    if not summaries:
        raise ValueError("no per-seed summaries to aggregate")
    names = {s.get("metric_name") for s in summaries}
    if len(names) != 1:
        raise ValueError(f"the seeds report different metrics {sorted(map(str, names))}")
    result: Dict[str, Any] = {
        "std": STD_NOTE, "n": len(summaries), "seeds": [s.get("seed") for s in summaries],
        "metric_name": names.pop(), "params": summaries[0].get("params"),
    }
    for name in AGGREGATED_FIELDS:
        values = [s[name] for s in summaries if s.get(name) is not None]
        if len(values) != len(summaries):
            continue
        mean, std = mean_std(values)
        result[name] = {"mean": mean, "std": std, "values": values}
    result["per_seed"] = [{"seed": s.get("seed"), **{k: s.get(k) for k in AGGREGATED_FIELDS}} for s in summaries]
    return result


def aggregate_markdown(agg: Dict[str, Any], title: str = "") -> str:
    """A Markdown report of one aggregate: the mean ± std table, then the per-seed values."""
    metric = agg["metric_name"]
    lines: List[str] = [f"# {title}" if title else "# Aggregate over seeds", "",
                        f"{STD_NOTE}; n = {agg['n']} seeds {agg['seeds']}; metric: {metric}; "
                        f"{agg['params']:,} parameters.", "",
                        "| quantity | mean ± std |", "|---|---|"]
    for name in AGGREGATED_FIELDS:
        if name in agg:
            digits = 1 if name in ("best_epoch", "seconds_per_epoch") else 4
            label = name.replace("_metric", f" {metric}")
            lines.append(f"| {label} | {format_mean_std(agg[name]['mean'], agg[name]['std'], digits)} |")
    lines += ["", "| seed | " + " | ".join(AGGREGATED_FIELDS) + " |",
              "|---" * (len(AGGREGATED_FIELDS) + 1) + "|"]
    for row in agg["per_seed"]:
        cells = [_cell(row.get(k)) for k in AGGREGATED_FIELDS]
        lines.append(f"| {row['seed']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "-" if value is None else str(value)
