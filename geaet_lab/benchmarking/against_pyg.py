"""Side-by-side speed of our model and the PyG reference, on the same weights and batches.

1. :func:`~.parity.compare_models` on one batch, both models in float64; timing is refused when the
   largest output/gradient difference exceeds ``parity_tolerance`` (unless
   ``force``), since a faster model that computes something else means nothing.
2. :func:`~.parity.paired_models` gives both models the same weights; each
   gets its own AdamW with the preset's settings.
3. For every batch size, ``num_batches`` batches are built once as DGL graphs
   and converted once to the equivalent PyG ``Batch`` (the reference's
   forward rewrites attributes of its input, so each call gets a
   ``copy.copy`` of it, as in ``check_parity``).
4. Inference (eval, no_grad), then training (forward, loss, backward, AdamW
   step): ``warmup`` untimed step pairs, then ``repeats`` timed pairs,
   interleaved so machine drift hits both alike (the order alternates each
   repeat: ours-ref, ref-ours, ...; with exported files, :func:`~.exported.interleaved_rates` rotates all of
   them in inference). Medians of per-step graphs/s and the ratios
   ours/reference are reported, plus the median of the per-repeat ratios.
5. With ``timing.isolate`` (the command's default) each batch size runs all of this in a process of its own
   (:func:`compare_in_fresh_processes`), so a cell does not depend on which batch sizes ran before it.
"""
from __future__ import annotations

import copy
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import dgl
import torch

from geaet_dgl.errors import GeaetError
from geaet_dgl.inference import fold_for_inference
from .inputs import prebuilt_batches
from .exported import (EXPORT_PARITY_TOLERANCE, ExportParityError, check_export_parity, check_formats,
                       exported_contenders, exported_parity, exported_row, interleaved_rates, load_exported,
                       parity_line as exported_line)
from .parity import PARITY_DTYPE, in_precision
from .jobs import Reference, Timing
from .subject import Subject, as_subject, resolve_subject
from .throughput import infer_step_fn, make_clipper, make_optimizer, train_step_fn
from .timing import environment, set_threads

PARITY_TOLERANCE = 1e-5


class ParityError(GeaetError, RuntimeError):
    """The two models disagree beyond the tolerance: their timings are not comparable."""


def parity_line(parity, batch_size: int) -> str:
    """One progress line of a :class:`~.parity.ParityReport`."""
    return (f"parity on a batch of {batch_size} graphs ({parity.dtype}): max |diff| = {parity.checked_diff:.3g} "
            f"(outputs eval {parity.eval_output_max_abs_diff:.3g}, train {parity.train_output_max_abs_diff:.3g}; "
            f"gradients {parity.grad_max_abs_diff:.3g}, relative to their norm {parity.grad_max_rel_diff:.3g})")


def check_parity_tolerance(parity, tolerance: float = PARITY_TOLERANCE, force: bool = False) -> None:
    """Raise :class:`ParityError` when ``parity`` (a :class:`~.parity.ParityReport`) exceeds ``tolerance``,
    unless ``force``."""
    if parity.checked_diff > tolerance and not force:
        raise ParityError(f"ours and the reference differ by {parity.checked_diff:.3g} > {tolerance:g} in "
                          f"{parity.dtype} ({parity.worst}); the two models compute different things: fix parity "
                          f"first or pass force=True (--force)")


#: The measuring process's one-line errors, re-raised as what they were in the process that started it.
_CHILD_ERRORS = {"ParityError": ParityError, "ExportParityError": ExportParityError}


def reference_forward(model: torch.nn.Module, batch) -> tuple:
    """The reference's forward on a shallow copy of the PyG batch: returns ``(pred, label)``."""
    return model(copy.copy(batch[0]))


def _interleaved(ours: Callable, ref: Callable, ours_batches, ref_batches, sizes: Sequence[int], warmup: int,
                 repeats: int, min_time: float = 0.0) -> Dict[str, object]:
    rates = interleaved_rates([("ours", ours, ours_batches), ("ref", ref, ref_batches)], sizes, warmup, repeats,
                              min_time=min_time)
    return {"ours": rates["ours"], "ref": rates["ref"], "paired_ratio": rates["paired_ratio"]["ref"],
            "rounds": rates["rounds"]}


