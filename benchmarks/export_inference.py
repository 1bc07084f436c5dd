#!/usr/bin/env python
"""Inference of an exported model beside ours: the folded eval model on DGL, TorchScript, onnxruntime.

The three run in turn on the same pre-built batches of a preset's synthetic graphs and the same (random)
weights, in one process (rotating order, so machine drift hits all alike); prints the median graphs/s of each
per batch size and the largest output difference from our model (docs/export.md):

    python benchmarks/export_inference.py --preset mnist --batch-sizes 16 64 128 --repeats 9 --threads 1
"""
import argparse
import io
import statistics
import time

import _common  # noqa: F401  (sys.path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="mnist", help="a preset without an input transform (mnist, cifar10, zinc, "
                                                     "pattern, cluster, peptides-struct, ...)")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 128])
    p.add_argument("--batches", type=int, default=4, help="pre-built batches per batch size, cycled")
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)

    import torch

    from geaet_lab.benchmarking.inputs import check_supported, prebuilt_batches
    from geaet_lab.benchmarking.timing import set_threads
    from geaet_dgl.config.presets import get_preset
    from geaet_dgl.export import ExportedGEAET
    from geaet_dgl.export.writer import (INPUT_NAMES, inputs_of_batch, model_input_widths, onnx_bytes,
                                         torchscript_bytes)
    from geaet_dgl.inference import fold_for_inference
    from geaet_dgl.models import build_model

    key = check_supported(a.preset)
    set_threads(a.threads)
    preset = get_preset(key)
    torch.manual_seed(a.seed)
    model = build_model(preset.model).eval()
    folded = fold_for_inference(model)
    exported = ExportedGEAET(model).eval()
    widths = model_input_widths(preset.model)
    metadata = {"input_widths": widths}
    scripted = torch.jit.load(io.BytesIO(torchscript_bytes(exported, metadata)))
    session, names = None, []
    try:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = a.threads
        session = ort.InferenceSession(onnx_bytes(exported, metadata), options, providers=["CPUExecutionProvider"])
        names = [item.name for item in session.get_inputs()]
    except ImportError:
        print("onnxruntime not installed: TorchScript only")

    print(f"preset {key}, {a.threads} thread(s), median of {a.repeats} rounds; graphs/s")
    print(f"{'batch':>6} {'ours (folded, DGL)':>20} {'TorchScript':>12} {'onnxruntime':>12} {'max |diff|':>11}")
    print("(max |diff|: of the exported outputs from model.eval() on DGL)")
    for batch_size in a.batch_sizes:
        batches = [graph for graph, _ in prebuilt_batches(key, batch_size, a.batches, torch.device("cpu"),
                                                           seed=a.seed)]
        inputs = [inputs_of_batch(graph, widths) for graph in batches]
        feeds = [{name: t.numpy() for name, t in zip(INPUT_NAMES, args) if name in names} for args in inputs] \
            if session is not None else []
        runners = {"ours": lambda i: folded(batches[i]), "torchscript": lambda i: scripted(*inputs[i])}
        if session is not None:
            runners["onnx"] = lambda i: session.run(None, feeds[i])[0]
        worst = {name: 0.0 for name in runners}
        with torch.no_grad():
            for i in range(len(batches)):  # warm-up, and the outputs compared
                want = model(batches[i])
                for name in runners:
                    got = torch.as_tensor(runners[name](i))
                    worst[name] = max(worst[name], float((got - want).abs().max()))
            times = {name: [] for name in runners}
            order = list(runners)
            for round_ in range(a.repeats):
                for name in order[round_ % len(order):] + order[:round_ % len(order)]:
                    start = time.perf_counter()
                    for i in range(len(batches)):
                        runners[name](i)
                    times[name].append(len(batches) * batch_size / (time.perf_counter() - start))
        rate = {name: statistics.median(values) for name, values in times.items()}
        onnx = f"{rate['onnx']:12.0f}" if "onnx" in rate else f"{'-':>12}"
        largest = max(value for name, value in worst.items() if name != "ours")
        print(f"{batch_size:>6} {rate['ours']:>20.0f} {rate['torchscript']:>12.0f} {onnx} {largest:>11.1e}")


if __name__ == "__main__":
    main()
