"""Presenting a benchmark report: aligned text tables, a JSON file and a PNG plot.

The report is the dict :func:`geaet_lab.benchmarking.run_benchmark` returns:
``config``, ``results`` (one entry per batch size), and, when run,
``parity_max_abs_diff`` / ``parity``, ``epoch`` and ``scaling``.
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Plain-text table: right-aligned columns, a rule under the header."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value == 0 or 0.01 <= abs(value) < 1e5:
            return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"
        return f"{value:.3g}"
    return str(value)


def throughput_table(results: List[Dict[str, object]]) -> str:
    has_ref = any("ref_train_graphs_per_s" in r for r in results)
    has_gpu = any("peak_gpu_mib" in r for r in results)
    headers = ["batch", "train g/s", "(min-max)", "infer g/s", "(min-max)", "peak RSS MiB"]
    if has_gpu:
        headers.append("peak GPU MiB")
    if has_ref:
        headers += ["ref train g/s", "ref infer g/s", "train ratio", "infer ratio"]
    rows = []
    for r in results:
        row = [r["batch_size"], r["train_graphs_per_s"], _span(r, "train"), r["infer_graphs_per_s"],
               _span(r, "infer"), r.get("peak_rss_mib")]
        if has_gpu:
            row.append(r.get("peak_gpu_mib"))
        if has_ref:
            row += [r.get("ref_train_graphs_per_s"), r.get("ref_infer_graphs_per_s"), _ratio(r.get("ratio_train")),
                    _ratio(r.get("ratio_infer"))]
        rows.append(row)
    return format_table(headers, rows)


def _span(r: Dict[str, object], phase: str) -> str:
    lo, hi = r.get(f"{phase}_graphs_per_s_min"), r.get(f"{phase}_graphs_per_s_max")
    return "-" if lo is None or hi is None else f"{_cell(lo)}-{_cell(hi)}"


def _ratio(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2f}x"


def exported_table(exported: Dict[str, object]) -> str:
    """Inference graphs/s of ours, the reference's (where timed) and each exported file, per batch size, with
    ours / file and the file's largest difference from our model (:mod:`.exported`)."""
    from .exported import FORMAT_LABELS

    results, formats = exported["results"], exported["formats"]
    has_ref = any("ref_infer_graphs_per_s" in r for r in results)
    headers = ["batch", "ours g/s"] + (["ref g/s"] if has_ref else [])
    headers += [f"{FORMAT_LABELS[fmt]} g/s" for fmt in formats]
    headers += [f"ours/{FORMAT_LABELS[fmt]}" for fmt in formats]
    headers += [f"{FORMAT_LABELS[fmt]} max |diff|" for fmt in formats]
    rows = []
    for r in results:
        row = [r["batch_size"], r["infer_graphs_per_s"]] + ([r.get("ref_infer_graphs_per_s")] if has_ref else [])
        row += [r[f"{fmt}_infer_graphs_per_s"] for fmt in formats]
        row += [_ratio(r.get(f"ratio_{fmt}")) for fmt in formats] + [f"{r[f'parity_{fmt}']:.2g}" for fmt in formats]
        rows.append(row)
    return format_table(headers, rows)


_PART_LABELS = {"forward": "forward (+ loss)", "mpnn": "  of which MPNN", "attention": "  of which self-attention",
                "geanet": "  of which GEANet", "other_forward": "  of which the rest", "backward": "backward",
                "optimizer": "clipping + optimizer step", "step": "whole step"}


def breakdown_table(breakdowns: List[Dict[str, object]]) -> str:
    """Milliseconds per training step by part; with the reference, its column and ref/ours beside ours."""
    has_ref = any("ref" in b for b in breakdowns)
    headers = ["part"]
    for b in breakdowns:
        headers += [f"B{b['batch_size']} ours ms"] + ([f"B{b['batch_size']} ref ms", "ref/ours"] if has_ref else [])
    rows = []
    for part, label in _PART_LABELS.items():
        row: List[object] = [label]
        for b in breakdowns:
            ours = b["ours"][part]
            row.append(f"{ours:.2f}")
            if has_ref:
                ref = b.get("ref", {}).get(part)
                row += ["-" if ref is None else f"{ref:.2f}",
                        "-" if ref is None or ours <= 0 else f"{ref / ours:.2f}x"]
        rows.append(row)
    return format_table(headers, rows)


def epoch_table(epoch: Dict[str, object]) -> str:
    headers = ["graphs", "batch", "workers", "train g/s", "infer g/s", "train data wait s", "collate ms/batch",
               "collate share"]
    row = [epoch["num_graphs"], epoch["batch_size"], epoch["workers"], epoch["train_graphs_per_s"],
           epoch["infer_graphs_per_s"], epoch["train_data_wait_s"], epoch["collate_ms_per_batch"],
           f"{100 * epoch['collate_share_of_train']:.1f}%"]
    return format_table(headers, [row])


