"""Re-scoring a saved checkpoint on one split: what ``geaet-dgl eval`` runs."""
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional

import torch

from ..data.nodes.node_graph import NodeGraph
from ..threads import apply_threads
from ..training.evaluation import evaluate, evaluate_node_splits
from ..training.losses import get_loss
from ..data.model_fit import FIT_TRAINED, check_data_fits
from ..data.run_splits import load_splits
from .trained_run import open_trained_run

SPLITS = ("train", "val", "test")


def evaluate_checkpoint(path: "os.PathLike | str", split: str = "test", data: Optional[Mapping[str, Any]] = None,
                        device: str = "cpu", workers: int = 0, progress: bool = True, fold: bool = True,
                        threads: Optional[int] = None, allow_changed_data: bool = False) -> Dict[str, Any]:
    """Rebuild the model and its data from a checkpoint alone and score one split.

    Parameters
    ----------
    path : path-like
        A ``best.pt`` / ``last.pt`` written by training.
    split : {'train', 'val', 'test'}
    data : mapping, optional
        :class:`DataOptions` fields replacing the checkpoint's (``data_dir``,
        ``limit_test``, ...); by default the data the run used.
    device : {'cpu', 'cuda'}
    fold : bool
        Score with the folded inference model (as training does), or the model itself.
    threads : int, optional
        CPU threads (see :mod:`geaet_dgl.threads`); ``None``: the cores this
        process may use.
    allow_changed_data : bool
        Score data that changed since the run was trained (with the run's own
        split of a graph file) instead of refusing it.

    Returns
    -------
    dict
        ``{"split", "metric_name", "metric", "loss", "threads"}`` (and the
        metrics logged beside the main one, e.g. ``"hits@1"`` for link prediction).
    """
    if split not in SPLITS:
        raise ValueError(f"split={split!r} is not one of {', '.join(SPLITS)}")
    threads = apply_threads(threads)
    run, model, _ = open_trained_run(path, data, device=device, workers=workers, threads=threads)
    torch_device = torch.device(run.device)
    splits = load_splits(run.data, run.model, progress=progress, allow_changed_data=allow_changed_data)
    check_data_fits(run.model, splits, fix=FIT_TRAINED)
    if isinstance(splits, NodeGraph):  # one graph with node masks: scored on the whole graph
        result = evaluate_node_splits(model.to(torch_device), splits, get_loss(run.train.loss), run.train.metric,
                                      torch_device, splits=(split,))[split]
        return {"split": split, "metric_name": run.train.metric, **result, "threads": threads}
    result = evaluate(model.to(torch_device), getattr(splits, split), get_loss(run.train.loss), run.train.metric,
                      run.train.batch_size, torch_device, run.workers, fold=fold)
    return {"split": split, "metric_name": run.train.metric, **result, "threads": threads}
