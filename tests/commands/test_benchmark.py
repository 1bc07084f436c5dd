"""`geaet-dgl benchmark`: --what names its jobs; the flags of every documented spelling still mean what they did."""
import pytest
from click.testing import CliRunner

import cli
from geaet_dgl.commands import benchmark as command


@pytest.fixture
def calls(monkeypatch):
    """The keywords each invocation hands to run_benchmark (which is not run)."""
    seen = []
    monkeypatch.setattr(command, "run_benchmark", lambda **kwargs: seen.append(kwargs))
    return seen


def _jobs(calls, args):
    result = CliRunner().invoke(cli.main, ["benchmark"] + args)
    assert result.exit_code == 0, result.output
    kwargs = calls.pop()
    return ({job for job in ("throughput", "breakdown", "epoch", "scaling") if kwargs[job]},
            tuple(kwargs["batch_sizes"]))


@pytest.mark.parametrize("args, jobs, sizes", [
    ([], {"throughput"}, (16, 64, 128)),
    (["--epoch", "--scaling", "--max-nodes", "1000000"], {"throughput", "epoch", "scaling"}, (16, 64, 128)),
    (["--batch-size", "16", "--breakdown"], {"throughput", "breakdown"}, (16,)),
    (["--epoch", "--against-pyg", "../GEAET"], {"throughput", "epoch"}, (16, 128)),
    (["--what", "scaling"], {"scaling"}, (16, 64, 128)),
    (["--what", "breakdown", "epoch", "--batch-sizes", "8"], {"breakdown", "epoch"}, (8,)),
    (["--what", "throughput,breakdown"], {"throughput", "breakdown"}, (16, 64, 128)),
    (["--what", "breakdown", "--scaling"], {"breakdown", "scaling"}, (16, 64, 128)),
])
def test_what_and_the_flags_choose_the_jobs(calls, args, jobs, sizes):
    assert _jobs(calls, args) == (jobs, sizes)


def test_an_unknown_job_lists_the_choices(calls):
    result = CliRunner().invoke(cli.main, ["benchmark", "--what", "memory"])
    assert result.exit_code == 2 and "'throughput', 'breakdown', 'epoch', 'scaling'" in result.output
    assert calls == []
