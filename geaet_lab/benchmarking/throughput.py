"""Training and inference throughput (graphs/s) of a preset's model on pre-built batches.

Each batch size is measured in its own process (:mod:`.worker`) so that the
reported peak RSS belongs to that measurement alone. Inside it: the batches
are built once (``dgl.batch``, moved to the device once); inference (eval,
``no_grad``) is timed first, then training (forward, loss, backward,
gradient clipping, AdamW step, as the trainer does); each phase runs
``warmup`` untimed steps, then ``repeats`` timed steps cycling over the
pre-built batches, and reports the median (min, max) of the per-step graphs/s.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from geaet_dgl.inference import fold_for_inference
from geaet_dgl.models import build_model
from geaet_dgl.config import TrainConfig
from geaet_dgl.config.presets import get_preset
from .subject import Subject, as_subject, resolve_subject
from .timing import (check_device, current_rss_mib, peak_gpu_mib, peak_rss_mib, rates, set_threads, summarize,
                     time_call)

if TYPE_CHECKING:
    from .jobs import Timing

Batch = Tuple[object, torch.Tensor]


def _train_settings(preset) -> "TrainConfig":
    """The preset's training settings; a :class:`~geaet_dgl.config.TrainConfig` is its own."""
    return preset if isinstance(preset, TrainConfig) else get_preset(preset).train


def make_optimizer(model: torch.nn.Module, preset, reference: bool = False) -> torch.optim.Optimizer:
    """The optimizer each trainer builds, at the preset's (or a TrainConfig's) lr and weight decay.

    Ours: :func:`~geaet_dgl.training.schedule.build_optimizer` (AdamW over
    one flat buffer, clipping inside its step). ``reference=True``: what graphgym's ``create_optimizer``
    builds for the reference, ``torch.optim.AdamW(params, lr, weight_decay)``
    (torch's default picks the single-tensor update on CPU).
    """
    from geaet_dgl.training.schedule import build_optimizer

    train = _train_settings(preset)
    if reference:
        return torch.optim.AdamW(model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
    return build_optimizer(model.parameters(), lr=train.lr, weight_decay=train.weight_decay,
                           max_grad_norm=train.clip_grad_norm)


def make_clipper(preset, reference: bool = False) -> Callable[[torch.nn.Module], None]:
    """Gradient clipping as each trainer does it (the presets clip the norm at 1.0, as the reference's configs).

    Ours: nothing here, :func:`make_optimizer`'s step clips; ``reference=True``:
    graphgym's ``torch.nn.utils.clip_grad_norm_(params, value)``.
    """
    max_norm = _train_settings(preset).clip_grad_norm
    if max_norm is None or not reference:
        return lambda model: None
    return lambda model: torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)


def ours_forward(model: torch.nn.Module, batch: Batch) -> Tuple[torch.Tensor, torch.Tensor]:
    """Our model's forward on a ``(graph, labels)`` batch -> ``(logits, labels)``; on one graph with node
    masks (a node set) the rows of its ``train_mask`` nodes, as the trainer's full-graph step reads them."""
    graph, labels = batch
    output = model(graph)
    if "train_mask" in graph.ndata and output.shape[0] == graph.num_nodes():
        mask = graph.ndata["train_mask"]
        return output[mask], labels[mask]
    return output, labels


def train_step_fn(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn,
                  forward: Callable = None, clip: Callable[[torch.nn.Module], None] = None
                  ) -> Callable[[Batch], None]:
    """One optimisation step on a batch: forward, loss, backward, gradient clipping, optimizer step.

    ``forward(model, inputs) -> (logits, labels)`` adapts models whose call
    differs (the reference returns ``(pred, label)``); ours is the default.
    ``clip(model)`` clips the gradients (see :func:`make_clipper`); none if omitted.
    """
    forward = forward or ours_forward

    def step(batch: Batch) -> None:
        optimizer.zero_grad(set_to_none=True)
        logits, labels = forward(model, batch)
        loss_fn(logits, labels).backward()
        if clip is not None:
            clip(model)
        optimizer.step()

    return step


def infer_step_fn(model: torch.nn.Module, forward: Callable = None) -> Callable[[Batch], None]:
    forward = forward or ours_forward

    def step(batch: Batch) -> None:
        with torch.no_grad():
            forward(model, batch)

    return step


def time_steps(step: Callable[[Batch], None], batches: Sequence[Batch], sizes: Sequence[int], warmup: int,
               repeats: int, device: torch.device) -> List[float]:
    """Per-step graphs/s of ``repeats`` timed steps after ``warmup`` untimed ones, cycling over ``batches``."""
    seconds, graphs = [], []
    for i in range(warmup + repeats):
        j = i % len(batches)
        elapsed = time_call(lambda: step(batches[j]), device)
        if i >= warmup:
            seconds.append(elapsed)
            graphs.append(sizes[j])
    return rates(graphs, seconds)


