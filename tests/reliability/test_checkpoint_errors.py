"""Damaged or foreign checkpoints, through `geaet-dgl eval --checkpoint` and `geaet-dgl train --resume`:
one line naming the problem (and, for another model, the differing fields) and the fix; exit code 2;
the run directory is left exactly as it was."""
import shutil

import pytest
import torch

from geaet_dgl.training.checkpoint import FORMAT_VERSION
from tests.training.tiny import cli_args

from .helpers import listing, one_line_error, partial_files, run_cli


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished 1-epoch tiny runs: 'a' (width 8) and 'b' (width 12, another seed)."""
    root = tmp_path_factory.mktemp("runs")
    extra = {"a": [], "b": ["--set", "model.hidden_dim=12", "--set", "model.geanet.unit_size=3", "--seed", "3"]}
    for name, args in extra.items():
        result = run_cli(cli_args(1, root / name, args))
        assert result.exit_code == 0, result.output
    return root


@pytest.fixture
def run_dir(runs, tmp_path):
    """A private copy of run 'a' to damage."""
    return shutil.copytree(runs / "a", tmp_path / "a")


def _eval(path):
    return run_cli(["eval", "--checkpoint", path, "--json"])


def _resume(run_dir):
    return run_cli(["train", "--resume", run_dir, "--no-progress"])


def _check_untouched(run_dir, before):
    assert listing(run_dir) == before
    assert not partial_files(run_dir)


@pytest.mark.slow
def test_truncated_checkpoint(run_dir):
    for name in ("best.pt", "last.pt"):
        path = run_dir / name
        path.write_bytes(path.read_bytes()[:4000])
    before = listing(run_dir)
    for result, path in ((_eval(run_dir / "best.pt"), run_dir / "best.pt"), (_resume(run_dir), run_dir / "last.pt")):
        line = one_line_error(result)
        assert result.stdout == ""
        assert line.startswith(f"error: checkpoint {path} is truncated or corrupt and cannot be read (")
        assert line.endswith("use another checkpoint (best.pt or last.pt) of the run")
    _check_untouched(run_dir, before)


def test_empty_checkpoint_file(run_dir):
    (run_dir / "last.pt").write_bytes(b"")
    before = listing(run_dir)
    line = one_line_error(_resume(run_dir))
    assert line.startswith(f"error: checkpoint {run_dir / 'last.pt'} is truncated or corrupt")
    _check_untouched(run_dir, before)


def test_newer_format_version(run_dir):
    for name in ("best.pt", "last.pt"):
        state = torch.load(run_dir / name, weights_only=True)
        state["format_version"] = FORMAT_VERSION + 1
        state["package_version"] = "9.0.0"
        torch.save(state, run_dir / name)
    before = listing(run_dir)
    for result, path in ((_eval(run_dir / "best.pt"), run_dir / "best.pt"), (_resume(run_dir), run_dir / "last.pt")):
        line = one_line_error(result)
        assert line.startswith(f"error: checkpoint {path} has format version {FORMAT_VERSION + 1} "
                               f"(written by geaet-dgl 9.0.0); this geaet-dgl ")
        assert line.endswith(f"reads format {FORMAT_VERSION} or older: upgrade geaet-dgl")
    _check_untouched(run_dir, before)


def test_not_a_checkpoint(run_dir):
    torch.save({"weights": torch.zeros(2)}, run_dir / "best.pt")
    before = listing(run_dir)
    line = one_line_error(_eval(run_dir / "best.pt"))
    assert line == f"error: {run_dir / 'best.pt'} is not a geaet-dgl checkpoint (no format_version)"
    _check_untouched(run_dir, before)


def test_resume_with_the_checkpoint_of_another_model_names_the_fields(run_dir, runs):
    shutil.copy(runs / "b" / "last.pt", run_dir / "last.pt")  # e.g. copied into the wrong run directory
    before = listing(run_dir)
    line = one_line_error(_resume(run_dir))
    assert line.startswith(f"error: {run_dir / 'last.pt'} is from another run than {run_dir / 'config.json'}: ")
    for field in ("model.geanet.unit_size: 3 != 2", "model.hidden_dim: 12 != 8", "train.seed: 3 != 0"):
        assert field in line, line
    assert line.endswith("(checkpoint vs config.json); put the run's own last.pt back, or start a new run with --out")
    _check_untouched(run_dir, before)


def test_resume_with_the_checkpoint_of_another_preset(run_dir, runs):
    state = torch.load(runs / "b" / "last.pt", weights_only=True)
    state["run_config"]["preset"] = "cifar10"
    torch.save(state, run_dir / "last.pt")
    before = listing(run_dir)
    line = one_line_error(_resume(run_dir))
    assert "preset: 'cifar10' != 'mnist'" in line and "model.hidden_dim: 12 != 8" in line
    _check_untouched(run_dir, before)


def test_eval_of_weights_that_do_not_fit_their_configuration_names_the_tensors(run_dir, runs):
    state = torch.load(run_dir / "best.pt", weights_only=True)
    state["model"] = torch.load(runs / "b" / "best.pt", weights_only=True)["model"]  # a spliced file
    torch.save(state, run_dir / "best.pt")
    before = listing(run_dir)
    line = one_line_error(_eval(run_dir / "best.pt"))
    assert line.startswith(f"error: checkpoint {run_dir / 'best.pt'}: its weights do not fit its own model "
                           "configuration (shape differs: ")
    assert "(12,) vs (8,)" in line and "in all)" in line
    assert line.endswith("it was edited or damaged: use another checkpoint of the run")
    _check_untouched(run_dir, before)


def test_missing_checkpoint(run_dir):
    (run_dir / "last.pt").unlink()
    before = listing(run_dir)
    line = one_line_error(_resume(run_dir))
    assert line.startswith(f"error: {run_dir} has no last.pt to resume from: the run stopped")
    assert "plus --overwrite (without --resume)" in line  # the way to start it again
    line = one_line_error(_eval(run_dir / "nothing.pt"))
    assert line == f"error: checkpoint {run_dir / 'nothing.pt'} does not exist"
    _check_untouched(run_dir, before)


def test_intact_copy_still_resumes(run_dir):
    """The checks above do not refuse a healthy run (resuming a finished run just re-summarises it)."""
    result = _resume(run_dir)
    assert result.exit_code == 0, result.output
    assert "best epoch 1/1" in result.stdout
