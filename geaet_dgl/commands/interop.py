"""``geaet-dgl import-reference``: a checkpoint of the PyG reference (icm1018/GEAET) -> our run directory.

``export-reference`` and ``compare`` are the lab's (:mod:`geaet_lab.commands.interop`).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import click

from .options import data_source_options, gather_data, handle_errors, limit_options


@click.command(name="import-reference")
@click.option("--checkpoint", type=click.Path(dir_okay=False), metavar="REF.ckpt",
              help="A checkpoint of the reference's main.py (<out_dir>/<cfg>/<seed>/ckpt/<epoch>.ckpt); default, "
                   "when --config names pretrained.dir: the checkpoint GraphGPS loads from that folder.")
@click.option("--config", required=True, type=click.Path(dir_okay=False, exists=True), metavar="FILE.yaml",
              help="The reference YAML it was trained with, or one naming a pretrained.dir folder (GraphGPS's "
                   "*-inference.yaml: config.yaml and <seed>/ckpt/<epoch>.ckpt).")
@click.option("--out", required=True, type=click.Path(file_okay=False), metavar="RUN_DIR",
              help="Our run directory to write (config.json, best.pt, imported.json).")
@click.option("--data-dir", type=click.Path(file_okay=False), metavar="DIR",
              help="Where the dataset is, for `geaet-dgl eval` on the run (default ./data).")
@limit_options
@click.option("--overwrite", is_flag=True, help="Replace the run files of an existing RUN_DIR.")
@handle_errors
@gather_data
def import_reference_command(checkpoint: Optional[str], config: str, out: str, data: Dict[str, Any],
                             overwrite: bool) -> None:
    """Turn a reference (PyG) checkpoint into our run directory; score it with `geaet-dgl eval`."""
    from geaet_dgl.interop.reference_checkpoint import import_reference

    result = import_reference(checkpoint, config, out, data, overwrite=overwrite)
    head = " (prediction head freshly initialised: pretrained.reset_prediction_head)" if result["reset_head"] else ""
    click.echo(f"imported {result['params']:,} parameters (reference epoch {result['epoch']}) into "
               f"{result['checkpoint']}{head}; score it with: geaet-dgl eval --checkpoint {result['checkpoint']}")
