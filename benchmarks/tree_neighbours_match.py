#!/usr/bin/env python
"""TreeNeighbourMatch over-squashing study (paper Figure 7): GEAET vs a plain GCN, same short budget.

For every depth r and model, one `cli.py train --dataset tree --set data.depth=r` run (fixed seed,
same epochs and --limit-train/--limit-test for all), then `cli.py eval --split train` on its last.pt:

* train accuracy: last-epoch weights scored on the (limited) train split in eval mode (the running
  accuracy logged during the epoch, with BatchNorm in train mode and the weights moving, is kept in
  the JSON as ``train_acc_running``);
* test accuracy: the last epoch's test accuracy (``final_test_metric``). The tree data have no
  validation set (val is the test set, as in Alon & Yahav), so the best-"val" epoch would be picked
  on the test set; its test accuracy is kept in the JSON only, as ``best_epoch_test_acc``.

Models: ``geaet`` is the `tree` preset as is (GatedGCN + Transformer + GEANet, r + 1 layers);
``gcn`` is the same preset with ``model.mpnn=gcn model.attention=none model.external=false``.

Every run lives in OUT/r<r>-<model>/; a finished run (summary.json present) is not retrained, an
interrupted one continues from its last.pt, so rerunning the same command resumes the grid. The
table goes to OUT/tree_neighbours_match.md and .json.

    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/tree_neighbours_match.py --out runs/tree
"""
import argparse
import json
import os
import subprocess
import sys
import time

import _common  # noqa: F401  (sys.path, DGLBACKEND)
from _common import ROOT

MODELS = {
    "geaet": [],
    "gcn": ["--set", "model.mpnn=gcn", "--set", "model.attention=none", "--set", "model.external=false"],
}


def _cli(args, env):
    cmd = [sys.executable, os.path.join(ROOT, "cli.py")] + args
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout


def run_one(depth, model, a, env):
    run_dir = os.path.join(a.out, f"r{depth}-{model}")
    summary_path = os.path.join(run_dir, "summary.json")
    timing_path = os.path.join(run_dir, "study_timing.json")
    if not os.path.exists(summary_path):
        start = time.perf_counter()
        if os.path.exists(os.path.join(run_dir, "last.pt")):
            args = ["train", "--resume", run_dir, "--no-progress"]
        else:
            args = ["train", "--dataset", "tree", "--set", f"data.depth={depth}", "--epochs", str(a.epochs),
                    "--seed", str(a.seed), "--limit-train", str(a.limit_train), "--limit-test", str(a.limit_test),
                    "--device", a.device, "--out", run_dir, "--overwrite", "--no-progress"] + MODELS[model]
            if a.batch_size:
                args += ["--batch-size", str(a.batch_size)]
        _cli(args, env)
        previous = json.load(open(timing_path))["train_wall_s"] if os.path.exists(timing_path) else 0.0
        json.dump({"train_wall_s": previous + time.perf_counter() - start}, open(timing_path, "w"))
    summary = json.load(open(summary_path))
    config = json.load(open(os.path.join(run_dir, "config.json")))
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        history = [json.loads(line) for line in f if line.strip()]
    start = time.perf_counter()
    train_eval = json.loads(_cli(["eval", "--checkpoint", os.path.join(run_dir, "last.pt"), "--split", "train",
                                  "--device", a.device, "--json"], env).strip().splitlines()[-1])
    eval_s = time.perf_counter() - start
    wall = json.load(open(timing_path))["train_wall_s"] if os.path.exists(timing_path) else None
    return {
        "r": depth, "model": model, "classes": config["model"]["out_feats"], "layers": config["model"]["num_layers"],
        "params": summary["params"], "epochs": len(history), "batch_size": config["train"]["batch_size"],
        "seed": config["train"]["seed"], "n_train": summary["num_graphs"]["train"],
        "n_test": summary["num_graphs"]["test"],
        "train_acc": train_eval["metric"], "train_acc_running": history[-1]["train_metric"],
        "test_acc": summary["final_test_metric"], "best_epoch": summary["best_epoch"],
        "best_epoch_test_acc": summary["test_metric"], "seconds_per_epoch": summary["seconds_per_epoch"],
        "train_wall_s": wall, "train_eval_s": eval_s, "run_dir": run_dir,
    }


def table(rows):
    lines = ["| r | classes | model | params | train acc | test acc | epochs | train / test examples | wall time |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        wall = "?" if row["train_wall_s"] is None else f"{row['train_wall_s'] / 60:.1f} min"
        lines.append(f"| {row['r']} | {row['classes']} | {row['model']} | {row['params']:,} | {row['train_acc']:.3f} "
                     f"| {row['test_acc']:.3f} | {row['epochs']} | {row['n_train']:,} / {row['n_test']:,} | {wall} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder of the run directories and the tables")
    p.add_argument("--depths", type=int, nargs="+", default=[2, 3, 4, 5])
    p.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--limit-train", type=int, default=4000)
    p.add_argument("--limit-test", type=int, default=500)
    p.add_argument("--batch-size", type=int, default=None, help="default: the tree preset's (64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="OMP/MKL threads of every run (default 1)")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads), DGLBACKEND="pytorch")
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for depth in a.depths:
        for model in a.models:
            rows.append(run_one(depth, model, a, env))
            print(table(rows[-1:]), flush=True)
    budget = {"epochs": a.epochs, "limit_train": a.limit_train, "limit_test": a.limit_test, "seed": a.seed,
              "batch_size": a.batch_size, "threads": a.threads, "device": a.device}
    md = table(rows)
    with open(os.path.join(a.out, "tree_neighbours_match.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "tree_neighbours_match.json"), "w") as f:
        json.dump({"budget": budget, "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
                   "rows": rows}, f, indent=2)
    print(md)


if __name__ == "__main__":
    main()
