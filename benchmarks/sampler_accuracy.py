"""Samplers on one graph with node masks: full, cluster and random against logistic regression.

Two graphs, each written as a graph file and trained once per sampler with the same settings
(``geaet_lab.studies.node_samplers.compare_samplers``):

* ``sbm``: a planted partition (stochastic block model) whose node features only hint at the block;
* ``mnist-knn``: MNIST images as nodes (784 pixels / 255 as features), each joined to its ``--knn``
  nearest images in pixel space; ``--images`` of them (from ``--mnist DIR`` IDX files), a
  semi-supervised split (``--train`` labelled nodes, ``--val`` for model selection, the rest test).

Prints one markdown table per graph and writes them to ``OUT/node_samplers.md`` (and ``.json``).

    python benchmarks/sampler_accuracy.py --mnist /work/shared/data/mnist --out runs/node-samplers
"""
import argparse
import json
import os
import sys

import _common  # noqa: F401  (puts the repository on sys.path)

import dgl

from geaet_lab.benchmarking.digit_graph import digit_knn_graph, read_digits
from geaet_dgl.data.generated.node_graphs import planted_partition
from geaet_lab.studies.node_samplers import compare_samplers, format_rows


def mnist_knn(folder: str, images: int, k: int, train: int, val: int, seed: int) -> dgl.DGLGraph:
    """The first ``images`` MNIST images as a kNN graph with masks (``train``/``val``, the rest test)."""
    return digit_knn_graph(*read_digits(folder, images), k, train, val, seed)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for the graph files, runs and tables")
    parser.add_argument("--graphs", nargs="+", default=["sbm", "mnist-knn"], choices=["sbm", "mnist-knn"])
    parser.add_argument("--samplers", nargs="+", default=["full", "cluster", "random"],
                        choices=["full", "cluster", "random"])
    parser.add_argument("--mnist", default="/work/shared/data/mnist", help="folder with MNIST's IDX files")
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--knn", type=int, default=10)
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--val", type=int, default=1000)
    parser.add_argument("--sbm-nodes", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--num-parts", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=4, help="parts per step")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="more overrides of the geaet-node preset (repeatable)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    overrides = {"train.epochs": args.epochs, "data.num_parts": args.num_parts, "train.batch_size": args.batch_size,
                 "train.seed": args.seed}
    overrides.update(dict(item.split("=", 1) for item in args.settings))
    report, tables = {"settings": overrides}, []
    for name in args.graphs:
        if name == "sbm":
            graph = planted_partition(args.sbm_nodes, 5, p_in=0.01, p_out=0.001, signal=0.5, seed=args.seed)
            title = (f"planted partition: {graph.num_nodes():,} nodes, {graph.num_edges():,} edges, 5 blocks, "
                     "train/val/test 50/25/25 %")
        else:
            graph = mnist_knn(args.mnist, args.images, args.knn, args.train, args.val, args.seed)
            title = (f"MNIST {args.knn}-NN graph: {graph.num_nodes():,} images, {graph.num_edges():,} edges, "
                     f"train/val/test {args.train}/{args.val}/{graph.num_nodes() - args.train - args.val}")
        path = os.path.join(args.out, f"{name}.bin")
        dgl.save_graphs(path, [graph])
        rows = compare_samplers(path, os.path.join(args.out, name), overrides, samplers=args.samplers,
                                threads=args.threads)
        table = f"{title}\n\n{format_rows(rows)}"
        print(table, flush=True)
        tables.append(table)
        report[name] = {"title": title, "rows": rows}
    with open(os.path.join(args.out, "node_samplers.md"), "w") as handle:
        handle.write("\n\n".join(tables) + "\n")
    with open(os.path.join(args.out, "node_samplers.json"), "w") as handle:
        json.dump(report, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
