"""Run the reference's own ``main.py`` for one seed, and read back its per-epoch statistics.

The reference (icm1018/GEAET, GraphGPS lineage) is started as a subprocess from
the user's checkout with the user's Python::

    PYTHON -c BOOTSTRAP REF_DIR/main.py --cfg REF_DIR/configs/GEAET/mnist.yaml --repeat 1 \\
        seed 0 out_dir RUN/out dataset.dir DIR/pyg optim.max_epoch 3 ...

(``BOOTSTRAP`` only hides the ``outdated`` package, whose update check, started
by ``import ogb``, can hang without network, then runs ``main.py`` as
``__main__``.) Its results go under ``out_dir/<config name>/<seed>/``:
``{train,val,test}/stats.json`` (one JSON object per epoch: ``epoch`` from 0,
``loss``, the metric, e.g. ``accuracy``, ``time_epoch`` in seconds, ``lr``,
``params``), ``ckpt/<epoch>.ckpt`` and ``logging.log``.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from geaet_dgl.atomic import atomic_write
from geaet_dgl.errors import GeaetError

PathLike = Union[str, os.PathLike]

#: Our metric name -> the key of the reference's stats.json.
REFERENCE_METRIC_KEYS = {"accuracy": "accuracy"}
COMMAND_FILE = "command.json"
LOG_FILE = "main.log"
SPLITS = ("train", "val", "test")

BOOTSTRAP = ("import runpy, sys; sys.modules['outdated'] = None; main = sys.argv[1]; "
             "sys.path.insert(0, __import__('os').path.dirname(main)); sys.argv = sys.argv[1:]; "
             "runpy.run_path(main, run_name='__main__')")


class CompareError(GeaetError, RuntimeError):
    """The comparison cannot go on: the reference is missing or failed, or its results cannot be read."""


@dataclass(frozen=True)
class Budget:
    """What both implementations get: epochs, batch size and the optimiser's settings.

    ``clip_grad_norm`` None turns clipping off.
    """

    epochs: int
    batch_size: int
    lr: float
    weight_decay: float
    warmup_epochs: int
    clip_grad_norm: Optional[float]

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)


def reference_overrides(budget: Budget, seed: int, out_dir: PathLike, dataset_dir: PathLike, device: str = "cpu",
                        threads: int = 1) -> List[str]:
    """The ``KEY VALUE`` pairs appended to ``main.py``'s command line (graphgym's ``opts``).

    Training budget, seed, where results and data go, the device, and one
    checkpoint, written after the last epoch (``train.ckpt_period`` = epochs).
    """
    pairs = {
        "seed": seed,
        "out_dir": os.path.abspath(out_dir),
        "dataset.dir": os.path.abspath(dataset_dir),
        "accelerator": "cuda:0" if device == "cuda" else "cpu",
        "num_threads": threads,
        "num_workers": 0,
        "wandb.use": False,
        "optim.max_epoch": budget.epochs,
        "optim.num_warmup_epochs": budget.warmup_epochs,
        "optim.base_lr": budget.lr,
        "optim.weight_decay": budget.weight_decay,
        "optim.clip_grad_norm": budget.clip_grad_norm is not None,
        "optim.clip_grad_norm_value": budget.clip_grad_norm if budget.clip_grad_norm is not None else 1.0,
        "train.batch_size": budget.batch_size,
        "train.enable_ckpt": True,
        "train.ckpt_period": budget.epochs,
        "train.auto_resume": False,
    }
    return [str(item) for key, value in pairs.items() for item in (key, value)]


def reference_command(python: PathLike, ref_dir: PathLike, config_file: str, overrides: Sequence[str]) -> List[str]:
    """The full command line that runs the reference's ``main.py`` for one seed."""
    ref_dir = os.path.abspath(ref_dir)
    return [str(python), "-c", BOOTSTRAP, os.path.join(ref_dir, "main.py"), "--cfg",
            os.path.join(ref_dir, config_file), "--repeat", "1", *overrides]


