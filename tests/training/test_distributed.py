"""Data-parallel training: 2 CPU processes (gloo on 127.0.0.1) on tiny synthetic data.

- the weights are identical on both ranks after every step (DDP, AdamW, dropout on);
- with SyncBatchNorm and GEANet ``scope='graph'`` one step of 2 x batch B equals one process with
  batch 2B (max abs difference < 1e-5);
- a ``--nproc 2`` run reports the metrics one process computes from its checkpoint and writes
  once (rank 0); SIGTERM to rank 0 alone stops both ranks after the same step, and the resumed
  run ends with the uninterrupted run's weights and history, bit for bit.

(SGD for the batch-equivalence step: AdamW's first step is lr * sign(grad) and turns the ~1e-9
rounding noise of gradients that are analytically zero, e.g. a bias followed by BatchNorm, into
differences of lr.) One module-scoped spawn of 2 processes serves every test but the launcher's.
"""
import gc
import json
import os
import signal

import pytest
import torch

from geaet_dgl.config import ConfigError
from geaet_dgl.data import collate_for
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training import Trainer, TrainingInterrupted, load_checkpoint, resume, train
from geaet_dgl.data.run_splits import load_splits
from geaet_dgl.training import make_run_config
from geaet_dgl.training import distributed, launcher
from geaet_dgl.training.batching import (EpochBatchSampler, ShardedEpochBatchSampler, epoch_sampler, make_epoch_loader,
                                         move_batch)
from geaet_dgl.training.distributed import DistributedBatchNorm

from .tiny import TINY_DATA, TINY_MODEL, one_thread, strip_timing

NO_DROPOUT = {f"model.{name}": 0.0 for name in ("local_dropout", "global_dropout", "external_dropout",
                                                  "ffn_dropout", "attn_dropout", "head_dropout")}


def _run(per_rank_batch, **overrides):
    return make_run_config("synthetic", overrides={**TINY_MODEL, "train.batch_size": per_rank_batch,
                                                   "train.warmup_epochs": 0, **overrides}, data=TINY_DATA)


E2E_EPOCHS = 2  # 40 graphs, 2 x 4 per step: 5 steps per epoch


def _e2e_run():
    return make_run_config("synthetic", overrides={**TINY_MODEL, "train.batch_size": 4, "train.warmup_epochs": 1,
                                                   "train.epochs": E2E_EPOCHS}, data=TINY_DATA,
                           checkpoint_every=1)


def _steps(trainer, loader, steps, sgd_lr=None):
    """Train ``steps`` steps as the trainer does -> [state_dict after each step]."""
    if sgd_lr is not None:
        trainer.optimizer = torch.optim.SGD(trainer.model.parameters(), lr=sgd_lr)
    for group in trainer.optimizer.param_groups:  # no warmup ramp: a visible first step
        group["lr"] = sgd_lr or 1e-2
    trainer.train_model.train()
    states = []
    for _, batch in zip(range(steps), loader):
        graph, labels = move_batch(batch, trainer.device)
        loss = trainer.loss_fn(trainer.train_model(graph), labels)
        trainer.optimizer.zero_grad()
        loss.backward()
        if sgd_lr is not None:  # the trainer's FlatAdamW clips inside its step; SGD does not
            torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), trainer.run.train.clip_grad_norm)
        trainer.optimizer.step()
        states.append({k: v.detach().clone() for k, v in trainer.model.state_dict().items()})
    return states


def _worker(out_dir, phases):
    """One rank: for each phase (name, per-rank batch, overrides, steps, sgd_lr) train and save the states;
    then a tiny run that rank 0 alone gets SIGTERM in, resumed by both ranks."""
    torch.set_num_threads(1)
    with distributed.process_group("cpu") as ctx:
        for name, batch_size, overrides, steps, sgd_lr in phases:
            overrides = dict(overrides)
            sync_bn = overrides.pop("sync_bn", True)
            run = _run(batch_size, **overrides)
            run.sync_bn = sync_bn
            splits = load_splits(run.data, run.model, progress=False)
            trainer = Trainer(run, out_dir, splits, progress=False, dist=ctx)
            loader = make_epoch_loader(splits.train, collate_for(splits.train),
                                       epoch_sampler(len(splits.train), batch_size, shuffle=True, seed=run.train.seed,
                                                     epoch=0, rank=ctx.rank, world_size=ctx.world_size))
            states = _steps(trainer, loader, steps, sgd_lr)
            no_grad = sorted(n for n, p in trainer.model.named_parameters() if p.grad is None)
            sync = sum(isinstance(m, DistributedBatchNorm) for m in trainer.model.modules())
            torch.save({"states": states, "no_grad": no_grad, "sync_bn_modules": sync},
                       os.path.join(out_dir, f"{name}-rank{ctx.rank}.pt"))
            # The DDP model's last reference to the process group must go while the group lives: freed after
            # teardown, as the frame unwinds, gloo's destructor joins its threads holding the GIL (a hang at exit)
            del trainer, loader
            gc.collect()
        cut = os.path.join(out_dir, "cut")
        original_save = Trainer._save

        def save_then_signal(self, name):  # rank 0 alone gets SIGTERM once step 3 is saved
            original_save(self, name)
            if ctx.rank == 0 and self.global_step == 3 and self.stop_signal is None:
                os.kill(os.getpid(), signal.SIGTERM)

        Trainer._save = save_then_signal
        try:
            train(_e2e_run(), cut, progress=False, dist=ctx)
        except TrainingInterrupted as exc:
            stopped = load_checkpoint(os.path.join(cut, "last.pt"))["global_step"] if ctx.rank == 0 else None
            with open(os.path.join(out_dir, f"interrupted-rank{ctx.rank}.json"), "w") as handle:
                json.dump({"signum": exc.signum, "global_step": stopped}, handle)
        finally:
            Trainer._save = original_save
        ctx.barrier()
        resume(cut, progress=False, dist=ctx)


