"""Checkpoints: round trip, atomic writes, and clear errors for damaged or foreign files."""
import random

import numpy as np
import pytest
import torch

from geaet_dgl.config import to_dict
from geaet_dgl.models import build_model
from geaet_dgl.training import CheckpointError
from geaet_dgl.training import make_run_config
from geaet_dgl.training.checkpoint import FORMAT_VERSION, load_checkpoint, restore_rng_state, save_checkpoint
from geaet_dgl.training.schedule import build_optimizer, build_scheduler

from .tiny import TINY_MODEL


def _state(overrides=None):
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **(overrides or {})})
    model = build_model(run.model)
    optimizer = build_optimizer(model.parameters(), 1e-3, 1e-5)
    scheduler = build_scheduler(optimizer, 2, 5)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()
    scheduler.step()
    return run, model, optimizer, scheduler


def _save(path, run, model, optimizer, scheduler):
    save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer, scheduler=scheduler,
                    epoch=1, step=3, global_step=7, best={"epoch": 1, "val_metric": 0.5, "test_metric": 0.25},
                    history=[{"epoch": 1, "val_metric": 0.5}], progress=None)


def test_round_trip_restores_everything(tmp_path):
    run, model, optimizer, scheduler = _state()
    path = tmp_path / "ckpt.pt"
    _save(path, run, model, optimizer, scheduler)
    after_save = (random.random(), np.random.rand(), torch.rand(3))
    state = load_checkpoint(path, expect_model=to_dict(run.model))

    assert state["format_version"] == FORMAT_VERSION
    assert (state["epoch"], state["step"], state["global_step"]) == (1, 3, 7)
    assert state["best"]["test_metric"] == 0.25 and state["run_config"] == run.to_dict()
    twin = build_model(run.model)
    twin.load_state_dict(state["model"])
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), twin.state_dict().values()))
    twin_opt = build_optimizer(twin.parameters(), 1e-3, 1e-5)
    twin_sched = build_scheduler(twin_opt, 2, 5)  # built first, as the trainer does: it resets the lr
    twin_opt.load_state_dict(state["optimizer"])
    twin_sched.load_state_dict(state["scheduler"])
    assert twin_opt.state_dict()["state"][0]["step"] == optimizer.state_dict()["state"][0]["step"]
    assert twin_sched.last_epoch == 1 and twin_opt.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]

    restore_rng_state(state["rng"])
    again = (random.random(), np.random.rand(), torch.rand(3))
    assert after_save[0] == again[0] and after_save[1] == again[1] and torch.equal(after_save[2], again[2])


def test_write_is_atomic_and_leaves_no_temp_file(tmp_path):
    run, model, optimizer, scheduler = _state()
    _save(tmp_path / "last.pt", run, model, optimizer, scheduler)
    _save(tmp_path / "last.pt", run, model, optimizer, scheduler)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.pt"]


def test_truncated_checkpoint_gives_clear_error(tmp_path):
    run, model, optimizer, scheduler = _state()
    path = tmp_path / "last.pt"
    _save(path, run, model, optimizer, scheduler)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(path)


def test_garbage_and_missing_files(tmp_path):
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint at all")
    with pytest.raises(CheckpointError, match="truncated or corrupt"):
        load_checkpoint(tmp_path / "junk.pt")
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "absent.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a geaet-dgl checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")


def test_checkpoint_of_another_configuration_names_the_fields(tmp_path):
    run, model, optimizer, scheduler = _state()
    path = tmp_path / "best.pt"
    _save(path, run, model, optimizer, scheduler)
    other = make_run_config("synthetic", "cifar10", overrides=TINY_MODEL)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path, expect_model=to_dict(other.model))
    message = str(info.value)
    assert "model.node_in_feats: 3 != 5" in message
    assert "model.local_dropout" in message and "model.hidden_dim" not in message


def test_newer_format_version_is_refused(tmp_path):
    run, model, optimizer, scheduler = _state()
    path = tmp_path / "last.pt"
    _save(path, run, model, optimizer, scheduler)
    state = torch.load(path, weights_only=True)
    state["format_version"] = FORMAT_VERSION + 1
    torch.save(state, path)
    with pytest.raises(CheckpointError, match=f"format version {FORMAT_VERSION + 1}.*upgrade geaet-dgl"):
        load_checkpoint(path)