def compare_with_reference(reference: Reference, subject: "Subject | str" = "mnist",
                           batch_sizes: Sequence[int] = (16, 64, 128), timing: Optional[Timing] = None,
                           fold: bool = True,
                           progress: Optional[Callable[[str], None]] = None,
                           parity_tolerance: float = PARITY_TOLERANCE, exported: Sequence[str] = (),
                           parity_batch_size: Optional[int] = None) -> Dict[str, object]:
    """Parity check (on a batch of ``parity_batch_size`` graphs, default the smallest batch size), then
    interleaved CPU timing of ours vs the reference at every batch size.

    ``reference``: the checkout (``ref_dir``), ``force`` (time even when parity fails) and
    ``config_file``: a reference (GEAET or GraphGPS) YAML; the model it describes is compared instead of
    the preset's (:mod:`.config_subject`), on synthetic graphs shaped like its dataset. ``subject``: a
    :class:`.subject.Subject` (the file's when ``reference.config_file`` is set), or a preset name. ``timing``
    (default 2 threads): threads, repeats, warm-up steps, batches per size and seed.

    Returns ``{'config', 'parity' (ParityReport.as_dict()), 'parity_max_abs_diff',
    'results': [{'batch_size', 'train_graphs_per_s', 'infer_graphs_per_s' (ours),
    'ref_train_graphs_per_s', 'ref_infer_graphs_per_s', 'ratio_train',
    'ratio_infer' (ours/ref of the medians), 'ratio_train_paired',
    'ratio_infer_paired' (median of per-repeat ratios), min/max of each}]}``, and for a config whose model reads
    RWSE or HKdiagSE ``'parity_reference_statistics'`` (:func:`config_parity`: the parity check shares those).
    Raises :class:`ParityError` when the models differ by more than
    ``parity_tolerance`` and ``reference.force`` is False.

    Our inference runs the folded model (:func:`~geaet_dgl.inference.fold_for_inference`,
    refolded before each batch size: training changes the weights) unless ``fold`` is False; the
    largest difference between its outputs and the unfolded model's on the parity batch is
    reported as ``fold_max_abs_diff`` and must also stay within ``parity_tolerance``.

    ``exported`` ('torchscript', 'onnx'): at every batch size our model, as it stands then, is also exported
    and its files' inference timed in the same rotation as ours and the reference's (:mod:`.exported`), after
    their parity with our model on the benchmarked batches; the rows go to ``'exported'``.
    """
    timing = timing or Timing(threads=2)
    ref_dir, force, config = reference.ref_dir, reference.force, reference.config_file
    threads, repeats, warmup = timing.threads, timing.repeats, timing.warmup
    num_batches, seed = timing.num_batches, timing.seed
    from ..interop.pyg_export import to_pyg_batch
    from .parity import compare_models, paired_models

    subject = as_subject(subject, config)
    if config is not None:
        read = subject.file_subject()
        key, train_settings, loss_fn = subject.name, subject.train, subject.loss()
        batches_of, pyg_batch = read.batches, read.pyg_batch

        def pair():  # PNA's degree histogram from the parity batch's graphs, standing for the training split
            return read.paired_models(ref_dir, graph, seed)
    else:
        key = subject.reference_preset()
        train_settings, loss_fn = subject.train, subject.loss()

        def batches_of(batch_size, count, seed):
            return prebuilt_batches(key, batch_size, count, torch.device("cpu"), seed=seed)

        pyg_batch = to_pyg_batch

        def pair():
            return paired_models(ref_dir, key, seed=seed)
    set_threads(threads)
    exported = check_formats(exported)

    parity_batch_size = parity_batch_size or min(batch_sizes)
    graph, labels = batches_of(parity_batch_size, 1, seed)[0]
    own_statistics = None
    if config is not None:
        parity, own_statistics = config_parity(read, ref_dir, graph, labels, seed)
    else:
        parity = compare_models(*pair(), graph, labels, pyg_batch(graph, labels), loss_fn)
    if progress:
        shared = own_statistics["fields"] if own_statistics else ()
        progress(parity_line(parity, parity_batch_size)
                 + (f"; {', '.join(shared)} ours on both sides (float32 inputs the two compute by different "
                    "routes)" if shared else ""))
    check_parity_tolerance(parity, parity_tolerance, force)
    if progress and own_statistics:
        progress(own_statistics_line(own_statistics))

    ref_model, ours = pair()
    fold_diff = None
    if fold:
        fold_diff = folding_difference(ours, graph)
        if progress:
            progress(f"folded inference model vs the model ({str(PARITY_DTYPE).replace('torch.', '')}): max |diff| = "
                     f"{fold_diff:.3g} (relative where |output| > 1)")
        if fold_diff > parity_tolerance and not force:
            raise ParityError(f"the folded inference model differs from the model by {fold_diff:.3g} > "
                              f"{parity_tolerance:g}; time with fold=False (--no-fold) or report the bug")
    # Each side steps as its own trainer does: ours FlatAdamW (clipping inside), the reference graphgym's.
    ours_train = train_step_fn(ours, make_optimizer(ours, train_settings), loss_fn,
                               clip=make_clipper(train_settings))
    ref_train = train_step_fn(ref_model, make_optimizer(ref_model, train_settings, reference=True), loss_fn,
                              forward=reference_forward, clip=make_clipper(train_settings, reference=True))
    ref_infer = infer_step_fn(ref_model, forward=reference_forward)

    results, exported_rows = [], []
    for batch_size in batch_sizes:
        ours_batches = batches_of(int(batch_size), num_batches, seed)
        ref_batches = [(pyg_batch(g, y), y) for g, y in ours_batches]
        sizes = [g.batch_size for g, _ in ours_batches]
        ours.eval(), ref_model.eval()
        ours_infer = infer_step_fn(fold_for_inference(ours) if fold else ours)  # refolded: training moved the weights
        contenders = [("ours", ours_infer, ours_batches), ("ref", ref_infer, ref_batches)]
        if exported:  # the files of the weights as they stand now
            graphs = [g for g, _ in ours_batches]
            runners = load_exported(ours, exported, threads)
            files, prepared = exported_contenders(runners, graphs)
            export_parity = exported_parity(ours, runners, graphs, prepared)
            if progress:
                progress(exported_line(export_parity, batch_size))
            check_export_parity(export_parity, force=force)
            contenders += files
        rates = interleaved_rates(contenders, sizes, warmup, repeats, min_time=timing.min_time)
        infer = {"ours": rates["ours"], "ref": rates["ref"], "paired_ratio": rates["paired_ratio"]["ref"],
                 "rounds": rates["rounds"]}
        if exported:
            exported_rows.append(exported_row(batch_size, rates, export_parity, reference=True))
        ours.train(), ref_model.train()
        train = _interleaved(ours_train, ref_train, ours_batches, ref_batches, sizes, warmup, repeats,
                             timing.min_time)
        row: Dict[str, object] = {"batch_size": int(batch_size)}
        for phase, data in (("train", train), ("infer", infer)):
            for who, prefix in (("ours", ""), ("ref", "ref_")):
                row[f"{prefix}{phase}_graphs_per_s"] = data[who]["median"]
                row[f"{prefix}{phase}_graphs_per_s_min"] = data[who]["min"]
                row[f"{prefix}{phase}_graphs_per_s_max"] = data[who]["max"]
            row[f"ratio_{phase}"] = data["ours"]["median"] / data["ref"]["median"]
            row[f"ratio_{phase}_paired"] = data["paired_ratio"]
            row[f"rounds_{phase}"] = data["rounds"]
        results.append(row)
        if progress:
            progress(f"  batch {batch_size}: train ours {row['train_graphs_per_s']:.1f} vs ref "
                     f"{row['ref_train_graphs_per_s']:.1f} g/s ({row['ratio_train']:.2f}x); infer ours "
                     f"{row['infer_graphs_per_s']:.1f} vs ref {row['ref_infer_graphs_per_s']:.1f} g/s "
                     f"({row['ratio_infer']:.2f}x)")
    settings = dict(environment("cpu", threads), preset=key, repeats=repeats, min_time=timing.min_time,
                    warmup=warmup, num_batches=num_batches,
                  reference_dir=str(ref_dir), interleaved=True, parity_tolerance=parity_tolerance,
                  inference="folded" if fold else "unfolded")
    if config is not None:
        settings["config_file"] = str(config)
    report = {"config": settings, "parity": parity.as_dict(), "parity_max_abs_diff": parity.max_abs_diff,
              "fold_max_abs_diff": fold_diff, "results": results}
    if own_statistics is not None:
        report["parity_reference_statistics"] = own_statistics
    if exported:
        report["exported"] = {"formats": list(exported), "tolerance": EXPORT_PARITY_TOLERANCE,
                              "results": exported_rows,
                              "source": "ours, the reference and the exported files interleaved in one process "
                                        "on the same pre-built batches"}
    return report


