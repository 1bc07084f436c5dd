"""``geaet-dgl partition``: one graph with node masks -> DGL partitions for ``train --partitions``."""
from __future__ import annotations

import click

from .options import handle_errors


@click.command()
@click.argument("graph_file", metavar="FILE.bin", type=click.Path(dir_okay=False))
@click.option("--parts", type=click.IntRange(min=1), required=True, help="Number of partitions (one per machine).")
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="DIR",
              help="Folder for DGL's NAME.json and part0/ ... part{N-1}/.")
@click.option("--lap-k", type=click.IntRange(min=0), default=0, show_default=True,
              help="Laplacian eigenvectors stored per node, for model.pe eslappe/lappe with pe_k=K (the geaet-node "
                   "preset reads none).")
@click.option("--rwse-k", type=click.IntRange(min=0), default=0, show_default=True,
              help="Random-walk steps stored per node (model.pe=rwse with pe_k=K; 0: none).")
@handle_errors
def partition(graph_file: str, parts: int, out: str, lap_k: int, rwse_k: int) -> None:
    """Cut one graph (dgl.save_graphs file with train/val/test node masks) into partitions with DGL's METIS.

    Encodings are computed on the whole graph first; partitions balance training nodes and edges.
    Train on them with `geaet-dgl train --partitions DIR/NAME.json --nproc N` (docs/distributed.md).
    """
    from geaet_dgl.distgraph.partition import partition_file

    report = partition_file(graph_file, parts, out, lap_k=lap_k, rwse_k=rwse_k)
    for line in report.lines():
        click.echo(line)
