"""``train``'s run folder claimed for this process before any data is read (see
:mod:`geaet_dgl.training.run_lock`)."""
from __future__ import annotations

from typing import Any

from .train_options import TrainOptions


def claim_out_folder(opts: TrainOptions) -> Any:
    """``--out`` (or ``--resume``'s folder) claimed for this process before any data is read: a second process
    on it is refused at once (the training call claims it again; without ``--out`` only that claim holds)."""
    import contextlib
    import os

    from geaet_dgl.training.distributed import launched_by_torchrun
    from geaet_dgl.training.run_lock import claim_run_dir

    folder = opts.resume_dir or opts.out
    other_writer = (launched_by_torchrun() and os.environ.get("RANK", "0") != "0") or (opts.machine or 0) != 0 \
        or (opts.resume_dir is not None and partitioned_machine(opts.resume_dir) != 0)
    if folder is None or opts.dry_run or other_writer:
        return contextlib.nullcontext()
    return claim_run_dir(folder)


def partitioned_machine(run_dir: str) -> int:
    """The machine a run on partitions was started on (``--machine``; 0 for any other run)."""
    from geaet_dgl.distgraph import launch as dist_launch

    try:
        return int((dist_launch.partitioned_run(run_dir) or {}).get("machine") or 0)
    except (OSError, ValueError, TypeError, AttributeError):
        return 0  # a damaged marker: its own error comes later
