"""What ``train --seeds`` / ``--splits`` print at the end: the mean ± std, then the runs that failed."""
from __future__ import annotations

from typing import Any, Dict

import click


def print_aggregate(agg: Dict[str, Any], heading: str, out: str) -> None:
    """The study's mean ± std; then the runs that failed (a warning; all of them: an error)."""
    from pathlib import Path

    from geaet_dgl.training.aggregate import format_mean_std
    from geaet_dgl.training.failures import report_failures
    from geaet_dgl.training.seeds import AGGREGATE_MD

    metric = agg["metric_name"]
    if agg["n"]:
        click.echo(f"{heading}, {agg['std']}:")
        for name in ("val_metric", "test_metric"):
            stat = agg[name]
            click.echo(f"  {name.split('_')[0]} {metric}: {format_mean_std(stat['mean'], stat['std'])}")
        click.echo(f"table in {out}/{AGGREGATE_MD} (and aggregate.json)")
    report_failures(agg.get("failed", []), agg.get("runs", agg["n"]), Path(out) / AGGREGATE_MD)
