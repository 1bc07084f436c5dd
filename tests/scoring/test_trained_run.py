"""open_trained_run: checkpoint -> run configuration -> model -> weights -> eval mode, with one error handling."""
import pytest
import torch

from geaet_dgl.config import ConfigError
from geaet_dgl.scoring import open_trained_run
from geaet_dgl.models import build_model
from geaet_dgl.training import CheckpointError
from geaet_dgl.training import make_run_config
from geaet_dgl.training.checkpoint import save_checkpoint
from geaet_dgl.training.schedule import build_optimizer, build_scheduler
from tests.training.tiny import TINY_DATA, TINY_MODEL, TINY_TRAIN


def _checkpoint(path, model=None):
    """A checkpoint of the tiny synthetic run with random weights (no training needed); -> (run, model)."""
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN}, data=TINY_DATA)
    torch.manual_seed(3)
    model = model or build_model(run.model)
    optimizer = build_optimizer(model.parameters(), 1e-3, 0.0)
    save_checkpoint(path, run_config=run.to_dict(), model=model, optimizer=optimizer,
                    scheduler=build_scheduler(optimizer, 1, 3), epoch=2, step=0, global_step=10, best=None,
                    history=[], progress=None)
    return run, model


def test_the_run_its_weights_and_eval_mode(tmp_path):
    run, model = _checkpoint(tmp_path / "best.pt")
    opened, trained, checkpoint = open_trained_run(tmp_path / "best.pt")
    assert opened.to_dict() == run.to_dict() and checkpoint["epoch"] == 2
    assert not trained.training and all(not m.training for m in trained.modules())
    ours = trained.state_dict()
    assert ours.keys() == model.state_dict().keys()
    assert all(torch.equal(ours[k], v) for k, v in model.state_dict().items())


def test_data_and_settings_replace_the_runs_and_are_checked(tmp_path):
    _checkpoint(tmp_path / "best.pt")
    run, _, _ = open_trained_run(tmp_path / "best.pt", {"limit_test": 3}, device="cpu", workers=2)
    assert run.data.limit_test == 3 and run.data.limit_train == TINY_DATA["limit_train"] and run.workers == 2
    with pytest.raises(ConfigError, match="limit_test=0 must be at least 1"):
        open_trained_run(tmp_path / "best.pt", {"limit_test": 0})


def test_weights_that_do_not_fit_name_the_tensors_in_one_line(tmp_path):
    run, _ = _checkpoint(tmp_path / "best.pt")
    other = build_model(make_run_config("synthetic", overrides={**TINY_MODEL, "model.hidden_dim": 12,
                                                                "model.geanet.unit_size": 3}).model)
    _checkpoint(tmp_path / "spliced.pt", model=other)  # the tiny run's configuration, another model's weights
    with pytest.raises(CheckpointError) as info:
        open_trained_run(tmp_path / "spliced.pt")
    message = str(info.value)
    assert "\n" not in message and "its weights do not fit its own model configuration" in message
    assert "node_encoder" in message


def test_a_missing_checkpoint_is_one_line(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        open_trained_run(tmp_path / "nope.pt")
