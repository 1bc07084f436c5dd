"""Numerical parity between our GEAET and the PyG reference on the same weights and batch."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Dict

import dgl
import torch

from geaet_dgl.models import build_model
from geaet_dgl.config.presets import get_preset
from ..interop.pyg_export import to_pyg_batch
from ..interop.reference_model import load_reference_model, zero_dropout
from geaet_dgl.interop.reference_names import reference_to_ours


#: The precision both models are compared in. In float64 a correct port differs from the reference by
#: rounding of ~1e-12 at most, whatever the order of its sums, so a difference above the tolerance is a
#: different computation, never float32 summation order on another CPU.
PARITY_DTYPE = torch.float64
#: A gradient's difference is measured relative to the larger of its own norm and this fraction of the
#: largest gradient norm in the model (a gradient that is exactly 0, such as the bias of a layer that
#: BatchNorm follows, holds only rounding noise, which is not divided by itself).
GRAD_NORM_FLOOR = 1e-6


@dataclass
class ParityReport:
    """Largest differences between the two models, computed in ``dtype`` (float64 by default).

    ``grad_max_abs_diff``: the largest absolute difference of a gradient entry. ``grad_max_rel_diff``: the
    largest relative difference of a parameter's gradient, ``||ours - theirs|| / max(||ours||, ||theirs||,
    GRAD_NORM_FLOOR * the model's largest gradient norm)`` (Frobenius norms). The parity check
    (:attr:`checked_diff`) reads all of them: outputs and gradients absolute, gradients also relative.
    """

    params_ours: int
    params_reference: int
    eval_output_max_abs_diff: float
    train_output_max_abs_diff: float
    grad_max_abs_diff: float
    worst_grad_param: str
    grad_max_rel_diff: float = 0.0
    worst_rel_grad_param: str = ""
    dtype: str = "float64"

    @property
    def max_abs_diff(self) -> float:
        return max(self.eval_output_max_abs_diff, self.train_output_max_abs_diff, self.grad_max_abs_diff)

    @property
    def checked_diff(self) -> float:
        """What the tolerance is compared with: the largest absolute difference of an output or a gradient
        entry, and the largest relative difference of a parameter's gradient."""
        return max(self.max_abs_diff, self.grad_max_rel_diff)

    @property
    def worst(self) -> str:
        """Where :attr:`checked_diff` comes from, in words."""
        if self.checked_diff == self.grad_max_rel_diff and self.grad_max_rel_diff > self.max_abs_diff:
            return f"gradient of {self.worst_rel_grad_param}, relative to its norm"
        if self.checked_diff == self.grad_max_abs_diff:
            return f"gradient of {self.worst_grad_param}"
        return "eval outputs" if self.checked_diff == self.eval_output_max_abs_diff else "train outputs"

    def as_dict(self) -> Dict[str, float]:
        return dict(self.__dict__, max_abs_diff=self.max_abs_diff, checked_diff=self.checked_diff)


def paired_models(ref_dir: str, preset: str, seed: int = 0):
    """The reference model and ours carrying the same weights (ours in batch scope, as the preset)."""
    reference = load_reference_model(ref_dir, preset, seed=seed)
    config = get_preset(preset).model
    ours = build_model(config)
    ours.load_state_dict(reference_to_ours(reference.state_dict()), strict=True)
    return reference, ours


def check_parity(ref_dir: str, preset: str, graph: dgl.DGLGraph, labels: torch.Tensor, seed: int = 0
                 ) -> ParityReport:
    """Build both models with the same weights and compare them on ``graph`` (see :func:`compare_models`)."""
    from .inputs import loss_function

    reference, ours = paired_models(ref_dir, preset, seed)
    return compare_models(reference, ours, graph, labels, to_pyg_batch(graph, labels), loss_function(preset))


def _seeded(forward, seed: int = 0):
    """``forward()`` with the global RNG seeded to ``seed`` and restored afterwards, so that train-mode
    randomness left on after dropout is zeroed (LapPE's random eigenvector signs, in the reference too)
    draws the same numbers in both models."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return forward()


def _fit_batch_norm_statistics(model: torch.nn.Module, forward) -> None:
    """Set every BatchNorm's running statistics to those of one train-mode ``forward()`` (no gradients)."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    saved = [m.momentum for m in norms]
    for m in norms:
        m.momentum = 1.0
    model.train()
    with torch.no_grad():
        _seeded(forward)
    for m, momentum in zip(norms, saved):
        m.momentum = momentum


