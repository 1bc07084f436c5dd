"""``geaet-dgl datasets``: the datasets, their tasks and whether their files are here."""
from __future__ import annotations

import json

import click

from .options import handle_errors


@click.command()
@click.option("--data-dir", type=click.Path(file_okay=False), default="data", show_default=True, metavar="DIR",
              help="Where to look for each dataset's files.")
@click.option("--json", "as_json", is_flag=True,
              help="Print a JSON list of {name, task, metric, size, splits, present, note}.")
@handle_errors
def datasets(data_dir: str, as_json: bool) -> None:
    """List the datasets: task, metric, split sizes and kind, and whether their files are under --data-dir.

    The named node sets (cora, actor, ...) are read by DGL's own loaders: --data-dir is DGL's raw_dir
    (e.g. ~/.dgl)."""
    from geaet_dgl.data.registry import dataset_table

    rows = dataset_table(data_dir)
    if as_json:
        click.echo(json.dumps(rows))
        return
    words = {True: "yes", False: "no", None: "generated"}
    click.echo(f"{'name':<16} {'task':<36} {'metric':<18} {'train/val/test':<42} {'splits':<34} {'present':<9} note")
    for row in rows:
        click.echo(f"{row['name']:<16} {row['task']:<36} {row['metric']:<18} {row['size']:<42} {row['splits']:<34} "
                   f"{words[row['present']]:<9} {row['note']}")