def epoch_comparison_table(rows: List[Dict[str, object]]) -> str:
    """One row per batch size of :func:`~.epoch_against_pyg.compare_epochs`: graphs/s of each pass, the
    whole epoch's seconds, ratios (ours faster > 1), the data path's share and our pass against our step."""
    headers = ["batch", "train ours", "train ref", "ratio", "eval ours", "eval ref", "ratio", "epoch s ours",
               "epoch s ref", "ratio", "data path ours", "data path ref", "train pass / step"]
    body = [[r["batch_size"], r["train_graphs_per_s"], r["ref_train_graphs_per_s"], _ratio(r.get("ratio_train")),
             r["eval_graphs_per_s"], r["ref_eval_graphs_per_s"], _ratio(r.get("ratio_eval")), r["epoch_s"],
             r["ref_epoch_s"], _ratio(r.get("ratio_epoch")), _share(r.get("load_share_of_train")),
             _share(r.get("ref_load_share_of_train")), _ratio(r.get("train_pass_over_step"))] for r in rows]
    return format_table(headers, body)


def _share(value: Optional[float]) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def scaling_table(scaling: Dict[str, object]) -> str:
    blocks = []
    for name, entry in scaling["components"].items():
        rows = [[p["num_nodes"], p["num_edges"], p["forward_s"], p.get("forward_backward_s"), p.get("peak_rss_mib")]
                for p in entry["points"]]
        table = format_table(["nodes", "edges", "forward s", "fwd+bwd s", "peak RSS MiB"], rows)
        fit = "exponent vs N+E (forward, fwd+bwd):" + "".join(
            f" {label} {_exp(entry.get('exponent_forward' + sfx))}, "
            f"{_exp(entry.get('exponent_forward_backward' + sfx))};"
            for label, sfx in (("medians", ""), ("minima", "_from_min"), ("medians N>=1e4", "_large"),
                               ("minima N>=1e4", "_from_min_large")))
        fit += (f"\nexponent of the peak memory vs N+E: {_exp(entry.get('exponent_peak_memory'))}, "
                f"N>=1e4 {_exp(entry.get('exponent_peak_memory_large'))}")
        skipped = "".join(f"\n  skipped N={s['num_nodes']}: {s['reason']}" for s in entry.get("skipped", []))
        blocks.append(f"{name}: {entry['description']}\n{table}\n{fit}{skipped}")
    return "\n\n".join(blocks)


def _exp(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.3f}"


def parity_note(report: Dict[str, object]) -> str:
    """"parity max |diff| = X", with the measure and precision the check read where the report holds them."""
    parity = report.get("parity") or {}
    if "checked_diff" in parity:
        return (f"parity ({parity.get('dtype', 'float32')}, outputs and gradients absolute, gradients also relative "
                f"to their norm) max |diff| = {parity['checked_diff']:.3g}")
    return f"parity max |diff| = {report['parity_max_abs_diff']:.3g}"


