"""The exported model (TorchScript, onnxruntime) timed beside our eval path, on the same weights and batches.

``geaet-dgl benchmark --exported torchscript onnx`` (:class:`~.jobs.ModelJob` ``exported``):

1. The model whose inference is timed is written with ``geaet-dgl export``'s writers
   (:func:`~geaet_dgl.export.writer.torchscript_bytes`, :func:`~geaet_dgl.export.writer.onnx_bytes`) to a
   temporary folder and loaded back (``torch.jit.load``; an ``onnxruntime`` CPU session with the job's
   threads). No input transform goes inside: the benchmark's batches carry the features as the loaders give
   them to the model (VOC / COCO already standardised).
2. Each batch is turned into the file's inputs once (:func:`~geaet_dgl.export.writer.inputs_of_batch`;
   NumPy arrays for onnxruntime), as the reference's PyG batches are built once.
3. Parity on every benchmarked batch: the largest difference between a file's output and ``model.eval()``
   on DGL, divided by the largest |output| where that exceeds 1 (as the folded model's check,
   :func:`~.against_pyg.folding_difference`: float32 rounds relative to the outputs' size); timing is refused
   above ``tolerance`` (1e-5) unless ``force`` (``--force``).
4. :func:`interleaved_rates`: ours (the folded model unless ``fold`` is False), the reference's inference
   when there is one (:func:`~.against_pyg.compare_with_reference`), and each file, stepped in rotating order
   on the same batches, one process; medians of per-step graphs/s.
"""
from __future__ import annotations

import os
import statistics
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from geaet_dgl.errors import ConfigError, GeaetError
from .timing import summarize, time_call

#: What ``--exported`` takes, in the order the table shows them.
EXPORTED_FORMATS = ("torchscript", "onnx")
#: Column names of each format.
FORMAT_LABELS = {"torchscript": "TorchScript", "onnx": "onnxruntime"}
#: Largest difference from the model at which the files are timed (as the reference comparison's).
EXPORT_PARITY_TOLERANCE = 1e-5


class ExportParityError(GeaetError, RuntimeError):
    """An exported file computes something else than our model on the benchmarked batches."""


@dataclass
class ExportedRunner:
    """One exported file, loaded: ``prepare(graph)`` builds its inputs for a batched DGL graph (once, untimed),
    ``run(prepared)`` returns its output as a CPU float tensor."""

    fmt: str
    prepare: Callable[[Any], Any]
    run: Callable[[Any], torch.Tensor]


def check_formats(formats: Sequence[str], device: str = "cpu") -> Tuple[str, ...]:
    """``formats`` checked (known, onnxruntime importable for 'onnx', CPU for onnxruntime), in table order."""
    unknown = sorted(set(formats) - set(EXPORTED_FORMATS))
    if unknown:
        raise ConfigError(f"--exported {', '.join(unknown)}: choose from {', '.join(EXPORTED_FORMATS)}")
    if "onnx" in formats:
        try:
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError:
            raise ConfigError("--exported onnx needs the onnx and onnxruntime packages: pip install onnx onnxruntime, "
                              "or time --exported torchscript alone") from None
        if torch.device(device).type != "cpu":
            raise ConfigError("--exported onnx runs onnxruntime on CPU here; with --device cuda time --exported "
                              "torchscript alone")
    return tuple(fmt for fmt in EXPORTED_FORMATS if fmt in formats)


def load_exported(model: torch.nn.Module, formats: Sequence[str], threads: int,
                  device: torch.device = torch.device("cpu")) -> List[ExportedRunner]:
    """``model``'s exported files in ``formats``, written to a temporary folder and loaded back (step 1 of the
    module docstring). Raises :class:`~geaet_dgl.export.ExportError` for a model the exporter does not cover."""
    from geaet_dgl.export import ExportedGEAET
    from geaet_dgl.export.writer import INPUT_NAMES, inputs_of_batch, model_input_widths, onnx_bytes, torchscript_bytes

    widths = model_input_widths(model.config)
    module = ExportedGEAET(model).eval()
    metadata = {"input_widths": widths, "written_by": "geaet-dgl benchmark --exported"}
    runners = []
    with tempfile.TemporaryDirectory(prefix="geaet-exported-") as folder:
        for fmt in formats:
            path = os.path.join(folder, f"model.{fmt}")
            write = torchscript_bytes if fmt == "torchscript" else onnx_bytes
            with open(path, "wb") as handle:
                handle.write(write(module, metadata))
            if fmt == "torchscript":
                scripted = torch.jit.load(path, map_location=device)

                def prepare(graph, scripted=scripted):
                    return tuple(t.to(device) for t in inputs_of_batch(graph, widths))

                def run(inputs, scripted=scripted):
                    with torch.no_grad():
                        return scripted(*inputs)

                runners.append(ExportedRunner(fmt, prepare, run))
            else:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = int(threads)
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # errors only: not its notes on shapes it inferred as fixed
                session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                names = {item.name for item in session.get_inputs()}

                def prepare(graph, names=names):
                    return {name: t.cpu().numpy() for name, t in zip(INPUT_NAMES, inputs_of_batch(graph, widths))
                            if name in names}

                def run(feeds, session=session):
                    return torch.from_numpy(session.run(None, feeds)[0])

                runners.append(ExportedRunner(fmt, prepare, run))
    return runners