def config_parity(subject, ref_dir: str, graph: dgl.DGLGraph, labels: torch.Tensor, seed: int = 0
                  ) -> Tuple[object, Optional[Dict[str, object]]]:
    """Parity of a config's two models (:class:`~.config_subject.ConfigSubject`) on one batch, in float64: the
    :class:`~.parity.ParityReport` the tolerance is checked on, the reference's batch carrying what its loader
    computes but ours for the float32 statistics the two sides compute by different routes (RWSE, HKdiagSE);
    and, where the file reads one of those, :func:`float32_inputs_comparison` on the reference's own (else
    None)."""
    from .parity import compare_models

    models = subject.paired_models(ref_dir, graph, seed)  # first: the reference's batch needs its configuration
    shared = subject.float32_statistics()
    parity_input = subject.pyg_batch(graph, labels, share_float32=True, float64=True)
    parity = compare_models(*models, graph, labels, parity_input, subject.loss())
    if not shared:
        return parity, None
    return parity, float32_inputs_comparison(subject.paired_models(ref_dir, graph, seed), graph, labels,
                                             subject.pyg_batch(graph, labels, float64=True), parity_input, shared,
                                             subject.loss())


def float32_inputs_comparison(models, graph, labels, own_input, shared_input, fields: Sequence[str], loss_fn
                              ) -> Dict[str, object]:
    """``models`` (reference, ours) compared on ``own_input``, the reference's batch with its own float32
    ``fields`` (RWSE, HKdiagSE), beside how far those are from ours (``shared_input`` carries ours):
    ``{'fields', 'input_max_abs_diff', 'parity' (ParityReport.as_dict())}``. Not checked against the tolerance:
    what it measures is bounded by the inputs' float32 rounding (see :mod:`~geaet_lab.interop.reference_loader`)."""
    from .parity import compare_models

    input_diff = max(float((own_input[field].double() - shared_input[field].double()).abs().max())
                     for field in fields)
    parity = compare_models(*models, graph, labels, own_input, loss_fn)
    return {"fields": list(fields), "input_max_abs_diff": input_diff, "parity": parity.as_dict()}


