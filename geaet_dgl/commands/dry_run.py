"""`geaet-dgl train --dry-run`: what a run would build and read, without reading data."""
from __future__ import annotations

from typing import Any, Optional

import click


def print_dry_run(run: Any, config: Optional[str]) -> None:
    """Print what the run would build and read; read no data."""
    import os

    import yaml

    from geaet_dgl.config import to_dict
    from geaet_dgl.data.schema import find_schema
    from geaet_dgl.models import build_model

    model = build_model(run.model)
    params = sum(p.numel() for p in model.parameters())
    source = f"--config {config}" if config else f"preset {run.preset}"
    click.echo(f"dry run: {source}: {params:,} parameters on dataset {run.data.dataset}")
    settings = {"model": to_dict(run.model), "train": to_dict(run.train),
                "data": {k: v for k, v in to_dict(run.data).items() if v is not None}}
    click.echo(yaml.safe_dump(settings, sort_keys=False, default_flow_style=None).rstrip())
    schema = find_schema(run.data.dataset)
    if run.data.data_file:
        files = [run.data.data_file]
    elif schema is not None:
        files = [os.path.join(run.data.data_dir, name) for name in schema.files]
    else:
        files = []
    if config:
        from geaet_dgl.interop.reference_yaml import read_reference_config

        ref = read_reference_config(config)
        if ref.pretrained:
            files.append(os.path.join(ref.pretrained, "ckpt/"))
    click.echo("files the run would read: " + (", ".join(files) if files else "none (generated data)"))