def measure_throughput(preset: str = "mnist", batch_size: int = 16, device: str = "cpu", threads: int = 2,
                       repeats: int = 5, warmup: int = 2, num_batches: int = 2, seed: int = 0, fold: bool = True,
                       config_file: Optional[str] = None) -> Dict[str, object]:
    """Throughput and memory of one batch size, measured in the calling process (a measuring process's entry:
    the subject travels as ``preset`` or ``config_file`` and is resolved here, :func:`.subject.resolve_subject`).

    ``config_file``: a reference (GEAET or GraphGPS) YAML whose model is timed instead of ``preset``'s, on
    synthetic graphs shaped like its dataset carrying the encodings it reads (:mod:`.config_subject`).

    Inference runs the folded model (:func:`~geaet_dgl.inference.fold_for_inference`, as
    evaluation does) unless ``fold`` is False.

    Returns a dict with ``batch_size``, ``train_graphs_per_s`` / ``infer_graphs_per_s``
    (medians; ``*_min`` / ``*_max`` too), ``peak_rss_mib`` (whole process, after
    training), ``peak_rss_infer_mib`` (after the inference phase),
    ``base_rss_mib`` (after setup, before any step), ``peak_gpu_mib`` on CUDA,
    ``nodes_per_batch`` / ``edges_per_batch`` and ``num_parameters``.
    """
    return _measure_subject(resolve_subject(preset, config_file), batch_size, device, threads, repeats, warmup,
                            num_batches, seed, fold)


def _measure_subject(subject: Subject, batch_size: int, device: str, threads: int, repeats: int, warmup: int,
                     num_batches: int, seed: int, fold: bool) -> Dict[str, object]:
    """:func:`measure_throughput` of a resolved subject."""
    set_threads(threads)
    dev = check_device(device)
    model_config, settings, loss_fn = subject.model, subject.train, subject.loss()
    batches = subject.batches(batch_size, num_batches, dev, seed)
    sizes = [g.batch_size for g, _ in batches]
    torch.manual_seed(seed)
    model = build_model(model_config).to(dev)
    optimizer = make_optimizer(model, settings)
    base_rss = current_rss_mib()
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)

    infer_model = fold_for_inference(model) if fold else model.eval()
    infer = summarize(time_steps(infer_step_fn(infer_model), batches, sizes, warmup, repeats, dev))
    del infer_model
    peak_infer = peak_rss_mib()
    gpu_infer = peak_gpu_mib(dev) if dev.type == "cuda" else None
    model.train()
    step = train_step_fn(model, optimizer, loss_fn, clip=make_clipper(settings))
    train = summarize(time_steps(step, batches, sizes, warmup, repeats, dev))
    result: Dict[str, object] = {
        "batch_size": int(batch_size),
        "train_graphs_per_s": train["median"],
        "train_graphs_per_s_min": train["min"],
        "train_graphs_per_s_max": train["max"],
        "infer_graphs_per_s": infer["median"],
        "infer_graphs_per_s_min": infer["min"],
        "infer_graphs_per_s_max": infer["max"],
        "peak_rss_mib": peak_rss_mib(),
        "peak_rss_infer_mib": peak_infer,
        "base_rss_mib": base_rss,
        "nodes_per_batch": sum(g.num_nodes() for g, _ in batches) / len(batches),
        "edges_per_batch": sum(g.num_edges() for g, _ in batches) / len(batches),
        "num_parameters": sum(p.numel() for p in model.parameters()),
        "inference": "folded" if fold else "unfolded",
    }
    if dev.type == "cuda":
        result["peak_gpu_mib"] = peak_gpu_mib(dev)
        result["peak_gpu_infer_mib"] = gpu_infer
    return result


def run_throughput(subject: "Subject | str", batch_sizes: Sequence[int], timing: "Timing", fold: bool = True,
                   config_file: Optional[str] = None) -> List[Dict[str, object]]:
    """:func:`measure_throughput` for every batch size, each in a fresh process when ``timing.isolate``
    (``timing.threads`` resolved: see :meth:`~.jobs.Timing.resolved`). ``subject``: a :class:`.subject.Subject`,
    or a preset name (``config_file``: the YAML whose model is timed instead of its)."""
    from .worker import run_isolated

    subject = as_subject(subject, config_file)
    check_device(timing.device)
    results = []
    for batch_size in batch_sizes:
        kwargs = dict(batch_size=int(batch_size), device=timing.device, threads=timing.threads,
                      repeats=timing.repeats, warmup=timing.warmup, num_batches=timing.num_batches,
                      seed=timing.seed, fold=fold)
        results.append(run_isolated("throughput", dict(subject.worker_kwargs(), **kwargs)) if timing.isolate
                       else _measure_subject(subject, **kwargs))
    return results
