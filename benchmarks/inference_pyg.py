#!/usr/bin/env python
"""Inference only: the reference, our model and our folded inference model, side by side.

The three run in turn on the same pre-built batches and weights in one process (rotating order,
so machine drift hits all alike); prints medians of graphs/s, the ratios to the reference (also
the median of per-round ratios, "paired") and folded/unfolded, and the output differences.
Needs the reference's dependencies (see docs/performance.md):

    /work/refenv/bin/python benchmarks/inference_pyg.py ../GEAET --batch-sizes 16 128 --repeats 15
"""
import argparse
import statistics
import sys
import time

import _common  # noqa: F401  (sys.path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ref_dir", metavar="REF_DIR", help="checkout of icm1018/GEAET")
    p.add_argument("--preset", default="mnist", help="mnist, cifar10, pattern or peptides-struct")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 128])
    p.add_argument("--repeats", type=int, default=15)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    import torch

    from geaet_lab.benchmarking.against_pyg import reference_forward
    from geaet_lab.benchmarking.inputs import check_supported, prebuilt_batches
    from geaet_lab.benchmarking.parity import paired_models
    from geaet_lab.interop.pyg_export import to_pyg_batch
    from geaet_lab.benchmarking.timing import set_threads
    from geaet_dgl.inference import fold_for_inference

    key = check_supported(a.preset)
    set_threads(a.threads)
    reference, ours = paired_models(a.ref_dir, key, seed=a.seed)
    reference.eval(), ours.eval()
    folded = fold_for_inference(ours)
    for batch_size in a.batch_sizes:
        batches = prebuilt_batches(key, batch_size, 2, torch.device("cpu"), seed=a.seed)
        ref_batches = [(to_pyg_batch(g, y), y) for g, y in batches]
        steps = {"ref": lambda i: reference_forward(reference, ref_batches[i]),
                 "unfolded": lambda i: ours(batches[i][0]), "folded": lambda i: folded(batches[i][0])}
        names = list(steps)
        rates = {name: [] for name in names}
        with torch.no_grad():
            graph = batches[0][0]
            fold_diff = float((folded(graph) - ours(graph)).abs().max())
            ref_diff = float((ours(graph) - reference_forward(reference, ref_batches[0])[0]).abs().max())
            for i in range(2):  # warm-up
                for name in names:
                    steps[name](i)
            for r in range(a.repeats):
                for name in names[r % 3:] + names[:r % 3]:
                    start = time.perf_counter()
                    steps[name](r % 2)
                    rates[name].append(batches[r % 2][0].batch_size / (time.perf_counter() - start))
        med = {name: statistics.median(v) for name, v in rates.items()}
        paired = {name: statistics.median(x / y for x, y in zip(rates[name], rates["ref"])) for name in names[1:]}
        print(f"batch {batch_size}: graphs/s ref {med['ref']:.1f}, unfolded {med['unfolded']:.1f}, folded "
              f"{med['folded']:.1f}; vs ref: unfolded {med['unfolded'] / med['ref']:.2f}x (paired "
              f"{paired['unfolded']:.2f}), folded {med['folded'] / med['ref']:.2f}x (paired {paired['folded']:.2f}); "
              f"folded/unfolded {med['folded'] / med['unfolded']:.2f}x; max |diff| folded-unfolded {fold_diff:.2g}, "
              f"unfolded-ref {ref_diff:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
