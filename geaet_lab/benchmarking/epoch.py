"""Whole-epoch throughput, data loading and batching included.

Unlike :mod:`.throughput` (pre-built batches), every batch here comes out of
``make_loader`` over a :class:`GraphDataset` of synthetic graphs, so the
cost of ``collate`` (``dgl.batch``) and of the loader shows. One training epoch
(shuffled) and one inference epoch are timed after ``warmup_batches`` untimed
training steps; the loader's worker start-up, if ``workers > 0``, falls inside
the epoch, as in a real first epoch. The collate-only time is measured
separately, in this process, on the same batch compositions.
"""
from __future__ import annotations

import statistics
import time
from typing import TYPE_CHECKING, Dict

import torch

from geaet_dgl.data.dataset import collate, make_loader
from geaet_dgl.models import build_model
from .inputs import synthetic_graphs
from .subject import Subject, as_subject
from .throughput import infer_step_fn, make_clipper, make_optimizer, train_step_fn
from .timing import check_device, peak_rss_mib, set_threads, synchronize

if TYPE_CHECKING:
    from .jobs import EpochJob, Timing


def _timed_epoch(loader, step, device: torch.device) -> Dict[str, float]:
    """Run ``step`` over every batch; total seconds and the part spent waiting for the loader."""
    graphs, wait = 0, 0.0
    synchronize(device)
    start = last = time.perf_counter()
    for graph, labels in loader:
        wait += time.perf_counter() - last
        graph, labels = graph.to(device), labels.to(device)
        step((graph, labels))
        graphs += graph.batch_size
        synchronize(device)
        last = time.perf_counter()
    total = time.perf_counter() - start
    return {"seconds": total, "graphs": graphs, "graphs_per_s": graphs / total, "data_wait_s": wait}


def measure_epoch(preset: str = "mnist", num_graphs: int = 512, batch_size: int = 16, workers: int = 0,
                  device: str = "cpu", threads: int = 2, seed: int = 0, warmup_batches: int = 2
                  ) -> Dict[str, object]:
    """One training and one inference epoch over ``num_graphs`` synthetic graphs.

    Returns ``train_graphs_per_s``, ``infer_graphs_per_s``, the epoch seconds,
    ``*_data_wait_s`` (time the loop waited for the loader, collate included when
    ``workers == 0``), ``collate_ms_per_batch`` (median ``collate`` time of one
    batch), ``collate_share_of_train`` (total collate time / training epoch time)
    and ``peak_rss_mib``.
    """
    subject = Subject.from_preset(preset)  # a measuring process's entry: the name is resolved here, once
    if num_graphs < 1:
        raise ValueError(f"num_graphs must be >= 1, got {num_graphs}")
    set_threads(threads)
    dev = check_device(device)
    dataset = synthetic_graphs(subject.preset, num_graphs, seed=seed)
    torch.manual_seed(seed)
    model = build_model(subject.model).to(dev)
    optimizer = make_optimizer(model, subject.train)
    train_step = train_step_fn(model, optimizer, subject.loss(), clip=make_clipper(subject.train))

    model.train()
    warm = make_loader(dataset, batch_size, shuffle=False, seed=seed, num_workers=0)
    for i, (graph, labels) in enumerate(warm):
        if i >= warmup_batches:
            break
        train_step((graph.to(dev), labels.to(dev)))

    train = _timed_epoch(make_loader(dataset, batch_size, shuffle=True, seed=seed, num_workers=workers),
                         train_step, dev)
    model.eval()
    infer = _timed_epoch(make_loader(dataset, batch_size, shuffle=False, seed=seed, num_workers=workers),
                         infer_step_fn(model), dev)

    collate_s = []
    for start in range(0, num_graphs, batch_size):
        samples = [dataset[j] for j in range(start, min(start + batch_size, num_graphs))]
        t0 = time.perf_counter()
        collate(samples)
        collate_s.append(time.perf_counter() - t0)
    return {
        "num_graphs": int(num_graphs),
        "batch_size": int(batch_size),
        "workers": int(workers),
        "num_batches": len(collate_s),
        "train_epoch_s": train["seconds"],
        "train_graphs_per_s": train["graphs_per_s"],
        "train_data_wait_s": train["data_wait_s"],
        "infer_epoch_s": infer["seconds"],
        "infer_graphs_per_s": infer["graphs_per_s"],
        "infer_data_wait_s": infer["data_wait_s"],
        "collate_ms_per_batch": 1e3 * statistics.median(collate_s),
        "collate_ms_per_batch_mean": 1e3 * sum(collate_s) / len(collate_s),
        "collate_share_of_train": sum(collate_s) / train["seconds"],
        "peak_rss_mib": peak_rss_mib(),
    }


def run_epoch(subject: "Subject | str", epoch: "EpochJob", timing: "Timing") -> Dict[str, object]:
    """:func:`measure_epoch` of ``epoch``'s graphs, batch size (default the preset's) and loader workers, in a
    fresh process when ``timing.isolate`` (the preset's name crosses; the measurement resolves it there)."""
    from .worker import run_isolated

    subject = as_subject(subject)
    check_device(timing.device)
    kwargs = dict(preset=subject.preset, num_graphs=int(epoch.num_graphs),
                  batch_size=int(epoch.batch_size or subject.train.batch_size), workers=int(epoch.workers),
                  device=timing.device, threads=timing.threads, seed=timing.seed)
    return run_isolated("epoch", kwargs) if timing.isolate else measure_epoch(**kwargs)
