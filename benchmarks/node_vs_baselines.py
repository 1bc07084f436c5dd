"""GEAET with a dataset's defaults beside a 2-layer GCN (DGL GraphConv) and a 2-layer MLP, in one run.

Each graph file holds one graph with train/val/test node masks (the ten split files of a geom-gcn dataset
are ten files); every file x seed trains GEAET as ``train --dataset FILE [--preset P]`` would, and the two
baselines (``geaet_lab.benchmarking.node_baselines``). Builds a ``NodeBaselinesJob`` for ``run_benchmark``:
prints one markdown table and writes OUT/node_baselines.md and .json.

    python benchmarks/node_vs_baselines.py --files citeseer.bin --preset citeseer --seeds 0 1 2 --out runs/cs
    python benchmarks/node_vs_baselines.py --files actor0.bin ... actor9.bin --preset actor --seeds 0 --out runs/actor
    python benchmarks/node_vs_baselines.py --dataset actor --data-dir ~/.dgl --splits all --seeds 0 --out runs/actor

``--dataset NAME --data-dir DIR`` reads a named node set with DGL's loader (as ``train --dataset NAME`` does) and
writes its splits (``--splits all`` or indices; default: split 0) as files in OUT/graphs; its preset is the set's.
"""
import argparse
import os
import sys

import _common  # noqa: F401  (puts the repository on sys.path)

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.jobs import NodeBaselinesJob


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--files", nargs="+", help="graph files with node masks")
    source.add_argument("--dataset", help="a named node set (cora, actor, ...), read from --data-dir")
    parser.add_argument("--data-dir", default=None, help="DGL's raw_dir for --dataset (e.g. ~/.dgl)")
    parser.add_argument("--splits", nargs="+", default=["0"],
                        help="--dataset's public splits: indices, or 'all' (default: 0)")
    parser.add_argument("--out", required=True, help="folder for the GEAET runs and the table")
    parser.add_argument("--preset", default=None, help="GEAET preset (default: geaet-node, the file default)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(NodeBaselinesJob.seeds))
    parser.add_argument("--hidden", type=int, default=NodeBaselinesJob.hidden,
                        help="hidden width of the GCN and the MLP")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="overrides of the GEAET preset (repeatable)")
    parser.add_argument("--baselines-only", action="store_true", help="skip GEAET")
    parser.add_argument("--threads", type=int, default=NodeBaselinesJob.threads)
    args = parser.parse_args(argv)
    if args.dataset and not args.data_dir:
        parser.error("--dataset needs --data-dir (DGL's raw_dir, e.g. ~/.dgl)")
    splits = () if args.splits == ["all"] or not args.dataset else tuple(int(k) for k in args.splits)
    job = NodeBaselinesJob(files=tuple(args.files or ()), out=args.out, dataset=args.dataset,
                           data_dir=os.path.expanduser(args.data_dir) if args.data_dir else None, splits=splits, seeds=tuple(args.seeds), preset=args.preset,
                           overrides=dict(item.split("=", 1) for item in args.settings), hidden=args.hidden,
                           threads=args.threads, skip_geaet=args.baselines_only)
    run_benchmark(job, echo=lambda text: print(text, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