def own_statistics_line(comparison: Dict[str, object]) -> str:
    """One progress line of :func:`float32_inputs_comparison`."""
    p = comparison["parity"]
    return (f"with the reference's own float32 {', '.join(comparison['fields'])} (max |diff| to ours "
            f"{comparison['input_max_abs_diff']:.3g}; not checked, bounded by it): outputs eval "
            f"{p['eval_output_max_abs_diff']:.3g}, train {p['train_output_max_abs_diff']:.3g}; gradients "
            f"{p['grad_max_abs_diff']:.3g}, relative to their norm {p['grad_max_rel_diff']:.3g}")


def folding_difference(model: torch.nn.Module, graph, dtype: torch.dtype = PARITY_DTYPE) -> float:
    """Largest |folded - unfolded| eval output of a copy of ``model`` in ``dtype`` (float64 by default) on
    ``graph``, divided by the largest |output| where that exceeds 1 (``model`` itself is left in eval mode).

    Folding is exact algebra (BatchNorm into the linear maps, ...): in float64 the two differ by ~1e-13. In
    float32 a fresh model's eval outputs grow large (its BatchNorms' running statistics normalise nothing:
    molhiv's and ZINC's 10 layers reach |output| ~ 50 to 4e3) and rounding alone differs by 1e-5 to 1e-4 of them.
    """
    model.eval()
    copy_in_dtype = copy.deepcopy(model).to(dtype).eval()
    graph = in_precision(graph, dtype)
    with torch.no_grad():
        expected = copy_in_dtype(graph)
        diff = (fold_for_inference(copy_in_dtype)(graph) - expected).abs().max()
        return float(diff / expected.abs().max().clamp_min(1.0))


