#!/usr/bin/env python
"""An exported TorchScript model on a CUDA machine that has a newer torch and no DGL (docs/export.md, "GPU").

Two steps, on two machines:

    # here (the project's venv: dgl 2.1.0, torch 2.2.1): export preset models with random weights, and save
    # pre-built batches with the outputs of our model (model.eval() on DGL, CPU) beside them
    python benchmarks/export_gpu.py prepare --out gpu_check --presets mnist zinc pattern cluster --batch-sizes 16 64 256

    # there (plain torch with CUDA, no dgl, no geaet_dgl): parity on CPU and CUDA, and inference graphs/s
    python benchmarks/export_gpu.py run gpu_check --out result.json

``run`` imports torch and the standard library only, so it is the test that the file needs nothing else.
"""
import argparse
import json
import os
import statistics
import sys
import time


def prepare(a) -> None:
    import _common  # noqa: F401  (sys.path)
    import torch

    from geaet_lab.benchmarking.inputs import check_supported, prebuilt_batches
    from geaet_dgl.config.presets import get_preset
    from geaet_dgl.export import ExportedGEAET
    from geaet_dgl.export.writer import inputs_of_batch, model_input_widths, torchscript_bytes
    from geaet_dgl.models import build_model

    os.makedirs(a.out, exist_ok=True)
    manifest = {"torch": torch.__version__, "presets": {}}
    for preset in a.presets:
        key = check_supported(preset)
        torch.manual_seed(a.seed)
        model = build_model(get_preset(key).model).eval()
        widths = model_input_widths(get_preset(key).model)
        with open(os.path.join(a.out, f"{key}.pt"), "wb") as handle:
            handle.write(torchscript_bytes(ExportedGEAET(model).eval(), {"input_widths": widths}))
        entry = {}
        for batch_size in a.batch_sizes:
            batches = [graph for graph, _ in prebuilt_batches(key, batch_size, a.batches, torch.device("cpu"),
                                                               seed=a.seed)]
            with torch.no_grad():
                cases = [{"inputs": list(inputs_of_batch(graph, widths)), "ours": model(graph)} for graph in batches]
            name = f"{key}_b{batch_size}.pt"
            torch.save(cases, os.path.join(a.out, name))
            entry[str(batch_size)] = {"file": name, "graphs": batch_size * len(batches),
                                      "nodes": sum(graph.num_nodes() for graph in batches)}
        manifest["presets"][key] = entry
        print(f"{key}: exported, batches {a.batch_sizes}")
    with open(os.path.join(a.out, "manifest.json"), "w") as handle:
        json.dump(manifest, handle, indent=1)


def _time_rate(model, cases, device, repeats: int) -> float:
    """Median graphs/s over ``repeats`` passes of every case (inputs already on ``device``)."""
    import torch

    rates = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        graphs = 0
        for inputs in cases:
            model(*inputs)
            graphs += int(inputs[3].numel())
        if device.type == "cuda":
            torch.cuda.synchronize()
        rates.append(graphs / (time.perf_counter() - start))
    return statistics.median(rates)


def run(a) -> None:
    import torch

    assert "dgl" not in sys.modules and "geaet_dgl" not in sys.modules
    with open(os.path.join(a.folder, "manifest.json")) as handle:
        manifest = json.load(handle)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "prepared_with": manifest["torch"],
              "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
              "dgl_importable": _importable("dgl"), "geaet_dgl_importable": _importable("geaet_dgl"), "rows": []}
    torch.set_grad_enabled(False)
    for key, entry in manifest["presets"].items():
        for device in devices:
            model = torch.jit.load(os.path.join(a.folder, f"{key}.pt"), map_location=device).eval()
            for batch_size, info in entry.items():
                cases = torch.load(os.path.join(a.folder, info["file"]))
                inputs = [[t.to(device) for t in case["inputs"]] for case in cases]
                worst = 0.0
                for case, args in zip(cases, inputs):
                    got = model(*args).cpu()
                    worst = max(worst, float((got - case["ours"]).abs().max()))
                rate = _time_rate(model, inputs, device, a.repeats)
                row = {"preset": key, "device": device.type, "batch": int(batch_size),
                       "max_abs_diff_vs_ours_cpu": worst, "graphs_per_s": round(rate, 1)}
                result["rows"].append(row)
                print(json.dumps(row), flush=True)
    with open(a.out, "w") as handle:
        json.dump(result, handle, indent=1)


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="step", required=True)
    q = sub.add_parser("prepare", help="export and save batches with our outputs (needs geaet_dgl)")
    q.add_argument("--out", required=True)
    q.add_argument("--presets", nargs="+", default=["mnist", "zinc", "pattern", "cluster"])
    q.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 256])
    q.add_argument("--batches", type=int, default=2, help="pre-built batches per batch size")
    q.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run", help="parity and graphs/s with plain torch (CPU, and CUDA where present)")
    r.add_argument("folder")
    r.add_argument("--out", required=True)
    r.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    prepare(a) if a.step == "prepare" else run(a)


if __name__ == "__main__":
    main()
