"""``geaet-dgl presets``: the presets and their parameter counts."""
from __future__ import annotations

import json

import click

from .options import handle_errors


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of {name, dataset, params, paper_params}.")
@handle_errors
def presets(as_json: bool) -> None:
    """List the presets with their parameter count (built from the config) and the paper's."""
    from geaet_dgl.models import build_model
    from geaet_dgl.config.presets import get_preset, preset_names

    rows = []
    for name in preset_names():
        preset = get_preset(name)
        rows.append({"name": name, "dataset": preset.dataset, "params": build_model(preset.model).num_parameters,
                     "paper_params": preset.paper_params})
    if as_json:
        click.echo(json.dumps(rows))
        return
    width = max(16, *(len(row["name"]) for row in rows))
    click.echo(f"{'name':<{width}} {'dataset':<16} {'params':>10} {'paper':>10}")
    for row in rows:
        paper = f"{row['paper_params']:,}" if row["paper_params"] is not None else "-"
        click.echo(f"{row['name']:<{width}} {row['dataset']:<16} {row['params']:>10,} {paper:>10}")
