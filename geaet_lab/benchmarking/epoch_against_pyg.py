"""Whole epochs of ours and the PyG reference on the same graphs, each through its own data path.

What ``geaet-dgl benchmark --epoch --against-pyg REF_DIR`` runs.

* **Ours** (:class:`OurEpochs`): the trainer's own training pass
  (:class:`~geaet_dgl.training.trainer.Trainer`: ``make_epoch_loader`` over the
  :class:`~geaet_dgl.data.GraphDataset`, our collate, forward, loss, finite check,
  backward, FlatAdamW step with clipping, metric accumulation) and
  :func:`~geaet_dgl.training.evaluation.evaluate` on the evaluation split.
* **The reference** (:class:`ReferenceEpochs`): its own ``train_epoch`` and
  ``eval_epoch`` (``GEAET/train/custom_train.py``) with its ``CustomLogger``
  (metrics written at the end of each pass, as its ``main.py`` does), over a
  PyG ``DataLoader`` of ``Data`` objects that carry the same features, PE and labels,
  converted once from our graphs before anything is timed.

Both models start from the same weights (:func:`.parity.paired_models`), after a
parity check on one batch. Then ``repeats`` rounds: in each, every side runs its
phases (training pass over the shuffled training split, evaluation pass, and
the bare loader iteration over one epoch: the data path alone); the side that
goes first alternates round by round, so machine drift hits both. Our rounds
also time our step benchmark (:func:`.throughput.train_step_fn` on two
pre-built batches of the same split, as ``benchmark`` does), to compare the
training pass with it in the same process.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from geaet_dgl.data import GraphDataset, collate_for
from geaet_dgl.config.presets import get_preset
from .inputs import UnsupportedPreset, check_supported, synthetic_graphs
from .subject import Subject, as_subject
from .jobs import EpochJob, Reference, Timing
from .throughput import make_clipper, make_optimizer, train_step_fn
from .timing import environment, set_threads, time_call

#: datasets the comparison can read: synthetic graphs shaped like the preset's, or the real files
EPOCH_DATASETS = ("synthetic", "mnist", "cifar10")

#: a phase's work: returns the graphs it processed, or (graphs, seconds) when it times itself
Phase = Callable[[], "int | Tuple[int, float]"]


@dataclass
class EpochInputs:
    """The graphs both sides train and evaluate on."""

    train: GraphDataset
    evaluation: GraphDataset
    source: str


def epoch_inputs(preset: str, dataset: str = "synthetic", data_dir: Optional[str] = None, num_graphs: int = 512,
                 limit_train: Optional[int] = None, limit_val: Optional[int] = None, seed: int = 0) -> EpochInputs:
    """Training and evaluation graphs for ``preset``.

    ``dataset='synthetic'``: ``limit_train`` (default ``num_graphs``) graphs shaped
    like the preset's dataset (:func:`.inputs.synthetic_graphs`, ``seed``) and
    ``limit_val`` (default a quarter of them) from seed ``seed + 1``.
    ``'mnist'`` / ``'cifar10'``: the first ``limit_train`` / ``limit_val`` graphs of
    the real training / validation splits in ``data_dir`` (all if None), with the
    encodings the preset's model reads (``load_splits``, validated).
    """
    key = check_supported(preset)
    if dataset not in EPOCH_DATASETS:
        raise ValueError(f"dataset={dataset!r} is not one of {', '.join(EPOCH_DATASETS)}")
    if dataset == "synthetic":
        n_train = int(limit_train or num_graphs)
        n_val = int(limit_val or max(1, n_train // 4))
        return EpochInputs(synthetic_graphs(key, n_train, seed=seed), synthetic_graphs(key, n_val, seed=seed + 1),
                           f"synthetic {key}-shaped graphs (seeds {seed}, {seed + 1})")
    from geaet_dgl.data import DataError
    from geaet_dgl.config import DataOptions
    from geaet_dgl.data.model_fit import check_data_fits
    from geaet_dgl.data.run_splits import load_splits

    if dataset != key:
        raise UnsupportedPreset(f"dataset {dataset!r} needs its own preset, --preset {dataset} (got {preset!r})")
    if data_dir is None:
        raise DataError(f"dataset {dataset!r} needs data_dir (its processed files); pass --data-dir DIR")
    options = DataOptions(dataset=dataset, data_dir=str(data_dir), limit_train=limit_train, limit_val=limit_val,
                          limit_test=1)
    model = get_preset(key).model
    splits = load_splits(options, model, progress=False)
    check_data_fits(model, splits)
    return EpochInputs(splits.train, splits.val, f"{splits.name} from {data_dir} ({splits.source})")


class OurEpochs:
    """Our side: a :class:`~geaet_dgl.training.trainer.Trainer` on ``inputs``, starting from ``state_dict``.

    Phases per round: ``train`` (the trainer's training pass over epoch ``round``),
    ``eval`` (:func:`evaluate` on the evaluation split), ``load`` (the same
    epoch's loader iterated alone: batch order, collate) and ``step`` (our step
    benchmark: ``step_repeats`` timed steps, by default as many as the epoch has
    batches but 2 to 6, over two pre-built batches after one untimed step; it
    times itself). ``overrides``: ``--set``-style changes of the
    preset (tests shrink the model with them).
    """

    name = "ours"

    def __init__(self, inputs: EpochInputs, preset: str, batch_size: int, state_dict=None, seed: int = 0,
                 workers: int = 0, step_repeats: Optional[int] = None,
                 overrides: Optional[Dict[str, object]] = None):
        from geaet_dgl.data import DatasetSplits
        from geaet_dgl.training.new_run import make_run_config
        from geaet_dgl.training.trainer import Trainer

        key = check_supported(preset)
        self.inputs, self.batch_size = inputs, int(batch_size)
        batches = -(-len(inputs.train) // self.batch_size)
        self.step_repeats = int(step_repeats) if step_repeats else max(2, min(6, batches))
        # Full learning rate from the first pass, as the reference side's constant schedule (the trainer's
        # first warm-up epoch would run at 1e-6 x lr: the same work, but a model that does not learn).
        settings = {"train.batch_size": int(batch_size), "train.seed": int(seed), "train.warmup_epochs": 0,
                    **(overrides or {})}
        run = make_run_config("synthetic", preset=key, overrides=settings, workers=workers)
        splits = DatasetSplits(inputs.train, inputs.evaluation, inputs.evaluation, run.model.out_feats, "benchmark")
        self._dir = tempfile.TemporaryDirectory(prefix="geaet-epoch-")
        self.trainer = Trainer(run, self._dir.name, splits, progress=False)
        if state_dict is not None:
            self.trainer.model.load_state_dict(state_dict)
        self.model = self.trainer.model
        collate = collate_for(inputs.train)
        count = min(len(inputs.train), self.batch_size)
        self.step_batches = [collate([inputs.train[j] for j in range(i * count, (i + 1) * count)])
                             for i in range(min(2, len(inputs.train) // count))]
        self._step = train_step_fn(self.model, self.trainer.optimizer, self.trainer.loss_fn)
        self.last: Dict[str, Dict[str, float]] = {}

    def train_pass(self, epoch: int) -> int:
        trainer = self.trainer
        trainer.epoch, trainer.step, trainer.progress_state = epoch, 0, None
        self.last["train"], graphs, _ = trainer.train_rest_of_epoch()  # the trainer's own loop, the pass alone
        return graphs

    def eval_pass(self) -> int:
        from geaet_dgl.training.evaluation import evaluate

        cfg = self.trainer.run.train
        self.last["eval"] = evaluate(self.model, self.inputs.evaluation, self.trainer.loss_fn, cfg.metric,
                                     self.batch_size, torch.device("cpu"))
        return len(self.inputs.evaluation)

    def load_pass(self, epoch: int) -> int:
        from geaet_dgl.training.batching import epoch_sampler, make_epoch_loader

        sampler = epoch_sampler(len(self.inputs.train), self.batch_size, shuffle=True,
                                seed=self.trainer.run.train.seed, epoch=epoch)
        loader = make_epoch_loader(self.inputs.train, collate_for(self.inputs.train), sampler,
                                   workers=self.trainer.run.workers)
        return sum(graph.batch_size for graph, _ in loader)

    def step_pass(self) -> Tuple[int, float]:
        self.model.train()
        self._step(self.step_batches[0])
        graphs, seconds = 0, 0.0
        for i in range(self.step_repeats):
            batch = self.step_batches[i % len(self.step_batches)]
            seconds += time_call(lambda: self._step(batch), torch.device("cpu"))
            graphs += batch[0].batch_size
        return graphs, seconds

    def warm_up(self) -> None:
        """Two untimed training steps and one evaluation forward (first-call costs out of the timing)."""
        for batch in self.step_batches[:2]:
            self._step(batch)
        self.model.eval()
        with torch.no_grad():
            self.model(self.step_batches[0][0])

    def phases(self, epoch: int) -> List[Tuple[str, Phase]]:
        return [("train", lambda: self.train_pass(epoch)), ("eval", self.eval_pass),
                ("load", lambda: self.load_pass(epoch)), ("step", self.step_pass)]


class ReferenceEpochs:
    """The reference's side: its ``train_epoch`` / ``eval_epoch`` and ``CustomLogger`` over PyG loaders.

    ``model`` is the reference network (:func:`.reference.load_reference_model`,
    which also set graphgym's global ``cfg`` from the preset's config file);
    ``train_items`` / ``eval_items`` are PyG ``Data`` lists
    (:func:`.reference.to_pyg_data_list`). Phases per round: ``train``,
    ``eval`` and ``load`` (its loader iterated alone).
    """

    name = "ref"

    def __init__(self, model: torch.nn.Module, train_items: list, eval_items: list, preset: str, batch_size: int,
                 seed: int = 0, workers: int = 0):
        import importlib

        from torch_geometric.graphgym.config import cfg
        from torch_geometric.graphgym.logger import infer_task
        from torch_geometric.loader import DataLoader

        custom_train = importlib.import_module("GEAET.train.custom_train")
        self._train_epoch, self._eval_epoch = custom_train.train_epoch, custom_train.eval_epoch
        self._logger_class = importlib.import_module("GEAET.logger").CustomLogger
        self._dir = tempfile.TemporaryDirectory(prefix="geaet-ref-epoch-")
        cfg.run_dir, cfg.params = self._dir.name, sum(p.numel() for p in model.parameters())
        cfg.num_workers, cfg.train.batch_size = workers, int(batch_size)
        self.cfg, self.task_type = cfg, infer_task()
        self.model = model
        key = check_supported(preset)
        self.optimizer = make_optimizer(model, key, reference=True)  # graphgym's adamW: torch.optim.AdamW
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda epoch: 1.0)
        self._clip = make_clipper(key, reference=True)
        self.train_items, self.eval_items = train_items, eval_items
        # graphgym's create_loader: shuffled training loader, ordered evaluation loader (pin_memory is moot on CPU)
        self.train_loader = DataLoader(train_items, batch_size=int(batch_size), shuffle=True, num_workers=workers,
                                       generator=torch.Generator().manual_seed(int(seed)),
                                       persistent_workers=workers > 0)
        self.eval_loader = DataLoader(eval_items, batch_size=int(batch_size), shuffle=False, num_workers=workers,
                                      persistent_workers=workers > 0)
        self.last: Dict[str, Dict[str, float]] = {}

    def _logger(self, name: str):
        return self._logger_class(name=name, task_type=self.task_type)

    def train_pass(self, epoch: int) -> int:
        logger = self._logger("train")
        self._train_epoch(logger, self.train_loader, self.model, self.optimizer, self.scheduler,
                          self.cfg.optim.batch_accumulation)
        self.last["train"] = logger.write_epoch(epoch)
        return len(self.train_items)

    def eval_pass(self, epoch: int = 0) -> int:
        logger = self._logger("val")
        self._eval_epoch(logger, self.eval_loader, self.model, split="val")
        self.last["eval"] = logger.write_epoch(epoch)
        return len(self.eval_items)

    def load_pass(self) -> int:
        return sum(int(batch.num_graphs) for batch in self.train_loader)

    def warm_up(self) -> None:
        """Two untimed training steps and one evaluation forward, as :meth:`OurEpochs.warm_up`."""
        from .against_pyg import reference_forward

        step = train_step_fn(self.model, self.optimizer, loss_function_for_reference(), forward=reference_forward,
                             clip=self._clip)
        batches = []
        for batch in self.train_loader:
            batches.append((batch, batch.y))
            if len(batches) == 2:
                break
        self.model.train()
        for batch in batches:
            step(batch)
        self.model.eval()
        with torch.no_grad():
            reference_forward(self.model, batches[0])

    def phases(self, epoch: int) -> List[Tuple[str, Phase]]:
        return [("train", lambda: self.train_pass(epoch)), ("eval", lambda: self.eval_pass(epoch)),
                ("load", self.load_pass)]


def loss_function_for_reference():
    """graphgym's ``compute_loss`` as ``f(pred, true)`` (the loss the reference's own loop uses)."""
    from torch_geometric.graphgym.loss import compute_loss

    return lambda pred, true: compute_loss(pred, true)[0]


def alternate(sides: Sequence, repeats: int, progress: Optional[Callable[[str], None]] = None
              ) -> Dict[str, Dict[str, Dict[str, List[float]]]]:
    """Run every side's phases ``repeats`` rounds, the first side alternating round by round.

    Each side has ``name`` and ``phases(round) -> [(phase, fn)]``; ``fn()``
    returns the graphs it processed (timed here by the wall clock) or
    ``(graphs, seconds)`` when it times itself.

    Returns ``{side: {phase: {"seconds": [...], "graphs": [...]}}}``, one entry per round.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    out: Dict[str, Dict[str, Dict[str, List[float]]]] = {side.name: {} for side in sides}
    for r in range(repeats):
        for side in (sides if r % 2 == 0 else list(sides)[::-1]):
            for phase, fn in side.phases(r):
                start = time.perf_counter()
                result = fn()
                elapsed = time.perf_counter() - start
                graphs, seconds = result if isinstance(result, tuple) else (result, elapsed)
                slot = out[side.name].setdefault(phase, {"seconds": [], "graphs": []})
                slot["seconds"].append(float(seconds))
                slot["graphs"].append(int(graphs))
            if progress:
                progress(f"  round {r + 1}/{repeats} {side.name}: " + ", ".join(
                    f"{phase} {slot['seconds'][-1]:.2f} s" for phase, slot in out[side.name].items()))
    return out


