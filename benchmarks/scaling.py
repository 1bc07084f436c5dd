#!/usr/bin/env python
"""Time and peak memory of GEANet, the GEAET layer (no attention), Performer and full attention vs graph size.

Single random 8-NN graphs of 1e3 .. 1e6 nodes; prints the fitted exponent of
time against nodes+edges (about 1 means linear).

    python benchmarks/scaling.py --max-nodes 100000 --json scaling.json --plot scaling.png
"""
import argparse

import _common  # noqa: F401  (sys.path)
from _common import add_common


def main(argv=None):
    p = add_common(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    p.add_argument("--max-nodes", type=float, default=1e6, help="largest graph (default 1e6)")
    p.add_argument("--sizes", type=float, nargs="+", default=[1e3, 1e4, 1e5, 1e6], help="node counts")
    p.add_argument("--components", nargs="+", default=["geanet", "geaet_layer", "performer", "transformer"],
                   choices=["geanet", "geaet_layer", "performer", "transformer"])
    p.add_argument("--repeats", type=int, default=3, help="at least this many timed calls per phase")
    p.add_argument("--min-time", type=float, default=1.0,
                   help="keep timing small graphs until this many seconds are timed (default 1)")
    p.add_argument("--no-isolate", action="store_true", help="measure in this process (no per-size peak RSS)")
    a = p.parse_args(argv)
    from geaet_dgl.benchmarking import run_benchmark

    run_benchmark(batch_sizes=(), scaling=True, max_nodes=int(a.max_nodes), scaling_sizes=[int(s) for s in a.sizes],
                  scaling_components=a.components, scaling_repeats=a.repeats, scaling_min_time_s=a.min_time,
                  device=a.device, threads=a.threads,
                  seed=a.seed, isolate=not a.no_isolate, json_path=a.json_path, plot_path=a.plot_path,
                  allocator=a.allocator)


if __name__ == "__main__":
    main()