def format_report(report: Dict[str, object]) -> str:
    """The whole report as text (what ``run_benchmark`` prints)."""
    cfg = report["config"]
    head = f"GEAET-DGL benchmark: device={cfg['device']} threads={cfg['threads']}"
    if report.get("results") or report.get("epoch") or report.get("epoch_against_pyg"):
        head += f" preset={cfg['preset']} repeats={cfg['repeats']} warmup={cfg['warmup']}"
        if cfg.get("min_time") and ("parity_max_abs_diff" in report or report.get("exported")):
            head += f" min_time={cfg['min_time']:g}s"
    allocator = cfg.get("allocator", "system")
    if ("parity_max_abs_diff" in report and not cfg.get("isolated")
            and cfg.get("allocator_this_process", allocator) != allocator):
        allocator += f" (interleaved comparison: {cfg['allocator_this_process']})"
    head += f" allocator={allocator}"
    if cfg.get("openmp_wait"):
        head += f" openmp_wait={cfg['openmp_wait']}"
    head += f" (torch {cfg['torch']}, dgl {cfg['dgl']})"
    parts = [head]
    if report.get("results"):
        note = "graphs/s = median of per-step rates over pre-built batches"
        if "parity_max_abs_diff" in report:
            where = "a process of its own per batch size" if cfg.get("isolated") else "one process"
            note += (f"; ours and ref timed interleaved in {where}, ratio = ours/ref; "
                     + parity_note(report))
        if cfg.get("inference"):
            note += f"; inference on the {cfg['inference']} model"
        if report.get("fold_max_abs_diff") is not None:
            note += f" (folded vs model max |diff| = {report['fold_max_abs_diff']:.3g})"
        parts.append(f"Throughput ({note})\n{throughput_table(report['results'])}")
    if report.get("exported"):
        ex = report["exported"]
        parts.append(f"Inference beside the exported files ({ex['source']}; graphs/s = median of per-step rates; "
                     f"ours/file > 1: ours faster; max |diff| from our model, relative where |output| > 1)\n"
                     + exported_table(ex))
    if report.get("breakdown"):
        note = "median ms per training step, modules timed by forward hooks"
        if any("ref" in b for b in report["breakdown"]):
            note += ("; ours and ref stepped alternately on the same batches and weights; our self-attention "
                     "includes the padding to the dense layout, the reference pads outside it")
        parts.append(f"Where a training step's time goes ({note})\n{breakdown_table(report['breakdown'])}")
    if report.get("epoch"):
        parts.append("Whole epoch (make_loader + collate + steps)\n" + epoch_table(report["epoch"]))
    if report.get("epoch_against_pyg"):
        ep = report["epoch_against_pyg"]
        c = ep["config"]
        parts.append(f"Whole epochs, ours and the reference alternated, each through its own loader and loop "
                     f"({c['train_graphs']} training / {c['eval_graphs']} evaluation graphs, {c['data_source']}; "
                     f"graphs/s from the median of {c['repeats']} rounds; ratio = ours faster; data path = its "
                     f"loader iterated alone / its training pass; "
                     f"{parity_note(ep)})\n" + epoch_comparison_table(ep["results"]))
    if report.get("scaling"):
        sc = report["scaling"]
        parts.append(f"Scaling on single random {sc['k']}-NN graphs, median of >= {sc['repeats']} timed calls "
                     f"(>= {sc.get('min_time_s', 0):g} s per phase) ({sc['note']})\n"
                     + scaling_table(report["scaling"]))
    return "\n\n".join(parts)


def write_json(report: Dict[str, object], path: str) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=2, sort_keys=False)
        f.write("\n")
    return path


def plot_report(report: Dict[str, object], path: str) -> str:
    """PNG: throughput vs batch size (ours, and the reference if present); scaling log-log with fitted slopes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in ("results", "scaling") if report.get(p)]
    if not panels:
        raise ValueError("nothing to plot: the report has neither throughput results nor scaling")
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        if panel == "results":
            _plot_throughput(ax, report)
        else:
            _plot_scaling(ax, report["scaling"])
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_throughput(ax, report: Dict[str, object]) -> None:
    results = sorted(report["results"], key=lambda r: r["batch_size"])
    sizes = [r["batch_size"] for r in results]
    for phase, marker, style in (("train", "o", "-"), ("infer", "s", "--")):  # colour: model; line: phase
        ax.plot(sizes, [r[f"{phase}_graphs_per_s"] for r in results], marker=marker, linestyle=style,
                color="tab:blue", label=f"DGL (ours) {phase}")
        if all(f"ref_{phase}_graphs_per_s" in r for r in results):
            ax.plot(sizes, [r[f"ref_{phase}_graphs_per_s"] for r in results], marker=marker, linestyle=style,
                    color="tab:red", label=f"PyG reference {phase}")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("batch size (graphs)")
    ax.set_ylabel("graphs / s (median)")
    cfg = report["config"]
    ax.set_title(f"{cfg['preset']} throughput, {cfg['device']}, {cfg['threads']} threads")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def _plot_scaling(ax, scaling: Dict[str, object]) -> None:
    import numpy as np

    for name, entry in scaling["components"].items():
        pts = entry["points"]
        if not pts:
            continue
        x = np.array([p["size"] for p in pts], dtype=float)
        for key, style in (("forward", "-"), ("forward_backward", "--")):
            if not all(f"{key}_s" in p for p in pts):
                continue
            slope = entry.get(f"exponent_{key}")
            label = f"{name} {key.replace('_', '+')}" + (f" (slope {slope:.2f})" if slope is not None else "")
            ax.plot(x, [p[f"{key}_s"] for p in pts], marker="o", linestyle=style, label=label)
    all_x = [p["size"] for e in scaling["components"].values() for p in e["points"]]
    all_y = [p["forward_s"] for e in scaling["components"].values() for p in e["points"]]
    if len(all_x) >= 2:
        xs = np.array([min(all_x), max(all_x)], dtype=float)
        ax.plot(xs, min(all_y) * xs / xs[0], color="grey", linestyle=":", label="slope 1 (linear)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("nodes + edges")
    ax.set_ylabel("seconds (median)")
    ax.set_title(f"scaling on random {scaling['k']}-NN graphs (layer without attention)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