def summarize_rounds(times: Dict[str, Dict[str, Dict[str, List[float]]]], ours: str = "ours", ref: str = "ref"
                     ) -> Dict[str, object]:
    """Medians and ratios of :func:`alternate`'s rounds.

    Per side and phase: ``{prefix}{phase}_s`` (median seconds), ``{prefix}{phase}_graphs_per_s``
    (graphs / median seconds) and ``{prefix}{phase}_s_all``; ``prefix`` is ``""`` for ours, ``"ref_"``
    for the reference. ``epoch_s`` = median over rounds of train + eval seconds. Ratios ours over the
    reference in speed (reference seconds / ours): ``ratio_train``, ``ratio_eval``, ``ratio_epoch``
    (``ratio_*_paired``: the median of the per-round ratios). With a ``step`` phase:
    ``train_pass_over_step``, our training pass's graphs/s over our step benchmark's.
    """
    row: Dict[str, object] = {}
    for side, prefix in ((ours, ""), (ref, "ref_")):
        if side not in times:
            continue
        phases = times[side]
        for phase, slot in phases.items():
            median = statistics.median(slot["seconds"])
            graphs = statistics.median(slot["graphs"])
            row[f"{prefix}{phase}_s"] = median
            row[f"{prefix}{phase}_s_all"] = list(slot["seconds"])
            row[f"{prefix}{phase}_graphs"] = int(graphs)
            row[f"{prefix}{phase}_graphs_per_s"] = graphs / median if median > 0 else None
        if "train" in phases and "eval" in phases:
            epochs = [t + e for t, e in zip(phases["train"]["seconds"], phases["eval"]["seconds"])]
            row[f"{prefix}epoch_s"] = statistics.median(epochs)
            row[f"{prefix}epoch_s_all"] = epochs
        if "load" in phases and "train" in phases:
            row[f"{prefix}load_share_of_train"] = row[f"{prefix}load_s"] / row[f"{prefix}train_s"]
    if "step" in times.get(ours, {}) and row.get("train_graphs_per_s") and row.get("step_graphs_per_s"):
        row["train_pass_over_step"] = row["train_graphs_per_s"] / row["step_graphs_per_s"]
    if ref in times and ours in times:
        for phase in ("train", "eval", "epoch"):
            if f"{phase}_s" in row and f"ref_{phase}_s" in row:
                row[f"ratio_{phase}"] = row[f"ref_{phase}_s"] / row[f"{phase}_s"]
                row[f"ratio_{phase}_paired"] = statistics.median(
                    r / o for r, o in zip(row[f"ref_{phase}_s_all"], row[f"{phase}_s_all"]))
    return row