def reference_run_dir(out_dir: PathLike, config_file: str, seed: int) -> Path:
    """Where ``main.py`` puts one seed's results: ``out_dir/<config file name>/<seed>``."""
    return Path(out_dir) / Path(config_file).stem / str(seed)


def read_stats(path: PathLike) -> List[Dict[str, Any]]:
    """The JSON objects of a graphgym ``stats.json`` (one per line), the last one of each epoch, by epoch."""
    by_epoch: Dict[int, Dict[str, Any]] = {}
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise CompareError(f"{path} line {number} is not JSON ({exc}); rerun the reference") from None
            by_epoch[int(row["epoch"])] = row
    return [by_epoch[e] for e in sorted(by_epoch)]


def epoch_rows(run_dir: PathLike, metric: str) -> List[Dict[str, Any]]:
    """Per-epoch rows of a reference run, in our ``metrics.jsonl`` vocabulary.

    Returns one dict per epoch with ``epoch`` (from 1, as ours), ``lr``,
    ``{train,val,test}_loss``, ``{train,val,test}_metric``, ``seconds``
    (train + val + test ``time_epoch``) and ``train_seconds``.
    """
    key = REFERENCE_METRIC_KEYS.get(metric, metric)
    stats = {split: read_stats(Path(run_dir) / split / "stats.json") for split in SPLITS}
    epochs = [row["epoch"] for row in stats["train"]]
    for split in ("val", "test"):
        if [row["epoch"] for row in stats[split]] != epochs:
            raise CompareError(f"{run_dir}: {split}/stats.json has other epochs than train/stats.json; "
                                    "rerun the reference")
    rows = []
    for i, epoch in enumerate(epochs):
        row: Dict[str, Any] = {"epoch": epoch + 1, "lr": stats["train"][i].get("lr")}
        for split in SPLITS:
            entry = stats[split][i]
            if key not in entry:
                raise CompareError(f"{run_dir}/{split}/stats.json has no {key!r} (keys: {', '.join(entry)})")
            row[f"{split}_loss"] = float(entry["loss"])
            row[f"{split}_metric"] = float(entry[key])
        row["seconds"] = sum(float(stats[split][i]["time_epoch"]) for split in SPLITS)
        row["train_seconds"] = float(stats["train"][i]["time_epoch"])
        row["params"] = stats["train"][i].get("params")
        rows.append(row)
    return rows


def finished(run_dir: PathLike, epochs: int) -> bool:
    """Whether the run wrote all ``epochs`` epochs of every split and its last checkpoint."""
    run_dir = Path(run_dir)
    try:
        done = all(len(read_stats(run_dir / split / "stats.json")) == epochs for split in SPLITS)
    except (OSError, CompareError, KeyError, ValueError):
        return False
    return done and (run_dir / "ckpt" / f"{epochs - 1}.ckpt").is_file()


def run_reference(command: List[str], workdir: PathLike, env: Optional[Dict[str, str]] = None) -> None:
    """Run ``command`` in ``workdir`` (created), output to ``workdir/main.log``; raise if it fails."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    with atomic_write(workdir / COMMAND_FILE, "w") as handle:
        json.dump(command, handle, indent=1)
    log_path = workdir / LOG_FILE
    with open(log_path, "w") as log:
        code = subprocess.call(command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT,
                               env=env if env is not None else os.environ.copy(), stdin=subprocess.DEVNULL)
    if code != 0:
        raise CompareError(f"the reference's Python exited with code {code}: {last_line(log_path)} "
                                f"(full output in {log_path})")


def last_line(path: PathLike) -> str:
    """The last non-empty line of a text file (for one-line errors)."""
    try:
        lines = [line.strip() for line in Path(path).read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no output"
    return lines[-1] if lines else "no output"


def saved_command(workdir: PathLike) -> Optional[List[str]]:
    """The command a previous run in ``workdir`` was started with, if any."""
    path = Path(workdir) / COMMAND_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def python_env(threads: int) -> Dict[str, str]:
    """Our environment with the thread counts of the BLAS / OpenMP pools set to ``threads``."""
    env = os.environ.copy()
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = str(threads)
    return env
