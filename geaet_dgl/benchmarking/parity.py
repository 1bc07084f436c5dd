"""Numerical parity between our GEAET and the PyG reference on the same weights and batch."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Dict

import dgl
import torch

from ..models import build_model
from ..config.presets import get_preset
from ..interop.pyg_export import to_pyg_batch
from ..interop.reference_model import load_reference_model, zero_dropout
from ..interop.reference_names import reference_to_ours


#: A parameter's gradient is measured against the larger of its own largest entry and this fraction of the
#: model's largest gradient entry (so that a gradient of rounding noise around zero is not divided by itself).
GRAD_SCALE_FLOOR = 1e-1
#: A gradient whose entries all stay below this fraction of the model's largest gradient entry, in both models,
#: is zero up to float32 rounding (a bias followed by BatchNorm, whose exact gradient is 0): its difference is
#: measured against the model's largest gradient entry instead of its own noise.
GRAD_NOISE_LEVEL = 1e-4


@dataclass
class ParityReport:
    """Largest differences between the two models (float32).

    ``grad_max_abs_diff`` is the largest absolute gradient difference; ``grad_max_rel_diff`` the largest
    difference relative to the gradient's scale: per parameter, max |ours - theirs| divided by
    max(max |theirs|, GRAD_SCALE_FLOOR * the model's largest |gradient|), or by the model's largest |gradient|
    for a gradient that is rounding noise in both models (:data:`GRAD_NOISE_LEVEL`). The parity check
    (:attr:`checked_diff`) reads the outputs' absolute differences and the gradients' relative one:
    float32 sums of thousands of terms, added in another order on another CPU, move a gradient of
    size 10 by 1e-5 without anything being wrong.
    """

    params_ours: int
    params_reference: int
    eval_output_max_abs_diff: float
    train_output_max_abs_diff: float
    grad_max_abs_diff: float
    worst_grad_param: str
    grad_max_rel_diff: float = 0.0
    worst_rel_grad_param: str = ""

    @property
    def max_abs_diff(self) -> float:
        return max(self.eval_output_max_abs_diff, self.train_output_max_abs_diff, self.grad_max_abs_diff)

    @property
    def checked_diff(self) -> float:
        """What the tolerance is compared with: outputs absolute, gradients relative to their scale."""
        return max(self.eval_output_max_abs_diff, self.train_output_max_abs_diff, self.grad_max_rel_diff)

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


def compare_models(reference: torch.nn.Module, ours: torch.nn.Module, graph: dgl.DGLGraph, labels: torch.Tensor,
                   reference_input, loss_fn=None) -> ParityReport:
    """Compare outputs (eval mode, and train mode without dropout) and gradients of ``loss_fn``
    (``f(logits, labels)``; default cross-entropy). Eval mode runs with each model's BatchNorm statistics
    set from this batch.

    ``reference(copy.copy(reference_input))`` must return ``(pred, label)`` (the
    reference mutates the batch it is given, hence the copy); its parameter names
    are mapped to ours with :func:`reference_to_ours`. Both models are modified
    (dropout zeroed, gradients accumulated, BatchNorm statistics updated).
    """
    zero_dropout(reference), zero_dropout(ours)
    # Eval mode is compared with BatchNorm statistics taken from this batch, as after training: with a
    # fresh model's (mean 0, variance 1) nothing is normalised, activations grow layer by layer and float32
    # rounding alone reaches 1e-5 on deep presets (PATTERN's 7 layers), hiding what the check is for.
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
    )


def grad_differences(pairs) -> tuple:
    """``{name: (ours, theirs)}`` gradients -> (largest absolute difference, its parameter, largest difference
    relative to the gradient's scale, its parameter); see :class:`ParityReport`."""
    worst, worst_name, rel, rel_name = 0.0, "", 0.0, ""
    largest = max((theirs.abs().max().item() for _, theirs in pairs.values() if theirs.numel()), default=0.0)
    floor = max(GRAD_SCALE_FLOOR * largest, torch.finfo(torch.float32).tiny)
    for name, (mine, theirs) in pairs.items():
        if not theirs.numel():
            continue
        diff = (mine - theirs).abs().max().item()
        own = theirs.abs().max().item()
        noise = max(own, mine.abs().max().item()) <= GRAD_NOISE_LEVEL * largest
        scaled = diff / (largest if noise else max(own, floor))
        if diff >= worst:
            worst, worst_name = diff, name
        if scaled >= rel:
            rel, rel_name = scaled, name
    return worst, worst_name, rel, rel_name
