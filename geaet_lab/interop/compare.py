"""Train ours and the PyG reference on the same graphs with the same budget, over seeds, side by side.

``geaet-dgl compare --against-pyg REF_DIR --dataset mnist --seeds 0 1 2 --epochs 3 --out DIR``:

1. Loads our splits (``--data-dir``, ``--limit-*``) and writes them as PyG
   ``GNNBenchmarkDataset`` raw files in ``DIR/pyg`` (:mod:`.pyg_export`).
2. Loads them back through the reference's own loader with its Python
   (:mod:`.reference_dump`) and checks the graphs are element-wise ours
   (:mod:`.graph_check`); the result is ``DIR/graph_check.json``.
3. Per seed: ours through :func:`geaet_dgl.training.seeds.run_seed` in
   ``DIR/ours/seed<k>`` (a finished run is skipped, an interrupted one resumed);
   the reference through its ``main.py`` in ``DIR/reference/seed<k>``
   (:mod:`.reference_run`; a finished run with the same command is skipped).
4. Aggregates both (:mod:`.compare_report`): ``DIR/compare.json``,
   ``DIR/compare.md`` and ``DIR/compare.png``.

The budget is the same on both sides: epochs, batch size, learning rate,
weight decay, warm-up epochs, gradient clipping, seeds. With fewer epochs than
the preset's, the warm-up is scaled down with them (:func:`scaled_warmup`;
5 of 150 epochs -> 0 of 3) and the cosine runs over the epochs given, on both
sides, unless ``warmup_epochs`` is given.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from geaet_dgl import __version__
from geaet_dgl.config import settings_with_options
from geaet_dgl.training.seeds import run_seed
from geaet_dgl.config import RunConfig
from geaet_dgl.training.new_run import make_run_config
from geaet_dgl.data.run_splits import load_splits
from geaet_dgl.training import run_dir as files
from geaet_dgl.config.presets import get_preset
from . import compare_report, graph_check, pyg_export, reference_run
from geaet_dgl.interop.reference_yaml import REFERENCE_PRESETS
from .reference_run import Budget, CompareError

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]

COMPARE_JSON = "compare.json"
COMPARE_MD = "compare.md"
COMPARE_PNG = "compare.png"
GRAPH_CHECK_JSON = "graph_check.json"
DUMP_SCRIPT = Path(__file__).with_name("reference_dump.py")


def scaled_warmup(preset_warmup: int, preset_epochs: int, epochs: int) -> int:
    """Warm-up epochs for a shorter run: the preset's share of its epochs, rounded down, at most the preset's.

    >>> scaled_warmup(5, 150, 3), scaled_warmup(5, 150, 30), scaled_warmup(5, 150, 150)
    (0, 1, 5)
    """
    return min(preset_warmup, preset_warmup * epochs // preset_epochs)


def our_run_config(dataset: str, epochs: Optional[int] = None, batch_size: Optional[int] = None,
                   lr: Optional[float] = None, warmup_epochs: Optional[int] = None,
                   data: Optional[Mapping[str, Any]] = None, device: str = "cpu") -> RunConfig:
    """Our run of the comparison: the dataset's preset with the budget given (see :func:`scaled_warmup`)."""
    if dataset not in pyg_export.PYG_NAMES:  # the datasets whose graphs the reference can read from us
        raise CompareError(f"compare supports --dataset {' or '.join(pyg_export.PYG_NAMES)}, not {dataset!r}")
    preset = get_preset(dataset)
    overrides: Dict[str, Any] = settings_with_options({}, epochs=epochs, batch_size=batch_size, lr=lr)
    if warmup_epochs is None and epochs is not None:
        warmup_epochs = scaled_warmup(preset.train.warmup_epochs, preset.train.epochs, epochs)
    if warmup_epochs is not None:
        overrides["train.warmup_epochs"] = warmup_epochs
    return make_run_config(dataset, None, overrides, dict(data or {}), device=device)


def budget_of(run: RunConfig) -> Budget:
    t = run.train
    return Budget(epochs=t.epochs, batch_size=t.batch_size, lr=t.lr, weight_decay=t.weight_decay,
                  warmup_epochs=t.warmup_epochs, clip_grad_norm=t.clip_grad_norm)


def check_reference(ref_dir: PathLike, python: PathLike, dataset: str) -> str:
    """The reference's config file for ``dataset``; a one-line error if the checkout or Python is missing."""
    config_file = REFERENCE_PRESETS[dataset].config_file
    for name in ("main.py", config_file):
        if not (Path(ref_dir) / name).is_file():
            raise CompareError(f"{ref_dir} is not a checkout of icm1018/GEAET ({name} missing); pass its folder "
                               "to --against-pyg")
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise CompareError(f"--python {python} is not an executable file; pass the Python of the reference's "
                           "environment (torch_geometric 2.5.3, yacs, ogb, torchmetrics, performer-pytorch, "
                           "torch-scatter)")
    return config_file


