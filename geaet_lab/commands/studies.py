"""``geaet-dgl sweep`` and ``geaet-dgl attention``: studies over trained models."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Optional, Tuple

import click

from geaet_dgl.commands.options import (ListOptionCommand, data_source_options, device_option, gather_data, given,
                                        handle_errors, limit_options, parse_settings, retry_failed_option, seeds_option,
                                        split_index_option)


@click.command(cls=ListOptionCommand)
@click.option("--dataset", required=True, help="Dataset: a name of `geaet-dgl datasets` (mnist, zinc, ..., "
                                               "synthetic) or a graph file PATH.bin.")
@click.option("--preset", help="Configuration preset; default: the dataset's own (mnist for synthetic).")
@click.option("--set", "settings", multiple=True, metavar="KEY=V1[,V2...]",
              help="A comma list sweeps KEY over its values (the points are the cartesian product of all "
                   "lists); one value fixes KEY for every point. E.g. --set model.geanet.num_heads=2,4 "
                   "(unit_size then follows as hidden_dim // num_heads unless set), --set model.pe=none,lappe, "
                   "--set model.geanet.edge_unit=false,true (ablation). Repeatable.")
@seeds_option
@click.option("--epochs", type=click.IntRange(min=1), help="Number of epochs (train.epochs).")
@click.option("--batch-size", type=click.IntRange(min=1), help="Graphs per batch (train.batch_size).")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), help="Base learning rate (train.lr).")
@device_option("train")
@click.option("--workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="DataLoader worker processes.")
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Sweep directory (default runs/sweep-<dataset>-<preset>): one folder per point, each with "
                   "seed<k>/ runs; sweep.md and sweep.json hold the table. Rerun to continue.")
@data_source_options(from_run=False)
@split_index_option
@click.option("--splits", "split_list", multiple=True, metavar="all|K [K ...]",
              help="Named node sets: train every point once per public split (all, or those listed), each in "
                   "OUT/<point>/split<k> (with --seeds: split<k>-seed<s>); the table holds the mean ± std over "
                   "them. Choose a geom-gcn preset on all 10 splits this way.")
@limit_options
@click.option("--overwrite", is_flag=True, help="Retrain every point and seed from scratch.")
@retry_failed_option
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show progress bars.")
@handle_errors
@gather_data
def sweep(dataset: str, preset: Optional[str], settings: Tuple[str, ...], seeds: Tuple[int, ...],
          split_list: Tuple[str, ...], epochs: Optional[int], batch_size: Optional[int], lr: Optional[float],
          device: str, workers: int, out: Optional[str], data: Dict[str, Any], overwrite: bool,
          retry_failed: bool, progress: bool) -> None:
    """Sweep settings (heads, PE, GEANet unit ablation) over seeds; print one table with parameter counts."""
    from geaet_dgl.config import settings_with_options
    from geaet_lab.studies import SweepJob, run_sweep
    from geaet_lab.studies.sweep import SWEEP_MD, report_sweep_failures
    from geaet_dgl.training.seeds import check_splits_options
    from geaet_dgl.training.run_dir import default_sweep_dir

    check_splits_options(split_list, nproc=None, split_index_given="split_index" in data, resume=False,
                         partitions=False)
    pairs = settings_with_options(parse_settings(settings), epochs=epochs, batch_size=batch_size, lr=lr)
    out = out or str(default_sweep_dir(_dataset_label(dataset), preset))
    table = run_sweep(SweepJob(dataset, preset, pairs, list(seeds) or ([] if split_list else [0]), out, data,
                               device=device, workers=workers, overwrite=overwrite, progress=progress,
                               splits=tuple(split_list), retry_failed=retry_failed))
    click.echo((Path(out) / SWEEP_MD).read_text(), nl=False)
    click.echo(f"table in {out}/{SWEEP_MD} (and sweep.json)")
    report_sweep_failures(table, out)


def _dataset_label(dataset: str) -> str:
    """A dataset's name for a folder: a graph file's stem (``graphs`` for ``data/graphs.bin``), else the name."""
    import os

    from geaet_dgl.data.own_files.graph_files import is_graph_file_name

    return os.path.splitext(os.path.basename(dataset))[0] if is_graph_file_name(dataset) else dataset


@click.command(cls=ListOptionCommand)
@click.option("--checkpoint", required=True, type=click.Path(dir_okay=False),
              help="A best.pt or last.pt of a run; model and data settings come from it.")
@click.option("--graphs", type=click.IntRange(min=0), multiple=True, required=True, metavar="I [I ...]",
              help="Indices of the graphs to draw (e.g. --graphs 0 5 7).")
@click.option("--split", type=click.Choice(["test", "val", "train"]), default="test", show_default=True,
              help="Split the indices refer to.")
@click.option("--dataset", help="Dataset to draw graphs from, a name of `geaet-dgl datasets` (default: the "
                                "run's own data).")
@data_source_options(from_run=True)
@limit_options
@click.option("--out", type=click.Path(file_okay=False), metavar="DIR",
              help="Where graph<i>.png and attention.json go (default: attention/ next to the checkpoint).")
@handle_errors
@gather_data
def attention(checkpoint: str, graphs: Tuple[int, ...], split: str, dataset: Optional[str], data: Dict[str, Any],
              out: Optional[str]) -> None:
    """Draw per-node GEANet and self-attention scores of chosen graphs (PNG per graph + JSON).

    Each graph runs alone (a batch of one), so in geanet.scope=batch its GEANet weights are its own.
    GEANet score of node i: mean over heads of max over slots of the doubly normalised weights
    A[i,h,s] (1/S: spread evenly, 1: one slot). Transformer score: the attention a node receives,
    averaged over heads and query nodes. Both are averaged over layers in the figure; per-layer
    values (and GEANet's full (N, H, S) weights) are in the JSON.
    """
    from geaet_lab.studies import attention_maps
    from geaet_lab.studies.attention import ATTENTION_JSON

    result = attention_maps(checkpoint, list(graphs), split, {**given(dataset=dataset), **data}, out)
    folder = Path(result["graphs"][0]["png"]).parent
    for entry in result["graphs"]:
        click.echo(f"graph {entry['index']}: {entry['num_nodes']} nodes, label {entry['label']}, predicted "
                   f"{entry['prediction']} -> {entry['png']}")
    click.echo(f"scores in {folder / ATTENTION_JSON}")
