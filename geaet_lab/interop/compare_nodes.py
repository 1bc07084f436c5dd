"""``geaet-dgl compare --against-pyg REF --config FILE.yaml``: a node configuration, ours beside the reference.

For GraphGPS's node files (``actor-GPS.yaml``, ``webkb-*-GPS.yaml``,
``wn-*-GPS.yaml``: ``dataset.format`` ``PyG-Actor`` / ``PyG-WebKB`` /
``PyG-WikipediaNetwork``, one graph, transductive, ``split_mode: standard``):

1. **Same graph and split.** Our node set as ``train`` reads it (DGL's loader,
   bidirected: :func:`~geaet_dgl.data.nodes.node_sets.node_set_graph`) is
   written as the PyG raw files of that format under ``OUT/pyg``
   (:mod:`.pyg_node_export`, all of DGL's split columns), the reference's
   ``dataset.dir``.
2. **Checked equal.** :mod:`.reference_dump` (``--node-set``), run with the reference's
   Python, loads them through its ``load_dataset_master`` with
   ``dataset.split_index K``; :mod:`.node_check` compares features, labels,
   edges (as sets) and the three masks with ours: ``OUT/graph_check.json``.
3. **Same file, same budget.** Ours trains with ``train --config FILE``
   (:func:`~geaet_dgl.interop.reference_yaml.reference_run_config`); the
   reference's ``main.py`` with the same file in its vocabulary
   (``OUT/reference/<file>``: GraphGPS's ``GPSModel`` as the reference's GEAET
   network without the external branch,
   :func:`~geaet_lab.interop.reference_model.as_reference_geaet`). Both get the
   epochs, the warm-up (the file's, scaled to the epochs as for MNIST), the
   optimiser settings and the seed, and evaluate every epoch (the files'
   ``eval_period: 5`` would leave four epochs of five without a validation
   figure to choose the best epoch by).
4. **Side by side.** ``OUT/compare.json`` / ``.md`` / ``.png`` as for MNIST
   (:mod:`.compare_report`): per epoch and at each seed's best-validation epoch.
"""
from __future__ import annotations

import copy
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
import yaml

from geaet_dgl import __version__
from geaet_dgl.data.nodes.node_sets import dgl_masks, node_set_graph, node_set_shape, read_node_set
from geaet_dgl.training import run_dir as files
from . import compare_report, node_check, pyg_node_export, reference_run
from .compare import (COMPARE_JSON, COMPARE_MD, COMPARE_PNG, GRAPH_CHECK_JSON, ReferenceSide, budget_of,
                      scaled_warmup, train_both_sides)
from geaet_dgl.interop.reference_yaml import reference_run_config
from .reference_run import CompareError

log = logging.getLogger(__name__)
PathLike = Union[str, os.PathLike]

DUMP_SCRIPT = Path(__file__).with_name("reference_dump.py")


def read_node_config(config: PathLike) -> Tuple[Dict[str, Any], str]:
    """The YAML tree of a node configuration and our node set for it; a one-line error for any other file."""
    with open(config) as handle:
        tree = yaml.safe_load(handle) or {}
    dataset = tree.get("dataset", {}) or {}
    fmt, name = str(dataset.get("format", "")), str(dataset.get("name", "none"))
    node_set = pyg_node_export.node_set_of_config(fmt, name)
    if node_set is None or dataset.get("task") != "node":
        raise CompareError(f"--config {config}: dataset.format {fmt} / name {name} is not a node set whose graph "
                           "we can give the reference; compare --config takes PyG-Actor, PyG-WebKB "
                           "(cornell/texas/wisconsin) or PyG-WikipediaNetwork (chameleon/squirrel) files; "
                           "use --dataset mnist or cifar10 for the graph sets")
    if str(dataset.get("split_mode", "standard")) != "standard":
        raise CompareError(f"--config {config}: dataset.split_mode {dataset.get('split_mode')} draws its own "
                           "split; compare needs split_mode: standard (geom-gcn's 10 splits, --split-index)")
    return tree, node_set


