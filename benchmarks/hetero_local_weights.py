"""Heterograph GEAET: the per-relation local MPNN against typed weights on the homogeneous view.

    python benchmarks/hetero.py --etypes 2 4 6 10 --batch-size 32 --repeats 10 --threads 1 --json out/hetero.json
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from geaet_dgl.benchmarking.hetero import hetero_table, run_hetero_benchmark  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--etypes", type=int, nargs="+", default=[2, 4, 6, 10], help="relation counts to time")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--nodes-per-type", type=int, default=20)
    parser.add_argument("--edges-per-relation", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-memory", action="store_true", help="skip the per-model peak RSS processes")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args()
    rows = run_hetero_benchmark(args.etypes, memory=not args.no_memory, batch_size=args.batch_size, nodes_per_type=args.nodes_per_type,
                                edges_per_relation=args.edges_per_relation, repeats=args.repeats,
                                warmup=args.warmup, threads=args.threads, device=args.device)
    print(hetero_table(rows))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
