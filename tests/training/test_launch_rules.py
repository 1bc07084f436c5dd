"""The rules a command line applies before training, each in the library beside what it governs."""
import pytest
import torch

from geaet_dgl.config import ConfigError, OptionConflict, RunConfig, settings_with_options
from geaet_dgl.training.seeds import check_seeds_options
from geaet_dgl.training import make_run_config
from geaet_dgl.training.environment import check_environment
from geaet_dgl.training.launcher import RESUME_MAY_CHANGE, check_nproc, check_resume_changes
from geaet_dgl.config import check_run_source
from geaet_dgl.training.run_dir import default_run_dir, default_seeds_dir, default_sweep_dir


@pytest.mark.parametrize("lr", [5e-4, 1e-3 / 3, 0.1 + 0.2, 1.0, 7e-9])
def test_options_as_settings_give_the_typed_values_back(lr):
    """Train and sweep pass --epochs/--lr/... as strings: they must parse to the very numbers given."""
    pairs = settings_with_options({"model.hidden_dim": "16", "train.lr": "9"}, epochs=3, batch_size=4, lr=lr,
                                  seed=None)
    assert pairs == {"model.hidden_dim": "16", "train.lr": repr(lr), "train.epochs": "3", "train.batch_size": "4"}
    run = make_run_config("synthetic", overrides={**pairs, "model.geanet.unit_size": "4"})
    assert (run.train.lr, run.train.epochs, run.train.batch_size) == (lr, 3, 4)
    assert type(run.train.epochs) is int


def test_sync_bn_and_tensorboard_are_part_of_the_run():
    run = make_run_config("synthetic", sync_bn=False)
    assert run.sync_bn is False and run.tensorboard is False


def test_the_run_fields_pass_through_by_keyword_and_a_misspelt_one_is_refused():
    run = make_run_config("synthetic", workers=2, checkpoint_every=3, threads=1, sync_bn=False)
    assert (run.device, run.workers, run.checkpoint_every, run.threads, run.sync_bn, run.tensorboard) == \
        ("cpu", 2, 3, 1, False, False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'worker'"):
        make_run_config("synthetic", worker=2)


def test_a_cuda_run_without_cuda_is_refused_where_it_runs_not_by_the_configuration(monkeypatch):
    """The configuration validates without torch; the machine is checked where a run is resolved or loaded."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    run = make_run_config("synthetic")
    run.device = "cuda"
    assert RunConfig.from_dict(run.to_dict()).device == "cuda"  # the settings are valid
    with pytest.raises(ConfigError, match="^device=cuda but no CUDA device is available; use --device cpu$"):
        check_environment(RunConfig.from_dict(run.to_dict()))
    with pytest.raises(ConfigError, match="^device=cuda but no CUDA device"):
        make_run_config("synthetic", device="cuda")


def test_resume_takes_only_where_and_how_it_runs():
    check_resume_changes({name: f"--{name}" for name in RESUME_MAY_CHANGE})
    with pytest.raises(OptionConflict, match="saved configuration; drop --epochs, --set$"):
        check_resume_changes({"device": "--device", "epochs": "--epochs", "settings": "--set"})


def test_conflicting_options_are_usage_errors(monkeypatch):
    with pytest.raises(OptionConflict, match="drop --nproc"):
        check_seeds_options([0, 1], nproc=2, seed=None, resume=False)
    with pytest.raises(OptionConflict, match="drop --seed/--resume"):
        check_seeds_options([0, 1], nproc=None, seed=None, resume=True)
    check_seeds_options([], nproc=4, seed=1, resume=True)
    with pytest.raises(OptionConflict, match="--dataset is required"):
        check_run_source(None, None, None, "mnist")
    with pytest.raises(OptionConflict, match="drop --preset"):
        check_run_source(None, None, "mnist.yaml", "mnist")
    with pytest.raises(OptionConflict, match="--allow-changed-data only concerns --resume"):
        check_run_source("zinc", None, None, None, allow_changed_data=True)
    check_nproc(2)
    for name, value in {"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "x", "MASTER_PORT": "1"}.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(OptionConflict, match="comes from torchrun"):
        check_nproc(2)
    check_nproc(None)


def test_default_folders():
    assert str(default_run_dir("mnist", "mnist", 3)) == "runs/mnist-mnist-seed3"
    assert str(default_seeds_dir("file", "geaet")) == "runs/file-geaet-seeds"
    assert str(default_sweep_dir("synthetic", None)) == "runs/sweep-synthetic-default"
