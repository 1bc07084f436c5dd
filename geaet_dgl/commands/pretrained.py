"""``train --config`` on a GraphGPS file with a pretrained folder (``pretrained.dir``), as GraphGPS's main runs it.

* ``train.mode: inference-only`` (its ``*-inference.yaml``): nothing is trained; the folder's checkpoint
  becomes ``OUT/best.pt`` (``import-reference``) and the validation and test splits are scored (``eval``).
* ``train.mode: custom``: the folder's model is fine-tuned; its checkpoint is imported to
  ``RUN_DIR-pretrained/best.pt`` (head reset as the file says), which starts the run.
"""
from __future__ import annotations

import os
from typing import Any

from .train_options import TrainOptions


def inference_only_file(path: str) -> bool:
    """Whether the YAML at ``path`` says ``train.mode: inference-only`` (read as text; the file itself is checked
    by the normal path, which reports a file it cannot read)."""
    import yaml

    try:
        with open(path) as handle:
            tree = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # reported by the normal path
    train = tree.get("train") if isinstance(tree, dict) else None
    return isinstance(train, dict) and train.get("mode") == "inference-only"


def evaluate_pretrained_folder(opts: TrainOptions) -> None:
    """Import the pretrained folder of ``opts.config`` into ``opts.out`` (default ``runs/<file stem>``) and print
    its validation and test scores."""
    from geaet_dgl.interop.reference_checkpoint import import_reference
    from geaet_dgl.scoring import evaluate_checkpoint

    stem = os.path.splitext(os.path.basename(opts.config))[0]
    run_dir = opts.out or os.path.join("runs", stem)
    result = import_reference(None, opts.config, run_dir, opts.data, overwrite=opts.overwrite,
                              overrides=opts.overrides())
    print(f"train.mode=inference-only: imported the pretrained model ({result['params']:,} parameters, reference "
          f"epoch {result['epoch']}) into {result['checkpoint']}; scoring it")
    for split in ("val", "test"):
        scored = evaluate_checkpoint(result["checkpoint"], split, progress=opts.progress, device=opts.device or "cpu",
                                     threads=opts.threads)
        print(f"{split}: {scored['metric_name']} {scored['metric']:.4f} (loss {scored['loss']:.4f})")


def fine_tune_from_pretrained_folder(opts: TrainOptions, run: Any, run_dir: str) -> None:
    """A reference file with ``pretrained.dir`` (``train.mode: custom``): GraphGPS fine-tunes the folder's model.
    Its checkpoint is imported to ``RUN_DIR-pretrained/best.pt`` (head reset as the file says), which starts the
    run (``train.pretrained``; ``pretrained.freeze_main`` trains the head only). Anything else: nothing to do."""
    if opts.config is None or run.train.pretrained:
        return
    from geaet_dgl.interop.reference_yaml import read_reference_config

    if read_reference_config(opts.config).pretrained is None:
        return
    from geaet_dgl.interop.reference_checkpoint import import_reference

    result = import_reference(None, opts.config, f"{run_dir.rstrip(os.sep)}-pretrained", opts.data,
                              overwrite=opts.overwrite, overrides=opts.overrides())
    run.train.pretrained = os.path.abspath(result["checkpoint"])
    head = "a fresh prediction head" if result["reset_head"] else "its prediction head"
    print(f"fine-tuning the pretrained model (reference epoch {result['epoch']}, {head}"
          f"{', the rest frozen' if run.train.freeze_main else ''}): {run.train.pretrained}")
