"""Scoring with the folded model: training's evaluation, evaluate_checkpoint folded and unfolded agree."""
import pytest
import torch

from geaet_dgl.data import synthetic_splits
from geaet_dgl.models import build_model
from geaet_dgl.scoring import evaluate_checkpoint
from geaet_dgl.training.evaluation import evaluate
from geaet_dgl.training import load_checkpoint, train
from geaet_dgl.training import make_run_config
from geaet_dgl.training.losses import get_loss
from tests.training.tiny import TINY_DATA, TINY_MODEL, TINY_TRAIN, one_thread


@pytest.fixture(scope="module")
def two_epoch_run(tmp_path_factory):
    """A tiny synthetic run of two epochs: its directory."""
    run_dir = tmp_path_factory.mktemp("fold") / "run"
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN, "train.epochs": 2}, data=TINY_DATA)
    with one_thread():
        train(run, run_dir, progress=False)
    return run_dir


@pytest.mark.slow
def test_eval_reproduces_every_recorded_epoch_so_the_trainer_never_scores_stale_folded_weights(two_epoch_run):
    history = load_checkpoint(two_epoch_run / "last.pt")["history"]
    assert history[0]["val_loss"] != history[1]["val_loss"]  # the weights moved between the two evaluations
    with one_thread():
        for split in ("val", "test"):
            result = evaluate_checkpoint(two_epoch_run / "last.pt", split, progress=False)
            assert (result["loss"], result["metric"]) == (history[-1][f"{split}_loss"], history[-1][f"{split}_metric"])


def test_unfolded_scoring_equals_the_folded_within_float_rounding(two_epoch_run):
    with one_thread():
        unfolded = evaluate_checkpoint(two_epoch_run / "last.pt", "test", progress=False, fold=False)
        refolded = evaluate_checkpoint(two_epoch_run / "last.pt", "test", progress=False)
    assert abs(unfolded["loss"] - refolded["loss"]) < 1e-5


def test_evaluate_folds_the_weights_it_is_given_each_call():
    """evaluate() after a weight change scores the new weights (folded), as the unfolded model does."""
    splits = synthetic_splits(num_train=8, num_val=16, num_test=8, seed=0)
    run = make_run_config("synthetic", overrides={**TINY_MODEL, **TINY_TRAIN})
    torch.manual_seed(0)
    model = build_model(run.model)
    loss = get_loss("cross_entropy")
    with one_thread():
        first = evaluate(model, splits.val, loss, "accuracy", 8, torch.device("cpu"))
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1.5)
        second = evaluate(model, splits.val, loss, "accuracy", 8, torch.device("cpu"))
        plain = evaluate(model, splits.val, loss, "accuracy", 8, torch.device("cpu"), fold=False)
    assert first["loss"] != second["loss"]
    assert abs(second["loss"] - plain["loss"]) < 1e-5 and second["metric"] == plain["metric"]
