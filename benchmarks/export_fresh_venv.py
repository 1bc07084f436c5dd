#!/usr/bin/env python
"""An exported model run in a fresh virtual environment: the newest torch, no DGL, no geaet-dgl.

Run with the project's environment. It exports a checkpoint to TorchScript and ONNX, writes the graphs as
the example's npz, scores them with ``geaet-dgl predict`` here, then runs ``examples/predict_exported.py``
with the other environment's Python (made with ``--create``: ``python -m venv`` and ``pip install torch numpy
onnxruntime``) and compares the CSVs (docs/export.md records a run):

    python benchmarks/export_fresh_venv.py --venv /tmp/fresh --create --preset mnist --graphs 64
    python benchmarks/export_fresh_venv.py --venv /tmp/fresh --checkpoint runs/x/best.pt --graph-file new.bin

Where the other environment is another machine (a GPU machine with a newer torch and no DGL), ``--prepare DIR``
writes the exported files, the npz and ``predict``'s CSV into DIR/PRESET; run the example there into
RESULTS/PRESET/FORMAT.csv, bring RESULTS back, and ``--compare DIR --results RESULTS`` compares:

    python benchmarks/export_fresh_venv.py --prepare fresh_check --preset zinc --graphs 64
    python examples/predict_exported.py fresh_check/zinc/model.torchscript fresh_check/zinc/graphs.npz --out R/zinc/torchscript.csv
    python benchmarks/export_fresh_venv.py --compare fresh_check --results R

Without ``--checkpoint`` the model is the preset's at its own size with random weights and the graphs are
``--graphs`` synthetic ones shaped like the preset's data (:mod:`geaet_lab.benchmarking.inputs`).
"""
import argparse
import csv
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401  (sys.path)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "predict_exported.py"


def _run(command, **kwargs):
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.reader(handle))


def _compare(ours, theirs):
    """(largest difference of the probability / value columns, rows whose predicted class differs, rows where
    ``predict`` wrote NaN); raises where headers, row counts or ids differ. Rows with NaN on either side are
    counted, not compared (docs/export.md: where the training forward's GEANet normalisation underflows)."""
    if ours[0] != theirs[0] or len(ours) != len(theirs):
        raise SystemExit("the two CSVs have different headers or row counts")
    worst, flipped, nan_rows = 0.0, 0, 0
    numbers = [i for i, column in enumerate(ours[0]) if column.startswith(("prob_", "value"))]
    for mine, want in zip(ours[1:], theirs[1:]):
        if any(math.isnan(float(row[i])) for row in (mine, want) for i in numbers):
            nan_rows += 1
            continue
        for column, a, b in zip(ours[0], mine, want):
            if column.startswith(("prob_", "value")):
                worst = max(worst, abs(float(a) - float(b)))
            elif column == "predicted":
                flipped += a != b
            elif a != b:
                raise SystemExit(f"column {column}: {a} != {b}")
    return worst, flipped, nan_rows


