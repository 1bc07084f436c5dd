"""Where a training step's time goes: each branch's forward, the rest of the forward, backward, optimizer.

Every GEAET layer, ours and the reference's alike, holds its three branches
under the same attribute names: ``local_model`` (the MPNN), ``global_model``
(self-attention) and ``external_model`` (GEANet). Forward hooks on those
modules time each branch (in ours the self-attention module includes the
padding to the dense layout; the reference pads outside it). The step itself
is split at its natural seams: forward + loss, backward, then gradient
clipping + optimizer step, each side as its own trainer does it.

With a reference checkout, both models get the same weights and are stepped
alternately on the same batches, so machine drift hits both alike.
"""
from __future__ import annotations

import statistics
import time
from typing import Callable, Dict, List, Optional

import torch

from geaet_dgl.models import build_model
from .jobs import Reference, Timing
from .subject import Subject, as_subject
from .throughput import make_clipper, make_optimizer, ours_forward
from .timing import check_device, set_threads, synchronize

#: Layer attribute -> the component it is reported as.
BRANCHES = {"local_model": "mpnn", "global_model": "attention", "external_model": "geanet"}
#: The reported quantities, milliseconds per step, in table order.
PARTS = ("forward", "mpnn", "attention", "geanet", "other_forward", "backward", "optimizer", "step")


class BranchTimer:
    """Accumulates the forward time of every ``local_model`` / ``global_model`` / ``external_model`` module.

    ``totals[component]`` holds seconds since the last :meth:`reset`; on CUDA
    each hook synchronises first, so the times are the device's too.
    """

    def __init__(self, model: torch.nn.Module, device: torch.device):
        self.device = device
        self.totals: Dict[str, float] = dict.fromkeys(BRANCHES.values(), 0.0)
        self._started: Dict[int, float] = {}
        self._handles = []
        for name, module in model.named_modules():
            component = BRANCHES.get(name.rsplit(".", 1)[-1])
            if component is not None:
                self._handles.append(module.register_forward_pre_hook(self._start))
                self._handles.append(module.register_forward_hook(self._stop_hook(component)))

    def _start(self, module, args) -> None:
        synchronize(self.device)
        self._started[id(module)] = time.perf_counter()

    def _stop_hook(self, component: str):
        def stop(module, args, output) -> None:
            synchronize(self.device)
            self.totals[component] += time.perf_counter() - self._started.pop(id(module))
        return stop

    def reset(self) -> None:
        self.totals = dict.fromkeys(self.totals, 0.0)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


def timed_train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, loss_fn: Callable,
                     forward: Callable, clip: Callable, batch, timer: BranchTimer) -> Dict[str, float]:
    """One training step split into its parts, in milliseconds (keys: :data:`PARTS`)."""
    device = timer.device
    timer.reset()
    synchronize(device)
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    logits, labels = forward(model, batch)
    loss = loss_fn(logits, labels)
    synchronize(device)
    forward_done = time.perf_counter()
    loss.backward()
    synchronize(device)
    backward_done = time.perf_counter()
    clip(model)
    optimizer.step()
    synchronize(device)
    end = time.perf_counter()
    parts = {name: seconds * 1000 for name, seconds in timer.totals.items()}
    parts["forward"] = (forward_done - start) * 1000
    parts["other_forward"] = parts["forward"] - sum(timer.totals.values()) * 1000
    parts["backward"] = (backward_done - forward_done) * 1000
    parts["optimizer"] = (end - backward_done) * 1000
    parts["step"] = (end - start) * 1000
    return parts


def measure_breakdown(subject: "Subject | str" = "mnist", batch_size: int = 16, timing: Optional[Timing] = None,
                      reference: Optional[Reference] = None, config_file: Optional[str] = None) -> Dict[str, object]:
    """Median milliseconds per training step, by part, for our model (and the reference's with ``reference``).

    ``subject``: a :class:`.subject.Subject`, or a preset name (then ``reference.config_file``, or
    ``config_file`` without a reference: a reference (GEAET or GraphGPS) YAML whose model is split instead of
    the preset's, :mod:`.config_subject`). ``timing`` (default 10 timed steps after 3 untimed ones, 2 threads)
    gives the device, threads, steps, batches and seed.

    Returns ``{'batch_size', 'repeats', 'ours': {part: ms}, ['ref': {part: ms}]}``
    with the parts of :data:`PARTS`; ``forward`` includes the loss, ``step`` is
    the whole step. The reference runs on CPU only.
    """
    timing = timing or Timing(repeats=10, warmup=3, threads=2)
    repeats, warmup, num_batches, seed = timing.repeats, timing.warmup, timing.num_batches, timing.seed
    ref_dir = reference.ref_dir if reference else None
    dev = check_device(timing.device)
    set_threads(timing.threads)
    subject = as_subject(subject, reference.config_file if reference else config_file)
    from_file = subject.config_file is not None
    settings, loss_fn = subject.train, subject.loss()
    batches = subject.batches(int(batch_size), num_batches, dev, seed)
    sides: List[tuple] = []
    if ref_dir is not None:
        if dev.type != "cpu":
            raise ValueError("the reference comparison runs on CPU only; use device='cpu'")
        from .against_pyg import reference_forward
        from .parity import paired_models
        from ..interop.pyg_export import to_pyg_batch

        if from_file:  # the first batch's graphs stand for the training split (PNA's degrees)
            read = subject.file_subject()
            reference, ours = read.paired_models(ref_dir, batches[0][0], seed)
            pyg_batch = read.pyg_batch  # the file's encodings and edge types, as the throughput table's
        else:
            reference, ours = paired_models(ref_dir, subject.preset, seed=seed)
            pyg_batch = to_pyg_batch
        ref_batches = [(pyg_batch(g, y), y) for g, y in batches]
        sides.append(("ref", reference, make_optimizer(reference, settings, reference=True), reference_forward,
                      make_clipper(settings, reference=True), ref_batches))
    else:
        torch.manual_seed(seed)
        ours = build_model(subject.model).to(dev)
    sides.insert(0, ("ours", ours, make_optimizer(ours, settings), ours_forward, make_clipper(settings), batches))

    timers = {name: BranchTimer(model, dev) for name, model, *_ in sides}
    samples: Dict[str, List[Dict[str, float]]] = {name: [] for name, *_ in sides}
    try:
        for _, model, *_ in sides:
            model.train()
        for i in range(warmup + repeats):
            order = sides if i % 2 == 0 else sides[::-1]
            for name, model, optimizer, forward, clip, side_batches in order:
                parts = timed_train_step(model, optimizer, loss_fn, forward, clip,
                                         side_batches[i % len(side_batches)], timers[name])
                if i >= warmup:
                    samples[name].append(parts)
    finally:
        for timer in timers.values():
            timer.remove()
    result: Dict[str, object] = {"batch_size": int(batch_size), "repeats": repeats}
    for name, rows in samples.items():
        result[name] = {part: statistics.median(row[part] for row in rows) for part in PARTS}
    return result
