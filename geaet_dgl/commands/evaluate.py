"""``geaet-dgl eval``: a checkpoint's metric on one split."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

import click

from .options import (allow_changed_data_option, data_source_options, device_option, gather_data, handle_errors,
                      limit_options, threads_option)


@click.command(name="eval")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run; model and data settings come from it.")
@click.option("--split", type=click.Choice(["test", "val", "train"]), default="test", show_default=True,
              help="Split to score.")
@click.option("--json", "as_json", is_flag=True, help='Print exactly one JSON object '
                                                      '{"split", "metric_name", "metric"}.')
@data_source_options(from_run=True)
@click.option("--data-file", type=click.Path(dir_okay=False), metavar="PATH",
              help="Graph-file runs: the file, if it moved (default: the run's).")
@limit_options
@device_option("evaluate")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes.")
@click.option("--no-fold", is_flag=True,
              help="Score with the model as trained instead of its folded inference copy (BatchNorms folded "
                   "into linear maps: same outputs up to float rounding, faster; what training scores with).")
@threads_option
@allow_changed_data_option
@handle_errors
@gather_data
def eval_command(checkpoint: str, split: str, as_json: bool, data: Dict[str, Any], device: str, workers: int,
                 no_fold: bool, threads: Optional[int], allow_changed_data: bool) -> None:
    """Recompute a checkpoint's metric on one split (the run's data limits unless given)."""
    from geaet_dgl.scoring import evaluate_checkpoint

    result = evaluate_checkpoint(checkpoint, split, data, device=device, workers=workers, progress=not as_json,
                                 fold=not no_fold, threads=threads, allow_changed_data=allow_changed_data)
    if as_json:
        click.echo(json.dumps({key: result[key] for key in ("split", "metric_name", "metric")}))
    else:
        click.echo(f"{result['split']} {result['metric_name']}: {result['metric']:.6f} (loss {result['loss']:.6f})")
