#!/usr/bin/env python
"""Our model vs the PyG reference: parity check, then interleaved timing on the same batches.

Needs an environment with both DGL and the reference's dependencies (see docs/performance.md):

    /work/refenv/bin/python benchmarks/against_pyg.py /work/ref/GEAET --preset mnist --batch-sizes 16 64 128
"""
import argparse
import sys

import _common  # noqa: F401  (sys.path)
from _common import add_common


def main(argv=None):
    p = add_common(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    p.add_argument("ref_dir", metavar="REF_DIR", help="checkout of icm1018/GEAET")
    p.add_argument("--preset", default="mnist", help="mnist, cifar10 or pattern")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 128])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--num-batches", type=int, default=2)
    p.add_argument("--force", action="store_true", help="time even if parity fails (> 1e-5)")
    a = p.parse_args(argv)
    from geaet_dgl.benchmarking import run_benchmark
    from geaet_dgl.benchmarking.against_pyg import ParityError

    try:
        run_benchmark(preset=a.preset, batch_sizes=a.batch_sizes, device=a.device, threads=a.threads,
                      repeats=a.repeats, warmup=a.warmup, num_batches=a.num_batches, seed=a.seed,
                      against_pyg=a.ref_dir, force=a.force, json_path=a.json_path, plot_path=a.plot_path,
                      allocator=a.allocator)
    except ParityError as exc:
        print(f"refusing to time: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
