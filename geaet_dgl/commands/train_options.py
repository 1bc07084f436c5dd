"""What ``geaet-dgl train`` was given, as one object the command's modes share."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from .options import parse_settings


@dataclass
class TrainOptions:
    """What ``geaet-dgl train`` was given (the command's options; ``data``: the data options that were given)."""

    dataset: Optional[str]
    preset: Optional[str]
    config: Optional[str]
    epochs: Optional[int]
    batch_size: Optional[int]
    lr: Optional[float]
    seed: Optional[int]
    device: Optional[str]
    workers: Optional[int]
    out: Optional[str]
    data: Dict[str, Any]
    settings: Tuple[str, ...]
    checkpoint_every: Optional[int]
    resume_dir: Optional[str]
    overwrite: bool
    progress: bool
    nproc: Optional[int]
    sync_bn: bool
    seeds: Tuple[int, ...]
    task: Optional[str]
    split_file: Optional[str]
    split_fractions: Optional[Tuple[float, ...]]
    tensorboard: bool
    partitions: Optional[str]
    ip_config: Optional[str]
    machine: Optional[int]
    threads: Optional[int]
    allow_changed_data: bool
    sampler: Optional[str]
    dry_run: bool
    split_list: Tuple[str, ...]
    retry_failed: bool

    def overrides(self) -> Dict[str, Any]:
        """The ``--set`` settings with --epochs, --batch-size, --lr and --seed folded in."""
        from geaet_dgl.config import settings_with_options

        return settings_with_options(parse_settings(self.settings), epochs=self.epochs, batch_size=self.batch_size,
                                     lr=self.lr, seed=self.seed)