def compare_epochs(reference: Reference, subject: "Subject | str" = "mnist", batch_sizes: Sequence[int] = (16, 128),
                   epoch: Optional[EpochJob] = None, timing: Optional[Timing] = None,
                   progress: Optional[Callable[[str], None]] = None) -> Dict[str, object]:
    """Parity check, then whole epochs of ours and the reference alternated, at every batch size.

    ``epoch`` (default :class:`~.jobs.EpochJob`'s): the graphs (``dataset``, ``data_dir``, ``num_graphs``,
    ``limit_train``, ``limit_val``), the loader ``workers`` and the ``rounds``; ``timing`` (default 2
    threads): threads and seed; ``reference``: the checkout and ``force`` (time even when parity fails);
    ``subject``: a :class:`.subject.Subject` of a preset, or a preset name.

    Returns ``{'config', 'parity', 'parity_max_abs_diff', 'results': [row per batch size]}``; each
    row holds ``batch_size`` and :func:`summarize_rounds`'s keys, plus the last round's metrics of
    each side (``metrics`` / ``ref_metrics``: training and evaluation loss and accuracy, for a sanity
    check that both learn). Raises :class:`.against_pyg.ParityError` when the models differ by more
    than the tolerance (unless ``force``).
    """
    from .against_pyg import PARITY_TOLERANCE, check_parity_tolerance, parity_line
    from .parity import check_parity, paired_models
    from ..interop.pyg_export import to_pyg_data_list

    epoch = epoch or EpochJob()
    timing = timing or Timing(threads=2)
    ref_dir, force, threads, seed = reference.ref_dir, reference.force, timing.threads, timing.seed
    dataset, repeats, workers = epoch.dataset, epoch.rounds, epoch.workers
    subject = as_subject(subject)
    key = subject.reference_preset()
    if getattr(subject.model, "head", "") in ("node", "link"):
        raise UnsupportedPreset(f"preset {subject.given or key!r} is not graph-level; the epoch comparison runs "
                                "graph-level presets (mnist, cifar10)")
    set_threads(threads)
    inputs = epoch_inputs(key, dataset, epoch.data_dir, epoch.num_graphs, epoch.limit_train, epoch.limit_val, seed)
    if progress:
        progress(f"epoch comparison on {len(inputs.train)} training / {len(inputs.evaluation)} evaluation graphs: "
                 f"{inputs.source}")
    sample = collate_for(inputs.train)([inputs.train[j] for j in range(min(len(inputs.train), min(batch_sizes)))])
    parity = check_parity(ref_dir, key, *sample, seed=seed)
    if progress:
        progress(parity_line(parity, sample[0].batch_size))
    check_parity_tolerance(parity, PARITY_TOLERANCE, force)
    train_items, eval_items = to_pyg_data_list(inputs.train), to_pyg_data_list(inputs.evaluation)

    results = []
    for batch_size in batch_sizes:
        ref_model, ours_model = paired_models(ref_dir, key, seed=seed)
        ours = OurEpochs(inputs, key, int(batch_size), ours_model.state_dict(), seed=seed, workers=workers)
        ref = ReferenceEpochs(ref_model, train_items, eval_items, key, int(batch_size), seed=seed, workers=workers)
        ours.warm_up(), ref.warm_up()
        if progress:
            progress(f"batch {batch_size}: {repeats} rounds, each side's epoch in turn")
        row: Dict[str, object] = {"batch_size": int(batch_size)}
        row.update(summarize_rounds(alternate([ours, ref], repeats, progress)))
        row["metrics"], row["ref_metrics"] = _metrics(ours.last), _metrics(ref.last)
        results.append(row)
        if progress:
            progress(f"  batch {batch_size}: train ours {row['train_graphs_per_s']:.1f} vs ref "
                     f"{row['ref_train_graphs_per_s']:.1f} g/s ({row['ratio_train']:.2f}x); eval ours "
                     f"{row['eval_graphs_per_s']:.1f} vs ref {row['ref_eval_graphs_per_s']:.1f} g/s "
                     f"({row['ratio_eval']:.2f}x); epoch {row['ratio_epoch']:.2f}x")
    config = dict(environment("cpu", threads), preset=key, dataset=dataset, data_source=inputs.source,
                  train_graphs=len(inputs.train), eval_graphs=len(inputs.evaluation), repeats=repeats,
                  workers=workers, seed=seed, reference_dir=str(ref_dir), alternated=True)
    return {"config": config, "parity": parity.as_dict(), "parity_max_abs_diff": parity.max_abs_diff,
            "results": results}


def _metrics(last: Dict[str, Dict[str, float]]) -> Dict[str, float]:
    """Loss and main metric of the last training and evaluation pass (either side's naming)."""
    out = {}
    for phase, stats in last.items():
        for name in ("loss", "metric", "accuracy"):
            if name in stats:
                out[f"{phase}_{name}"] = float(stats[name])
    return out
