"""One graph trained three ways: one process, DGL's engine with 1 trainer, DGL's engine with 2 trainers.

A planted-partition graph (``--nodes``, about 10 neighbours a node, 5 classes)
is written to ``--out``, partitioned into 1 and into 2 parts
(``geaet-dgl partition``), and trained for ``--epochs`` with the same global
batch of about ``--batch-nodes`` nodes per step: two METIS parts of ``--batch-nodes / 2`` nodes
(``data.num_parts`` = 2 x nodes / batch nodes):

* ``one process``: ``geaet-dgl train --dataset FILE --sampler cluster --batch-size 2`` (no server);
* ``1 trainer``: ``train --partitions 1-part/NAME.json --nproc 1 --batch-size 2`` (1 graph server + 1 trainer);
* ``2 trainers``: ``train --partitions 2-parts/NAME.json --nproc 2 --batch-size 1`` (2 servers + 2 trainers,
  one part each per step).

Prints (and writes ``--out``/partitioned.md) seconds per epoch (training alone,
and with the epoch's scoring: one whole-graph pass in the one-process run,
the trainers' batches in the distributed ones), the peak
resident memory of every process (``VmHWM``; the one-process run's from
``getrusage``) and the whole-graph test accuracy of ``last.pt``. Run from the
repository root::

    OMP_WAIT_POLICY=PASSIVE python benchmarks/partitioned.py --nodes 10000 --epochs 2 --out /tmp/partitioned
"""
import argparse
import json
import os
import resource
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODEL = ["--preset", "geaet-node"]


def _cli(*args: str, threads: int) -> None:
    command = [sys.executable, "cli.py", *args, "--threads", str(threads), "--overwrite", "--no-progress"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-nodes", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of each run, all its trainers together")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    import dgl

    from geaet_dgl.data.generated.node_graphs import planted_partition
    from geaet_dgl.distgraph.launch import score_on_graph

    os.makedirs(args.out, exist_ok=True)
    graph_file = os.path.join(args.out, "planted.bin")
    block = args.nodes / 5
    graph = planted_partition(args.nodes, 5, p_in=9 / block, p_out=1 / (4 * block), signal=0.7, seed=0)
    dgl.save_graphs(graph_file, [graph])
    train_nodes = int(graph.ndata["train_mask"].sum())
    common = ["--epochs", str(args.epochs), *MODEL]
    rows = []

    run_dir = os.path.join(args.out, "one-process")
    num_parts = f"data.num_parts={max(2, 2 * args.nodes // args.batch_nodes)}"
    _cli("train", "--dataset", graph_file, "--sampler", "cluster", "--set", num_parts, "--batch-size", "2",
         "--out", run_dir, *common, threads=args.threads)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0  # only child so far
    rows.append(("one process (no server)", run_dir, {"process": peak}))

    for parts in (1, 2):
        folder = os.path.join(args.out, f"{parts}-parts")
        subprocess.run([sys.executable, "cli.py", "partition", graph_file, "--parts", str(parts), "--out", folder,
                        "--lap-k", "0"], check=True)
        run_dir = os.path.join(args.out, f"{parts}-trainers")
        _cli("train", "--partitions", os.path.join(folder, "planted.json"), "--nproc", str(parts), "--batch-size",
             str(2 // parts), "--set", num_parts, "--out", run_dir, *common, threads=args.threads)
        with open(os.path.join(run_dir, "summary.json")) as handle:
            rows.append((f"{parts} server(s) + {parts} trainer(s)", run_dir, json.load(handle)["peak_rss_mib"]))

    lines = [f"{graph.num_nodes()} nodes, {graph.num_edges()} edges; {args.epochs} epochs, {args.batch_nodes} nodes "
             f"per step in all; {args.threads} threads per run", "",
             "| run | training s/epoch | s/epoch with scoring | peak RSS per process (MiB) | test accuracy (last.pt, "
             "whole graph) |", "|---|---|---|---|---|"]
    for name, run_dir, peaks in rows:
        with open(os.path.join(run_dir, "metrics.jsonl")) as handle:
            epochs = [json.loads(line) for line in handle]
        seconds = sum(row["seconds"] for row in epochs) / len(epochs)
        # one process: the trainer logs training nodes per second of training; its scoring is one whole-graph pass
        training = sum(row.get("train_seconds") or train_nodes / row["graphs_per_s"] for row in epochs) / len(epochs)
        accuracy = score_on_graph(os.path.join(run_dir, "last.pt"), graph_file)["test"]
        memory = ", ".join(f"{key} {value:.0f}" for key, value in peaks.items())
        lines.append(f"| {name} | {training:.2f} | {seconds:.2f} | {memory} | {accuracy:.4f} |")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(args.out, "partitioned.md"), "w") as handle:
        handle.write(text + "\n")


if __name__ == "__main__":
    main()
