"""Bad data through the command line: `train` and `eval` stop before anything is written, in one line."""
import pytest

from geaet_dgl.data import registry
from tests.training.tiny import cli_args

from .helpers import listing, nothing_written, one_line_error, partial_files, run_cli


def _poisoned_loader(poison):
    real = registry.LOADERS["synthetic"]

    def load(data_dir, **kwargs):
        splits = real(data_dir, **kwargs)
        poison(splits)
        return splits

    return load


POISONS = {
    "nan_feature": (lambda s: s.train.graphs[3].ndata["feat"].__setitem__((0, 0), float("nan")),
                    "error: the train split of 'synthetic': graph 3 has a non-finite value (nan) in "
                    "ndata['feat'] (node 0); fix or drop that graph"),
    "label_out_of_range": (lambda s: s.val.labels.__setitem__(5, 12),
                           "error: the val split of 'synthetic': graph 5 has label 12, outside 0..9"),
    "inf_edge_weight": (lambda s: s.test.graphs[0].edata["feat"].__setitem__((1, 0), float("inf")),
                        "error: the test split of 'synthetic': graph 0 has a non-finite value (inf) in "
                        "edata['feat'] (edge 1)"),
}


@pytest.mark.parametrize("case", sorted(POISONS))
def test_bad_data_stops_train_before_anything_is_written(case, tmp_path, monkeypatch):
    poison, start = POISONS[case]
    monkeypatch.setitem(registry.LOADERS, "synthetic", _poisoned_loader(poison))
    out = tmp_path / "run"
    line = one_line_error(run_cli(cli_args(1, out)))
    assert line.startswith(start), line
    assert nothing_written(out) and not partial_files(tmp_path)  # the directory can be reused at once


@pytest.mark.slow
def test_bad_data_stops_eval(tmp_path, monkeypatch):
    out = tmp_path / "run"
    assert run_cli(cli_args(1, out)).exit_code == 0
    before = listing(out)
    monkeypatch.setitem(registry.LOADERS, "synthetic", _poisoned_loader(POISONS["nan_feature"][0]))
    line = one_line_error(run_cli(["eval", "--checkpoint", out / "best.pt", "--split", "val"]))
    assert line.startswith(POISONS["nan_feature"][1])
    assert listing(out) == before and not partial_files(tmp_path)
