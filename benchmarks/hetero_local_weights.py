"""Heterograph GEAET: the per-relation local MPNN against typed weights on the homogeneous view.

Builds a ``HeteroJob`` (defaults: ``geaet_lab/benchmarking/jobs.py``) for ``run_benchmark``:

    python benchmarks/hetero_local_weights.py --etypes 2 4 6 10 --batch-size 32 --repeats 10 --threads 1 --json out/hetero.json
"""
import argparse
import dataclasses

import _common  # noqa: F401  (puts the repository on sys.path)

from geaet_lab.benchmarking import run_benchmark
from geaet_lab.benchmarking.jobs import HeteroJob


def main(argv=None) -> None:
    default = HeteroJob()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--etypes", type=int, nargs="+", default=list(default.etypes), help="relation counts to time")
    parser.add_argument("--batch-size", type=int, default=default.batch_size)
    parser.add_argument("--nodes-per-type", type=int, default=default.nodes_per_type)
    parser.add_argument("--edges-per-relation", type=int, default=default.edges_per_relation)
    parser.add_argument("--repeats", type=int, default=default.timing.repeats)
    parser.add_argument("--warmup", type=int, default=default.timing.warmup)
    parser.add_argument("--threads", type=int, default=default.timing.threads)
    parser.add_argument("--device", default=default.timing.device)
    parser.add_argument("--no-memory", action="store_true", help="skip the per-model peak RSS processes")
    parser.add_argument("--json", help="write the rows here")
    args = parser.parse_args(argv)
    timing = dataclasses.replace(default.timing, repeats=args.repeats, warmup=args.warmup, threads=args.threads,
                                 device=args.device)
    job = HeteroJob(etypes=tuple(args.etypes), batch_size=args.batch_size, nodes_per_type=args.nodes_per_type,
                    edges_per_relation=args.edges_per_relation, memory=not args.no_memory, timing=timing)
    run_benchmark(job, json_path=args.json)


if __name__ == "__main__":
    main()
