"""`geaet-dgl train --dry-run`: what a run would build and read, without reading data.

It checks what the run would check before training and can check without the data: the public split
(``--split-index``, ``--splits``) against the count the named set publishes, and a pretrained folder's
checkpoint (``pretrained.dir``) against the model; it names the folders DGL's loaders read (their
``<name>_<hash>/`` raw folders) and the checkpoint GraphGPS's layout holds (``<dir>/<seed>/ckpt/<epoch>.ckpt``).
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import click


def print_dry_run(run: Any, config: Optional[str], splits: Sequence[str] = (), seeds: Sequence[int] = ()) -> None:
    """Print what the run would build and read; read no data. ``splits`` / ``seeds``: the ``--splits`` /
    ``--seeds`` of a study (each run of it is ``run`` on that split and seed)."""
    import yaml

    from geaet_dgl.config import to_dict
    from geaet_dgl.models import build_model

    runs = _study_runs(run, splits, seeds)
    model = build_model(run.model)
    params = sum(p.numel() for p in model.parameters())
    source = f"--config {config}" if config else f"preset {run.preset}"
    click.echo(f"dry run: {source}: {params:,} parameters on dataset {run.data.dataset}")
    settings = {"model": to_dict(run.model), "train": to_dict(run.train),
                "data": {k: v for k, v in to_dict(run.data).items() if v is not None}}
    click.echo(yaml.safe_dump(settings, sort_keys=False, default_flow_style=None).rstrip())
    if runs:
        click.echo(f"study: {runs}")
    files = _data_files(run)
    if config:
        files += _pretrained_files(run, config)
    click.echo("files the run would read: " + (", ".join(files) if files else "none (generated data)"))


def _study_runs(run: Any, splits: Sequence[str], seeds: Sequence[int]) -> str:
    """The runs of a ``--splits`` / ``--seeds`` study, the split indices checked; '' for one run."""
    from geaet_dgl.config import OptionConflict
    from geaet_dgl.data.nodes.node_sets import check_split_index_unread, is_node_set, published_split_count
    from geaet_dgl.training.seeds import split_indices

    if is_node_set(run.data.dataset):
        check_split_index_unread(run.data.dataset, run.data.split_index)
    if not splits:
        return f"one run per seed {list(seeds)}" if seeds else ""
    if not is_node_set(run.data.dataset):
        raise OptionConflict(f"--splits trains on the public splits of a named node set (cora, actor, ...), but "
                             f"the run trains on {run.data.name!r}; drop it (or use --seeds)")
    chosen = split_indices(splits, published_split_count(run.data.dataset), run.data.dataset)
    return f"one run per public split {chosen}" + (f" and seed {list(seeds)}" if seeds else "") + \
        f" ({len(chosen) * max(1, len(seeds))} runs)"


def _data_files(run: Any) -> List[str]:
    """The files or folders the run's data comes from (a named node set: DGL's raw folder of it)."""
    import os

    from geaet_dgl.data.nodes.node_sets import expected_files, describe_files, is_node_set, raw_folder
    from geaet_dgl.data.schema import find_schema

    if run.data.data_file:
        return [run.data.data_file]
    if is_node_set(run.data.dataset):
        folder = raw_folder(run.data.dataset, run.data.data_dir)
        return [f"{folder}/ ({describe_files(expected_files(run.data.dataset))})"]
    schema = find_schema(run.data.dataset)
    return [os.path.join(run.data.data_dir, name) for name in schema.files] if schema is not None else []


def _pretrained_files(run: Any, config: str) -> List[str]:
    """The checkpoint a file's ``pretrained.dir`` holds (the one GraphGPS loads), checked to fit the model."""
    from geaet_dgl.interop.reference_weights import pretrained_checkpoint, pretrained_settings, pretrained_weights
    from geaet_dgl.interop.reference_yaml import read_reference_config

    folder = read_reference_config(config).pretrained
    if not folder:
        return []
    checkpoint = pretrained_checkpoint(folder, run.train.seed)
    pretrained_weights(run.model, checkpoint, run.data.dataset, pretrained_settings(config)["reset_prediction_head"],
                       run.train.seed)
    return [str(checkpoint)]
