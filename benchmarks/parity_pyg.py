#!/usr/bin/env python
"""Same weights in our model and the PyG reference, both in float64: max |difference| of outputs and gradients.

Exits 1 when the largest difference (outputs and gradient entries absolute, each parameter's gradient also
relative to its norm) is >= the tolerance (default 1e-5).

    /work/refenv/bin/python benchmarks/parity_pyg.py /work/ref/GEAET --preset mnist --batch-size 16
"""
import argparse
import sys

import _common  # noqa: F401  (sys.path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ref_dir", metavar="REF_DIR", help="checkout of icm1018/GEAET")
    p.add_argument("--preset", default="mnist", help="mnist, cifar10 or pattern")
    p.add_argument("--batch-size", type=int, default=16, help="graphs in the test batch")
    p.add_argument("--seed", type=int, default=0, help="weights and graphs")
    p.add_argument("--tolerance", type=float, default=1e-5)
    a = p.parse_args(argv)
    import torch

    from geaet_lab.benchmarking.inputs import prebuilt_batches
    from geaet_lab.benchmarking.parity import check_parity

    graph, labels = prebuilt_batches(a.preset, a.batch_size, 1, torch.device("cpu"), seed=a.seed)[0]
    report = check_parity(a.ref_dir, a.preset, graph, labels, seed=a.seed)
    print(f"preset {a.preset}: {a.batch_size} graphs, {graph.num_nodes()} nodes, {graph.num_edges()} edges")
    print(f"parameters: ours {report.params_ours:,}, reference {report.params_reference:,}")
    print(f"max |diff| eval outputs : {report.eval_output_max_abs_diff:.3e}")
    print(f"max |diff| train outputs: {report.train_output_max_abs_diff:.3e} (dropout off)")
    print(f"max |diff| gradients    : {report.grad_max_abs_diff:.3e} (worst: {report.worst_grad_param})")
    print(f"max relative gradient   : {report.grad_max_rel_diff:.3e} (worst: {report.worst_rel_grad_param})")
    same_size = report.params_ours == report.params_reference
    ok = report.checked_diff < a.tolerance and same_size
    verdict = "PASS" if ok else "FAIL"
    print(f"{verdict} ({report.dtype}): max {report.checked_diff:.3e} "
          f"{'<' if report.checked_diff < a.tolerance else '>='} {a.tolerance:g}"
          + ("" if same_size else "; parameter counts differ"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