PHASES = [
    ("ddp", 4, {}, 3, None),  # default: dropout on, GEANet batch scope, AdamW, sync BN
    ("ddp_nosync", 4, {"sync_bn": False}, 2, None),
    ("sync", 4, {**NO_DROPOUT, "model.geanet.scope": "graph"}, 1, 0.1),
]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ranks")
    distributed.spawn(_worker, 2, str(out), PHASES)
    return out


def _load(out, name):
    return [torch.load(out / f"{name}-rank{r}.pt") for r in (0, 1)]


@pytest.mark.parametrize("name", ["ddp", "ddp_nosync"])
@pytest.mark.distributed
def test_weights_identical_on_both_ranks_after_each_step(two_ranks, name):
    rank0, rank1 = _load(two_ranks, name)
    assert len(rank0["states"]) == len(rank1["states"]) >= 2
    for step, (a, b) in enumerate(zip(rank0["states"], rank1["states"])):
        for key in a:
            if name == "ddp_nosync" and ("running_" in key or "num_batches" in key):
                continue  # BatchNorm statistics: per rank without sync (DDP broadcasts rank 0's each forward)
            assert torch.equal(a[key], b[key]), (step, key)
    first, last = rank0["states"][0], rank0["states"][-1]
    assert any(not torch.equal(first[k], last[k]) for k in first), "training did not change the weights"
    # The last layer's edge BatchNorm feeds nothing: no gradient, as in one process (DDP static_graph).
    assert rank0["no_grad"] == rank1["no_grad"] == ["layers.0.local_model.bn_edge_e.bias",
                                                    "layers.0.local_model.bn_edge_e.weight"]
    assert (rank0["sync_bn_modules"] > 0) == (name == "ddp")


@pytest.mark.distributed
def test_sync_bn_graph_scope_step_matches_one_process_with_the_combined_batch(two_ranks):
    rank0, rank1 = _load(two_ranks, "sync")
    run = _run(8, **NO_DROPOUT, **{"model.geanet.scope": "graph"})
    splits = load_splits(run.data, run.model, progress=False)
    with one_thread():
        trainer = Trainer(run, two_ranks, splits, progress=False)
        initial = {k: v.clone() for k, v in trainer.model.state_dict().items()}
        loader = make_epoch_loader(splits.train, collate_for(splits.train),
                                   epoch_sampler(len(splits.train), 8, shuffle=True, seed=run.train.seed, epoch=0))
        (single,) = _steps(trainer, loader, 1, sgd_lr=0.1)
    moved = max((single[k].float() - initial[k].float()).abs().max().item() for k in single)
    assert moved > 1e-3, "the step must visibly change the weights for the comparison to mean anything"
    for key in single:
        assert torch.equal(rank0["states"][0][key], rank1["states"][0][key]), key
        difference = (rank0["states"][0][key].double() - single[key].double()).abs().max().item()
        assert difference < 1e-5, (key, difference)


def test_sharded_batches_are_the_one_process_global_batches():
    one = EpochBatchSampler(21, 6, True, 3, 5)
    shards = [ShardedEpochBatchSampler(21, 3, True, 3, 5, rank=r, world_size=2) for r in (0, 1)]
    assert shards[0].total == shards[1].total == 4
    for step in range(4):
        whole = one.batch_indices(step)
        a, b = shards[0].batch_indices(step), shards[1].batch_indices(step)
        assert len(a) == len(b) and not set(a) & set(b)
        assert a + b == whole[:len(a) * 2]
    resumed = ShardedEpochBatchSampler(21, 3, True, 3, 5, 2, rank=1, world_size=2)
    assert list(resumed) == [shards[1].batch_indices(2), shards[1].batch_indices(3)]


# ------------------------------------------------------------------------------------------------
# End to end: `--nproc 2` through the launcher, interrupted and resumed
# ------------------------------------------------------------------------------------------------

@pytest.mark.distributed
def test_nproc_2_run_metrics_and_exact_resume(two_ranks, tmp_path):
    whole = tmp_path / "whole"
    summary = launcher.train_job(_e2e_run(), whole, nproc=2, progress=False)  # the `--nproc 2` launcher
    state = load_checkpoint(whole / "last.pt")
    assert state["run_config"]["world_size"] == 2 and state["ranks"]["world_size"] == 2
    assert len(state["ranks"]["rng"]) == 2 and state["global_step"] == E2E_EPOCHS * 5
    lines = (whole / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == E2E_EPOCHS  # rank 0 alone writes
    # The reduced validation metric is what one process computes from the best checkpoint.
    with one_thread():
        rescored = evaluate_checkpoint(whole / "best.pt", "val", progress=False)
    assert rescored["metric"] == summary["val_metric"]

    # SIGTERM reached rank 0 only; both ranks stopped at the same step, and the resumed run is identical.
    reports = [json.loads((two_ranks / f"interrupted-rank{r}.json").read_text()) for r in (0, 1)]
    assert reports[0]["signum"] == reports[1]["signum"] == signal.SIGTERM
    assert reports[0]["global_step"] == 4  # the step after the signal, on both ranks
    cut = two_ranks / "cut"
    a, b = load_checkpoint(whole / "last.pt"), load_checkpoint(cut / "last.pt")
    for key in a["model"]:
        assert torch.equal(a["model"][key], b["model"][key]), key
    assert strip_timing(a["history"]) == strip_timing(b["history"])
    assert json.loads((cut / "summary.json").read_text())["test_metric"] == summary["test_metric"]
    with pytest.raises(ConfigError, match="resume with --nproc 2"):
        launcher.resume_job(cut, nproc=1, progress=False)