def exported_parity(model: torch.nn.Module, runners: Sequence[ExportedRunner], graphs: Sequence[Any],
                    prepared: Dict[str, Sequence[Any]]) -> Dict[str, float]:
    """Per format, the largest |file - model.eval()| over ``graphs`` (``prepared[fmt][i]``: the file's inputs
    of ``graphs[i]``), divided by the largest |output| where that exceeds 1; NaN where either output has one."""
    model.eval()
    worst = {runner.fmt: 0.0 for runner in runners}
    with torch.no_grad():
        for i, graph in enumerate(graphs):
            want = model(graph).float().cpu()
            scale = float(want.abs().max().clamp_min(1.0)) if want.numel() else 1.0
            for runner in runners:
                got = runner.run(prepared[runner.fmt][i]).float().cpu()
                if got.shape != want.shape:
                    worst[runner.fmt] = float("inf")
                    continue
                diff = float((got - want).abs().max()) / scale if want.numel() else 0.0
                worst[runner.fmt] = diff if diff != diff else max(worst[runner.fmt], diff)  # NaN stays
    return worst


def check_export_parity(parity: Dict[str, float], tolerance: float = EXPORT_PARITY_TOLERANCE,
                        force: bool = False) -> None:
    """Raise :class:`ExportParityError` when a file differs from the model beyond ``tolerance`` (or by NaN)."""
    for fmt, diff in parity.items():
        if diff <= tolerance or force:
            continue
        if diff != diff:
            raise ExportParityError(f"an output of our model or of the exported {FORMAT_LABELS[fmt]} file holds NaN on "
                                    "the benchmarked batches (ours does where every weight of a GEANet row underflows, "
                                    "as with random weights at some presets' size: docs/export.md); time them anyway "
                                    "with --force")
        raise ExportParityError(f"the exported {FORMAT_LABELS[fmt]} file differs from our model by {diff:.3g} > "
                                f"{tolerance:g} on the benchmarked batches: it computes something else; report "
                                f"the bug, or time it anyway with --force")


#: The most timed rounds :func:`interleaved_rates` takes to reach its ``min_time``.
MAX_ROUNDS = 1000


def interleaved_rates(contenders: Sequence[Tuple[str, Callable[[Any], object], Sequence[Any]]], sizes: Sequence[int],
                      warmup: int, repeats: int, device: torch.device = torch.device("cpu"),
                      min_time: float = 0.0) -> Dict[str, object]:
    """Time ``contenders`` (name, step, its batches) in rotating order on the same batches: ``warmup`` untimed
    rounds, then at least ``repeats`` timed ones, and more until every contender's timed steps add up to
    ``min_time`` seconds (at most :data:`MAX_ROUNDS`): round r starts with contender r mod n, so machine drift
    hits all alike; with two it alternates. On a shared machine the speed drifts over seconds (2026-11-29,
    Performer at batch 64: ours / the reference's graphs/s from 1.22 to 2.01 in 3-second windows of one
    process), so a few rounds read one moment and seconds of rounds the machine's usual ratio.
    Returns ``{name: summarize(graphs/s)}``, ``'paired_ratio'``: per name after the first, the median over
    rounds of first's rate / its rate, and ``'rounds'``."""
    count = len(sizes)
    for i in range(warmup):
        for _, step, batches in contenders:
            step(batches[i % count])
    found: Dict[str, List[float]] = {name: [] for name, _, _ in contenders}
    spent: Dict[str, float] = {name: 0.0 for name, _, _ in contenders}
    order = list(contenders)
    r = 0
    while r < repeats or (min(spent.values()) < min_time and r < MAX_ROUNDS):
        j = (warmup + r) % count
        shift = r % len(order)
        for name, step, batches in order[shift:] + order[:shift]:
            seconds = time_call(lambda: step(batches[j]), device)
            spent[name] += seconds
            found[name].append(sizes[j] / seconds)
        r += 1
    first = contenders[0][0]
    out: Dict[str, object] = {name: summarize(values) for name, values in found.items()}
    out["paired_ratio"] = {name: statistics.median(a / b for a, b in zip(found[first], values))
                           for name, values in found.items() if name != first}
    out["rounds"] = r
    return out


