#!/usr/bin/env python
"""Training / inference throughput (graphs/s) and peak memory of a preset's model on synthetic graphs.

    python benchmarks/throughput.py --preset mnist --batch-sizes 16 64 128 --json out.json --plot out.png
    python benchmarks/throughput.py --epoch --num-graphs 512 --workers 2    # also a whole epoch via the loader
"""
import argparse

import _common  # noqa: F401  (sys.path)
from _common import add_common


def main(argv=None):
    p = add_common(argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter))
    p.add_argument("--preset", default="mnist", help="mnist, cifar10 or pattern")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 128])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--num-batches", type=int, default=2, help="distinct pre-built batches cycled over")
    p.add_argument("--epoch", action="store_true", help="also time one epoch through make_loader")
    p.add_argument("--num-graphs", type=int, default=512, help="graphs in the epoch dataset")
    p.add_argument("--epoch-batch-size", type=int, default=None, help="default: the preset's batch size")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers for the epoch")
    p.add_argument("--no-isolate", action="store_true", help="measure in this process (no per-run peak RSS)")
    a = p.parse_args(argv)
    from geaet_dgl.benchmarking import run_benchmark

    run_benchmark(preset=a.preset, batch_sizes=a.batch_sizes, device=a.device, threads=a.threads, repeats=a.repeats,
                  warmup=a.warmup, num_batches=a.num_batches, epoch=a.epoch, num_graphs=a.num_graphs,
                  epoch_batch_size=a.epoch_batch_size, workers=a.workers, seed=a.seed, isolate=not a.no_isolate,
                  json_path=a.json_path, plot_path=a.plot_path,
                  allocator=a.allocator)


if __name__ == "__main__":
    main()