def in_precision(value, dtype: torch.dtype):
    """``value`` (a tensor, a DGL graph or a PyG batch) with its floating-point tensors in ``dtype``; a graph or
    batch is a copy, the caller's is left as it was."""
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, dgl.DGLGraph):
        graph = value.local_var()
        for frames in ([graph.nodes[t].data for t in graph.ntypes], [graph.edges[t].data for t in graph.canonical_etypes]):
            for frame in frames:
                for key in list(frame.keys()):
                    frame[key] = in_precision(frame[key], dtype)
        return graph
    batch = copy.copy(value)  # PyG: the copy has its own attribute stores
    return batch.apply(lambda t: in_precision(t, dtype))


def compare_models(reference: torch.nn.Module, ours: torch.nn.Module, graph: dgl.DGLGraph, labels: torch.Tensor,
                   reference_input, loss_fn=None, dtype: torch.dtype = PARITY_DTYPE) -> ParityReport:
    """Compare outputs (eval mode, and train mode without dropout) and gradients of ``loss_fn``
    (``f(logits, labels)``; default cross-entropy), both models and all inputs in ``dtype`` (float64 by
    default: see :data:`PARITY_DTYPE`). Eval mode runs with each model's BatchNorm statistics set from this
    batch.

    ``reference(copy.copy(reference_input))`` must return ``(pred, label)`` (the
    reference mutates the batch it is given, hence the copy); its parameter names
    are mapped to ours with :func:`reference_to_ours`. Both models are modified
    (moved to ``dtype``, dropout zeroed, gradients accumulated, BatchNorm statistics updated);
    ``graph``, ``labels`` and ``reference_input`` are not.
    """
    reference.to(dtype), ours.to(dtype)
    graph, labels = in_precision(graph, dtype), in_precision(labels, dtype)
    reference_input = in_precision(reference_input, dtype)
    zero_dropout(reference), zero_dropout(ours)
    # Eval mode is compared with BatchNorm statistics taken from this batch, as after training: with a
    # fresh model's (mean 0, variance 1) nothing is normalised and activations grow layer by layer.
    _fit_batch_norm_statistics(ours, lambda: ours(graph))
    _fit_batch_norm_statistics(reference, lambda: reference(copy.copy(reference_input)))
    reference.eval(), ours.eval()
    with torch.no_grad():
        eval_diff = (ours(graph) - reference(copy.copy(reference_input))[0]).abs().max().item()

    reference.train(), ours.train()
    out_ours = _seeded(lambda: ours(graph))
    out_ref = _seeded(lambda: reference(copy.copy(reference_input))[0])
    train_diff = (out_ours - out_ref).abs().max().item()
    loss_fn = loss_fn or torch.nn.functional.cross_entropy
    loss_fn(out_ours, labels).backward()
    loss_fn(out_ref, labels).backward()

    ref_grads = reference_to_ours({n: p.grad for n, p in reference.named_parameters()})
    pairs = {}
    for name, param in ours.named_parameters():
        mine, theirs = param.grad, ref_grads.get(name)  # absent: the reference has no gradient there
        if mine is None and theirs is None:
            continue
        pairs[name] = (mine if mine is not None else torch.zeros_like(param),
                       theirs if theirs is not None else torch.zeros_like(param))
    worst, worst_name, rel, rel_name = grad_differences(pairs)
    return ParityReport(
        params_ours=sum(p.numel() for p in ours.parameters()),
        params_reference=sum(p.numel() for p in reference.parameters()),
        eval_output_max_abs_diff=eval_diff,
        train_output_max_abs_diff=train_diff,
        grad_max_abs_diff=worst,
        worst_grad_param=worst_name,
        grad_max_rel_diff=rel,
        worst_rel_grad_param=rel_name,
        dtype=str(dtype).replace("torch.", ""),
    )


def grad_differences(pairs) -> tuple:
    """``{name: (ours, theirs)}`` gradients -> (largest absolute difference of an entry, its parameter, largest
    relative difference of a parameter's gradient, its parameter); see :class:`ParityReport`."""
    worst, worst_name, rel, rel_name = 0.0, "", 0.0, ""
    pairs = {name: (mine.double(), theirs.double()) for name, (mine, theirs) in pairs.items() if theirs.numel()}
    largest = max((max(m.norm().item(), t.norm().item()) for m, t in pairs.values()), default=0.0)
    floor = max(GRAD_NORM_FLOOR * largest, torch.finfo(torch.float64).tiny)
    for name, (mine, theirs) in pairs.items():
        diff = (mine - theirs).abs().max().item()
        scaled = (mine - theirs).norm().item() / max(mine.norm().item(), theirs.norm().item(), floor)
        if diff >= worst:
            worst, worst_name = diff, name
        if scaled >= rel:
            rel, rel_name = scaled, name
    return worst, worst_name, rel, rel_name
