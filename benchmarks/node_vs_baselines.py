"""GEAET with a dataset's defaults beside a 2-layer GCN (DGL GraphConv) and a 2-layer MLP, in one run.

Each graph file holds one graph with train/val/test node masks (the ten split files of a geom-gcn dataset
are ten files); every file x seed trains GEAET as ``train --dataset FILE [--preset P]`` would, and the two
baselines (``geaet_dgl.benchmarking.node_baselines``). Prints one markdown table and writes OUT/node_baselines.md
and .json.

    python benchmarks/node_baselines.py --files citeseer.bin --preset citeseer --seeds 0 1 2 --out runs/cs
    python benchmarks/node_baselines.py --files actor0.bin ... actor9.bin --preset actor --seeds 0 --out runs/actor
"""
import argparse
import json
import os

import _common  # noqa: F401  (puts the repository on sys.path)

from geaet_dgl.benchmarking.node_baselines import compare_with_baselines, format_table
from geaet_dgl.threads import apply_threads


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="+", required=True, help="graph files with node masks")
    parser.add_argument("--out", required=True, help="folder for the GEAET runs and the table")
    parser.add_argument("--preset", default=None, help="GEAET preset (default: geaet-node, the file default)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--hidden", type=int, default=64, help="hidden width of the GCN and the MLP")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="overrides of the GEAET preset (repeatable)")
    parser.add_argument("--baselines-only", action="store_true", help="skip GEAET")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    apply_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    overrides = dict(item.split("=", 1) for item in args.settings)
    table = compare_with_baselines(args.files, args.out, seeds=args.seeds, preset=args.preset, overrides=overrides,
                                   hidden=args.hidden, threads=args.threads, skip_geaet=args.baselines_only)
    title = (f"{', '.join(os.path.basename(f) for f in args.files)}; seeds {args.seeds}; GEAET preset "
             f"{args.preset or 'geaet-node'} {overrides or ''}")
    text = f"{title}\n\n{format_table(table)}"
    print(text, flush=True)
    with open(os.path.join(args.out, "node_baselines.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(args.out, "node_baselines.json"), "w") as f:
        json.dump({"files": args.files, "seeds": args.seeds, "preset": args.preset, "overrides": overrides,
                   "table": table}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