def changed_config(tree: Dict[str, Any], changes: Mapping[str, str], config: PathLike, out: Path
                   ) -> Tuple[Dict[str, Any], Path]:
    """The file with ``changes`` (``{'gt.layer_type': 'GCN+None'}``, values read as YAML) applied, written to
    ``OUT/config/<file name>`` for both sides; ``(tree, config)`` unchanged without changes. A key the file
    does not have is added (graphgym's defaults hold every key the reference knows)."""
    if not changes:
        return tree, Path(config)
    tree = copy.deepcopy(tree)
    for key, raw in changes.items():
        node = tree
        *parents, last = key.split(".")
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise CompareError(f"--file-set {key}: {part} is a value in {config}, not a section")
            node = child
        node[last] = yaml.safe_load(raw) if raw.strip() else raw
    path = out / "config" / Path(config).name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(tree, sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return tree, path


def reference_config_file(tree: Dict[str, Any], config: PathLike, out: Path) -> Path:
    """``OUT/reference/<file name>``: the configuration in the reference's vocabulary (its ``main.py`` reads it)."""
    from .reference_model import as_reference_geaet  # keep torch_geometric out: this only rewrites the tree

    path = out / "reference" / Path(config).name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(as_reference_geaet(tree), sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def our_node_run(config: PathLike, node_set: str, data_dir: PathLike, split_index: int, epochs: Optional[int],
                 warmup_epochs: Optional[int], device: str, threads: int):
    """Our run of the file (as ``train --config FILE``), every epoch evaluated, the warm-up scaled to the epochs.

    The input width and classes are the data's (as the reference's ``dim_in`` / ``dim_out``), which differ
    from the published set's only for other files of the same format (test fixtures)."""
    base = reference_run_config(config, {}, {"data_dir": os.fspath(data_dir), "split_index": split_index},
                                device=device, threads=threads)
    width, classes = node_set_shape(node_set, data_dir, split_index)
    overrides: Dict[str, Any] = {"train.eval_every": 1}
    if (base.model.node_in_feats, base.model.out_feats) != (width, classes):
        overrides.update({"model.node_in_feats": width, "model.out_feats": classes})
    if epochs is not None:
        overrides["train.epochs"] = epochs
        if warmup_epochs is None:
            warmup_epochs = scaled_warmup(base.train.warmup_epochs, base.train.epochs, epochs)
    if warmup_epochs is not None:
        overrides["train.warmup_epochs"] = warmup_epochs
    return reference_run_config(config, overrides, {"data_dir": os.fspath(data_dir), "split_index": split_index},
                                device=device, threads=threads)


def encodings_off(tree: Dict[str, Any]) -> List[str]:
    """``posenc_X.enable False`` for every encoding the file enables: the graph check needs no eigenvectors (the
    reference's dense eigendecomposition of a whole node set takes minutes), and they change nothing it compares."""
    return [item for key, value in tree.items() if key.startswith("posenc_") and isinstance(value, dict)
            and value.get("enable") for item in (f"{key}.enable", "False")]


def check_exported_graph(graph, sha: str, out: Path, ref_dir: PathLike, python: PathLike, ref_config: Path,
                         dataset_dir: Path, split_index: int, threads: int, echo: Callable[[str], None],
                         extra: Sequence[str] = ()) -> Dict[str, Any]:
    """Run :mod:`.reference_dump` (``--node-set``) with the reference's Python and compare; cached by the export and split.

    ``extra``: more ``KEY VALUE`` overrides for the reference's loader (:func:`encodings_off`)."""
    key = f"{sha}:split{split_index}"
    cached = out / GRAPH_CHECK_JSON
    if cached.is_file():
        report = json.loads(cached.read_text())
        if report.get("source") == key:
            echo("graph check (cached):\n" + node_check.describe(report))
            return report
    dump = out / "reference_graph.pt"
    command = [str(python), str(DUMP_SCRIPT), "--node-set", "--ref-dir", os.path.abspath(ref_dir), "--cfg",
               str(ref_config.resolve()), "--out", str(dump.resolve()), "dataset.dir", str(dataset_dir.resolve()),
               "dataset.split_index", str(split_index), "num_threads", str(threads), *extra]
    echo("graph check: loading the exported graph through the reference's loader ...")
    reference_run.run_reference(command, out / "graph_check", env=reference_run.python_env(threads))
    report = node_check.check_node_graph(graph, dump)
    report["source"] = key
    dump.unlink()
    files.write_json(cached, report)
    echo("graph check:\n" + node_check.describe(report))
    return report


def compare_node_config(ref_dir: PathLike, config: PathLike, seeds: Sequence[int], out: PathLike, *,
                        python: PathLike, data_dir: PathLike, split_index: int = 0, epochs: Optional[int] = None,
                        warmup_epochs: Optional[int] = None, file_changes: Optional[Mapping[str, str]] = None,
                        device: str = "cpu", threads: Optional[int] = None, overwrite: bool = False,
                        progress: bool = True, echo: Callable[[str], None] = print) -> Dict[str, Any]:
    """Train ours and the reference from one node configuration, per seed, on our graph and split.

    Parameters
    ----------
    ref_dir : path-like
        Checkout of icm1018/GEAET (its ``main.py`` runs from there).
    config : path-like
        A GraphGPS / GEAET node file (``actor-GPS.yaml``, ...).
    seeds, out, python, device, threads, overwrite, progress, echo
        As :func:`.compare.compare_against_reference`.
    data_dir : path-like
        DGL's ``raw_dir`` holding the node set (``<data_dir>/actor_<hash>/``).
    split_index : int
        The public split (geom-gcn's 0..9) both sides train on.
    epochs, warmup_epochs : int, optional
        Budget of both (default: the file's; the warm-up scaled to ``epochs``).
    file_changes : mapping, optional
        ``{key: value}`` in the file's names, applied to the file both sides read (:func:`changed_config`).
    """
    if not (Path(ref_dir) / "main.py").is_file():
        raise CompareError(f"{ref_dir} is not a checkout of icm1018/GEAET (main.py missing); pass its folder to "
                           "--against-pyg")
    if not (os.path.isfile(python) and os.access(python, os.X_OK)):
        raise CompareError(f"--python {python} is not an executable file; pass the Python of the reference's "
                           "environment (torch_geometric 2.5.3, yacs, ogb, torchmetrics, performer-pytorch, "
                           "torch-scatter)")
    tree, node_set = read_node_config(config)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    original = config
    tree, config = changed_config(tree, dict(file_changes or {}), config, out)
    threads = threads or torch.get_num_threads()
    run = our_node_run(config, node_set, data_dir, split_index, epochs, warmup_epochs, device, threads)
    if run.data.dataset != node_set:
        raise CompareError(f"--config {config}: our reading trains on {run.data.dataset!r}, not {node_set!r}")
    budget = budget_of(run)

    graph, _, _, split = node_set_graph(node_set, data_dir, split_index)
    source, _, _ = read_node_set(node_set, data_dir)
    dataset_dir = out / "pyg"
    folder, sha = pyg_node_export.write_geom_gcn(graph, dgl_masks(source), dataset_dir, node_set)
    echo(f"wrote {node_set} ({graph.num_nodes()} nodes, {graph.num_edges()} edges, {split}) for the reference "
         f"to {folder}")
    ref_config = reference_config_file(tree, config, out)
    check = check_exported_graph(graph, sha, out, ref_dir, python, ref_config, dataset_dir, split_index, threads,
                                 echo, extra=encodings_off(tree))
    if not check["equal"]:
        raise CompareError(f"the reference loaded another graph than ours (see {out / GRAPH_CHECK_JSON}); the "
                           "comparison would not be on the same data")
    num_train = int(graph.ndata["train_mask"].sum())
    del graph, source

    extra = ["dataset.split_index", str(split_index), "train.eval_period", "1"]
    runs, params = train_both_sides(run, seeds, num_train, budget, out, ReferenceSide(
        ref_dir, python, str(ref_config.resolve()), dataset_dir, extra), device, threads, overwrite, progress, echo,
        describe=_best)

    result = compare_report.compare_runs(runs, run.train.metric)
    result.update({
        "dataset": node_set, "config": os.path.abspath(original), "file_changes": dict(file_changes or {}),
        "config_read": os.path.abspath(config), "reference_config": str(ref_config),
        "split_index": split_index, "split": split, "budget": budget.to_dict(), "params": params,
        "num_nodes": {s: m["nodes"][0] for s, m in check["masks"].items()},
        "graph_check": {"equal": check["equal"], "file": GRAPH_CHECK_JSON},
        "device": device, "torch_threads": threads, "reference_dir": os.path.abspath(ref_dir),
        "reference_python": str(python), "package_version": __version__,
        "run_dirs": {"ours": [str(out / "ours" / f"seed{s}") for s in seeds],
                     "reference": [str(reference_run.reference_run_dir(out / "reference" / f"seed{s}" / "out",
                                                                       str(ref_config), s)) for s in seeds]},
    })
    files.write_json(out / COMPARE_JSON, result)
    compare_report.plot_comparison(result, out / COMPARE_PNG)
    changes = "".join(f", {k}={v}" for k, v in (file_changes or {}).items())
    title = (f"{Path(config).name}{changes} ({node_set}, split {split_index}): ours against the PyG reference, "
             f"{budget.epochs} epoch{'s' if budget.epochs != 1 else ''}")
    (out / COMPARE_MD).write_text(compare_report.markdown_table(result, title))
    return result


def _best(rows: List[Dict[str, Any]], metric: str) -> str:
    row = rows[compare_report.best_epoch_index(rows, metric)]
    return (f"best val epoch {row['epoch']}: val {metric} {row['val_metric']:.4f}, test {metric} "
            f"{row['test_metric']:.4f}")
