"""``geaet-dgl export-reference`` and ``compare``: the PyG reference (icm1018/GEAET), the lab's side.

``import-reference`` (a reference checkpoint -> our run directory) is the library's: :mod:`geaet_dgl.commands.interop`.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import click

from geaet_dgl.commands.options import (ListOptionCommand, data_source_options, gather_data, handle_errors,
                                        limit_options, parse_settings)


@click.command(name="export-reference")
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False), metavar="RUN_DIR/best.pt",
              help="Our best.pt or last.pt.")
@click.option("--out", type=click.Path(dir_okay=False), metavar="PATH.ckpt",
              help="Where to write (default RUN_DIR/reference/ckpt/<epoch>.ckpt, the layout graphgym's load_ckpt "
                   "reads).")
@handle_errors
def export_reference_command(checkpoint: str, out: Optional[str]) -> None:
    """Write our checkpoint as the reference's (graphgym) checkpoint: {"model_state": ...} with its names."""
    from geaet_dgl.interop.reference_checkpoint import export_reference

    result = export_reference(checkpoint, out)
    click.echo(f"wrote {result['params']:,} parameters (epoch {result['epoch']}) to {result['path']}")


@click.command(cls=ListOptionCommand)
@click.option("--against-pyg", "ref_dir", required=True, type=click.Path(file_okay=False, exists=True),
              metavar="REF_DIR", help="Checkout of icm1018/GEAET; its main.py trains the reference (run from there).")
@click.option("--python", "python", type=click.Path(dir_okay=False), metavar="PATH",
              help="Python of the reference's environment (default: this one).")
@click.option("--dataset", type=click.Choice(["mnist", "cifar10"]),
              help="The graph set (default mnist); not with --config.")
@click.option("--config", type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="A node configuration (GraphGPS's actor-GPS.yaml, webkb-*-GPS.yaml, wn-*-GPS.yaml): both sides "
                   "train from it on our copy of its node set (in --data-dir, DGL's raw_dir).")
@click.option("--file-set", "file_settings", multiple=True, metavar="KEY=VALUE",
              help="With --config: change a key of the file for both sides, in the file's names (e.g. "
                   "gt.layer_type=GCN+None); the changed file is OUT/config/<file>.")
@click.option("--split-index", type=click.IntRange(min=0), metavar="K",
              help="With --config: the public split (geom-gcn's 0..9) both sides train on (default 0).")
@click.option("--seeds", type=click.IntRange(min=0), multiple=True, metavar="K [K ...]",
              help="Seeds; each side trains once per seed (default 0 1 2).")
@click.option("--epochs", type=click.IntRange(min=1), help="Epochs of both (default: the preset's).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch of both (default: the preset's).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate of both.")
@click.option("--warmup-epochs", type=click.IntRange(min=0),
              help="Warm-up epochs of both (default: the preset's 5 of 150 scaled to --epochs, rounded down).")
@data_source_options(from_run=False)
@limit_options
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Comparison folder: pyg/ (the exported graphs), ours/seed<k>/, reference/seed<k>/, compare.json, "
                   "compare.md, compare.png. Rerun to continue (finished runs are skipped).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--threads", type=click.IntRange(min=1), help="torch threads of both sides (default: torch's).")
@click.option("--overwrite", is_flag=True, help="Retrain every seed of both sides.")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@handle_errors
@gather_data
def compare(ref_dir: str, python: Optional[str], dataset: Optional[str], config: Optional[str],
            file_settings: Tuple[str, ...], seeds: Tuple[int, ...], epochs: Optional[int],
            batch_size: Optional[int], lr: Optional[float],
            warmup_epochs: Optional[int], data: Dict[str, Any], out: str, device: str, threads: Optional[int],
            overwrite: bool, progress: bool) -> None:
    """Train ours and the PyG reference on the same graphs with the same budget, per seed; compare the curves."""
    from geaet_lab.interop.compare import COMPARE_MD, compare_against_reference

    data = dict(data)
    split_index = data.pop("split_index", None)
    if config is not None:
        from geaet_lab.interop.compare_nodes import compare_node_config

        _check_node_options(dataset, batch_size, lr, data)
        compare_node_config(ref_dir, config, list(seeds) or [0, 1, 2], out, python=python or sys.executable,
                            data_dir=data.get("data_dir") or "data", split_index=split_index or 0, epochs=epochs,
                            warmup_epochs=warmup_epochs, file_changes=parse_file_settings(file_settings),
                            device=device, threads=threads, overwrite=overwrite,
                            progress=progress, echo=click.echo)
    else:
        if file_settings:
            raise click.UsageError("--file-set changes a node configuration: use it with --config FILE.yaml")
        if split_index is not None:
            raise click.UsageError("--split-index picks a node set's split: use it with --config FILE.yaml")
        compare_against_reference(ref_dir, dataset or "mnist", list(seeds) or [0, 1, 2], out,
                                  python=python or sys.executable, epochs=epochs, batch_size=batch_size, lr=lr,
                                  warmup_epochs=warmup_epochs, data=data, device=device, threads=threads,
                                  overwrite=overwrite, progress=progress, echo=click.echo)
    click.echo((Path(out) / COMPARE_MD).read_text(), nl=False)
    click.echo(f"table in {out}/{COMPARE_MD}, curves in {out}/compare.png, everything in {out}/compare.json")


def _check_node_options(dataset: Optional[str], batch_size: Optional[int], lr: Optional[float],
                        data: Dict[str, Any]) -> None:
    """Refuse the graph-set options that a node configuration does not take (one line each)."""
    if dataset is not None:
        raise click.UsageError(f"--config names its own dataset; drop --dataset {dataset}")
    for name, value in (("--batch-size", batch_size), ("--lr", lr)):
        if value is not None:
            raise click.UsageError(f"{name} with --config: both sides take it from the file; edit a copy of the file")
    extra = sorted(k for k in data if k != "data_dir")
    if extra:
        raise click.UsageError(f"--{extra[0].replace('_', '-')} does not apply to a node configuration (one whole "
                               "graph, the split's masks): drop it")


def parse_file_settings(settings: Tuple[str, ...]) -> Dict[str, str]:
    """``--file-set KEY=VALUE`` items as ``{KEY: VALUE}`` (as ``train --set``)."""
    try:
        return parse_settings(settings)
    except click.BadParameter as exc:
        raise click.BadParameter(exc.message.replace("model.hidden_dim=64", "gt.layer_type=GCN+None"),
                                 param_hint="--file-set") from None