def _random_run(preset: str, count: int, folder: Path):
    """A checkpoint of ``preset``'s model with random weights and ``count`` synthetic graphs -> (ckpt, graph file)."""
    import dgl
    import torch

    from geaet_lab.benchmarking.inputs import synthetic_graphs
    from geaet_dgl.training import make_run_config
    from geaet_dgl.models import build_model
    from geaet_dgl.training.checkpoint import save_checkpoint
    from geaet_dgl.training.schedule import build_optimizer, build_scheduler

    run = make_run_config(preset)
    torch.manual_seed(0)
    model = build_model(run.model)
    optimizer = build_optimizer(model.parameters(), 1e-3, 0.0)
    save_checkpoint(folder / "best.pt", run_config=run.to_dict(), model=model, optimizer=optimizer,
                    scheduler=build_scheduler(optimizer, 1, 3), epoch=1, step=0, global_step=1, best=None,
                    history=[], progress=None)
    graphs = []
    for graph in synthetic_graphs(preset, count).graphs:  # the stored features only: predict adds encodings
        plain = dgl.graph(graph.edges(), num_nodes=graph.num_nodes())
        plain.ndata["feat"] = graph.ndata["feat"]
        plain.edata["feat"] = graph.edata["feat"] if "feat" in graph.edata else torch.zeros(graph.num_edges(), 1)
        graphs.append(plain)
    dgl.save_graphs(str(folder / "graphs.bin"), graphs)
    return folder / "best.pt", folder / "graphs.bin"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--venv", help="the fresh environment's folder")
    p.add_argument("--prepare", metavar="DIR", help="write DIR/PRESET/{model.torchscript,model.onnx,graphs.npz,"
                                                     "predict.csv} for another machine, and stop")
    p.add_argument("--compare", metavar="DIR", help="compare --results' CSVs with DIR's predict.csv, and stop")
    p.add_argument("--results", help="with --compare: RESULTS/PRESET/FORMAT.csv written by the example elsewhere")
    p.add_argument("--create", action="store_true", help="make it first: venv, pip install torch numpy onnxruntime")
    p.add_argument("--checkpoint", help="a trained run's best.pt (default: a random-weight model of --preset)")
    p.add_argument("--graph-file", help="its graphs (dgl.save_graphs) with --checkpoint")
    p.add_argument("--preset", default="mnist")
    p.add_argument("--graphs", type=int, default=64, help="synthetic graphs without --checkpoint")
    a = p.parse_args(argv)

    if a.compare:
        return _compare_results(Path(a.compare), Path(a.results or ""))
    if a.prepare:
        return _prepare(a, Path(a.prepare) / a.preset)
    if not a.venv:
        p.error("--venv (or --prepare / --compare) is required")
    python = Path(a.venv) / "bin" / "python"
    if a.create:
        _run([sys.executable, "-m", "venv", a.venv])
        _run([python, "-m", "pip", "install", "-q", "torch", "numpy", "onnxruntime"])
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["OMP_NUM_THREADS"] = "1"
    versions = _run([python, "-c", "import torch, numpy; print(torch.__version__, numpy.__version__, end=' ');"
                     "import importlib.util as u; print('dgl' if u.find_spec('dgl') else 'no-dgl', end=' ');"
                     "print('geaet_dgl' if u.find_spec('geaet_dgl') else 'no-geaet_dgl')"], env=env).split()
    print(f"fresh environment: torch {versions[0]}, numpy {versions[1]}, {versions[2]}, {versions[3]}")
    if versions[2] != "no-dgl" or versions[3] != "no-geaet_dgl":
        raise SystemExit("the fresh environment can import dgl or geaet_dgl; use one without them")

    from geaet_dgl.data import load_graph_file  # noqa: F401  (DGL's backend set before reading graphs)
    from geaet_dgl.data.own_files.graph_files import read_graph_file
    from geaet_dgl.export.graphs_npz import write_graphs_npz
    from geaet_dgl.export.writer import export_checkpoint
    from geaet_dgl.scoring import predict_file

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if a.checkpoint:
            checkpoint, graph_file = Path(a.checkpoint), Path(a.graph_file)
        else:
            checkpoint, graph_file = _random_run(a.preset, a.graphs, folder)
        graphs, _ = read_graph_file(graph_file)
        write_graphs_npz(graphs, folder / "graphs.npz")
        predict_file(checkpoint, graph_file, folder / "predict.csv", progress=False)
        theirs = _rows(folder / "predict.csv")
        for fmt in ("torchscript", "onnx"):
            model = folder / f"model.{fmt}"
            export_checkpoint(checkpoint, fmt, model)
            said = _run([python, EXAMPLE, model, folder / "graphs.npz", "--out", folder / f"{fmt}.csv"], env=env,
                        cwd=tmp).strip()
            worst, flipped, nan_rows = _compare(_rows(folder / f"{fmt}.csv"), theirs)
            print(f"{fmt}: {said}; {len(theirs) - 1} rows against predict's: largest difference {worst:.1e}, "
                  f"{flipped} predicted differently, {nan_rows} rows NaN (not compared)")


def _prepare(a, folder: Path) -> None:
    """The exported files, the graphs as the example's npz and ``predict``'s CSV in ``folder``."""
    from geaet_dgl.data import load_graph_file  # noqa: F401  (DGL's backend set before reading graphs)
    from geaet_dgl.data.own_files.graph_files import read_graph_file
    from geaet_dgl.export.graphs_npz import write_graphs_npz
    from geaet_dgl.export.writer import export_checkpoint
    from geaet_dgl.scoring import predict_file

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if a.checkpoint:
            checkpoint, graph_file = Path(a.checkpoint), Path(a.graph_file)
        else:
            checkpoint, graph_file = _random_run(a.preset, a.graphs, Path(tmp))
        graphs, _ = read_graph_file(graph_file)
        write_graphs_npz(graphs, folder / "graphs.npz")
        predict_file(checkpoint, graph_file, folder / "predict.csv", progress=False)
        for fmt in ("torchscript", "onnx"):
            export_checkpoint(checkpoint, fmt, folder / f"model.{fmt}")
    print(f"wrote {folder}: model.torchscript, model.onnx, graphs.npz, predict.csv")


def _compare_results(prepared: Path, results: Path) -> None:
    """One line per RESULTS/PRESET/FORMAT.csv: its difference from PREPARED/PRESET/predict.csv."""
    found = sorted(results.glob("*/*.csv"))
    if not found:
        raise SystemExit(f"no RESULTS/PRESET/FORMAT.csv under {results}")
    for path in found:
        worst, flipped, nan_rows = _compare(_rows(path), _rows(prepared / path.parent.name / "predict.csv"))
        print(f"{path.parent.name} {path.stem}: largest difference {worst:.1e}, {flipped} predicted differently, "
              f"{nan_rows} rows NaN (not compared)")


if __name__ == "__main__":
    main()