def our_rows(run_dir: PathLike, num_train: int) -> List[Dict[str, Any]]:
    """Our ``metrics.jsonl`` rows, with ``train_seconds`` (training graphs over their throughput)."""
    rows = []
    with open(Path(run_dir) / files.METRICS) as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                speed = row.get("graphs_per_s")
                row["train_seconds"] = num_train / speed if speed else None
                rows.append(row)
    return rows


def check_exported_graphs(splits, out: Path, ref_dir: PathLike, python: PathLike, config_file: str,
                          dataset_dir: Path, threads: int, echo: Callable[[str], None]) -> Dict[str, Any]:
    """Run :mod:`.reference_dump` with the reference's Python and compare; cached by the export's digest."""
    source = json.loads((pyg_export.raw_path(dataset_dir, pyg_export.PYG_NAMES[splits.name]).parent
                         / pyg_export.SOURCE_FILE).read_text())
    cached = out / GRAPH_CHECK_JSON
    if cached.is_file():
        report = json.loads(cached.read_text())
        if report.get("sha256") == source["sha256"]:
            echo("graph check (cached):\n" + graph_check.describe(report))
            return report
    dump = out / "reference_graphs.pt"
    command = [str(python), str(DUMP_SCRIPT), "--ref-dir", os.path.abspath(ref_dir), "--cfg",
               os.path.join(os.path.abspath(ref_dir), config_file), "--out", str(dump.resolve()),
               "dataset.dir", str(dataset_dir.resolve()), "num_threads", str(threads)]
    echo("graph check: loading the exported graphs through the reference's loader ...")
    workdir = out / "graph_check"
    reference_run.run_reference(command, workdir, env=reference_run.python_env(threads))
    report = graph_check.check_graphs(splits, dump)
    report["sha256"] = source["sha256"]
    dump.unlink()
    files.write_json(cached, report)
    echo("graph check:\n" + graph_check.describe(report))
    return report


def run_reference_seed(seed: int, budget: Budget, out: Path, ref_dir: PathLike, python: PathLike, config_file: str,
                       dataset_dir: Path, device: str, threads: int, overwrite: bool, extra: Sequence[str] = ()
                       ) -> Path:
    """Run (or skip, when finished with the same command) the reference for one seed; return its run dir.

    ``extra``: more ``KEY VALUE`` overrides, after the budget's (e.g. ``dataset.split_index 3``)."""
    workdir = out / "reference" / f"seed{seed}"
    results = workdir / "out"
    overrides = reference_run.reference_overrides(budget, seed, results, dataset_dir, device=device, threads=threads)
    overrides += [str(item) for item in extra]
    command = reference_run.reference_command(python, ref_dir, config_file, overrides)
    run_dir = reference_run.reference_run_dir(results, config_file, seed)
    saved = reference_run.saved_command(workdir)
    if not overwrite and saved is not None and saved != command and reference_run.finished(run_dir, budget.epochs):
        raise CompareError(f"{workdir} holds a reference run started with another command; choose another --out, "
                           "or pass --overwrite to replace it")
    if not overwrite and saved == command and reference_run.finished(run_dir, budget.epochs):
        log.info("seed %s: finished reference run in %s, skipped", seed, run_dir)
        return run_dir
    if results.exists():
        shutil.rmtree(results)
    log.info("seed %s: reference training in %s", seed, run_dir)
    reference_run.run_reference(command, workdir, env=reference_run.python_env(threads))
    if not reference_run.finished(run_dir, budget.epochs):
        raise CompareError(f"the reference's main.py ended without writing {budget.epochs} epochs and a checkpoint "
                           f"to {run_dir}; see {workdir / reference_run.LOG_FILE}")
    return run_dir