def measure_against_reference(reference: Reference, batch_size: int, timing: Timing, fold: bool = True,
                              exported: Sequence[str] = (), parity_batch_size: Optional[int] = None,
                              preset: str = "mnist", config_file: Optional[str] = None) -> Dict[str, object]:
    """:func:`compare_with_reference` at one batch size in the calling process: a measuring process's entry
    (task ``against_pyg``; the subject travels as ``preset`` or ``config_file``). Its progress lines are returned
    under ``'progress'``; a one-line refusal (:class:`~geaet_dgl.errors.GeaetError`, e.g. :class:`ParityError`)
    under ``'error'`` and ``'error_type'`` instead of a report."""
    lines: List[str] = []
    try:
        report = compare_with_reference(reference, resolve_subject(preset, config_file), (int(batch_size),), timing,
                                        fold=fold, progress=lines.append, exported=tuple(exported),
                                        parity_batch_size=parity_batch_size)
    except GeaetError as exc:
        return {"error": str(exc), "error_type": type(exc).__name__, "progress": lines}
    report["progress"] = lines
    return report


def compare_in_fresh_processes(reference: Reference, subject: Subject, batch_sizes: Sequence[int], timing: Timing,
                               fold: bool = True, progress: Optional[Callable[[str], None]] = None,
                               exported: Sequence[str] = (), first_here: bool = True) -> Dict[str, object]:
    """:func:`compare_with_reference`'s report, each batch size measured in a process where no other one ran: the
    first in this process (its checks and errors as they happen) unless ``first_here`` is False (this process
    runs in another allocator mode than the one asked for), every further one in a fresh process
    (:func:`.worker.run_isolated`: the requested allocator mode, the command's wait policy and threads).

    In one process a cell depends on the cells before it: 2026-11-29, GraphGPS's ``zinc-GPS.yaml`` at batch 64,
    inference 1.39-1.57x after the batch-16 cells (the reference's batch-64 steps 25-50% faster in a heap that
    served batch 16) and 1.69-1.74x in three processes of batch 64 alone, training 1.29-1.34 either way. Every
    process runs the parity and folding checks on the same batch (of the smallest batch size); their lines are
    printed once, the largest folding difference is kept."""
    from .worker import run_isolated

    if not batch_sizes:
        raise ValueError("no batch sizes to compare; give at least one")
    merged: Optional[Dict[str, object]] = None
    if first_here:
        merged = compare_with_reference(reference, subject, batch_sizes[:1], timing, fold=fold, progress=progress,
                                        exported=exported, parity_batch_size=min(batch_sizes))
    for batch_size in batch_sizes[1:] if first_here else batch_sizes:
        if progress:
            progress(f"batch {batch_size}: ours and the reference in a fresh process")
        part = run_isolated("against_pyg", dict(subject.worker_kwargs(), reference=reference,
                                                batch_size=int(batch_size), timing=timing, fold=fold,
                                                exported=list(exported), parity_batch_size=min(batch_sizes)))
        lines = part.pop("progress")
        if "error" in part:
            raise _CHILD_ERRORS.get(part["error_type"], GeaetError)(part["error"])
        if progress:
            for line in lines if merged is None else [line for line in lines if line.startswith("  batch ")]:
                progress(line)
        if merged is None:
            merged = part
            continue
        merged["results"] += part["results"]
        if part["fold_max_abs_diff"] is not None:  # None without folding (--no-fold)
            merged["fold_max_abs_diff"] = max(merged["fold_max_abs_diff"], part["fold_max_abs_diff"])
        if "exported" in part:
            merged["exported"]["results"] += part["exported"]["results"]
    return merged