def exported_contenders(runners: Sequence[ExportedRunner], graphs: Sequence[Any]
                        ) -> Tuple[List[Tuple[str, Callable[[Any], object], List[Any]]], Dict[str, List[Any]]]:
    """Each file as an :func:`interleaved_rates` contender on ``graphs`` (inputs built here, once), and the inputs."""
    prepared = {runner.fmt: [runner.prepare(graph) for graph in graphs] for runner in runners}
    return [(runner.fmt, runner.run, prepared[runner.fmt]) for runner in runners], prepared


def exported_row(batch_size: int, rates: Dict[str, object], parity: Dict[str, float],
                 reference: bool = False) -> Dict[str, object]:
    """One row of the exported table: graphs/s of ours (``infer_graphs_per_s``), the reference's
    (``ref_infer_graphs_per_s``) and each file's (``<fmt>_infer_graphs_per_s``), min / max of each, ours / file
    (``ratio_<fmt>``, of the medians; ``ratio_<fmt>_paired``, median of per-round ratios), ``parity_<fmt>``."""
    row: Dict[str, object] = {"batch_size": int(batch_size)}
    names = [("ours", "")] + ([("ref", "ref_")] if reference else []) + [(fmt, f"{fmt}_") for fmt in parity]
    for name, prefix in names:
        for stat in ("median", "min", "max"):
            row[f"{prefix}infer_graphs_per_s" + ("" if stat == "median" else f"_{stat}")] = rates[name][stat]
    for fmt in parity:
        row[f"ratio_{fmt}"] = rates["ours"]["median"] / rates[fmt]["median"]
        row[f"ratio_{fmt}_paired"] = rates["paired_ratio"][fmt]
        row[f"parity_{fmt}"] = parity[fmt]
    return row


def compare_exported(subject, batch_sizes: Sequence[int], timing, formats: Sequence[str], fold: bool = True,
                     force: bool = False, progress: Optional[Callable[[str], None]] = None) -> Dict[str, object]:
    """Ours and the exported files interleaved in this process at every batch size (no reference): the preset's
    model with the job's seed (the weights the step table times), its files, parity, then the rotation.

    ``subject``: a :class:`.subject.Subject`, or a preset name. Returns
    ``{'formats', 'tolerance', 'results': [exported_row, ...]}``.
    """
    from geaet_dgl.inference import fold_for_inference
    from geaet_dgl.models import build_model
    from .subject import as_subject
    from .throughput import infer_step_fn
    from .timing import check_device, set_threads

    subject = as_subject(subject)
    formats = check_formats(formats, timing.device)
    set_threads(timing.threads)
    device = check_device(timing.device)
    torch.manual_seed(timing.seed)
    model = build_model(subject.model).to(device).eval()
    ours = fold_for_inference(model) if fold else model
    runners = load_exported(model, formats, timing.threads, device)
    rows = []
    for batch_size in batch_sizes:
        batches = subject.batches(int(batch_size), timing.num_batches, device, seed=timing.seed)
        graphs = [graph for graph, _ in batches]
        contenders, prepared = exported_contenders(runners, graphs)
        parity = exported_parity(model, runners, graphs, prepared)
        if progress:
            progress(parity_line(parity, batch_size))
        check_export_parity(parity, force=force)
        rates = interleaved_rates([("ours", infer_step_fn(ours), batches)] + contenders,
                                  [g.batch_size for g in graphs], timing.warmup, timing.repeats, device,
                                  min_time=timing.min_time)
        rows.append(exported_row(batch_size, rates, parity))
    return {"formats": list(formats), "tolerance": EXPORT_PARITY_TOLERANCE, "results": rows,
            "source": "ours and the exported files interleaved in one process on the same pre-built batches"}


def parity_line(parity: Dict[str, float], batch_size: int) -> str:
    """One progress line of :func:`exported_parity`'s result."""
    return (f"exported files vs our model on the batches of {batch_size} (float32, relative where |output| > 1): "
            + ", ".join(f"{FORMAT_LABELS[fmt]} {diff:.3g}" for fmt, diff in parity.items()))