def compare_against_reference(ref_dir: PathLike, dataset: str, seeds: Sequence[int], out: PathLike, *,
                              python: PathLike, epochs: Optional[int] = None, batch_size: Optional[int] = None,
                              lr: Optional[float] = None, warmup_epochs: Optional[int] = None,
                              data: Optional[Mapping[str, Any]] = None, device: str = "cpu",
                              threads: Optional[int] = None, overwrite: bool = False, progress: bool = True,
                              echo: Callable[[str], None] = print) -> Dict[str, Any]:
    """Train both implementations per seed on the same graphs and budget; write and return ``compare.json``.

    Parameters
    ----------
    ref_dir : path-like
        Checkout of icm1018/GEAET (run from there, never copied).
    dataset : {'mnist', 'cifar10'}
    seeds : sequence of int
        Distinct seeds; each side trains once per seed.
    out : path-like
        Comparison folder: ``pyg/``, ``ours/seed<k>/``, ``reference/seed<k>/``, ``compare.*``.
    python : path-like
        The reference environment's Python.
    epochs, batch_size, lr, warmup_epochs : optional
        The budget (default: the preset's; warm-up scaled with epochs, see :func:`scaled_warmup`).
    data : mapping, optional
        ``data_dir``, ``mnist_images``/``cifar_images``, ``limit_train``/``limit_val``/``limit_test``.
    device : {'cpu', 'cuda'}
    threads : int, optional
        torch threads of both sides (default: this process's).
    overwrite : bool
        Retrain every seed of both sides.
    """
    seeds = list(seeds)
    if not seeds or len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise CompareError(f"give distinct seeds >= 0 (e.g. --seeds 0 1 2), got {seeds}")
    config_file = check_reference(ref_dir, python, dataset)
    run = our_run_config(dataset, epochs, batch_size, lr, warmup_epochs, data, device)
    budget = budget_of(run)
    threads = threads or torch.get_num_threads()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    echo(f"budget (both sides): {budget.to_dict()}; seeds {seeds}; {threads} torch threads; device {device}")

    splits = load_splits(run.data, run.model, progress=progress)
    dataset_dir = out / "pyg"
    raw = pyg_export.write_gnn_benchmark(splits, dataset_dir, pyg_export.PYG_NAMES[dataset])
    echo(f"wrote {splits.sizes()} graphs for the reference to {raw}")
    check = check_exported_graphs(splits, out, ref_dir, python, config_file, dataset_dir, threads, echo)
    if not check["equal"]:
        raise CompareError(f"the reference loaded other graphs than ours (see {out / GRAPH_CHECK_JSON}); "
                           "the comparison would not be on the same data")
    num_train = len(splits.train)
    del splits

    runs, params = train_both_sides(run, seeds, num_train, budget, out, ReferenceSide(
        ref_dir, python, config_file, dataset_dir), device, threads, overwrite, progress, echo, describe=_last)

    result = compare_report.compare_runs(runs, run.train.metric)
    result.update({
        "dataset": dataset, "preset": run.preset, "budget": budget.to_dict(), "params": params,
        "num_graphs": {s: check[s]["graphs"][0] for s in ("train", "val", "test")},
        "graph_check": {"equal": check["equal"], "file": GRAPH_CHECK_JSON},
        "device": device, "torch_threads": threads, "reference_dir": os.path.abspath(ref_dir),
        "reference_python": str(python), "package_version": __version__,
        "run_dirs": {"ours": [str(out / "ours" / f"seed{s}") for s in seeds],
                     "reference": [str(reference_run.reference_run_dir(out / "reference" / f"seed{s}" / "out",
                                                                       config_file, s)) for s in seeds]},
    })
    files.write_json(out / COMPARE_JSON, result)
    compare_report.plot_comparison(result, out / COMPARE_PNG)
    title = f"{dataset}: ours against the PyG reference, {budget.epochs} epoch{'s' if budget.epochs != 1 else ''}"
    (out / COMPARE_MD).write_text(compare_report.markdown_table(result, title))
    return result


@dataclasses.dataclass(frozen=True)
class ReferenceSide:
    """Where the reference runs: its checkout, its Python, the config file it reads, the folder of our exported
    data, and ``KEY VALUE`` overrides of the file for every seed."""

    ref_dir: PathLike
    python: PathLike
    config_file: str
    dataset_dir: Path
    extra: Sequence[str] = ()


def train_both_sides(run: Any, seeds: Sequence[int], num_train: int, budget: Budget, out: Path,
                     reference: ReferenceSide, device: str, threads: int, overwrite: bool, progress: bool,
                     echo: Callable[[str], None], describe: Callable[[List[Dict[str, Any]], str], str]
                     ) -> Tuple[Dict[str, Dict[int, List[Dict[str, Any]]]], Dict[str, Any]]:
    """For each seed, our run (``out``/ours/seed<k>) then the reference's, with ``threads`` torch threads;
    -> ``({"ours": {seed: epoch rows}, "reference": {...}}, {"ours": params, "reference": params})``.
    ``describe(rows, metric)`` is the line echoed after each side."""
    runs: Dict[str, Dict[int, List[Dict[str, Any]]]] = {"ours": {}, "reference": {}}
    params: Dict[str, Any] = {}
    metric = run.train.metric
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        for seed in seeds:
            seeded = dataclasses.replace(run, threads=threads, train=dataclasses.replace(run.train, seed=seed))
            echo(f"seed {seed}: ours ...")
            ours_dir = out / "ours" / f"seed{seed}"
            summary = run_seed(seeded, ours_dir, overwrite=overwrite, progress=progress)
            params["ours"] = summary["params"]
            runs["ours"][seed] = our_rows(ours_dir, num_train)
            echo(f"seed {seed}: ours {describe(runs['ours'][seed], metric)}; reference ...")
            ref_run_dir = run_reference_seed(seed, budget, out, reference.ref_dir, reference.python,
                                             reference.config_file, reference.dataset_dir, device, threads,
                                             overwrite, extra=reference.extra)
            runs["reference"][seed] = reference_run.epoch_rows(ref_run_dir, metric)
            params["reference"] = runs["reference"][seed][-1].get("params")
            echo(f"seed {seed}: reference {describe(runs['reference'][seed], metric)}")
    finally:
        torch.set_num_threads(previous_threads)
    return runs, params


def _last(rows: List[Dict[str, Any]], metric: str) -> str:
    row = rows[-1]
    return (f"epoch {row['epoch']}: train loss {row['train_loss']:.4f}, val {metric} {row['val_metric']:.4f}, "
            f"test {metric} {row['test_metric']:.4f}")
