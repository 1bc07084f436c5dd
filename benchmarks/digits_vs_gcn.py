"""A 10-NN graph of 70,000 MNIST digits with 200 labels: GEAET with a graph file's defaults beside a 2-layer GCN.

Builds the graph file once (``geaet_lab.benchmarking.digit_graph.write_digit_graph``: every image a node, its
784 pixels / 255 as features, joined to its ``--knn`` nearest images; ``--train`` labelled nodes, ``--val``
validation nodes, the rest test; reused when ``--graph`` exists), then trains on it, for every seed: GEAET as
``geaet-dgl train --dataset FILE --sampler S`` does with the ``geaet-node`` defaults (each of ``--samplers``),
DGL's 2-layer GraphConv GCN and a 2-layer MLP (``compare_on_digit_graph``). Prints one markdown table and writes
OUT/digit_graph.md and .json.

    python benchmarks/digits_vs_gcn.py --mnist /work/shared/data/mnist --graph runs/digits70k.bin --out runs/digits
    python benchmarks/digits_vs_gcn.py --images 10000 --train 30 --graph runs/digits10k.bin \\
        --samplers full cluster --out runs/d10k
"""
import argparse
import json
import os
import time

import _common  # noqa: F401  (puts the repository on sys.path)

import dgl

from geaet_lab.benchmarking.digit_graph import compare_on_digit_graph, write_digit_graph
from geaet_lab.benchmarking.node_baselines import format_table
from geaet_dgl.threads import apply_threads


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the GEAET runs and the table")
    parser.add_argument("--graph", required=True, help="the graph file: read if it exists, else built and written")
    parser.add_argument("--mnist", default="/work/shared/data/mnist", help="folder with MNIST's four IDX files")
    parser.add_argument("--images", type=int, default=70000, help="nodes: training images first, then test images")
    parser.add_argument("--knn", type=int, default=10)
    parser.add_argument("--train", type=int, default=200, help="labelled nodes")
    parser.add_argument("--val", type=int, default=500, help="validation nodes (the rest are test nodes)")
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the random split")
    parser.add_argument("--samplers", nargs="+", default=["cluster"], choices=["full", "cluster", "random"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="overrides of the geaet-node preset (repeatable)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    apply_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    if os.path.exists(args.graph):
        graph = dgl.load_graphs(args.graph)[0][0]
        print(f"{args.graph}: read (delete it to build another)", flush=True)
    else:
        started = time.perf_counter()
        graph = write_digit_graph(args.graph, args.mnist, args.images, args.knn, args.train, args.val,
                                  args.split_seed)
        print(f"{args.graph}: built in {time.perf_counter() - started:.0f} s", flush=True)
    sizes = {split: int(graph.ndata[f"{split}_mask"].sum()) for split in ("train", "val", "test")}
    overrides = dict(item.split("=", 1) for item in args.settings)
    table = compare_on_digit_graph(args.graph, args.out, samplers=args.samplers, seeds=args.seeds,
                                   overrides=overrides, threads=args.threads)
    title = (f"{os.path.basename(args.graph)}: {graph.num_nodes():,} MNIST images, {graph.num_edges():,} edges, "
             f"train/val/test {sizes['train']}/{sizes['val']}/{sizes['test']}; seeds {args.seeds}; GEAET preset "
             f"geaet-node {overrides or ''}")
    text = f"{title}\n\n{format_table(table)}"
    print(text, flush=True)
    with open(os.path.join(args.out, "digit_graph.md"), "w") as handle:
        handle.write(text + "\n")
    with open(os.path.join(args.out, "digit_graph.json"), "w") as handle:
        json.dump({"graph": args.graph, "sizes": sizes, "seeds": args.seeds, "overrides": overrides,
                   "table": table}, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
